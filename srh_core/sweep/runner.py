"""Running a sweep: cells as runs, progress while they run, one results table.

The sweep's state lives in ``OUT/sweep.json`` (written atomically after
every change), so a sweep can be stopped and resumed: finished cells are
never re-run, cells in flight are looked up again by run id. A cell whose
run failed, or whose run Redis no longer knows (lost), is retried up to
``retries`` times with a new run id; after that it is reported as failed
with the reason. Ctrl-C (or SIGTERM) stops launching cells, interrupts the
running ones through the backend (embedded cells end as interrupted and
resume on the next ``srh sweep``; cluster runs go on on the cluster) and
writes the table of what is done. The table (``results.csv`` and ``results.json``) has one
row per cell: status, best formula, metrics, solved flag when the ground
truth is known, time, and the run's spend (tokens, cost, model and tool time).
The sweep budget (``SweepSpec.max_cost`` / ``max_tokens``) caps each cell's
run at what is left and skips the cells that would start after it is spent
(``skipped``; the next ``srh sweep`` with a higher budget runs them).
"""

from __future__ import annotations

import csv
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from srh_core.agent.outcome import INTERRUPTED_BY_USER
from srh_core.errors import SRHarnessError
from srh_core.jsonio import atomic_write_json, read_json
from srh_core.sweep.spec import Cell, SweepSpec, cells, problem_suite
from srh_core.types import SearchResult

logger = logging.getLogger("srh.sweep")

FINAL = ("done", "failed", "skipped")
POLL_SECONDS = 1.0
BACKOFF_MAX = 10.0
CSV_COLUMNS = ("cell", "problem", "seed", "variant", "status", "run_status", "solved", "r2_fresh",
               "best_formula", "complexity", "train_mse", "validation_mse", "seconds", "tokens",
               "cost", "model_seconds", "tool_seconds", "attempts", "run_id", "error")
SPEND_COLUMNS = ("tokens", "cost", "model_seconds", "tool_seconds")
SKIPPED = "not run: the sweep's budget is spent"


class RunLost(SRHarnessError):
    """The backend no longer knows a run (e.g. Redis lost its keys)."""


class BackendUnavailable(SRHarnessError):
    """The backend cannot be reached right now (e.g. Redis is restarting); try again later."""


MAX_KICKS = 2


class SweepBackend(Protocol):
    """Where a sweep's cells run: in this machine's processes, or on a cluster."""

    poll_seconds: float
    """How long the runner waits between two looks at the cells in flight."""

    def submit(self, run_id: str, cell: Cell, data: CellData) -> None: ...

    def poll(self, run_id: str) -> SearchResult | None: ...

    def progress(self, run_id: str) -> int | None:
        """A number that grows while the run makes progress (its node count), or None
        when there is nothing to watch (not started yet, or it cannot stall)."""
        ...

    def kick(self, run_id: str) -> None:
        """Re-send the stalled run's next tasks."""
        ...

    def interrupt(self) -> None:
        """The user stopped the sweep: interrupt what runs here (bounded)."""
        ...

    def close(self) -> None:
        """Release what the backend holds (worker processes), bounded."""
        ...


@dataclass(frozen=True, slots=True)
class CellData:
    X: dict[str, np.ndarray]
    y: dict[str, np.ndarray]
    description: str
    settings: Any
    problem: Any = None


class SweepRunner:
    """Drives the cells of a sweep on a backend until every cell is final."""

    def __init__(self, spec: SweepSpec, out_dir: str | Path, backend: SweepBackend, *,
                 progress: Callable[[str], None] | None = None) -> None:
        self.spec = spec
        self.out = Path(out_dir)
        self.backend = backend
        self.progress = progress or (lambda line: print(line, file=sys.stderr))
        self.state = self._load_state()

    # ------------------------------------------------------------- state
    def _load_state(self) -> dict[str, dict[str, Any]]:
        path = self.out / "sweep.json"
        known = read_json(path)["cells"] if path.exists() else {}
        state = {cell.cell_id: known.get(cell.cell_id) or {
            "problem": cell.problem, "seed": cell.seed, "variant": cell.variant,
            "dataset": cell.dataset, "status": "pending", "attempts": 0}
            for cell in cells(self.spec)}
        for entry in state.values():  # a skipped cell gets its chance under the new budget
            if entry["status"] == "skipped":
                entry["status"], entry["error"] = "pending", None
        return state

    def save(self) -> None:
        atomic_write_json(self.out / "sweep.json", {"sweep": self.spec.name,
                                                     "cells": self.state})

    def counts(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for entry in self.state.values():
            totals[entry["status"]] = totals.get(entry["status"], 0) + 1
        return totals

    # --------------------------------------------------------------- loop
    def run(self) -> list[dict[str, Any]]:
        """Run until every cell is done or failed; return the table rows."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.save()
        try:
            return self._run()
        except KeyboardInterrupt:
            self._interrupted()
            raise
        finally:
            self.backend.close()

    def _interrupted(self) -> None:
        """Ctrl-C: no new cell; the running ones interrupted, their results kept."""
        self.progress(f"[sweep] {self.spec.name}: interrupted; stopping the running cells")
        self.backend.interrupt()
        for cell_id, entry in self.state.items():
            if entry["status"] != "running":
                continue
            try:
                self._poll(cell_id, entry)
            except Exception as error:  # noqa: BLE001 - interrupted before the backend had it
                logger.info("cell %s was not submitted (%s); it is pending again", cell_id,
                            error)
                self._resume_later(entry)
        self.write_table()

    def _resume_later(self, entry: dict[str, Any]) -> None:
        """Not an attempt that failed: the next srh sweep submits the same run again."""
        entry.update(status="pending", attempts=entry["attempts"] - 1,
                     error="interrupted; the next srh sweep resumes it")
        self.save()

    def _run(self) -> list[dict[str, Any]]:
        backoff = POLL_SECONDS
        while not all(e["status"] in FINAL for e in self.state.values()):
            try:
                self._tick()
                backoff = POLL_SECONDS
            except BackendUnavailable as error:
                self.progress(f"[sweep] backend unavailable ({error}); retrying in "
                              f"{backoff:.0f}s")
                time.sleep(backoff)
                backoff = min(BACKOFF_MAX, backoff * 2)
                continue
            self.progress(f"[sweep] {self.spec.name}: {self._counts_text()}")
            if not all(e["status"] in FINAL for e in self.state.values()):
                time.sleep(self.backend.poll_seconds)
        return self.write_table()

    def _counts_text(self) -> str:
        return ", ".join(f"{n} {status}" for status, n in sorted(self.counts().items()))

    def _tick(self) -> None:
        for cell_id, entry in self.state.items():
            if entry["status"] == "running":
                self._poll(cell_id, entry)
        in_flight = sum(e["status"] == "running" for e in self.state.values())
        left = self.budget_left()
        capacity = getattr(self.backend, "capacity", None) or self.spec.max_parallel
        slots = min(self.spec.max_parallel, capacity)
        for cell in cells(self.spec):
            entry = self.state[cell.cell_id]
            if entry["status"] != "pending" or in_flight >= slots:
                continue
            if left is not None and any(value <= 0 for value in left.values()):
                entry["status"], entry["error"] = "skipped", SKIPPED
                self.save()
                continue
            self._submit(cell, entry, left)
            in_flight += entry["status"] == "running"

    # ------------------------------------------------------------ budget
    def spent(self) -> dict[str, float]:
        """Tokens and cost of the sweep's finished runs (every attempt that reported)."""
        return {"tokens": sum(e.get("spent_tokens", 0) for e in self.state.values()),
                "cost": sum(e.get("spent_cost", 0.0) for e in self.state.values())}

    def budget_left(self) -> dict[str, float] | None:
        """What the sweep's budget leaves (``max_cost``, ``max_tokens``), or None without one."""
        spent = self.spent()
        left = {}
        if self.spec.max_cost is not None:
            left["max_cost"] = self.spec.max_cost - spent["cost"]
        if self.spec.max_tokens is not None:
            left["max_tokens"] = self.spec.max_tokens - spent["tokens"]
        return left or None

    def _submit(self, cell: Cell, entry: dict[str, Any],
                left: Mapping[str, float] | None = None) -> None:
        entry["attempts"] += 1
        entry["run_id"] = cell.run_id(self.spec.name, entry["attempts"])
        entry["submitted_at"] = time.time()
        entry["status"] = "running"
        self.save()
        try:
            self.backend.submit(entry["run_id"], cell, capped(cell_data(self.spec, cell), left))
        except BackendUnavailable:
            entry["status"], entry["attempts"] = "pending", entry["attempts"] - 1
            self.save()
            raise
        except Exception as error:  # a bad cell must not stop the sweep
            self._fail(entry, f"submit failed: {type(error).__name__}: {error}")

    def _poll(self, cell_id: str, entry: dict[str, Any]) -> None:
        try:
            result = self.backend.poll(entry["run_id"])
        except RunLost as lost:
            self._fail(entry, f"run lost: {lost}")
            return
        if result is None:
            self._watch(entry)
            return
        entry["seconds"] = time.time() - entry["submitted_at"]
        entry.update(summarize(result, self.spec, entry))
        totals = result.totals or {}  # every attempt's spend counts against the sweep budget
        entry["spent_tokens"] = entry.get("spent_tokens", 0) + int(totals.get("tokens") or 0)
        entry["spent_cost"] = entry.get("spent_cost", 0.0) + float(totals.get("cost") or 0.0)
        if result.status == "failed":
            self._fail(entry, f"run failed: {result.stop_reason}")
        elif result.status == "interrupted" and result.stop_reason == INTERRUPTED_BY_USER:
            self._resume_later(entry)
        else:
            entry["status"] = "done"
            self.save()

    def _watch(self, entry: dict[str, Any]) -> None:
        """Kick a run that made no progress for ``stall_seconds``; then give it up."""
        now, progress = time.time(), self.backend.progress(entry["run_id"])
        if progress is None:  # not started, or nothing to watch: the clock starts later
            entry.update(progress_at=now, kicks=0)
            return
        if progress != entry.get("progress"):
            entry.update(progress=progress, progress_at=now, kicks=0)
            return
        if now - entry.get("progress_at", now) < self.spec.stall_seconds:
            return
        if entry.get("kicks", 0) >= MAX_KICKS:
            self._fail(entry, f"stalled: no progress for {self.spec.stall_seconds:g}s after "
                              f"{MAX_KICKS} kicks")
            return
        entry["kicks"] = entry.get("kicks", 0) + 1
        entry["progress_at"] = now
        logger.warning("run %s stalled; re-sending its next tasks", entry["run_id"])
        self.backend.kick(entry["run_id"])

    def _fail(self, entry: dict[str, Any], reason: str) -> None:
        entry["error"] = reason
        entry["status"] = "pending" if entry["attempts"] <= self.spec.retries else "failed"
        logger.warning("cell %s|%s|%s: %s (%s)", entry["problem"], entry["seed"],
                       entry["variant"], reason,
                       "retrying" if entry["status"] == "pending" else "giving up")
        self.save()

    # -------------------------------------------------------------- table
    def write_table(self) -> list[dict[str, Any]]:
        rows = [table_row(cell_id, entry) for cell_id, entry in self.state.items()]
        atomic_write_json(self.out / "results.json", {"sweep": self.spec.name, "rows": rows})
        with (self.out / "results.csv").open("w", newline="", encoding="utf-8") as stream:
            writer = csv.DictWriter(stream, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        return rows


def capped(data: CellData, left: Mapping[str, float] | None) -> CellData:
    """The cell with its run's budgets lowered to what the sweep has left."""
    if not left:
        return data
    changes: dict[str, Any] = {}
    for name, value in left.items():
        own = getattr(data.settings, name)
        cap = value if name == "max_cost" else int(value)
        changes[name] = cap if own is None else min(own, cap)
    return replace(data, settings=data.settings.replace(**changes))


def cell_data(spec: SweepSpec, cell: Cell) -> CellData:
    """The data, description and settings of one cell."""
    variant = next(v for v in spec.variants if v.name == cell.variant)
    settings = spec.search_settings(variant).replace(seed=cell.seed)
    if cell.dataset:
        return _dataset_data(spec, cell, settings)
    problem = problem_suite(spec).get(cell.problem)
    X, y = problem.sample(spec.samples, seed=cell.seed, noise=spec.noise)
    description = (f"Find the formula for {problem.output} as a function of "
                   f"{', '.join(problem.feature_names)}.")
    return CellData(X, {problem.output: y}, description, settings, problem)


def _dataset_data(spec: SweepSpec, cell: Cell, settings: Any) -> CellData:
    from srh_core.context import load_tabular

    dataset = next(d for d in spec.datasets if d.name == cell.problem)
    data, _ = load_tabular(Path(spec.base_dir) / dataset.path)
    X = {name: np.asarray(v) for name, v in data.items() if name != dataset.target}
    return CellData(X, {dataset.target: np.asarray(data[dataset.target])},
                    dataset.description or f"Find {dataset.target}.", settings)


def summarize(result: SearchResult, spec: SweepSpec, entry: Mapping[str, Any]
              ) -> dict[str, Any]:
    """The table fields of a finished run (judged on fresh points when possible)."""
    best = result.best
    summary: dict[str, Any] = {"run_status": result.status, "stop_reason": result.stop_reason,
                               "best_formula": best.formula if best else None}
    totals = result.totals or {}
    spent = {column: totals.get(column) for column in SPEND_COLUMNS}
    summary.update(spent)
    if best is None:
        return summary
    summary.update(complexity=best.complexity, train_mse=best.metric("mse", "train"),
                   validation_mse=best.metric("mse", "validation"))
    if not entry.get("dataset"):
        judgement = problem_suite(spec).get(entry["problem"]).judge(best.formula,
                                                                   seed=entry["seed"])
        summary.update(solved=judgement.solved, r2_fresh=judgement.to_dict()["r2"])
    return summary


def table_row(cell_id: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    row = {column: entry.get(column) for column in CSV_COLUMNS}
    row["cell"] = cell_id
    return row


