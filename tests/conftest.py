"""Suite-wide settings, and the guard that fails a test leaving a process behind."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.support import leftovers

# The property tests draw the same examples on every run (a fixed seed per test), so that a
# run of the suite cannot pass or fail by which random trees it drew; exploring with fresh
# examples is a choice: HYPOTHESIS_PROFILE=explore (random draws, as Hypothesis's default).
settings.register_profile("suite", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

#: How long a test's processes get to end after the test (a pool shutting down).
LEFTOVER_GRACE_SECONDS = 5.0


def pytest_configure(config: pytest.Config) -> None:
    # The offline proposer's expression_search step (10 s per unsolved branch without a time
    # limit) is tested in tests/core/api/test_offline_search.py; everywhere else it would add
    # seconds to every run the closed forms do not solve. Worker processes inherit this.
    os.environ.setdefault("SRH_OFFLINE_SEARCH_SECONDS", "0")


def _encodable(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udXXX`` escapes (valid UTF-8)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """Reports whose text UTF-8 can carry: several tests feed the code lone surrogates (a
    model's broken JSON escapes), and a failure or captured log quoting one cannot be sent
    from a pytest-xdist worker, which would end that worker and hide the failure."""
    report = yield
    report.sections = [(title, _encodable(text)) for title, text in report.sections]
    if isinstance(report.longrepr, str):
        report.longrepr = _encodable(report.longrepr)
    elif report.longrepr is not None and _encodable(text := str(report.longrepr)) != text:
        report.longrepr = _encodable(text)
    return report


def _island_pool_pids() -> set[int]:
    """The test process's own island pool: kept for its later searches by design."""
    pool = sys.modules.get("srh_engine.search.pool")
    executor = getattr(pool, "_pool", None)
    if executor is None:
        return set()
    from srh_engine.processes import pool_processes

    return {process.pid for process in pool_processes(executor)}


@pytest.fixture(autouse=True)
def no_process_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if a process it started is still alive after it (its command line
    in the message); kill what is left, so the next test starts clean."""
    token = uuid.uuid4().hex
    root, before = os.getpid(), leftovers.pids()
    os.environ[leftovers.TOKEN_VARIABLE] = token
    try:
        yield
    finally:
        os.environ.pop(leftovers.TOKEN_VARIABLE, None)
    left = [process for process in
            leftovers.wait_gone(root, before | _island_pool_pids(), token,
                                LEFTOVER_GRACE_SECONDS)
            if process.pid not in _island_pool_pids()]
    if left:
        leftovers.kill(left)
        lines = "\n".join(f"  pid {p.pid} (parent {p.ppid}): {p.command[:300]}" for p in left)
        pytest.fail(f"{request.node.nodeid} left {len(left)} process(es) behind:\n{lines}",
                    pytrace=False)
