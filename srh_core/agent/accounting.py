"""Run accounting: what each model response cost, and the run's totals.

Both runtimes account the same way, from the same data: the agent prices a
step's request when it arrives (:func:`step_usage`, called by
``SRAgent.request_llm``) and the result travels in the step plan's
``usage``; a store turns a kept plan into ``response.jsonl`` lines
(:func:`response_records`) and adds its :func:`plan_spend` to the run's
totals (in memory and the run directory embedded; one Lua script on a
cluster). Budgets (``max_cost``, ``max_tokens``) are read against those
totals before a step opens (:func:`srh_core.agent.outcome.budget_stop`).

One request may answer several samples (an ``n = K`` request): its tokens
are on the line of its first sample, the other lines carry zero tokens and
``billed_with`` naming that sample, so the lines always sum to the totals.
``latency_s`` is the step's request time (the K samples are collected
concurrently), counted once per step in ``model_seconds``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from srh_core.api.pricing import price_of, price_overrides
from srh_core.api.response import ModelPrice, ModelResponse, Usage

if TYPE_CHECKING:
    from srh_core.agent.steps import StepPlan

#: Keys :func:`step_usage` adds to a plan's usage besides ``Usage.to_dict()``.
ACCOUNTING_KEYS = ("provider", "model", "latency_s", "samples")


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


def price_table(settings: Any) -> dict[str, ModelPrice]:
    """The run's price overrides (the ``prices`` setting), validated."""
    return price_overrides(getattr(settings, "prices", None))


def step_usage(usage: Mapping[str, Any], responses: Sequence[ModelResponse], *,
               provider: str, model: str | None, latency: float,
               overrides: Mapping[str, ModelPrice] | None = None) -> dict[str, Any]:
    """A step request's usage, priced by the price table, with its per-sample split.

    Args:
        usage: ``Usage.to_dict()`` of the whole call (every request it sent).
        responses: The K responses; one with its own ``usage`` came from its own request.
        provider: Provider that answered.
        model: Model that answered (None when the adapter does not say).
        latency: Seconds the request took.
        overrides: Price overrides from the settings.

    Returns:
        ``usage`` with ``price`` (USD or None), ``provider``, ``model``,
        ``latency_s`` and ``samples``: one ``{K, input_tokens, output_tokens,
        cached_tokens, price, billed_with}`` per response.
    """
    total = Usage.from_dict(usage)
    tariff = price_of(provider, model, overrides)
    own = {r.sample: r.usage for r in responses if r.usage is not None}
    shared = _minus(total, own.values())
    first_shared = min((r.sample for r in responses if r.sample not in own), default=None)
    samples = []
    for response in responses:
        part = own.get(response.sample) or (shared if response.sample == first_shared
                                             else Usage())
        price = _price(part, tariff)
        billed = response.sample if response.sample in own or response.sample == first_shared \
            else first_shared
        samples.append({"K": response.sample, "input_tokens": part.prompt_tokens,
                        "output_tokens": part.completion_tokens,
                        "cached_tokens": part.cached_tokens, "price": price,
                        "billed_with": billed})
    priced = [s["price"] for s in samples]
    cost = None if any(p is None for p in priced) else sum(priced)
    return {**total.to_dict(), "price": cost, "provider": provider, "model": model,
            "latency_s": round(float(latency), 6), "samples": samples}


def _minus(total: Usage, parts: Iterable[Usage | None]) -> Usage:
    """What ``total`` leaves after ``parts`` (the shared request's share, price included)."""
    used = sum((part for part in parts if part is not None), Usage(price=0.0))
    price = None if total.price is None or used.price is None else max(
        total.price - used.price, 0.0)
    return Usage(prompt_tokens=max(total.prompt_tokens - used.prompt_tokens, 0),
                 completion_tokens=max(total.completion_tokens - used.completion_tokens, 0),
                 total_tokens=max(total.total_tokens - used.total_tokens, 0),
                 cached_tokens=max(total.cached_tokens - used.cached_tokens, 0),
                 reasoning_tokens=max(total.reasoning_tokens - used.reasoning_tokens, 0),
                 price=price)


def _price(usage: Usage, tariff: ModelPrice | None) -> float | None:
    """USD of ``usage``: the table's tariff, else the adapter's own price, else None."""
    if tariff is not None:
        return tariff.cost(usage)
    if usage.price is not None:
        return float(usage.price)
    return 0.0 if usage.prompt_tokens == usage.completion_tokens == 0 else None


def response_records(run_id: str, plan: StepPlan) -> list[dict[str, Any]]:
    """The ``response.jsonl`` lines of a kept step plan, one per response (K order)."""
    usage = plan.usage or {}
    samples = {int(s["K"]): s for s in usage.get("samples") or ()}
    records = []
    for response in plan.responses:
        sample = samples.get(response.sample) or {}
        records.append({
            "run_id": run_id, "node_id": f"{run_id}:R{plan.R}-C{plan.C}-L{plan.L}-K"
                                         f"{response.sample}",
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


__all__ = ["ACCOUNTING_KEYS", "RunTotals", "call_seconds", "plan_spend", "price_table",
           "response_records", "step_usage", "tool_seconds"]
