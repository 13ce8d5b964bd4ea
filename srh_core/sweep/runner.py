"""Running a sweep: cells as runs, progress while they run, one results table.

The sweep's state lives in ``OUT/sweep.json`` (written atomically after
every change), so a sweep can be stopped and resumed: finished cells are
never re-run, cells in flight are looked up again by run id. A cell whose
run failed, or whose run Redis no longer knows (lost), is retried up to
``retries`` times with a new run id; after that it is reported as failed
with the reason. The table (``results.csv`` and ``results.json``) has one
row per cell: status, best formula, metrics, solved flag when the ground
truth is known, time.
"""

from __future__ import annotations

import csv
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from srh_core.errors import SRHarnessError
from srh_core.jsonio import atomic_write_json, read_json
from srh_core.sweep.spec import Cell, SweepSpec, cells, problem_suite
from srh_core.types import SearchResult

logger = logging.getLogger("srh.sweep")

FINAL = ("done", "failed")
POLL_SECONDS = 1.0
BACKOFF_MAX = 10.0
CSV_COLUMNS = ("cell", "problem", "seed", "variant", "status", "run_status", "solved", "r2_fresh",
               "best_formula", "complexity", "train_mse", "validation_mse", "seconds", "attempts",
               "run_id", "error")


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

    def progress(self, run_id: str) -> int:
        """A number that grows while the run makes progress (its node count)."""
        ...

    def kick(self, run_id: str) -> None:
        """Re-send the stalled run's next tasks."""
        ...

    def close(self) -> None:
        """Release what the backend holds (worker processes)."""
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
        return {cell.cell_id: known.get(cell.cell_id) or {
            "problem": cell.problem, "seed": cell.seed, "variant": cell.variant,
            "dataset": cell.dataset, "status": "pending", "attempts": 0}
            for cell in cells(self.spec)}

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
        finally:
            self.backend.close()

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
        for cell in cells(self.spec):
            entry = self.state[cell.cell_id]
            if entry["status"] == "pending" and in_flight < self.spec.max_parallel:
                self._submit(cell, entry)
                in_flight += entry["status"] == "running"

    def _submit(self, cell: Cell, entry: dict[str, Any]) -> None:
        entry["attempts"] += 1
        entry["run_id"] = cell.run_id(self.spec.name, entry["attempts"])
        entry["submitted_at"] = time.time()
        entry["status"] = "running"
        self.save()
        try:
            self.backend.submit(entry["run_id"], cell, cell_data(self.spec, cell))
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
        if result.status == "failed":
            self._fail(entry, f"run failed: {result.stop_reason}")
        else:
            entry["status"] = "done"
            self.save()

    def _watch(self, entry: dict[str, Any]) -> None:
        """Kick a run that made no progress for ``stall_seconds``; then give it up."""
        now, progress = time.time(), self.backend.progress(entry["run_id"])
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


