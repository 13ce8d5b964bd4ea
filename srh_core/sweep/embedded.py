"""The embedded sweep backend: every cell a run of the embedded runtime, ``jobs`` at a time.

With ``jobs > 1`` cells run in a pool of worker processes (spawned, so a
cell never inherits the sweep's threads or locks), so a sweep uses every
core of one machine with no services at all; with ``jobs = 1`` each cell
runs in this process when it is submitted. A cell's run writes its run
directory under ``runs_dir`` as any embedded run does; a cell submitted
again under the same run id resumes that directory.

The cell processes end with the sweep (:func:`srh_engine.processes.end_with_parent`)
and ignore Ctrl-C, which the terminal sends to them too: the sweep decides.
:meth:`EmbeddedSweepBackend.interrupt` sends them SIGTERM, which their run
takes as Ctrl-C (it records, writes its result as interrupted, resumable),
and waits for those results a bounded time. Nothing here can lose a task, so
there is no stall to watch: :meth:`~EmbeddedSweepBackend.progress` says so.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import signal
import threading
from concurrent.futures import Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from srh_core.agent import SearchSettings
from srh_core.agent.outcome import INTERRUPTED_BY_USER
from srh_core.agent.sragent import recorded_agent_class
from srh_core.benchmark.baselines import agent_class
from srh_core.embedded.run_dir import run_path
from srh_core.embedded.runner import resume_search
from srh_core.sweep.runner import CellData
from srh_core.sweep.spec import Cell
from srh_core.types import SearchResult
from srh_engine.processes import available_cores, end_with_parent, pool_processes, stop_pool

logger = logging.getLogger("srh.sweep")

POLL_SECONDS = 0.05
#: After an interrupt, how long the running cells get to write their results.
INTERRUPT_SECONDS = 8.0
#: How long closing waits for idle cell processes to end before they are terminated.
CLOSE_SECONDS = 2.0


#: The cells a sweep runs at once by default: the cores this process may use.
default_jobs = available_cores


_in_cell = threading.Event()


#: Imported once when a cell process starts, so that no cell's time budget pays for them
#: (the packages load their names on first use).
WARM_MODULES = ("srh_core.agent.sragent", "srh_core.embedded.runner", "srh_engine.search.core")


def _cell_process(owner_pid: int) -> None:
    """Start of a cell process: ends with the sweep; SIGTERM interrupts the running cell."""
    end_with_parent(owner_pid)
    signal.signal(signal.SIGTERM, _on_sigterm)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for module in WARM_MODULES:
        importlib.import_module(module)


def _on_sigterm(signum: int, _frame: object) -> None:
    # Idle, the process ignores it (the pool's shutdown ends it): an interrupt raised in
    # its wait for work would break the pool, and the pool would kill the busy cells.
    if _in_cell.is_set():
        _in_cell.clear()  # a second SIGTERM finds the cell already interrupted: ignored
        raise KeyboardInterrupt


def run_cell(settings: dict[str, Any], X: dict[str, Any], y: dict[str, Any],
             description: str, method: str = "srh") -> dict[str, Any]:
    """One cell's run, in whichever process runs it; its ``SearchResult.to_dict()``.

    A run directory left by an interrupted attempt of the same run id is resumed
    (with the agent class it recorded). ``method`` picks the agent: srh or a baseline.
    """
    _in_cell.set()
    try:
        save_path = settings.get("save_path")
        if save_path and _resumable(Path(save_path)):
            return resume_search(save_path, recorded_agent_class(save_path)).to_dict()
        agent = agent_class(method)(settings=SearchSettings.build(**settings))
        return agent.run(X, y, description)
    finally:
        _in_cell.clear()


def _resumable(path: Path) -> bool:
    return (path / "state.json").exists() and not (path / "result.json").exists()


class EmbeddedSweepBackend:
    """Runs the cells of a sweep with the embedded runtime.

    Args:
        runs_dir: Where each cell's run directory goes (None: keep runs in memory).
        jobs: Cells running at once, each in its own process (1: in this process).
    """

    poll_seconds = POLL_SECONDS

    def __init__(self, runs_dir: str | Path | None = None, jobs: int = 1) -> None:
        self.runs_dir = None if runs_dir is None else Path(runs_dir)
        self.jobs = max(1, int(jobs))
        self.capacity = self.jobs
        self.results: dict[str, SearchResult] = {}
        self.futures: dict[str, Future[dict[str, Any]]] = {}
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, run_id: str, cell: Cell, data: CellData) -> None:
        save_path = None if self.runs_dir is None else str(run_path(self.runs_dir, run_id))
        settings = data.settings.replace(run_id=run_id, save_path=save_path).model_dump()
        if self.jobs == 1:
            result = SearchResult.from_dict(run_cell(settings, data.X, data.y,
                                                     data.description, data.method))
            self.results[run_id] = result
            if result.status == "interrupted" and result.stop_reason == INTERRUPTED_BY_USER:
                raise KeyboardInterrupt  # the run took the user's Ctrl-C: the sweep stops
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.jobs,
                                             mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_cell_process,
                                             initargs=(os.getpid(),))
        self.futures[run_id] = self._pool.submit(run_cell, settings, data.X, data.y,
                                                 data.description, data.method)

    def poll(self, run_id: str) -> SearchResult | None:
        future = self.futures.get(run_id)
        if future is not None and future.done():
            del self.futures[run_id]
            if future.cancelled():  # interrupted before it started
                self.results[run_id] = _failed(run_id, KeyboardInterrupt(), "interrupted")
                return self.results[run_id]
            error = future.exception()
            if isinstance(error, KeyboardInterrupt):  # interrupted before its run began
                self.results[run_id] = _failed(run_id, error, status="interrupted")
            else:
                self.results[run_id] = (SearchResult.from_dict(future.result())
                                        if error is None else _failed(run_id, error))
        return self.results.get(run_id)

    def progress(self, run_id: str) -> int | None:
        """None: a cell here runs in a process that either works or ends (its future then
        fails); its run's own time limit bounds it. Nothing to watch for a stall."""
        return None

    def kick(self, run_id: str) -> None:
        return None

    def interrupt(self) -> None:
        """Interrupt the running cells; wait (bounded) for their interrupted results.

        (With ``jobs = 1`` the cell ran in this process and took the interrupt itself.)
        """
        pending = {future for future in self.futures.values() if not future.done()}
        for future in pending:
            future.cancel()  # a cell not started yet never starts
        for process in pool_processes(self._pool) if self._pool is not None else []:
            try:
                os.kill(process.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        wait(pending, timeout=INTERRUPT_SECONDS)
        for run_id, future in list(self.futures.items()):
            if not future.done():  # stopped with the pool; its run directory resumes
                logger.warning("cell %s did not end %.0fs after the interrupt; it is stopped",
                               run_id, INTERRUPT_SECONDS)
                del self.futures[run_id]
                self.results[run_id] = _failed(run_id, KeyboardInterrupt(), "interrupted")

    def close(self) -> None:
        pool, self._pool = self._pool, None
        stop_pool(pool, CLOSE_SECONDS)


def _failed(run_id: str, error: BaseException, status: str = "failed") -> SearchResult:
    """The result of a cell whose process died (the run itself never raises)."""
    reason = (INTERRUPTED_BY_USER if status == "interrupted"
              else f"{type(error).__name__}: {error}")
    return SearchResult(status=status, progress="the cell's process ended",
                        candidates=[], pareto_front=[], best_candidate=None, run_id=run_id,
                        stop_reason=reason)
