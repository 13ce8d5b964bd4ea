"""`srh resume` after a time limit, Ctrl-C and SIGKILL: the whole run, no finished step twice.

Each test runs the real ``srh`` CLI in a subprocess against the local
OpenAI-compatible server (through the real ``openai`` client), which
counts the requests of every step: a step's sampling seed is a pure
function of its coordinate, so the count per seed is the count per step.
The server holds the answers of the steps after the first until the test
has stopped the run (its time limit passed, its signal sent), so the run
is stopped part-way whatever the machine's load.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from tests.support.openai_payloads import evaluating_reply
from tests.support.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
C, L, K = 2, 6, 2
FORMULAS = ("x1*x2", "x1 + x2", "x2**2", "x1**2")  # none is exact: every step runs
DEADLINE = 120.0


def step_seeds() -> dict[int, tuple[int, int]]:
    """Sampling seed -> (C, L) of every step (run seed 0, restart 1; see SRAgent.sampling_seed)."""
    return {10_007 + c * 101 + step: (c, step) for c in range(1, C + 1) for step in range(1, L + 1)}


@pytest.fixture
def later_steps() -> threading.Event:
    """Set by the test once it has stopped the run: the steps after L1 are answered then."""
    return threading.Event()


@pytest.fixture
def server(later_steps: threading.Event) -> FakeOpenAIServer:
    seeds = step_seeds()
    with FakeOpenAIServer() as fake:
        fake.respond_with(evaluating_reply(FORMULAS, hold=lambda seed: later_steps
                                           if seeds[seed][1] > 1 else None))
        yield fake
        later_steps.set()  # a failed test's held answers go before the server stops


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 200))
    path = tmp_path / "data.csv"
    rows = "\n".join(f"{a:.17g},{b:.17g},{a * b**2:.17g}" for a, b in zip(x1, x2, strict=True))
    path.write_text("x1,x2,y\n" + rows + "\n", encoding="utf-8")
    return path


def srh(*args: str, server: FakeOpenAIServer) -> subprocess.Popen[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "srh_core", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_args(data_file: Path, out: Path, server: FakeOpenAIServer, *extra: str) -> list[str]:
    return ["run", "--data", str(data_file), "--target", "y", "--llm", "openai:test-model",
            "--base-url", server.base_url, "-C", str(C), "-L", str(L), "-K", str(K),
            "--no-early-stop", "--run-id", "fault", "--out", str(out), "--json", *extra]


def requests_per_step(server: FakeOpenAIServer) -> Counter[tuple[int, int]]:
    seeds = step_seeds()
    return Counter(seeds[int(request.body["seed"])] for request in server.requests)


def planned_steps(out: Path) -> set[tuple[int, int]]:
    plans = out / "plans.jsonl"
    lines = plans.read_text(encoding="utf-8").splitlines() if plans.exists() else []
    steps = set()
    for line in lines:
        try:
            plan = json.loads(line)
        except ValueError:  # a line cut by the kill
            continue
        steps.add((plan["C"], plan["L"]))
    return steps


def resume_and_check(out: Path, server: FakeOpenAIServer, finished: set[tuple[int, int]]
                     ) -> None:
    process = srh("resume", str(out), "--time-limit", "100", "--json", server=server)
    stdout, stderr = process.communicate(timeout=DEADLINE)
    assert process.returncode == 0, stderr
    result = json.loads(stdout)
    assert result["status"] == "completed", result["stop_reason"]
    nodes = [json.loads(line) for line in (out / "nodes.jsonl").read_text().splitlines()]
    labels = [node["node_label"] for node in nodes]
    assert len(labels) == len(set(labels)) == C * L * K
    counts = requests_per_step(server)
    assert set(counts) == set(step_seeds().values())  # every step was requested
    assert all(counts[step] == 1 for step in finished), counts  # none of those twice


def run_deadline(out: Path) -> float:
    """Epoch seconds when the run's time limit runs out, from its timeline's clock record
    (``at`` is taken after ``seconds_left``, so the sum is not before the deadline)."""
    timeline = out / "timeline.jsonl"
    end = time.monotonic() + DEADLINE
    while True:
        lines = timeline.read_text(encoding="utf-8").splitlines() if timeline.exists() else []
        clocks = [json.loads(line) for line in lines if '"clock"' in line and line.endswith("}")]
        if clocks:
            at = datetime.fromisoformat(clocks[0]["at"]).timestamp()
            return at + 0.001 + clocks[0]["seconds_left"]    # ``at`` is cut to milliseconds
        assert time.monotonic() < end, "the run never started its clock"
        time.sleep(0.02)


def wait_for_requests(server: FakeOpenAIServer, count: int) -> None:
    end = time.monotonic() + DEADLINE
    while len(server.requests) < count:
        assert time.monotonic() < end, "the run never reached the model"
        time.sleep(0.02)


def test_resume_continues_a_run_stopped_by_its_time_limit(server, later_steps, data_file,
                                                          tmp_path):
    out, config = tmp_path / "run", tmp_path / "clock.toml"
    # L1 is answered at once, L2 once the 2.5 s have run out: the boundary after L2 ends the
    # run (a plain delay made it finish every level, or none, when the machine was busy). The
    # clock starts once the run is ready to fit: a wall clock counts the run's start-up, and
    # on a busy machine that alone took 7 s, so no step opened
    config.write_text('[search]\ntime_limit_clock = "fit"\n', encoding="utf-8")
    process = srh(*run_args(data_file, out, server, "--time-limit", "2.5", "--config",
                            str(config)), server=server)
    time.sleep(max(0.0, run_deadline(out) - time.time()))
    later_steps.set()
    stdout, stderr = process.communicate(timeout=DEADLINE)
    assert process.returncode == 0, stderr
    first = json.loads(stdout)
    assert first["status"] == "interrupted" and "time limit" in first["stop_reason"]
    done = planned_steps(out)
    assert 0 < len(done) < C * L
    resume_and_check(out, server, done)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_resume_continues_an_interrupted_or_killed_run(server, later_steps, data_file, tmp_path,
                                                       sig):
    out = tmp_path / "run"
    process = srh(*run_args(data_file, out, server), server=server)
    wait_for_requests(server, 3)      # both L1 steps and an L2 one, whose answer is held
    process.send_signal(sig)
    later_steps.set()
    process.communicate(timeout=DEADLINE)
    assert process.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    done = planned_steps(out)
    assert len(done) < C * L
    resume_and_check(out, server, done)
