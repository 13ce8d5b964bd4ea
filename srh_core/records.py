"""Records that several layers share, below all of them: step plans, totals, node ids.

The agent writes them, the stores (in memory, the run directory, Redis)
keep them, and the runtimes pass them between tasks; so they live here,
importing only the plain types, and every layer imports them from here.

- :class:`StepPlan`: one opened refinement step (prompt, K responses, usage);
- :class:`RunTotals`: a run's spend, and what a kept plan adds to it
  (:func:`plan_spend`) and its ``response.jsonl`` lines (:func:`response_records`);
- :class:`SampleScope`: what a store's sample scope yields (the in-memory one);
- :func:`tool_call_record`: one ``tool_calls.jsonl`` line, and the call times in it;
- :func:`node_label` / :func:`node_id`: a node's name, the idempotency key of every write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from srh_core.api.response import ModelResponse
from srh_core.types import CandidateRecord, ParentLink, ToolCall, ToolCallResult, json_value


def node_label(R: int, C: int, L: int, K: int) -> str:
    """``R{R}-C{C}-L{L}-K{K}`` (one-based)."""
    return f"R{R}-C{C}-L{L}-K{K}"


def node_id(run_id: str, R: int, C: int, L: int, K: int) -> str:
    """``{run_id}:R{R}-C{C}-L{L}-K{K}``: the idempotency key of every write of a sample."""
    return f"{run_id}:{node_label(R, C, L, K)}"


@dataclass(slots=True)
class StepPlan:
    """The opened step (R, C, L) of a branch and its K model responses.

    Attributes:
        R, C, L: The step's coordinate.
        prompt: The messages sent to the model.
        responses: The K responses, in sample order (``response.sample`` is K).
        parents: Parent links of the step's K nodes.
        usage: Token usage of the request.
        route: Which model answered (tier, provider, model, reason).
        buffer: The branch buffer after the opening hooks; None when it equals
            ``prompt`` (the common case, stored once).
        data_revision: The context's data revision the step was opened on (the
            branch's after the step); None in plans recorded before data refresh.
    """

    R: int
    C: int
    L: int
    prompt: list[dict[str, Any]]
    responses: list[ModelResponse]
    parents: list[ParentLink]
    usage: dict[str, Any] = field(default_factory=dict)
    route: dict[str, Any] = field(default_factory=dict)
    buffer: list[dict[str, Any]] | None = None
    data_revision: int | None = None

    @property
    def K(self) -> int:
        return len(self.responses)

    def branch_buffer(self) -> list[dict[str, Any]]:
        """The branch buffer after the step's opening (a copy)."""
        source = self.prompt if self.buffer is None else self.buffer
        return [dict(message) for message in source]

    def to_dict(self) -> dict[str, Any]:
        return {
            "R": self.R, "C": self.C, "L": self.L,
            "prompt": json_value(self.prompt),
            "responses": [response.to_dict() for response in self.responses],
            "parents": [link.to_dict() for link in self.parents],
            "usage": json_value(self.usage), "route": json_value(self.route),
            "buffer": None if self.buffer is None else json_value(self.buffer),
            "data_revision": self.data_revision,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepPlan:
        buffer = data.get("buffer")
        return cls(
            R=int(data["R"]), C=int(data["C"]), L=int(data["L"]),
            prompt=list(data.get("prompt") or []),
            responses=[ModelResponse.from_dict(r) for r in data.get("responses") or []],
            parents=[ParentLink.from_dict(link) for link in data.get("parents") or []],
            usage=dict(data.get("usage") or {}), route=dict(data.get("route") or {}),
            buffer=None if buffer is None else list(buffer),
            data_revision=_optional_int(data.get("data_revision")))


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True, slots=True)
class RunTotals:
    """Spend of a run (or a sweep): tokens, cost and time.

    Attributes:
        requests: Model steps requested (one per opened step).
        responses: Model responses recorded (K per step).
        input_tokens: Prompt tokens, cached ones included.
        output_tokens: Completion tokens, reasoning included.
        cached_tokens: Prompt tokens the provider served from its cache.
        cost: USD of the priced requests.
        unpriced: Requests of a model with no known price (their cost is not in ``cost``).
        model_seconds: Time spent waiting for model responses.
        tool_seconds: Time spent running tool calls.
        wall_seconds: Wall-clock time of the run (its sessions summed when resumed).
    """

    requests: int = 0
    responses: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    unpriced: int = 0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    wall_seconds: float = 0.0

    @property
    def tokens(self) -> int:
        """Input plus output tokens (what ``max_tokens`` bounds)."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: RunTotals) -> RunTotals:
        return RunTotals(**{f.name: getattr(self, f.name) + getattr(other, f.name)
                            for f in fields(self)})

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tokens"] = self.tokens
        for name in ("cost", "model_seconds", "tool_seconds", "wall_seconds"):
            data[name] = round(float(data[name]), 9)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RunTotals:
        data = data or {}
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = data.get(f.name)
            kind = int if f.type in ("int", int) else float
            values[f.name] = kind(raw) if raw is not None else kind(0)
        return cls(**values)

    def with_times(self, *, tool_seconds: float | None = None,
                   wall_seconds: float | None = None) -> RunTotals:
        """A copy with the run's tool and wall time set."""
        changes = {name: value for name, value in (("tool_seconds", tool_seconds),
                                                    ("wall_seconds", wall_seconds))
                   if value is not None}
        return replace(self, **changes)


def response_records(run_id: str, plan: StepPlan) -> list[dict[str, Any]]:
    """The ``response.jsonl`` lines of a kept step plan, one per response (K order)."""
    usage = plan.usage or {}
    samples = {int(s["K"]): s for s in usage.get("samples") or ()}
    records = []
    for response in plan.responses:
        sample = samples.get(response.sample) or {}
        records.append({
            "run_id": run_id, "node_id": node_id(run_id, plan.R, plan.C, plan.L, response.sample),
            "R": plan.R, "C": plan.C, "L": plan.L, "K": response.sample,
            "provider": usage.get("provider"), "model": usage.get("model"),
            "input_tokens": int(sample.get("input_tokens") or 0),
            "output_tokens": int(sample.get("output_tokens") or 0),
            "cached_tokens": int(sample.get("cached_tokens") or 0),
            "latency_s": float(usage.get("latency_s") or 0.0),
            "price": sample.get("price") if sample else usage.get("price"),
            "billed_with": sample.get("billed_with", response.sample),
            "finish_reason": response.finish_reason})
    return records


def plan_spend(plan: StepPlan) -> RunTotals:
    """What one kept step adds to the run's totals."""
    usage = plan.usage or {}
    price = usage.get("price")
    return RunTotals(requests=1, responses=plan.K,
                     input_tokens=int(usage.get("prompt_tokens") or 0),
                     output_tokens=int(usage.get("completion_tokens") or 0),
                     cached_tokens=int(usage.get("cached_tokens") or 0),
                     cost=float(price or 0.0), unpriced=int(price is None),
                     model_seconds=float(usage.get("latency_s") or 0.0))


def tool_seconds(records: Iterable[Mapping[str, Any]]) -> float:
    """Tool time of a run from its ``tool_calls.jsonl`` records (their measured durations)."""
    return sum(call_seconds(record.get("meta")) for record in records)


def call_seconds(meta: Mapping[str, Any] | None) -> float:
    """The measured duration of one tool call from its result's ``meta_data``."""
    value = (meta or {}).get("elapsed_s", (meta or {}).get("duration_s"))
    try:
        return max(float(value), 0.0) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def tool_call_record(coordinate: Mapping[str, int], call: ToolCall, result: ToolCallResult,
                     forced: bool) -> dict[str, Any]:
    """One line of ``tool_calls.jsonl``."""
    return {**coordinate, "forced": forced, "call": call.to_dict(), "ok": result.ok,
            "result_str": result.result_str, "meta": result.meta_data}


class SampleScope:
    """What a store's ``sample()`` scope yields: the sample's results, once run."""

    def __init__(self) -> None:
        self.results: list[ToolCallResult] = []
        self.candidates: list[CandidateRecord] | None = None

    def keep_results(self, results: list[ToolCallResult],
                     candidates: Sequence[CandidateRecord] | None = None) -> None:
        """The sample's results, and the candidates found in them (computed once)."""
        self.results = list(results)
        self.candidates = None if candidates is None else list(candidates)
