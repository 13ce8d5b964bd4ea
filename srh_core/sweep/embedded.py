"""The embedded sweep backend: every cell a run of the embedded runtime, ``jobs`` at a time.

With ``jobs > 1`` cells run in a pool of worker processes (spawned, so a
cell never inherits the sweep's threads or locks), so a sweep uses every
core of one machine with no services at all; with ``jobs = 1`` each cell
runs in this process when it is submitted. A cell's run writes its run
directory under ``runs_dir`` as any embedded run does.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from srh_core.embedded.run_dir import run_path
from srh_core.sweep.runner import CellData
from srh_core.sweep.spec import Cell
from srh_core.types import SearchResult

POLL_SECONDS = 0.05


def default_jobs() -> int:
    """The cores this process may use (its CPU affinity), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_cell(settings: dict[str, Any], X: dict[str, Any], y: dict[str, Any],
             description: str) -> dict[str, Any]:
    """One cell's run, in whichever process runs it; its ``SearchResult.to_dict()``."""
    from srh_core.agent import SearchSettings, SRAgent

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return SRAgent(settings=SearchSettings.build(**settings)).run(X, y, description)


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
        self.results: dict[str, SearchResult] = {}
        self.futures: dict[str, Future[dict[str, Any]]] = {}
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, run_id: str, cell: Cell, data: CellData) -> None:
        save_path = None if self.runs_dir is None else str(run_path(self.runs_dir, run_id))
        settings = data.settings.replace(run_id=run_id, save_path=save_path).model_dump()
        if self.jobs == 1:
            result = run_cell(settings, data.X, data.y, data.description)
            self.results[run_id] = SearchResult.from_dict(result)
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.jobs,
                                             mp_context=multiprocessing.get_context("spawn"))
        self.futures[run_id] = self._pool.submit(run_cell, settings, data.X, data.y,
                                                 data.description)

    def poll(self, run_id: str) -> SearchResult | None:
        future = self.futures.get(run_id)
        if future is not None and future.done():
            del self.futures[run_id]
            error = future.exception()
            self.results[run_id] = (SearchResult.from_dict(future.result()) if error is None
                                    else _failed(run_id, error))
        return self.results.get(run_id)

    def progress(self, run_id: str) -> int:
        return 0

    def kick(self, run_id: str) -> None:
        return None

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _failed(run_id: str, error: BaseException) -> SearchResult:
    """The result of a cell whose process died (the run itself never raises)."""
    return SearchResult(status="failed", progress="the cell's process ended",
                        candidates=[], pareto_front=[], best_candidate=None, run_id=run_id,
                        stop_reason=f"{type(error).__name__}: {error}")
