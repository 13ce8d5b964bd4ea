"""Structured problems on the cluster: a Strogatz ODE and a graph problem, real workers.

The graph layout (relations, num_nodes, role notes) travels to the workers in the
run's context payload; the offline proposer solves both problems there with
indexed formulas and derivative libraries, as it does embedded.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.workers.support import (
    ROOT,
    WORKER_START_DEADLINE,
    WorkerProcess,
    wait_until,
    worker_env,
)

pytestmark = pytest.mark.integration


def _worker(env: dict[str, str], log: Path, queue: str) -> WorkerProcess:
    worker = WorkerProcess.celery(env, log, queue=queue,
                                  pool="prefork" if queue == "tools" else "threads",
                                  concurrency=1)
    wait_until(lambda: "ready." in worker.log_text() or not worker.alive,
               WORKER_START_DEADLINE, f"{queue} worker to start")
    assert worker.alive, worker.log_text()[-2000:]
    return worker


def _run(env: dict[str, str], problem: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "srh_core", "run", "--backend", "celery", "--problem", problem,
         "--samples", "300", "-L", "2", "-K", "2", "--json", "--run-id",
         problem.replace("-", "_")], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=180)


def test_strogatz_and_graph_problems_are_solved_on_real_workers(redis_server_factory: Any,
                                                                tmp_path: Path) -> None:
    server = redis_server_factory()
    env = worker_env(server.url, SRH_RUNS_DIR=str(tmp_path / "runs"), SRH_LOG_FORMAT="text",
                     SRH_TASK_MODULES="srh_workers.flow.tasks")
    workers = [_worker(env, tmp_path / f"{q}.log", q) for q in ("branches", "tools")]
    try:
        runs = {problem: _run(env, problem) for problem in ("strogatz-lv1", "network-sis")}
    finally:
        for worker in workers:
            worker.stop(signal.SIGKILL)
    for problem, run in runs.items():
        assert run.returncode == 0, run.stderr[-3000:]
        result = json.loads(run.stdout)
        formula = result["candidates"][result["best_candidate"]]["formula"]
        assert "Judged on 1000 fresh points: solved=True" in run.stderr, (problem, formula)
    network = json.loads(runs["network-sis"].stdout)
    assert "sum[j](A[i, j]" in network["candidates"][network["best_candidate"]]["formula"]


def test_an_embedded_sweep_runs_structured_problems(tmp_path: Path) -> None:
    from srh_core.sweep import EmbeddedSweepBackend, SweepRunner, load_sweep

    spec_file = tmp_path / "sweep.toml"
    spec_file.write_text('[sweep]\nname = "structured"\nproblems = ["strogatz-lv1", '
                         '"network-sis"]\nseeds = [0]\nsamples = 300\nretries = 0\n\n'
                         '[settings]\nmax_refinement_depth = 2\nlocal_sample_size = 2\n',
                         encoding="utf-8")
    rows = SweepRunner(load_sweep(spec_file), tmp_path / "out",
                       EmbeddedSweepBackend(tmp_path / "runs")).run()
    assert {row["problem"]: row["solved"] for row in rows} == {"strogatz-lv1": True,
                                                               "network-sis": True}
