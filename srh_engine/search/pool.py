"""Islands on the other cores: the same search with other seeds, in a process pool.

``search(..., workers=n)`` runs island 0 in the calling process and islands
``1..n-1`` in a pool of spawned processes, each a whole single-process search
with seed ``seed + k`` (other capped enumeration levels, other dictionary
rows, another evolution) and the same absolute deadline (``time.monotonic``
is one clock for every process of the machine). The fronts are merged by
the caller. The pool is created on first use and kept for the process's
later searches (a spawned interpreter costs about a second to import numpy
and scipy); each island's result depends on its seed only, so the merged
result is deterministic for a seed whenever the clock does not cut a phase.

The pool ends with its process: its workers end within a second of the
owner's death (:func:`srh_engine.processes.end_with_parent`), and the pool is
stopped, bounded, when the owner exits. In a spawned process (a tool pool
worker) that must happen in multiprocessing's own exit function, which joins
every child before any ``atexit`` handler runs: a :class:`multiprocessing.util.Finalize`
with an exit priority runs there first. :func:`shutdown` stops it at once.

Islands are an addition, never a dependency: a pool that cannot start
(a daemonic process, such as a Celery prefork child, may not have
children; a script that searches at import time without a ``__main__``
guard breaks its spawned children) or that loses a worker leaves island 0's
result, with a note saying why.
"""

from __future__ import annotations

import atexit
import importlib
import multiprocessing
import multiprocessing.util
import os
import threading
from collections.abc import Sequence
from concurrent.futures import BrokenExecutor, Future, ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any

from srh_engine.processes import available_cores, end_with_parent, stop_pool

__all__ = ["available_workers", "broken", "forget", "shutdown", "submit_islands", "warm"]

MAX_WORKERS = 8
#: Seconds the pool's workers get to finish before they are terminated: none (an island
#: is a whole search whose result nobody reads once its pool is stopped).
EXIT_SECONDS = 0.0
#: Runs before multiprocessing joins a spawned process's children (priority >= 0).
_EXIT_PRIORITY = 10

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_pool_size = 0


def available_workers() -> int:
    """Islands this process can run: its CPUs (affinity), 1 in a daemonic process."""
    if multiprocessing.current_process().daemon:
        return 1
    return min(MAX_WORKERS, available_cores())


def _executor(size: int) -> ProcessPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < size:
            if _pool is not None:
                stop_pool(_pool, EXIT_SECONDS)
            context = multiprocessing.get_context("spawn")
            _pool = ProcessPoolExecutor(max_workers=size, mp_context=context,
                                        initializer=_island_worker, initargs=(os.getpid(),))
            _pool_size = size
            _register_exit()
        return _pool


def forget(pool: ProcessPoolExecutor | None) -> None:
    """Drop ``pool`` after one of its workers died (the next search starts a new one)."""
    global _pool, _pool_size
    if pool is None:
        return
    with _lock:
        if _pool is pool:
            _pool, _pool_size = None, 0
    stop_pool(pool, EXIT_SECONDS)


def shutdown(timeout: float = EXIT_SECONDS) -> None:
    """Stop this process's island pool (bounded); the next search starts a new one."""
    global _pool, _pool_size
    with _lock:
        pool, _pool, _pool_size = _pool, None, 0
    stop_pool(pool, timeout)


_exit_registered = False


def _register_exit() -> None:
    """Stop the pool when this process exits (called with ``_lock`` held)."""
    global _exit_registered
    if _exit_registered:
        return
    multiprocessing.util.Finalize(None, shutdown, exitpriority=_EXIT_PRIORITY)
    # In the main process, concurrent.futures joins its pools' manager threads at
    # interpreter shutdown, before atexit, waiting for islands that are still searching
    # (after Ctrl-C, say); hooks registered there later run first.
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(shutdown)
    except RuntimeError:  # the interpreter is already shutting down
        pass
    atexit.register(shutdown)
    _exit_registered = True


def _island_worker(parent_pid: int) -> None:
    """Worker start: end with the owner; BLAS and OpenMP at one thread (islands fill the
    cores)."""
    end_with_parent(parent_pid)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"


def _ready(modules: Sequence[str]) -> int:
    for module in modules:
        importlib.import_module(module)
    return os.getpid()


def warm(workers: int | None = None, *, modules: Sequence[str] = (), wait: bool = False,
         timeout: float = 60.0) -> int:
    """Start the pool of a search with ``workers`` islands now (default: as a search
    would, :func:`available_workers`), its processes importing ``modules``, so the first
    search does not pay the start of its islands (an interpreter importing numpy and
    scipy); with ``wait``, return once they answered, or after ``timeout`` seconds.
    Returns the islands started (0: none, the search runs in its own process only)."""
    count = available_workers() if workers is None else workers
    if count <= 1:
        return 0
    try:
        pool = _executor(count - 1)
        futures = [pool.submit(_ready, tuple(modules)) for _ in range(count - 1)]
    except Exception:  # noqa: BLE001 - islands are optional: the search notes a pool failure
        return 0
    if wait:
        futures_wait(futures, timeout=timeout)
    return count - 1


def submit_islands(function: Any, calls: list[dict[str, Any]]
                   ) -> tuple[list[Future], ProcessPoolExecutor | None, str | None]:
    """Start ``function(**call)`` for every call on the pool.

    Returns the futures, the pool (for :func:`forget`) and, when the pool could not
    start, why (no futures then).
    """
    if not calls:
        return [], None, None
    for attempt in range(2):  # a pool broken since the last call is replaced once
        pool = None
        try:
            pool = _executor(len(calls))
            return [pool.submit(function, **call) for call in calls], pool, None
        except BrokenExecutor as error:
            forget(pool)
            if attempt == 1:
                return [], None, f"{type(error).__name__}: {error}"
        except Exception as error:  # noqa: BLE001 - any start failure means "no islands"
            return [], None, f"{type(error).__name__}: {error}"
    return [], None, "the island pool did not start"


def broken(pool: ProcessPoolExecutor | None) -> bool:
    """Whether ``pool`` lost a worker (its futures may never complete: forget it)."""
    return pool is not None and bool(getattr(pool, "_broken", False))

