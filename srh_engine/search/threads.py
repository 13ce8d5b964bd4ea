"""One BLAS thread while a search runs.

The search's linear algebra is many small problems (surrogate fits of a few
hundred rows, a few hundred columns). OpenBLAS's threads make each of them
slower even on an idle machine, and on a busy one (a second search, a test
run, another worker on the box) they spin against each other: one 800x120
``lstsq`` measured 5 ms single-threaded, 13 ms with the default threads on an
idle 2-core machine, 2.2 s with the other core busy. So :func:`one_blas_thread`
caps the BLAS pools at one thread (threadpoolctl) for as long as any search of
the process is running, and restores them when the last one ends: concurrent
searches in several threads share one cap instead of undoing each other's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

__all__ = ["one_blas_thread"]

_lock = threading.Lock()
_active = 0
_limits: threadpool_limits | None = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS capped at one thread inside the block (reference-counted across threads)."""
    global _active, _limits
    with _lock:
        if _active == 0:
            _limits = threadpool_limits(limits=1, user_api="blas")
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _limits is not None:
                _limits.restore_original_limits()
                _limits = None
