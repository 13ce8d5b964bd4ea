"""What a model adapter hands back: token usage, one response per sample, the call summary.

All three are frozen and serialisable (``to_dict``/``from_dict`` speak plain
JSON), because they are stored on search nodes and travel between workers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from srh_core.parsers import ParseIssue
from srh_core.types import ToolCall, json_value

TOKENS_PER_PRICE_UNIT = 1_000_000


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """Price of a model in currency units (USD) per one million tokens.

    Attributes:
        input_per_million: Price of uncached prompt tokens.
        output_per_million: Price of completion tokens (reasoning included).
        cached_input_per_million: Price of cached prompt tokens; None = input price.
        source: Where and when the numbers were read (prices change).
    """

    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None = None
    source: str = ""

    def cost(self, usage: Usage) -> float:
        """The price of ``usage`` under this tariff."""
        cached_rate = self.cached_input_per_million
        cached_rate = self.input_per_million if cached_rate is None else cached_rate
        fresh = max(usage.prompt_tokens - usage.cached_tokens, 0)
        total = (fresh * self.input_per_million + usage.cached_tokens * cached_rate
                 + usage.completion_tokens * self.output_per_million)
        return total / TOKENS_PER_PRICE_UNIT


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one request or a sum of requests.

    Attributes:
        prompt_tokens: Input tokens (cached ones included).
        completion_tokens: Output tokens (reasoning ones included).
        total_tokens: As reported by the provider (or the sum of the two).
        cached_tokens: Prompt tokens served from the provider's cache.
        reasoning_tokens: Completion tokens spent on hidden reasoning.
        price: Cost in USD when the model's price is known, else None.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    price: float | None = None

    def __add__(self, other: Usage) -> Usage:
        both_priced = self.price is not None and other.price is not None
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            price=(self.price or 0.0) + (other.price or 0.0) if both_priced else None,
        )

    def priced(self, price: ModelPrice | None) -> Usage:
        """This usage with ``price`` set from a tariff (None when the tariff is unknown)."""
        return replace(self, price=None if price is None else price.cost(self))

    @classmethod
    def total(cls, usages: Iterable[Usage], price: ModelPrice | None) -> Usage:
        """Sum token counts, then price the sum (linear, so equal to summing prices)."""
        summed = sum(usages, cls())
        return summed.priced(price)

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "cached_tokens": self.cached_tokens,
                "reasoning_tokens": self.reasoning_tokens, "price": json_value(self.price)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        counts = {name: int(data.get(name) or 0) for name in (
            "prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens",
            "reasoning_tokens")}
        price = data.get("price")
        return cls(**counts, price=None if price is None else float(price))


@dataclass(frozen=True)
class ModelResponse:
    """One sample of a model request, parsed.

    Attributes:
        content: The reply text (possibly empty when the model only called tools).
        tool_calls: Readable tool calls, in order, each with an id.
        message: The assistant message to append to the conversation (do not mutate).
        finish_reason: ``stop``, ``tool_calls``, ``length``, ``content_filter``... or None.
        parse_issues: Calls that could not be read; show them to the model.
        sample: One-based index k of this sample among the K requested.
        usage: Usage of the request that produced only this sample; None when the
            sample shared a request with others (their usage is on the call summary).
        reasoning: Hidden-reasoning text some providers return (never sent back).
    """

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    message: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    parse_issues: tuple[ParseIssue, ...] = ()
    sample: int = 1
    usage: Usage | None = None
    reasoning: str = ""

    @property
    def truncated(self) -> bool:
        """Whether the reply was cut by the length limit."""
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "message": json_value(self.message),
            "finish_reason": self.finish_reason,
            "parse_issues": [issue.to_dict() for issue in self.parse_issues],
            "sample": self.sample,
            "usage": None if self.usage is None else self.usage.to_dict(),
            "reasoning": self.reasoning,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelResponse:
        usage = data.get("usage")
        return cls(
            content=str(data.get("content") or ""),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            message=dict(data.get("message") or {}),
            finish_reason=data.get("finish_reason"),
            parse_issues=tuple(ParseIssue.from_dict(i) for i in data.get("parse_issues") or ()),
            sample=int(data.get("sample", 1)),
            usage=None if usage is None else Usage.from_dict(usage),
            reasoning=str(data.get("reasoning") or ""),
        )


@dataclass(frozen=True)
class CallSummary:
    """Everything one ``api(messages, n=K)`` call produced.

    Attributes:
        responses: The K responses, ordered by sample index.
        usage: Usage summed over every request the call sent.
        provider: Provider name (``openai``, ``deepseek``...).
        model: Model name as sent to the provider.
    """

    responses: tuple[ModelResponse, ...]
    usage: Usage
    provider: str
    model: str

    def to_dict(self) -> dict[str, Any]:
        return {"responses": [r.to_dict() for r in self.responses], "usage": self.usage.to_dict(),
                "provider": self.provider, "model": self.model}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallSummary:
        return cls(
            responses=tuple(ModelResponse.from_dict(r) for r in data.get("responses") or ()),
            usage=Usage.from_dict(data.get("usage") or {}),
            provider=str(data.get("provider", "")),
            model=str(data.get("model", "")),
        )
