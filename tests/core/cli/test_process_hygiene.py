"""The command line as batch jobs run it: time limits, signals, kills.

Each case runs ``srh`` in a subprocess, in its own session, on a noisy
problem the offline proposer never fits exactly, so its search step
(``expression_search``, islands in a tool worker's own pool) runs. Each asserts
that the command returned within its limit plus a margin, wrote its result,
printed parsable JSON, and left no process in its session. The limit plus the
margin counts from when the run's limit started (read from its clock record in
``timeline.jsonl``), not from the process's start, which no limit covers and a
loaded machine slows down; waits for a run to get somewhere are only against a
hang (``START_SECONDS``).
"""

from __future__ import annotations

import fcntl
import json
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.support.commands import (
    ESTIMATOR_SCRIPT,
    NOISY_PROBLEM,
    RETURN_MARGIN_SECONDS,
    SWEEP_FILE,
    Command,
    Finished,
    environment,
    limit_started,
    wait_for_text,
    wait_session_empty,
)
from tests.support.waits import START_SECONDS

pytestmark = pytest.mark.slow

LIMIT = 12  # seconds: the search step starts at step 2 with half of what is left (8 s left
# too little on a loaded machine: start-up, inside the limit, took most of it)
SEARCH = "expression_search"


def run_srh(tmp_path: Path, *args: str, timeout: float, env: dict | None = None) -> Finished:
    command = Command(args, cwd=tmp_path, env=env)
    finished = command.finish(timeout)
    left = wait_session_empty(command.session, 5)
    assert not left, f"srh {args[0]} left processes behind: {left}"
    return finished


def run_limited(tmp_path: Path, run_dir: Path, limit: float, *args: str,
                records: int = 1) -> Finished:
    """Run ``srh args`` (a run with ``--time-limit limit`` in ``run_dir``, which then holds
    ``records`` clock records); it must return within its limit plus the margin, counted
    from when the run's limit started (its interpreter's start is no part of it)."""
    command = Command(args, cwd=tmp_path)
    began = limit_started(run_dir, limit, records)
    finished = command.finish_by(began + limit + RETURN_MARGIN_SECONDS,
                                 f"its {limit:g} s limit + {RETURN_MARGIN_SECONDS:g} s")
    left = wait_session_empty(command.session, 5)
    assert not left, f"srh {args[0]} left processes behind: {left}"
    return finished


def assert_written(run_dir: Path, finished: Finished, *statuses: str) -> dict:
    assert (run_dir / "result.json").exists(), finished.stderr[-2000:]
    printed = finished.json()
    recorded = json.loads((run_dir / "result.json").read_text())
    assert printed["status"] == recorded["status"], (printed["status"], recorded["status"])
    assert printed["status"] in statuses, (printed["status"], printed.get("stop_reason"),
                                           finished.stderr[-1500:])
    assert "Traceback" not in finished.stderr, finished.stderr[-3000:]
    return printed


@pytest.fixture(scope="module")
def limited_run(tmp_path_factory) -> tuple[Path, Finished]:
    """``srh run --time-limit`` once: the hang this file is about happened at its exit."""
    tmp_path = tmp_path_factory.mktemp("limited")
    # -L 1000: a budget no machine finishes in LIMIT seconds (about 15 responses fit), so the
    # limit, never the budget, ends the run (with the default depth it sometimes completed)
    finished = run_limited(tmp_path, tmp_path / "run", LIMIT, "run", *NOISY_PROBLEM,
                           "--time-limit", str(LIMIT), "--seed", "0", "-L", "1000", "--json",
                           "--out", "run")
    return tmp_path / "run", finished


def test_a_time_limited_run_returns_with_its_result(limited_run):
    run_dir, finished = limited_run
    assert finished.returncode == 0, finished.stderr[-2000:]
    printed = assert_written(run_dir, finished, "interrupted")
    assert printed["stop_reason"] == f"time limit of {LIMIT}s reached"
    assert SEARCH in (run_dir / "tool_calls.jsonl").read_text(), "the search step never ran"
    # a user's time limit is wall time: the start of the tool process is inside it
    clock = json.loads((run_dir / "timeline.jsonl").read_text().splitlines()[0])
    assert clock["time_limit_clock"] == "wall" and clock["seconds_left"] < LIMIT, clock
    calls = [json.loads(line) for line in (run_dir / "tool_calls.jsonl").read_text().splitlines()]
    search = next(call for call in calls if call["call"]["name"] == SEARCH)
    assert search["ok"], search["result_str"]  # ended within the time it had, with its front


def test_resume_of_a_time_limited_run_returns(limited_run, tmp_path):
    run_dir, _ = limited_run
    finished = run_limited(tmp_path, run_dir, 6, "resume", str(run_dir), "--time-limit", "6",
                           "--json", records=2)
    assert finished.returncode == 0, finished.stderr[-2000:]
    # the steps after the search are quick: the resumed run may use its whole budget
    assert_written(run_dir, finished, "interrupted", "completed")


def test_a_run_on_a_tool_pool_without_time_limit_returns(tmp_path):
    env = environment(SRH_OFFLINE_SEARCH_SECONDS="2")
    finished = run_srh(tmp_path, "run", *NOISY_PROBLEM, "-L", "2", "--max-workers", "2",
                       "--json", "--out", "run", timeout=START_SECONDS, env=env)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert_written(tmp_path / "run", finished, "completed")
    assert SEARCH in (tmp_path / "run" / "tool_calls.jsonl").read_text()


@pytest.mark.parametrize(("signum", "group", "code"), [
    pytest.param(signal.SIGINT, True, 130, id="ctrl-c-to-the-process-group"),
    pytest.param(signal.SIGTERM, False, 143, id="sigterm"),
])
def test_a_signal_mid_search_ends_the_run_resumable(tmp_path, signum, group, code):
    command = Command(["run", *NOISY_PROBLEM, "--time-limit", "120", "--json", "--out", "run"],
                      cwd=tmp_path)
    assert wait_for_text(tmp_path / "run" / "plans.jsonl", SEARCH, START_SECONDS), \
        "no search step"
    time.sleep(1.5)  # well inside the search (its islands started)
    command.signal(signum, group=group)
    finished = command.finish(10 + 5)
    assert not wait_session_empty(command.session, 5)
    assert finished.returncode == code, finished.stderr[-2000:]
    printed = assert_written(tmp_path / "run", finished, "interrupted")
    assert printed["stop_reason"] == "interrupted by the user"
    assert "KeyboardInterrupt" not in finished.stderr
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    assert state["runtime"]["status"] == "interrupted"


def test_sigkill_mid_search_leaves_no_process_for_long(tmp_path):
    command = Command(["run", *NOISY_PROBLEM, "--time-limit", "120", "--out", "run"],
                      cwd=tmp_path)
    assert wait_for_text(tmp_path / "run" / "plans.jsonl", SEARCH, START_SECONDS), \
        "no search step"
    time.sleep(1.5)
    command.signal(signal.SIGKILL)
    command.finish(5)
    left = wait_session_empty(command.session, 15)
    assert not left, f"children outlived a SIGKILLed srh run: {left}"


def test_an_embedded_sweep_of_time_limited_cells_returns(tmp_path):
    (tmp_path / "sweep.toml").write_text(SWEEP_FILE.format(limit=6))
    command = Command(["sweep", "sweep.toml", "--jobs", "2", "--out", "out", "--json"],
                      cwd=tmp_path)
    began = max(limit_started(run_dir, 6)  # the cells run side by side
                for run_dir in _run_dirs(tmp_path / "out" / "runs", 2, START_SECONDS))
    finished = command.finish_by(began + 6 * 2 + RETURN_MARGIN_SECONDS + 10,
                                 "the later cell's 6 s limit + margins")
    left = wait_session_empty(command.session, 5)
    assert not left, f"srh sweep left processes behind: {left}"
    assert finished.returncode == 0, finished.stderr[-2000:]
    rows = finished.json()["rows"]
    assert [row["status"] for row in rows] == ["done", "done"], rows
    assert all((tmp_path / "out" / "runs" / row["run_id"] / "result.json").exists()
               for row in rows)


def test_ctrl_c_of_an_embedded_sweep_stops_it_and_the_next_sweep_resumes(tmp_path):
    (tmp_path / "sweep.toml").write_text(SWEEP_FILE.format(limit=120))
    command = Command(["sweep", "sweep.toml", "--jobs", "2", "--out", "out"], cwd=tmp_path)
    runs = tmp_path / "out" / "runs"
    run_dirs = _run_dirs(runs, 2, START_SECONDS)
    assert all(wait_for_text(path / "plans.jsonl", SEARCH, START_SECONDS)
               for path in run_dirs), \
        "the cells never reached their search step"
    # a second sweep on the same directory while this one runs is refused in one line
    state = (tmp_path / "out" / "sweep.json").read_text()
    second = run_srh(tmp_path, "sweep", "sweep.toml", "--out", "out", timeout=START_SECONDS)
    assert second.returncode != 0 and "is being run by another process" in second.stderr, \
        second.stderr[-2000:]
    assert "Traceback" not in second.stderr and (tmp_path / "out" / "sweep.json").read_text() \
        == state
    command.signal(signal.SIGINT, group=True)
    finished = command.finish(15)
    assert finished.returncode == 130, finished.stderr[-2000:]
    assert not wait_session_empty(command.session, 5)
    with open(tmp_path / "out" / "sweep.lock") as lock:  # let go when the sweep ended
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    cells = json.loads((tmp_path / "out" / "sweep.json").read_text())["cells"]
    assert {entry["status"] for entry in cells.values()} == {"pending"}, cells
    assert all(entry["attempts"] == 0 for entry in cells.values()), cells
    interrupted = [json.loads((path / "result.json").read_text())["status"]
                   for path in runs.iterdir()]
    assert interrupted == ["interrupted", "interrupted"]


def _run_dirs(runs: Path, count: int, seconds: float) -> list[Path]:
    """The first ``count`` run directories under ``runs``, waiting up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = sorted(runs.glob("*")) if runs.exists() else []
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} run directories in {runs} after {seconds}s")


def test_the_estimator_with_a_time_limit_returns(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(ESTIMATOR_SCRIPT.format(limit=6))
    command = Command([str(script)], cwd=tmp_path, executable=[sys.executable])
    command.wait_stderr("fitting", START_SECONDS)  # its imports done: the fit's clock starts
    finished = command.finish(6 + RETURN_MARGIN_SECONDS)
    assert not wait_session_empty(command.session, 5)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert finished.json()["formula"]


def test_a_second_ctrl_c_ends_the_command_at_once(tmp_path):
    command = Command(["run", *NOISY_PROBLEM, "--time-limit", "120", "--out", "run"],
                      cwd=tmp_path)
    assert wait_for_text(tmp_path / "run" / "plans.jsonl", SEARCH, START_SECONDS), \
        "no search step"
    command.signal(signal.SIGINT)
    time.sleep(0.05)
    command.signal(signal.SIGINT)
    finished = command.finish(5)
    assert finished.returncode == 130, finished.stderr[-2000:]
    assert not wait_session_empty(command.session, 5)
