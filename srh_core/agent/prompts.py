"""The texts the agent shows the model: initial prompts and progress messages.

Pure functions of their inputs, so the embedded and distributed runtimes
build byte-identical conversations. Every text is bounded in length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from srh_core import formats
from srh_core.operators import BINARY_OPERATORS, UNARY_OPERATORS
from srh_core.types import CandidateRecord, finite_float

MAX_FRONT_ROWS = 8
MAX_FORMULA_CHARS = 160
MAX_VARIABLES_LISTED = 40
#: Features named at all (the ones past MAX_VARIABLES_LISTED by name only, so a
#: model can still refer to them).
MAX_NAMES_LISTED = 1000
MAX_UNIT_CHARS = 60


def system_prompt(max_depth: int, restart_records: Sequence[CandidateRecord], metric: str) -> str:
    """The branch-opening system prompt."""
    goal = _goal_line(restart_records, metric)
    return (
        "You are a symbolic-regression agent. Discover a short, exact formula that computes the "
        "target variable from the feature variables. Every number comes from the tools: use them "
        "to analyse the data, fit formulas and score them; never guess metrics. Prefer simple, "
        "interpretable formulas over accurate but complex ones; an exact formula has a train MSE "
        "of 0 up to rounding.\n"
        f"You have {max_depth} refinement step(s) in this conversation. Use early steps for "
        "targeted exploration, keep concrete candidate formulas as the budget shrinks, and call "
        "several tools per step when they are independent. At the final step, submit your best "
        "formula with submit_formula (or evaluate it) instead of exploring.\n"
        f"{goal}"
    )


def _goal_line(records: Sequence[CandidateRecord], metric: str) -> str:
    if not records:
        return "Goal: find a simple formula with an MSE of exactly 0."
    best = finite_float(records[0].metric(metric, "train"))
    if best is not None and best > 0:
        return (f"Goal: beat the previous best train {metric.upper()} of {best:.6g} "
                "(aim for 10x lower), or find a simpler formula that fits as well.")
    return "Goal: the previous restart already fits exactly; find a simpler exact formula."


def user_prompt(
    problem_description: str,
    features: Mapping[str, Any],
    target: str,
    target_values: Any,
    descriptions: Mapping[str, str],
    restart_records: Sequence[CandidateRecord],
    metric: str,
    limits: Sequence[str] = (),
    units: Mapping[str, str] | None = None,
) -> str:
    """The task: description, variables with ranges (and units when known), the run's limits
    (:func:`limit_lines`) and restart evidence."""
    units = units or {}
    lines = [problem_description.strip() or "Find the formula behind the data.", ""]
    lines.append(formats.TARGET_PREFIX + _variable_line(target, target_values, descriptions,
                                                        units.get(target)))
    lines.append(f"- Features ({len(features)}):")
    for name in list(features)[:MAX_VARIABLES_LISTED]:
        lines.append(formats.FEATURE_PREFIX + _variable_line(name, features[name], descriptions,
                                                             units.get(name)))
    if len(features) > MAX_VARIABLES_LISTED:
        rest = list(features)[MAX_VARIABLES_LISTED:MAX_NAMES_LISTED]
        more = len(features) - MAX_VARIABLES_LISTED - len(rest)
        lines.append(formats.more_features_line(len(features) - MAX_VARIABLES_LISTED, rest, more))
    lines.append(f"- Samples: {np.size(target_values)}")
    lines += list(limits)
    if restart_records:
        lines += ["", "Best formulas of earlier restarts (best first):"]
        lines += [f"{i}. {_record_line(record, metric)}" for i, record in
                  enumerate(restart_records, 1)]
        lines.append("Use them as evidence: improve on them or find simpler alternatives.")
    return "\n".join(lines)


def limit_lines(settings: Any) -> list[str]:
    """The prompt lines of a run's operator set, ``maxsize`` and guesses (none by default)."""
    lines = []
    binary, unary = settings.binary_operators, settings.unary_operators
    if binary is not None or unary is not None:
        lines.append(formats.operators_line([*(BINARY_OPERATORS if binary is None else binary),
                                             *(UNARY_OPERATORS if unary is None else unary)]))
    if settings.maxsize is not None:
        lines.append(formats.maxsize_line(settings.maxsize))
    nested, sizes = getattr(settings, "nested_constraints", None), getattr(
        settings, "constraints", None)
    if nested or sizes:
        lines.append(_constraints_line(nested or {}, sizes or {}))
    lines += [formats.guess_line(guess) for guess in settings.guesses]
    return lines


def _constraints_line(nested: Mapping[str, Mapping[str, int]],
                      sizes: Mapping[str, Any]) -> str:
    """The prompt line of PySR's ``nested_constraints`` and size ``constraints``."""
    parts = [f"at most {count} {inner} inside {outer}" for outer, inner_counts in nested.items()
             for inner, count in inner_counts.items() if count >= 0]
    for name, limit in sizes.items():
        if isinstance(limit, list):
            parts += [f"{side} of {name} at most {most} nodes"
                      for side, most in zip(("left", "right"), limit, strict=False) if most >= 0]
        elif limit >= 0:
            parts.append(f"argument of {name} at most {limit} nodes")
    return "- Constraints: " + "; ".join(parts)


def _variable_line(name: str, values: Any, descriptions: Mapping[str, str],
                   units: str | None = None) -> str:
    array = np.asarray(values, dtype=float).ravel()
    finite = array[np.isfinite(array)]
    note = descriptions.get(name, "").strip()[:120]
    if units is not None:  # a physicist's first clue: the dimensions a formula must respect
        note = f"units: {units[:MAX_UNIT_CHARS]}" + (f"; {note}" if note else "")
    if finite.size:
        return formats.variable_text(name, f"{finite.min():.4g}", f"{finite.max():.4g}", note)
    return f"{name}: no finite values" + (f" ({note})" if note else "")


def _record_line(record: CandidateRecord, metric: str) -> str:
    parts = [f"{record.formula[:MAX_FORMULA_CHARS]}", f"complexity={record.complexity}"]
    for split in ("train", "validation"):
        value = finite_float(record.metric(metric, split))
        if value is not None:
            parts.append(f"{split} {metric}={value:.6g}")
    return "; ".join(parts)


def progress_message(
    step: int, max_depth: int, front: Sequence[CandidateRecord], metric: str,
    where: str, seconds_left: float | None,
) -> dict[str, str]:
    """The user message appended after each step: where we are and the Pareto front.

    It shows only what this branch can know deterministically (its own
    candidates and the restart's seeds), so the embedded and distributed
    runtimes build the same conversations whatever the scheduling.

    Args:
        step: The step that comes next (one-based); 1 before the first step.
        max_depth: Steps per branch.
        front: This branch's Pareto front, best-ranked first.
        metric: Ranking metric name.
        where: Restart and branch position, e.g. "restart 1/2, branch 2/4".
        seconds_left: Remaining wall-clock budget, when there is one.
    """
    lines = [formats.progress_line(step, max_depth, where, seconds_left)]
    lines.append(_step_policy(max_depth - step))
    lines.append("")
    lines.append(_front_table(front, metric))
    return {"role": "user", "content": "\n".join(lines)}


def _step_policy(remaining: int) -> str:
    if remaining > 1:
        return "Plan the remaining steps; prefer actions that can give a simpler, exact formula."
    if remaining == 1:
        return "One step remains after this one: keep a concrete formula ready to submit."
    return "This is the final step: submit your best formula now (submit_formula)."


def _front_table(front: Sequence[CandidateRecord], metric: str) -> str:
    if not front:
        return "[Pareto front] empty: no formula has been scored yet."
    rows = [formats.front_header(metric)]
    for record in list(front)[:MAX_FRONT_ROWS]:
        train = _fmt(record.metric(metric, "train"))
        validation = _fmt(record.metric(metric, "validation"))
        rows.append(formats.front_row(record.complexity, train, validation,
                                      record.formula[:MAX_FORMULA_CHARS]))
    if len(front) > MAX_FRONT_ROWS:
        rows.append(f"... {len(front) - MAX_FRONT_ROWS} more on the front")
    return "\n".join(rows)


def _fmt(value: Any) -> str:
    number = finite_float(value)
    return "-" if number is None else f"{number:.6g}"
