"""Terminal output of the CLI: a live progress line and the result tables.

The progress line is drawn on stderr only when stderr is a terminal; logs
and progress never touch stdout, which carries the result (a table, or
exactly ``SearchResult.to_dict()`` with ``--json``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from srh_core.types import CandidateRecord, SearchResult, finite_float

MAX_FORMULA_WIDTH = 90
FRONT_ROWS = 12


class ProgressLine:
    """Observer of agent events that redraws one status line on a TTY."""

    def __init__(self, total_nodes: int, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = total_nodes
        self.started = time.monotonic()
        self.best: str | None = None

    def __call__(self, event: Mapping[str, Any]) -> None:
        if not self.enabled:
            return
        if event.get("event") == "step":
            self.best = event.get("best") or self.best
            self._draw(f"R{event['R']} C{event['C']} L{event['L']}", event.get("nodes", 0))
        elif event.get("event") == "finished":
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _draw(self, where: str, nodes: int) -> None:
        elapsed = time.monotonic() - self.started
        best = (self.best or "-")[:60]
        line = f"[{where}] {nodes}/{self.total} responses, {elapsed:5.1f}s, best: {best}"
        self.stream.write("\r\033[K" + line)
        self.stream.flush()


class StepLog:
    """Observer that writes one line per restart and per closed step (``verbosity=1``):
    where the search is, the run's best formula so far and its ranking metric."""

    def __init__(self, agent: Any, stream: TextIO | None = None) -> None:
        self.agent = agent
        self.stream = stream or sys.stdout
        self.started = time.monotonic()

    def __call__(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        if kind == "restart":
            self._write(f"restart {event['R']}: {len(event.get('seeds') or [])} seed formula(s)")
        elif kind == "step":
            best = self.agent.best_candidate()
            if best is None:
                text = "no candidate yet"
            else:
                label, value = self.agent.get_ranking_metric(best)
                text = f"best {label or 'metric'} {_number(value)}: {best.formula}"
            self._write(f"R{event['R']} C{event['C']} L{event['L']}: {text}")
        elif kind == "finished":
            self._write(f"finished: {event.get('status')}")

    def _write(self, text: str) -> None:
        self.stream.write(f"[srh {time.monotonic() - self.started:6.1f}s] {text}\n")
        self.stream.flush()


def _number(value: Any) -> str:
    number = finite_float(value)
    return "-" if number is None else f"{number:.4g}"


def front_table(result: SearchResult, metric: str) -> str:
    """The Pareto front as an aligned text table."""
    front: Sequence[CandidateRecord] = result.front()[:FRONT_ROWS]
    if not front:
        return "No candidate formula was found."
    header = ("complexity", f"train {metric}", f"valid {metric}", "r2", "formula")
    rows = [header] + [_front_row(candidate, metric) for candidate in front]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
             + "  " + row[-1] for row in rows]
    return "Pareto front (best first):\n" + "\n".join(lines)


def _front_row(candidate: CandidateRecord, metric: str) -> tuple[str, ...]:
    split = "validation" if candidate.split_metrics("validation") else "train"
    formula = candidate.formula
    if len(formula) > MAX_FORMULA_WIDTH:
        formula = formula[: MAX_FORMULA_WIDTH - 3] + "..."
    return (str(candidate.complexity), _number(candidate.metric(metric, "train")),
            _number(candidate.metric(metric, "validation")),
            _number(candidate.metric("r2", split)), formula)


def summary(result: SearchResult, metric: str, run_dir: str | None,
            validation_fraction: float | None = None) -> str:
    """Status line, best formula (with the split its metrics are on, and why it was chosen
    when the front holds a more accurate one) and the front, for humans."""
    lines = [f"Status: {result.status}" + (f" ({result.stop_reason})" if result.stop_reason
                                           else ""), f"Progress: {result.progress}"]
    if result.totals:
        lines.append(f"Spend: {spend_line(result.totals)}")
    best = result.best
    if best is not None:
        lines.append(f"Best formula: {best.formula}")
        lines.append(split_line(best, validation_fraction))
        reason = choice_line(result, metric)
        if reason:
            lines.append(reason)
    lines += ["", front_table(result, metric)]
    if run_dir:
        lines += ["", f"Run directory: {run_dir}"]
    return "\n".join(lines)


def split_line(best: CandidateRecord, validation_fraction: float | None) -> str:
    """Which split the ranking and the choice read, and why."""
    if best.split_metrics("validation"):
        share = "" if validation_fraction is None else f" ({validation_fraction:g} of the rows)"
        return (f"Metrics: on the validation split{share}, rows no formula was fitted on, so "
                "ranking and choice do not reward fitting noise")
    why = ("validation_fraction is 0" if validation_fraction in (0, 0.0) else
           "the run has no validation split")
    return f"Metrics: on the train split ({why}: the rows the formulas were fitted on)"


def choice_line(result: SearchResult, metric: str) -> str | None:
    """Why the reported formula beat a more accurate one of the front (None when it did not)."""
    best = result.best
    if best is None or result.best_candidate == 0:
        return None
    accurate = result.candidates[0]
    split = "validation" if best.split_metrics("validation") else "train"
    losses = [finite_float(c.metric("r2", split)) for c in (best, accurate)]
    loss_text = ""
    if None not in losses:
        chosen, lowest = (max(1.0 - r2, 0.0) for r2 in losses)  # type: ignore[operator]
        loss_text = f", loss 1-R^2 {chosen:.3g} against {lowest:.3g}"
    from srh_core.ranking import SELECTION_LOSS_FACTOR

    return (f"Chosen over the more accurate {_short(accurate.formula)} (complexity "
            f"{accurate.complexity} against {best.complexity}; {split} {metric} "
            f"{_number(accurate.metric(metric, split))} against "
            f"{_number(best.metric(metric, split))}{loss_text}): among the front's formulas "
            f"within {SELECTION_LOSS_FACTOR:g}x of the lowest loss, its loss falls fastest per "
            "unit of complexity "
            "(--selection best, PySR's rule; --selection accuracy reports the most accurate)")


def _short(formula: str) -> str:
    return formula if len(formula) <= 60 else formula[:57] + "..."


def spend_line(totals: Mapping[str, Any]) -> str:
    """Run totals in one line: tokens, cost, and where the time went."""
    def seconds(name: str) -> str:
        value = totals.get(name)
        return "-" if value is None else f"{float(value):.1f}s"

    cost = f"${float(totals.get('cost') or 0.0):.4f}"
    if int(totals.get("unpriced") or 0):
        cost += f" (+{int(totals['unpriced'])} unpriced request(s))"
    return (f"{int(totals.get('input_tokens') or 0):,} tokens in "
            f"({int(totals.get('cached_tokens') or 0):,} cached), "
            f"{int(totals.get('output_tokens') or 0):,} out, {cost}; "
            f"model {seconds('model_seconds')}, tools {seconds('tool_seconds')}, "
            f"wall {seconds('wall_seconds')}")
