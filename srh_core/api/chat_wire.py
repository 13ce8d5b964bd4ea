"""Chat Completions on the wire: request keyword arguments, replies, streamed chunks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from srh_core.api.options import RequestOptions
from srh_core.api.response import Usage
from srh_core.api.wire import RawReply, RawSample, as_int, content_text, mapping

TokenLimitParam = Literal["max_tokens", "max_completion_tokens"]


def chat_request(
    messages: Sequence[Mapping[str, Any]],
    options: RequestOptions,
    *,
    model: str,
    n: int,
    tools: list[dict[str, Any]] | None,
    token_limit_param: TokenLimitParam,
) -> dict[str, Any]:
    """Keyword arguments for ``client.chat.completions.create``.

    Args:
        messages: The conversation (tool docs already added in prompt modes).
        options: Resolved sampling options.
        model: Model name.
        n: Samples asked of this request (``n`` is only sent when > 1).
        tools: Native function tools, or None in prompt modes.
        token_limit_param: The field name the provider expects for the length limit.
    """
    request: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages]}
    if n > 1:
        request["n"] = n
    if tools:
        request["tools"] = tools
    if options.max_tokens is not None:
        request[token_limit_param] = options.max_tokens
    for name in ("temperature", "top_p", "seed"):
        if getattr(options, name) is not None:
            request[name] = getattr(options, name)
    if options.stop:
        request["stop"] = list(options.stop)
    if options.stream:
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
    if options.extra_body:
        request["extra_body"] = dict(options.extra_body)
    return request


def chat_usage(data: Any) -> Usage:
    """Usage of a Chat Completions reply (DeepSeek's cache-hit field included)."""
    usage = mapping(data)
    prompt = as_int(usage.get("prompt_tokens"))
    completion = as_int(usage.get("completion_tokens"))
    cached = as_int(mapping(usage.get("prompt_tokens_details")).get("cached_tokens")) or as_int(
        usage.get("prompt_cache_hit_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=as_int(usage.get("total_tokens")) or prompt + completion,
        cached_tokens=cached,
        reasoning_tokens=as_int(
            mapping(usage.get("completion_tokens_details")).get("reasoning_tokens")),
    )


def decode_chat_completion(data: Mapping[str, Any]) -> RawReply:
    """Decode a non-streamed ``chat.completion`` body."""
    choices = [mapping(choice) for choice in data.get("choices") or []]
    choices.sort(key=lambda choice: as_int(choice.get("index")))
    samples = []
    for choice in choices:
        message = mapping(choice.get("message"))
        samples.append(RawSample(
            content=content_text(message.get("content")),
            native_calls=[dict(call) for call in message.get("tool_calls") or []
                          if isinstance(call, Mapping)],
            finish_reason=choice.get("finish_reason"),
            reasoning=str(message.get("reasoning_content") or message.get("reasoning") or ""),
        ))
    return RawReply(samples, chat_usage(data.get("usage")))


@dataclass(slots=True)
class _ChoiceParts:
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None

    def add_call_delta(self, delta: Mapping[str, Any]) -> None:
        index = as_int(delta.get("index", len(self.calls)))
        call = self.calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        if delta.get("id"):
            call["id"] = delta["id"]
        function = mapping(delta.get("function"))
        name = function.get("name")
        if name and name != call["function"]["name"]:
            call["function"]["name"] += name
        call["function"]["arguments"] += str(function.get("arguments") or "")

    def sample(self) -> RawSample:
        calls = [self.calls[index] for index in sorted(self.calls)]
        return RawSample("".join(self.content), calls, self.finish_reason,
                         "".join(self.reasoning))


class ChatStreamAssembler:
    """Accumulates ``chat.completion.chunk`` events per choice index."""

    def __init__(self) -> None:
        self._choices: dict[int, _ChoiceParts] = {}
        self._usage = Usage()

    def add(self, chunk: Mapping[str, Any]) -> list[tuple[int, str]]:
        """Take one chunk; return its content deltas as ``(choice_index, text)``."""
        if chunk.get("usage"):
            self._usage = chat_usage(chunk["usage"])
        deltas = []
        for choice in chunk.get("choices") or []:
            choice = mapping(choice)
            index = as_int(choice.get("index"))
            parts = self._choices.setdefault(index, _ChoiceParts())
            delta = mapping(choice.get("delta"))
            if delta.get("content"):
                text = content_text(delta["content"])
                parts.content.append(text)
                deltas.append((index, text))
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str):
                parts.reasoning.append(reasoning)
            for call_delta in delta.get("tool_calls") or []:
                parts.add_call_delta(mapping(call_delta))
            parts.finish_reason = choice.get("finish_reason") or parts.finish_reason
        return deltas

    def reply(self) -> RawReply:
        """The assembled reply so far (complete once the stream ended)."""
        samples = [self._choices[index].sample() for index in sorted(self._choices)]
        return RawReply(samples, self._usage)
