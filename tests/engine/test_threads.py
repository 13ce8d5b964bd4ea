"""srh_engine.search.threads: one BLAS thread while any search runs.

Apart from the tests of the search's parts, which run under the cap themselves.
"""

from __future__ import annotations

from threadpoolctl import threadpool_info

from srh_engine.search.threads import one_blas_thread


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_blas_is_capped_while_any_search_runs_and_restored_after():
    before = _blas_threads()
    with one_blas_thread():
        with one_blas_thread():  # a second search starting while the first runs
            assert _blas_threads() == [1] * len(before)
        assert _blas_threads() == [1] * len(before)  # the first is still running
    assert _blas_threads() == before
