"""The JSON shapes the workbench serves, built the same way for run directories and Redis.

A node record is what ``nodes.jsonl`` holds (and what the Redis store's
``records(include_detail=True)`` returns): ``node_id``, ``node_label``,
``coordinate``, ``parents``, ``created_at``, ``core`` and ``detail``.
Candidates are ranked with the harness's own rules
(:mod:`srh_core.ranking`), so the front shown is the front the run uses.
Text is passed through as data: the page renders it as text, never HTML.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from srh_core.ranking import (
    RankingPolicy,
    Selection,
    pareto_front,
    rank_candidates,
    select_best,
)
from srh_core.types import CandidateRecord, finite_float

PREVIEW_CHARS = 400
TABLE_ROWS = 50


def node_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the tree shows of one node: coordinate, parents, tool outcomes, a preview."""
    core = record.get("core") or {}
    detail = record.get("detail") or {}
    message = detail.get("message") or {}
    return {
        "node_id": record.get("node_id"), "label": record.get("node_label"),
        "coordinate": record.get("coordinate") or {}, "parents": record.get("parents") or [],
        "created_at": record.get("created_at"),
        "n_tool_calls": core.get("n_tool_calls", 0), "n_errors": core.get("n_errors", 0),
        "tools": [{"tool": t.get("tool"), "ok": t.get("ok")} for t in core.get("tools") or []],
        "preview": _clip(core.get("content") or message.get("content") or "", PREVIEW_CHARS),
        "finish_reason": message.get("finish_reason") or detail.get("finish_reason"),
    }


def node_detail(record: Mapping[str, Any],
                prompt_of: Callable[[str], list[Any] | None]) -> dict[str, Any]:
    """Everything about one node: the model messages, its reply, tool calls and results."""
    detail = record.get("detail") or {}
    prompt = detail.get("prompt")
    if prompt is None and detail.get("prompt_node"):
        prompt = prompt_of(str(detail["prompt_node"]))
    calls = detail.get("tool_calls") or []
    results = detail.get("tool_results") or []
    tool_rows = []
    for index, call in enumerate(calls):
        result = results[index] if index < len(results) else {}
        tool_rows.append({"name": call.get("name"), "id": call.get("id"),
                          "params": call.get("params"), "ok": result.get("ok"),
                          "result_str": result.get("result_str", ""),
                          "meta": result.get("meta_data") or {}})
    return {**node_summary(record), "prompt": prompt or [],
            "prompt_node": detail.get("prompt_node"), "content": detail.get("content", ""),
            "message": detail.get("message") or {}, "tool_calls": tool_rows,
            "usage": detail.get("usage") or {}}


def usage_totals(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Tokens and cost of the run: one usage per step (it is repeated on the step's K nodes)."""
    tokens = {"prompt": 0, "completion": 0, "total": 0}
    cost = 0.0
    for record in records:
        if (record.get("coordinate") or {}).get("K") != 1:
            continue
        usage = (record.get("detail") or {}).get("usage") or record.get("usage") or {}
        tokens["prompt"] += int(usage.get("prompt_tokens") or 0)
        tokens["completion"] += int(usage.get("completion_tokens") or 0)
        tokens["total"] += int(usage.get("total_tokens") or 0)
        cost += float(finite_float(usage.get("price")) or 0.0)
    return {"tokens": tokens, "cost": cost if cost > 0 else None}


def step_usage(record: Mapping[str, Any]) -> dict[str, Any]:
    """The usage block worth keeping in memory for :func:`usage_totals`."""
    usage = (record.get("detail") or {}).get("usage") or {}
    return {key: usage.get(key) for key in ("prompt_tokens", "completion_tokens",
                                            "total_tokens", "price") if key in usage}


def candidate_row(candidate: CandidateRecord, metric: str) -> dict[str, Any]:
    return {"formula": candidate.formula, "latex": formula_latex(candidate.formula),
            "complexity": candidate.complexity, "node_id": candidate.node_id,
            "tool": candidate.details.get("tool"),
            "train": finite_float(candidate.metric(metric, "train")),
            "validation": finite_float(candidate.metric(metric, "validation")),
            "r2": finite_float(candidate.metric("r2", "train"))}


def front_view(candidates: Iterable[CandidateRecord], metric: str,
               larger_is_better: bool, selection: Selection = "best") -> dict[str, Any]:
    """The ranked pool's head, its Pareto front and the best candidate (by ``selection``)."""
    policy = RankingPolicy(metric, larger_is_better)
    ranked = rank_candidates(candidates, policy)
    front = [candidate_row(candidate, metric) for candidate in pareto_front(ranked)]
    best = select_best(ranked, policy, selection)
    return {"metric": metric, "larger_is_better": larger_is_better, "ranked_count": len(ranked),
            "best": candidate_row(ranked[best], metric) if best is not None else None,
            "front": front,
            "top": [candidate_row(c, metric) for c in ranked[:TABLE_ROWS]]}


def formula_latex(formula: str | None) -> str | None:
    """LaTeX of a formula via the engine's parser and renderer (never eval); None if unparsable."""
    if not formula:
        return None
    from srh_engine import parse
    from srh_engine.rendering import to_str

    try:
        return to_str(parse(formula), latex=True, number_format=".6g")
    except Exception:  # a formula the engine cannot read is shown as text only
        return None


def settings_view(settings: Mapping[str, Any]) -> dict[str, Any]:
    names = {"R": "max_restart_loop", "C": "global_width", "L": "max_refinement_depth",
             "K": "local_sample_size"}
    view = {short: int(settings.get(long) or 1) for short, long in names.items()}
    view.update(max_nodes=view["R"] * view["C"] * view["L"] * view["K"],
                llm_provider=settings.get("llm_provider"), llm_model=settings.get("llm_model"),
                ranking_metric=settings.get("ranking_metric") or "mse",
                larger_is_better=bool(settings.get("larger_is_better")),
                # runs from before the setting existed reported the most accurate candidate
                selection=settings.get("selection") or "accuracy",
                time_limit=settings.get("time_limit"))
    return view


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
