"""Running ``srh`` the way users do: a subprocess in its own session, with a time limit.

:class:`Command` starts the console script in a new session (as a batch
scheduler or a terminal job would), so every process it starts shares that
session, and :func:`session_processes` finds whatever outlives it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.support.leftovers import info, pids
from tests.support.waits import START_SECONDS

SRH = str(Path(sys.executable).with_name("srh"))
#: A problem the offline proposer never fits exactly (noise): its search step always runs.
NOISY_PROBLEM = ("--equation", "y = sin(x1*x2)/(1 + x3**2) + sqrt(x4)",
                 "--noise-std-ratio", "0.05", "--samples", "400")
#: Extra seconds a command may take beyond its time limit, counted from when its run's
#: limit started (:func:`limit_started`): writing its result and stopping its processes.
RETURN_MARGIN_SECONDS = 15.0
#: A sweep file of two noisy cells; ``.format(limit=seconds)`` sets their time limit.
SWEEP_FILE = """
[sweep]
name = "hygiene"
problems = ["feynman-I.6.2a", "feynman-I.12.4"]
seeds = [0]
noise = 0.05
samples = 400

[settings]
time_limit = {limit}
"""
#: A script fitting the estimator on the noisy problem; ``.format(limit=seconds)``.
ESTIMATOR_SCRIPT = """
import json
import sys

import numpy as np
from srh_core.estimator import SRHarnessRegressor

if __name__ == "__main__":  # spawned workers import this script: the guard is required
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, (400, 4))
    y = np.sin(X[:, 0] * X[:, 1]) / (1 + X[:, 2] ** 2) + np.sqrt(X[:, 3])
    y = y + rng.normal(0, 0.05 * np.sqrt(np.mean(y ** 2)), 400)
    print("fitting", file=sys.stderr, flush=True)  # the time limit counts from here
    model = SRHarnessRegressor(time_limit={limit}).fit(X, y)
    print(json.dumps({{"formula": str(model.formula_)}}))
"""


def environment(**changes: str | None) -> dict[str, str]:
    """This environment with ``changes`` (None removes a variable); the offline search
    step on (the suite turns it off by default)."""
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    env.pop("SRH_OFFLINE_SEARCH_SECONDS", None)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


@dataclass
class Finished:
    returncode: int
    seconds: float
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        return json.loads(self.stdout)


class Command:
    """One ``srh`` process in its own session."""

    def __init__(self, args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
                 executable: Sequence[str] | None = None) -> None:
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [*(executable or [SRH]), *args], cwd=cwd, env=dict(env or environment()),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        self._stderr_read = b""

    @property
    def session(self) -> int:
        return self.process.pid

    def signal(self, signum: int, *, group: bool = False) -> None:
        if group:
            os.killpg(self.session, signum)
        else:
            self.process.send_signal(signum)

    def wait_stderr(self, text: str, timeout: float) -> str:
        """The standard error so far, once it holds ``text``; read while the command runs
        (a deadline only against a hang). Raises AssertionError when the command ends or
        the deadline passes first."""
        wanted, descriptor = text.encode(), self.process.stderr.fileno()
        deadline = time.monotonic() + timeout
        while wanted not in self._stderr_read:
            left = deadline - time.monotonic()
            assert left > 0, f"srh never wrote {text!r}; stderr:\n{self._stderr_text()}"
            if select.select([descriptor], [], [], left)[0]:
                chunk = os.read(descriptor, 65536)   # the descriptor: finish reads on from it
                assert chunk, f"srh ended before writing {text!r}; stderr:\n" \
                              f"{self._stderr_text()}"
                self._stderr_read += chunk
        return self._stderr_text()

    def _stderr_text(self) -> str:
        return self._stderr_read.decode(errors="replace")

    def finish_by(self, deadline: float, bound: str) -> Finished:
        """:meth:`finish` with the wait ending at ``deadline`` (epoch seconds); ``bound``
        says in a failure's message what the deadline is."""
        try:
            return self.finish(max(deadline - time.time(), 0.0))
        except AssertionError as error:
            raise AssertionError(f"past {bound}: {error}") from None

    def finish(self, timeout: float) -> Finished:
        """Wait up to ``timeout`` seconds; a command still running then is killed and
        the test fails."""
        try:
            stdout, stderr = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_session(self.session)
            stdout, stderr = self.process.communicate()
            stderr = self._stderr_read + stderr
            raise AssertionError(f"srh did not return within {timeout:.0f}s; stderr tail:\n"
                                 f"{stderr.decode(errors='replace')[-2000:]}") from None
        stderr = self._stderr_read + stderr
        return Finished(self.process.returncode, time.monotonic() - self.started,
                        stdout.decode(errors="replace"), stderr.decode(errors="replace"))


def session_processes(session: int) -> list[str]:
    """Command lines of the live processes of ``session`` (its leader's descendants that
    stayed in it)."""
    found = []
    for pid in pids():
        try:
            sid = os.getsid(pid)
        except OSError:
            continue
        process = info(pid)
        if sid == session and process is not None and process.state not in ("Z", "X"):
            found.append(f"{pid}: {process.command[:200]}")
    return found


def wait_session_empty(session: int, seconds: float) -> list[str]:
    """What is left of ``session`` after waiting up to ``seconds`` for it to empty."""
    deadline = time.monotonic() + seconds
    while (left := session_processes(session)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def kill_session(session: int) -> None:
    try:
        os.killpg(session, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids():
        try:
            if os.getsid(pid) == session:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            continue


def wait_for_text(path: Path, text: str, seconds: float) -> bool:
    """Whether ``text`` appears in the file at ``path`` within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if text in path.read_text(errors="replace"):
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def limit_started(run_dir: Path, limit: float, records: int = 1,
                  seconds: float = START_SECONDS) -> float:
    """When (epoch seconds) the run in ``run_dir`` started counting its time limit of
    ``limit`` seconds: read from its ``records``-th clock record in ``timeline.jsonl`` (a
    resumed run adds one), whose time less the part of the limit already spent then (the
    run's own set-up, which the limit covers) is the start. Waits up to ``seconds`` for it.

    What comes before that start (the interpreter's, the imports, building the problem's
    data) is no part of the limit and takes seconds more on a loaded machine, so a test
    bounding how long a run takes beyond its limit starts its own clock here.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        clocks = _clock_records(run_dir / "timeline.jsonl")
        if len(clocks) >= records:
            record = clocks[records - 1]
            spent = limit - record["seconds_left"]
            return datetime.fromisoformat(record["at"]).timestamp() - spent
        time.sleep(0.05)
    raise AssertionError(f"the run in {run_dir} did not start its clock within {seconds:.0f}s")


def _clock_records(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line being written
            continue
        if isinstance(record, dict) and record.get("event") == "clock":
            records.append(record)
    return records
