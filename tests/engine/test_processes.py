"""Processes that end with their owner, and shutdowns with a bound."""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from srh_engine.processes import (
    KILL_SECONDS,
    end_with_parent,
    pid_running,
    pool_processes,
    stop_pool,
)
from tests.support.waits import START_SECONDS


def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _search_with_islands() -> int:
    from srh_engine.search import search

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, (200, 3))
    y = np.sin(X[:, 0] * X[:, 1]) + np.sqrt(X[:, 2])
    # ended by a count: in 1.5 s a loaded machine may not start the second island
    result = search(X, y, time_budget=60, seed=0, workers=2, max_evaluations=500)
    assert any("islands merged" in note for note in result.notes), result.notes
    return len(result.front)


def _pool(initializer=None, initargs=()) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=initializer, initargs=initargs)


def test_stop_pool_ends_a_busy_worker_within_its_bound():
    pool = _pool(end_with_parent, (os.getpid(),))
    pool.submit(_sleep, 0).result(timeout=60)  # the worker is up
    pool.submit(_sleep, 120)
    (worker,) = pool_processes(pool)
    started = time.monotonic()
    stop_pool(pool, timeout=0.5)
    assert time.monotonic() - started < 0.5 + 2 * KILL_SECONDS + 1
    assert not pid_running(worker.pid)


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy"])
def test_stop_pool_leaves_no_manager_thread(busy):
    # a process that exits with os._exit while the manager thread still holds the pool's
    # queues leaves their semaphores to the resource tracker ("leaked semaphore objects")
    pool = _pool(end_with_parent, (os.getpid(),))
    pool.submit(_sleep, 0).result(timeout=60)
    if busy:
        pool.submit(_sleep, 120)
    manager = pool._executor_manager_thread
    stop_pool(pool, timeout=0.0)
    assert not manager.is_alive()


def test_a_spawned_process_that_searched_with_islands_exits():
    # The hang of issue 22: multiprocessing's exit joined the island pool's idle workers
    # before any atexit handler could stop them, so the tool worker never ended.
    pool = _pool()
    assert pool.submit(_search_with_islands).result(timeout=START_SECONDS) >= 1
    (worker,) = pool_processes(pool)
    started = time.monotonic()
    pool.shutdown(wait=True)  # an unbounded join, as before: it must return by itself
    assert time.monotonic() - started < 10
    assert not pid_running(worker.pid)
