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
from typing import Any

from srh_core.api.pricing import price_of, price_overrides
from srh_core.api.response import ModelPrice, ModelResponse, Usage

#: Keys :func:`step_usage` adds to a plan's usage besides ``Usage.to_dict()``.
ACCOUNTING_KEYS = ("provider", "model", "latency_s", "samples")


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


__all__ = ["ACCOUNTING_KEYS", "price_table", "step_usage"]
