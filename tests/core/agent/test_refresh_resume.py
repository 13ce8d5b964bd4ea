"""Data refreshed mid-run survives Ctrl-C: the run directory records the new revision and
``srh resume`` continues on it (the resumed steps score on the refreshed data).

The run is a Python process (an embedded SRAgent run whose observer commits new data
after step 1, as a data-preparation agent would), interrupted with SIGINT; the resume is
the real ``srh`` CLI. Both talk to the local OpenAI-compatible server through the real
``openai`` client.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from srh_core.embedded.run_dir import RunDirectory
from tests.support.openai_payloads import evaluating_reply
from tests.support.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
L, K = 6, 2
DEADLINE = 120.0

RUN = textwrap.dedent("""
    import json, signal, sys
    import numpy as np
    from srh_core.agent import SRAgent
    from srh_core.context import AgentContext

    # Ctrl-C is a KeyboardInterrupt, as in a terminal: a SIGINT ignored by whatever started
    # this process (a test runner's worker) is inherited across exec, and Python then
    # installs no handler of its own
    signal.signal(signal.SIGINT, signal.default_int_handler)
    base_url, out = sys.argv[1:3]
    x1, x2 = np.random.default_rng(0).uniform(1, 5, (2, 200))
    context = AgentContext()
    agent = SRAgent(llm_provider="openai", llm_model="m", base_url=base_url,
                    tool_parser="openai", tools=["evaluate_formula"], context=context,
                    max_refinement_depth={L}, local_sample_size={K}, early_stop=False,
                    run_id="refreshed", save_path=out)
    committed = []

    def refresh(event):  # a data-preparation agent's commit, once, during step 1
        if event["event"] == "responses" and event["L"] == 1 and not committed:
            committed.append(True)
            context.commit_data({{"x1": x1, "x2": x2, "y": x1 + x2 + 0.5}}, target="y")

    agent.observers.append(refresh)
    result = agent.run({{"x1": x1, "x2": x2}}, {{"y": x1 * x2 ** 2}}, "refresh then resume")
    print(json.dumps({{"status": result["status"], "revision": context.revision}}))
""").format(L=L, K=K)


def env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(ROOT)}


def plans(out: Path) -> list[dict]:
    lines = (out / "plans.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip().endswith("}")]


def test_resume_after_a_refresh_runs_on_the_refreshed_data(tmp_path):
    out, script = tmp_path / "run", tmp_path / "run.py"
    script.write_text(RUN, encoding="utf-8")
    first_step = 10_007 + 101 + 1  # step 1's sampling seed (run seed 0, R1, C1)
    interrupted = threading.Event()  # the later steps are answered once Ctrl-C was sent
    with FakeOpenAIServer() as server:
        server.respond_with(evaluating_reply(("x1*x2", "x1 + x2"), hold=lambda seed: None
                                             if seed == first_step else interrupted))
        process = subprocess.Popen([sys.executable, str(script), server.base_url, str(out)],
                                   cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + DEADLINE
        while not RunDirectory(out).data_revisions():  # step 2 opened on the new data
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < end, "the refresh was never recorded"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        interrupted.set()
        stdout, stderr = process.communicate(timeout=DEADLINE)
        assert process.returncode == 0, stderr
        first = json.loads(stdout.strip().splitlines()[-1])
        assert first["status"] == "interrupted", first
        revision = first["revision"]
        run_dir = RunDirectory(out)
        assert run_dir.data_revisions() == [revision]
        assert run_dir.problem()["data_revision"] == revision - 1  # the start's data kept
        before = {plan["L"] for plan in plans(out)}
        assert 0 < len(before) < L

        resume = subprocess.run([sys.executable, "-m", "srh_core", "resume", str(out),
                                 "--json"], cwd=ROOT, env=env(), capture_output=True,
                                text=True, timeout=DEADLINE)
    assert resume.returncode == 0, resume.stderr
    assert f"refreshed during the run (data revision {revision}" in resume.stderr
    assert json.loads(resume.stdout)["status"] == "completed"
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 200))
    resumed = [c for c in run_dir.records("candidates")
               if int(c["node_id"].rsplit("-L", 1)[1].split("-")[0]) not in before]
    assert resumed, "the resume ran no step"
    for candidate in resumed:
        assert candidate["details"]["data_revision"] == revision
    sums = [c for c in resumed if c["formula"].replace(" ", "") == "x1+x2"]
    assert sums, [c["formula"] for c in resumed]
    for candidate in sums:  # y = x1 + x2 + 0.5 now (x1 * x2**2 before the refresh)
        train = candidate["metrics"]["train"]["mse"]
        assert train == pytest.approx(0.25, rel=1e-9), train
    plan_revisions = {plan["L"]: plan["data_revision"] for plan in plans(out)}
    assert all(plan_revisions[step] == revision for step in set(plan_revisions) - before)
