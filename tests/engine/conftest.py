"""Fixtures of the engine tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from srh_engine.search.threads import one_blas_thread


@pytest.fixture
def blas_one_thread() -> Iterator[None]:
    """As in the search: tests that call its parts directly (power factors, enumeration,
    combinations, invariance and split tests: many small least-squares fits) run them on one
    BLAS thread, as :func:`srh_engine.search.search` does; threaded OpenBLAS spins on them
    beside a busy core (power_factors: 0.5 s on one thread, 5..45 s on two at load 12). A
    file uses it with ``pytestmark = pytest.mark.usefixtures("blas_one_thread")``; the cap's
    own test (test_threads.py) runs without it."""
    with one_blas_thread():
        yield
