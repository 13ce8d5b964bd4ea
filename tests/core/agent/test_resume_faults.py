"""`srh resume` after a time limit, Ctrl-C and SIGKILL: the whole run, no finished step twice.

Each test runs the real ``srh`` CLI in a subprocess against the local
OpenAI-compatible server (through the real ``openai`` client), which
counts the requests of every step: a step's sampling seed is a pure
function of its coordinate, so the count per seed is the count per step.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
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
def server() -> FakeOpenAIServer:
    with FakeOpenAIServer() as fake:
        fake.respond_with(evaluating_reply(FORMULAS, delay=0.4))
        yield fake


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


def wait_for_requests(server: FakeOpenAIServer, count: int) -> None:
    end = time.monotonic() + DEADLINE
    while len(server.requests) < count:
        assert time.monotonic() < end, "the run never reached the model"
        time.sleep(0.02)


def test_resume_continues_a_run_stopped_by_its_time_limit(server, data_file, tmp_path):
    out = tmp_path / "run"
    # 6 levels of 0.4 s requests (2.4 s and the steps' work) cannot end within 2.5 s, of
    # which the run's start-up takes about 0.5 s; the first levels do (3 s was too close:
    # a run that finished every level ended "completed")
    process = srh(*run_args(data_file, out, server, "--time-limit", "2.5"), server=server)
    stdout, stderr = process.communicate(timeout=DEADLINE)
    assert process.returncode == 0, stderr
    first = json.loads(stdout)
    assert first["status"] == "interrupted" and "time limit" in first["stop_reason"]
    done = planned_steps(out)
    assert 0 < len(done) < C * L
    resume_and_check(out, server, done)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_resume_continues_an_interrupted_or_killed_run(server, data_file, tmp_path, sig):
    out = tmp_path / "run"
    process = srh(*run_args(data_file, out, server), server=server)
    wait_for_requests(server, 3)
    process.send_signal(sig)
    process.communicate(timeout=DEADLINE)
    assert process.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    done = planned_steps(out)
    assert len(done) < C * L
    resume_and_check(out, server, done)
