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

Where the state lives is a :class:`SweepState`: ``OUT/sweep.json`` for a
sweep run in this shell (:class:`FileSweepState`), or Redis for a sweep
coordinated on the cluster (``srh_workers.sweeps``), whose controls (pause,
stop, cancel) the runner obeys at every :meth:`SweepRunner.tick`. Cell states:
``pending``, ``running``, ``done``, ``failed``, ``skipped`` (the budget was
spent) and ``cancelled`` (its run was cancelled: never counted as done). A
new submission (:meth:`SweepRunner.reopen`) makes the failed, skipped and
cancelled cells pending again, with a fresh allowance of retries.
"""

from __future__ import annotations

import csv
import fcntl
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

from srh_core.agent.outcome import INTERRUPTED_BY_USER, STOP_CANCELLED
from srh_core.benchmark import judge
from srh_core.benchmark.baselines import agent_class
from srh_core.benchmark.protocol import method_names, protocol_data, renamed_formula
from srh_core.context import load_tabular
from srh_core.errors import SRHarnessError
from srh_core.jsonio import atomic_write_json, read_json
from srh_core.sweep.progress import SweepProgress
from srh_core.sweep.spec import Cell, SweepSpec, cells, problem_suite, resumed_cells
from srh_core.sweep.summary import counts_by_state
from srh_core.types import SearchResult
from srh_engine import EngineError, parse

logger = logging.getLogger("srh.sweep")

FINAL = ("done", "failed", "skipped", "cancelled")
#: Cell states, in the order they are shown.
#: What a sweep's controls ask: no new cell (pause), no new cell and end once the running
#: ones finished (stop), every running cell cancelled (cancel); None: run.
CONTROLS = ("pause", "stop", "cancel")
#: A sweep's status, computed from its cells and its control (``failed`` is set by the
#: coordinator when it cannot go on).
SWEEP_STATUSES = ("running", "paused", "stopped", "completed", "cancelled", "failed")
REOPENED = ("failed", "skipped", "cancelled")
POLL_SECONDS = 1.0
BACKOFF_MAX = 10.0
CSV_COLUMNS = ("cell", "label", "problem", "seed", "variant", "method", "noise", "status",
               "run_status", "solved", "r2_fresh", "best_formula", "complexity", "train_mse",
               "validation_mse", "r2_test", "symbolic_solution", "symbolic_reason",
               "symbolic_solution_positive", "accuracy_solution", "nmse_id", "nmse_ood",
               "seconds", "tokens", "cost", "model_seconds", "tool_seconds", "attempts", "run_id",
               "error", "settings_hash")
SPEND_COLUMNS = ("tokens", "cost", "model_seconds", "tool_seconds")
SKIPPED = "not run: the sweep's budget is spent"


class RunLost(SRHarnessError):
    """The backend no longer knows a run (e.g. Redis lost its keys)."""


class RunExists(SRHarnessError):
    """The run id was already submitted (by another coordinator of the same sweep)."""


class SweepBusy(SRHarnessError):
    """Another process is running the sweep in this directory."""


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
    method: str = "srh"
    """Who runs the cell (:data:`srh_core.benchmark.baselines.METHODS`)."""

    @property
    def agent_class(self) -> Any:
        return agent_class(self.method)


class SweepState(Protocol):
    """Where a sweep's cells are kept between ticks (and between processes)."""

    def load(self) -> dict[str, dict[str, Any]]:
        """Every known cell's entry, by cell id (empty for a new sweep)."""
        ...

    def save(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Persist the entries (a store may write only those that changed)."""
        ...

    def control(self) -> str | None:
        """What the sweep's controls ask now (one of :data:`CONTROLS`), or None."""
        ...


class FileSweepState:
    """``OUT/sweep.json``, rewritten atomically after every change (a sweep in this shell)."""

    def __init__(self, out_dir: str | Path, name: str) -> None:
        self.out = Path(out_dir)
        self.name = name
        self._held: TextIO | None = None  # OUT/sweep.lock while this process runs the sweep

    @property
    def path(self) -> Path:
        return self.out / "sweep.json"

    def load(self) -> dict[str, dict[str, Any]]:
        return dict(read_json(self.path)["cells"]) if self.path.exists() else {}

    def save(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path, {"sweep": self.name, "cells": dict(entries)})

    def control(self) -> str | None:
        return None

    def hold(self) -> None:
        """Take the directory for this process: a second ``srh sweep`` or ``srh benchmark``
        on the same ``OUT`` would run the same cells at once and overwrite this one's
        ``sweep.json``. Held until :meth:`release` or this process ends (a kill included:
        the lock is the kernel's, on ``OUT/sweep.lock``).

        Raises:
            SweepBusy: Another process holds it.
        """
        self.out.mkdir(parents=True, exist_ok=True)
        handle = open(self.out / "sweep.lock", "a+", encoding="utf-8")  # kept open: the lock
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise SweepBusy(f"{self.out} is being run by another process (pid {holder}); wait "
                            "for it to end, or give another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._held = handle

    def release(self) -> None:
        """Let the directory go (closing the file drops the lock)."""
        if self._held is not None:
            self._held.close()
            self._held = None


def new_entry(cell: Cell, method: str = "srh") -> dict[str, Any]:
    return {"problem": cell.problem, "seed": cell.seed, "variant": cell.variant,
            "method": method, "noise": cell.noise, "dataset": cell.dataset,
            "label": cell.label, "settings_hash": cell.settings_hash,
            "status": "pending", "attempts": 0, "tries": 0}


def sweep_status(entries: Mapping[str, Mapping[str, Any]], control: str | None) -> str:
    """The sweep's status from its cells and its control (see :data:`SWEEP_STATUSES`)."""
    running = any(entry["status"] == "running" for entry in entries.values())
    if control == "cancel":
        return "cancelled"
    if all(entry["status"] in FINAL for entry in entries.values()):
        return "completed"
    if control == "stop" and not running:
        return "stopped"
    if control == "pause":
        return "paused"
    return "running"


def is_over(status: str, entries: Mapping[str, Mapping[str, Any]]) -> bool:
    """Nothing more will happen without a new submission (or a resume, for ``paused``)."""
    running = any(entry["status"] == "running" for entry in entries.values())
    return status in ("completed", "stopped", "failed") or (status == "cancelled"
                                                           and not running)


class SweepRunner:
    """Drives the cells of a sweep on a backend until every cell is final.

    Args:
        spec: The sweep.
        out_dir: Where ``sweep.json`` and the results table go (a sweep in this shell);
            None with a ``state`` of its own (a sweep coordinated on the cluster).
        backend: Where the cells run.
        progress: Shows progress (:class:`~srh_core.sweep.progress.SweepProgress`), or a
            callable given one line per change of state; default: stderr.
        state: Where the cells' entries live (default ``OUT/sweep.json``).
        on_final: Called with a cell's table row each time the cell becomes final here
            (done, failed after its retries, or cancelled), after its state is saved.
    """

    def __init__(self, spec: SweepSpec, out_dir: str | Path | None, backend: SweepBackend, *,
                 progress: Any = None, state: SweepState | None = None,
                 on_final: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.spec = spec
        self.out = None if out_dir is None else Path(out_dir)
        self.backend = backend
        if state is None:
            if self.out is None:
                raise ValueError("SweepRunner needs an out_dir or a state")
            state = FileSweepState(self.out, spec.name)
        self.store = state
        if isinstance(state, FileSweepState):
            state.hold()  # before its entries are read: they are this process's from here
        self.on_final = on_final
        if isinstance(progress, SweepProgress):
            self.progress = progress
        else:
            self.progress = SweepProgress(spec.name, len(cells(spec)),
                                          line=progress, stream=sys.stderr)
        known = self.store.load()
        self.cells = resumed_cells(cells(spec), known)
        self.state = self._load_state(known)

    # ------------------------------------------------------------- state
    def _load_state(self, known: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        methods = {variant.name: variant.method for variant in self.spec.variants}
        return {cell.cell_id: known.get(cell.cell_id) or new_entry(cell, methods[cell.variant])
                for cell in self.cells}

    def reopen(self) -> None:
        """A new submission: failed, skipped and cancelled cells are pending again."""
        for entry in self.state.values():
            entry["tries"] = 0 if entry["status"] != "running" else entry.get("tries", 0)
            if entry["status"] in REOPENED:
                entry.update(status="pending", error=None, cancel_sent=False)
        self.save()

    def save(self) -> None:
        self.store.save(self.state)

    def counts(self) -> dict[str, int]:
        return {state: n for state, n in counts_by_state(self.state).items() if n}

    def status(self) -> str:
        return sweep_status(self.state, self.store.control())

    # --------------------------------------------------------------- loop
    def run(self) -> list[dict[str, Any]]:
        """Run until every cell is done or failed; return the table rows."""
        self.reopen()
        try:
            return self._run()
        except KeyboardInterrupt:
            self._interrupted()
            raise
        finally:
            self.backend.close()
            if isinstance(self.store, FileSweepState):
                self.store.release()

    def _interrupted(self) -> None:
        """Ctrl-C: no new cell; the running ones interrupted, their results kept."""
        self.progress.note("interrupted; stopping the running cells")
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
                     tries=max(0, entry.get("tries", 1) - 1),
                     error="interrupted; the next srh sweep resumes it")
        self.save()

    def _run(self) -> list[dict[str, Any]]:
        backoff = POLL_SECONDS
        while True:
            try:
                status = self.tick()
                backoff = POLL_SECONDS
            except BackendUnavailable as error:
                self.progress.note(f"backend unavailable ({error}); retrying in "
                                   f"{backoff:.0f}s")
                time.sleep(backoff)
                backoff = min(BACKOFF_MAX, backoff * 2)
                continue
            self.progress.update(self.state, status, self.slots())
            if is_over(status, self.state):
                break
            time.sleep(self.backend.poll_seconds)
        rows = self.write_table()
        self.progress.finish(self.state, status)
        return rows

    def tick(self) -> str:
        """One look: poll the running cells, start what the controls and slots allow.

        Returns:
            The sweep's status after the look (see :func:`sweep_status`).
        """
        control = self.store.control()
        for cell_id, entry in self.state.items():
            if entry["status"] == "running":
                if control == "cancel" and not entry.get("cancel_sent"):
                    self._cancel(entry)
                self._poll(cell_id, entry)
        if control in CONTROLS:
            return sweep_status(self.state, control)
        in_flight = sum(e["status"] == "running" for e in self.state.values())
        left = self.budget_left()
        slots = self.slots()
        for cell in self.cells:
            entry = self.state[cell.cell_id]
            if entry["status"] != "pending" or in_flight >= slots:
                continue
            if left is not None and any(value <= 0 for value in left.values()):
                entry["status"], entry["error"] = "skipped", SKIPPED
                self.save()
                continue
            self._submit(cell, entry, left)
            in_flight += entry["status"] == "running"
        return sweep_status(self.state, control)

    def slots(self) -> int:
        """Cells at once: ``max_parallel``, or fewer when the backend has fewer (``--jobs``)."""
        capacity = getattr(self.backend, "capacity", None) or self.spec.max_parallel
        return min(self.spec.max_parallel, capacity)

    def _cell(self, cell_id: str) -> Cell:
        return next(cell for cell in self.cells if cell.cell_id == cell_id)

    def _cancel(self, entry: dict[str, Any]) -> None:
        cancel = getattr(self.backend, "cancel", None)
        if cancel is not None:
            cancel(entry["run_id"])
        entry["cancel_sent"] = True
        self.save()

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
        entry["tries"] = entry.get("tries", 0) + 1
        entry["run_id"] = cell.run_id(self.spec.name, entry["attempts"])
        entry["submitted_at"] = time.time()
        entry["status"] = "running"
        entry["submitted"] = False  # until the backend has it: see _poll's RunLost
        entry.pop("cancel_sent", None)
        self.save()
        self._send(cell, entry, left)

    def _send(self, cell: Cell, entry: dict[str, Any],
              left: Mapping[str, float] | None = None) -> None:
        try:
            self.backend.submit(entry["run_id"], cell, capped(cell_data(self.spec, cell), left))
        except BackendUnavailable:
            entry["status"], entry["attempts"] = "pending", entry["attempts"] - 1
            entry["tries"] -= 1
            self.save()
            raise
        except RunExists:  # another coordinator submitted this very run id: it runs once
            logger.info("run %s was already submitted; following it", entry["run_id"])
        except Exception as error:  # a bad cell must not stop the sweep
            self._fail(entry, f"submit failed: {type(error).__name__}: {error}")
            return
        entry["submitted"] = True
        self.save()

    def _poll(self, cell_id: str, entry: dict[str, Any]) -> None:
        try:
            result = self.backend.poll(entry["run_id"])
        except RunLost as lost:
            if entry.get("submitted") is False:
                # its coordinator died between saving the cell and submitting the run:
                # submit that same run now (the same attempt; RunExists if it did arrive)
                logger.info("run %s was never submitted; submitting it", entry["run_id"])
                self._send(self._cell(cell_id), entry, self.budget_left())
                return
            self._fail(entry, f"run lost: {lost}")
            return
        if result is None:
            self._watch(entry)
            return
        entry["finished_at"] = time.time()
        entry["seconds"] = entry["finished_at"] - entry["submitted_at"]
        entry.update(summarize(result, self.spec, entry))
        totals = result.totals or {}  # every attempt's spend counts against the sweep budget
        entry["spent_tokens"] = entry.get("spent_tokens", 0) + int(totals.get("tokens") or 0)
        entry["spent_cost"] = entry.get("spent_cost", 0.0) + float(totals.get("cost") or 0.0)
        finished = getattr(self.backend, "finished", None)
        if finished is not None:  # before the cell is saved final: a successor redoes it
            finished(entry, self.spec)
        if result.status == "failed":
            self._fail(entry, f"run failed: {result.stop_reason}")
        elif result.status == "interrupted" and result.stop_reason == INTERRUPTED_BY_USER:
            self._resume_later(entry)
        elif result.status == "interrupted" and result.stop_reason == STOP_CANCELLED:
            entry["status"], entry["error"] = "cancelled", "cancelled"
            self.save()
            self._final(cell_id, entry)
        else:
            entry["status"] = "done"
            entry["error"] = None
            self.save()
            self._final(cell_id, entry)

    def _final(self, cell_id: str, entry: dict[str, Any]) -> None:
        if self.on_final is not None:
            self.on_final(table_row(cell_id, entry))

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
        entry["status"] = "pending" if entry.get("tries", 1) <= self.spec.retries else "failed"
        logger.warning("cell %s|%s|%s: %s (%s)", entry["problem"], entry["seed"],
                       entry["variant"], reason,
                       "retrying" if entry["status"] == "pending" else "giving up")
        self.save()
        if entry["status"] == "failed":
            self._final(next(cell_id for cell_id, known in self.state.items()
                             if known is entry), entry)

    # -------------------------------------------------------------- table
    def rows(self) -> list[dict[str, Any]]:
        return [table_row(cell_id, entry) for cell_id, entry in self.state.items()]

    def write_table(self) -> list[dict[str, Any]]:
        rows = self.rows()
        if self.out is not None:
            write_table(self.out, self.spec.name, rows)
        return rows


def write_table(out: str | Path, name: str, rows: list[dict[str, Any]]) -> None:
    """``results.json`` and ``results.csv`` of a sweep, one row per cell."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "results.json", {"sweep": name, "rows": rows})
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


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
    for name in ("skills_dir", "evaluator"):
        value = getattr(settings, name)
        if value is not None and not Path(value).is_absolute():
            # like a dataset's path: relative to the sweep file (on a cluster, to its inputs)
            settings = settings.replace(**{name: str(Path(spec.base_dir) / value)})
    if cell.dataset:
        return replace(_dataset_data(spec, cell, settings), method=variant.method)

    problem = problem_suite(spec).get(cell.problem)
    data = protocol_data(problem, cell.seed, replace(spec.protocol(cell.noise),
                                                     units=cell.units))
    if data.units:  # the suite's units, then the sweep's own [settings] units
        settings = settings.replace(units={**data.units, **(settings.units or {})})
    return CellData(data.X_train, {data.target: data.y_train}, data.description, settings,
                    problem, variant.method)


def _dataset_data(spec: SweepSpec, cell: Cell, settings: Any) -> CellData:
    dataset = next(d for d in spec.datasets if d.name == cell.problem)
    data, _ = load_tabular(Path(spec.base_dir) / dataset.path)
    X = {name: np.asarray(v) for name, v in data.items() if name != dataset.target}
    if dataset.units and cell.units:
        settings = settings.replace(units={**dataset.units, **(settings.units or {})})
    if dataset.weights:
        settings = settings.replace(weights=dataset.weights)
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
        summary.update(judged_fields(spec, entry, best.formula))
    return summary


def judged_fields(spec: SweepSpec, entry: Mapping[str, Any], formula: str) -> dict[str, Any]:
    """A problem cell's best formula judged: ``solved`` and ``r2_fresh`` on fresh points
    (our exact test), and with a test split SRBench's and LLM-SRBench's measures
    (:mod:`srh_core.benchmark.judge`) on the held-out test set and, when the problem has
    one, its out-of-domain set."""
    problem = problem_suite(spec).get(entry["problem"])
    protocol = spec.protocol(entry.get("noise", spec.noise_levels()[0]))
    try:
        formula = renamed_formula(formula, method_names(problem, protocol))
    except EngineError:
        pass  # judged as written: the judges report it unparseable
    judgement = problem.judge(formula, seed=entry["seed"])
    fields: dict[str, Any] = {"solved": judgement.solved, "r2_fresh": judgement.to_dict()["r2"]}
    if protocol.test_fraction > 0:  # the test set is drawn again, as the cell's data was
        data = protocol_data(problem, entry["seed"], protocol)
        fields.update(benchmark_fields(problem, formula, data, entry["seed"]))
    return fields


def benchmark_fields(problem: Any, formula: str, data: Any, seed: int) -> dict[str, Any]:
    X_test = {original: data.X_test[name] for original, name in data.names.items()}
    X_train = {original: data.X_train[name] for original, name in data.names.items()}
    predicted = predictions(formula, X_test, len(data.y_test))
    r2 = judge.r2_score(data.y_test, predicted)
    verdict = judge.symbolic_solution(formula, problem.formula, r2_test=r2)
    positive = judge.positive_inputs(X_train, X_test)
    on_positive = (verdict if verdict.symbolic_solution or not positive else
                   judge.symbolic_solution(formula, problem.formula, r2_test=r2,
                                           positive=positive))
    ood = problem.sample_ood(len(data.y_test), seed) if hasattr(problem, "sample_ood") else None
    measures = judge.metrics(data.y_test, predicted, *(
        (ood[1], predictions(formula, ood[0], len(ood[1]))) if ood is not None else ()))
    return {"r2_test": _json_number(r2), "symbolic_solution": verdict.symbolic_solution,
            "symbolic_reason": verdict.reason,
            "symbolic_solution_positive": on_positive.symbolic_solution,
            "accuracy_solution": judge.accuracy_solution(r2),
            "nmse_id": _json_number(measures.get("nmse_id")),
            "nmse_ood": _json_number(measures.get("nmse_ood"))}


def predictions(formula: str, X: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """The formula on ``X``; NaN everywhere when it cannot be evaluated (a failure)."""
    try:
        with np.errstate(all="ignore"):
            values = np.broadcast_to(parse(formula).evaluate(dict(X)), (n,))
        return np.asarray(values, dtype=float)
    except (EngineError, ValueError, TypeError):
        return np.full(n, np.nan)


def _json_number(value: Any) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def table_row(cell_id: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    row = {column: entry.get(column) for column in CSV_COLUMNS}
    row["cell"] = cell_id
    row["label"] = entry.get("label") or cell_id
    return row


