"""The distributed runtime end to end: a private redis-server and real worker processes.

The ``cluster`` fixture (tests/workers/conftest.py, :class:`tests.workers.cluster.Cluster`)
starts workers with short limits, see there.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis

from srh_core.agent import SearchSettings, SRAgent
from srh_core.problems import load_suite
from srh_core.sweep import SweepRunner, load_sweep
from srh_workers.flow.tasks import sender
from srh_workers.store import RedisRunStore
from srh_workers.submit import run_status
from srh_workers.sweeps import CelerySweepBackend
from tests.workers.cluster import (
    QUICK_RECOVERY_ENV,
    QUICK_VISIBILITY,
    RECOVERY_TARGET_SECONDS,
    Cluster,
)
from tests.workers.cluster_plugins import REQUESTS_KEY
from tests.workers.conftest import RedisServerFactory
from tests.workers.support import ROOT, wait_until

pytestmark = pytest.mark.integration

@pytest.fixture
def quick_cluster(redis_server_factory: RedisServerFactory, tmp_path: Path) -> Iterator[Cluster]:
    """The ``cluster`` fixture with :data:`QUICK_RECOVERY_ENV`: a killed worker's message is
    back after 9 s instead of 12 s."""
    server = redis_server_factory(appendonly=True)
    made = Cluster(server.url, tmp_path, **QUICK_RECOVERY_ENV)
    yield made
    made.close()


def power_law_data(n: int = 300) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    x1, x2 = rng.uniform(1, 5, n), rng.uniform(1, 5, n)
    return {"x1": x1, "x2": x2}, {"y": x1 * x2**2}


def slow_settings(run_id: str, **values: Any) -> SearchSettings:
    return SearchSettings.build(llm_provider="test-slow", tool_parser="text",
                                tools=["evaluate_formula", "slow_probe"], early_stop=False,
                                run_id=run_id, **values)


def assert_complete(client: redis.Redis, run_id: str, settings: SearchSettings) -> None:
    """Every coordinate has its node, and no pool entry is duplicated."""
    store = RedisRunStore.open(client, run_id)
    ids = [record["node_id"] for record in store.records()]
    expected = {store.node_id(R, C, L, K)
                for R in range(1, settings.max_restart_loop + 1)
                for C in range(1, settings.global_width + 1)
                for L in range(1, settings.max_refinement_depth + 1)
                for K in range(1, settings.local_sample_size + 1)}
    assert len(ids) == len(set(ids)) and set(ids) == expected
    pool = [(c.node_id, c.canonical_key) for c in store.candidates()]
    assert len(pool) == len(set(pool))
    keys = [c.canonical_key for c in store.ranked_candidates()]
    assert len(keys) == len(set(keys))


def test_smallest_deployment_matches_the_embedded_run(cluster: Cluster) -> None:
    problem = load_suite().get("feynman-I.12.4")
    X, y = problem.sample(400, seed=0)
    values = {"max_restart_loop": 2, "global_width": 2, "max_refinement_depth": 3,
              "local_sample_size": 2, "early_stop": False, "seed": 3}
    embedded = SRAgent(run_id="same", **values).run(X, {problem.output: y}, "find y")
    cluster.start_together(("branches", {"concurrency": 1}), ("tools", {"concurrency": 1}))
    run_id = cluster.submit(SearchSettings.build(run_id="same-c", **values), X,
                            {problem.output: y})
    result = cluster.result(run_id).to_dict()
    assert result["status"] == embedded["status"] == "completed"
    assert set(result) == set(embedded)
    store = RedisRunStore.open(cluster.client, run_id)
    assert store.node_count == 24
    assert [c["formula"] for c in result["candidates"]] == \
        [c["formula"] for c in embedded["candidates"]]
    best = result["candidates"][result["best_candidate"]]
    assert best["formula"] == embedded["candidates"][embedded["best_candidate"]]["formula"]
    assert problem.judge(best["formula"]).solved
    path = cluster.directory / "runs" / run_id / "result.json"
    wait_until(path.exists, 30, "the finalizing worker to write the run directory")
    assert json.loads(path.read_text()) == result


def _held_tool_task(client: redis.Redis) -> tuple[Any, ...] | None:
    """The arguments of the tool task a worker holds unacknowledged, if any."""
    for raw in client.hvals("unacked"):
        message, _exchange, routing_key = json.loads(raw)
        if routing_key != "tools":
            continue
        return ast.literal_eval(message["headers"]["argsrepr"])
    return None


def test_a_killed_tools_worker_loses_nothing(quick_cluster: Cluster) -> None:
    cluster = quick_cluster
    settings = slow_settings("killtools", global_width=2, max_refinement_depth=2,
                             local_sample_size=2)
    _, tools = cluster.start_together(("branches", {"concurrency": 2}),
                                      ("tools", {"concurrency": 1}))
    run_id = cluster.submit(settings, *power_law_data())
    held = wait_until(lambda: _held_tool_task(cluster.client), 60, "a tool task in flight")
    os.killpg(tools.process.pid, signal.SIGKILL)  # the whole node: main process and children
    killed_at = time.monotonic()
    cluster.start("tools", concurrency=1)
    _, R, C, L, K = held
    store = RedisRunStore.open(cluster.client, run_id)
    wait_until(lambda: store.node_record(store.node_id(R, C, L, K)), RECOVERY_TARGET_SECONDS,
               "the lost tool task to come back")
    recovery = time.monotonic() - killed_at
    print(f"lost tool task recovered {recovery:.1f}s after the kill "
          f"(visibility timeout {QUICK_VISIBILITY}s + restore sweep 1s)")
    assert recovery < RECOVERY_TARGET_SECONDS
    assert cluster.result(run_id).status == "completed"
    assert_complete(cluster.client, run_id, settings)


def test_a_killed_branch_worker_resumes_without_resampling(quick_cluster: Cluster) -> None:
    cluster = quick_cluster
    settings = slow_settings("killbranch", max_refinement_depth=3, local_sample_size=2)
    branches, _ = cluster.start_together(
        ("branches", {"concurrency": 1, "SRH_TEST_MODEL_DELAY": "1.5"}),
        ("tools", {"concurrency": 2}))
    run_id = cluster.submit(settings, *power_law_data())
    requests = lambda: {int(k): int(v) for k, v in cluster.client.hgetall(REQUESTS_KEY).items()}  # noqa: E731
    wait_until(lambda: len(requests()) >= 2, 60, "the second step's model request")
    finished_before = {seed for seed in requests()} - {max(requests(), key=lambda s: s)}
    os.killpg(branches.process.pid, signal.SIGKILL)
    cluster.start("branches", concurrency=1, SRH_TEST_MODEL_DELAY="1.5")
    assert cluster.result(run_id).status == "completed"
    assert_complete(cluster.client, run_id, settings)
    counts = requests()
    assert len(counts) == settings.max_refinement_depth
    assert sum(counts.values()) <= settings.max_refinement_depth + 1
    stored = int(cluster.client.get(f"srh:{{{run_id}}}:requests"))
    assert stored == settings.max_refinement_depth  # one sampled plan per step
    print(f"model requests per step seed: {counts}; steps finished before the kill: "
          f"{len(finished_before)}")


def _srh(env: dict[str, str], *args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "srh_core", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_the_run_survives_its_submitter(cluster: Cluster) -> None:
    cluster.start_together(("branches", {"concurrency": 2}), ("tools", {"concurrency": 1}))
    submitter = _srh(cluster.env, "run", "--backend", "celery", "--problem", "feynman-I.12.4",
                     "-C", "2", "-L", "3", "-K", "2", "--run-id", "orphan",
                     "--samples", "300")
    line = submitter.stderr.readline()
    assert "Submitted run orphan" in line, line + submitter.stderr.read()
    submitter.kill()
    submitter.wait(timeout=10)
    reader = _srh(cluster.env, "result", "orphan", "--wait", "150", "--json")
    out, err = reader.communicate(timeout=180)
    assert reader.returncode == 0, err
    result = json.loads(out)
    assert result["run_id"] == "orphan" and result["status"] in ("completed", "early_stopped")
    assert result["candidates"][result["best_candidate"]]["formula"]


def _write_sweep(path: Path, name: str, problems: list[str], seeds: list[int]) -> Path:
    path.write_text(
        f'[sweep]\nname = "{name}"\nproblems = {json.dumps(problems)}\nseeds = {seeds}\n'
        'samples = 300\nretries = 1\nmax_parallel = 8\nstall_seconds = 20\n\n'
        '[settings]\nmax_refinement_depth = 2\nlocal_sample_size = 1\n', encoding="utf-8")
    return path


def test_a_sweep_of_20_cells_on_two_tool_workers(cluster: Cluster, tmp_path: Path) -> None:
    cluster.start_together(("branches", {"concurrency": 4}), ("tools", {"concurrency": 1}),
                           ("tools", {"concurrency": 1}))
    problems = ["feynman-I.12.4", "feynman-I.14.4", "feynman-I.25.13", "feynman-II.34.2",
                "feynman-I.39.1"]
    spec = load_sweep(_write_sweep(tmp_path / "sweep.toml", "twenty", problems, [0, 1, 2, 3]))
    rows = SweepRunner(spec, tmp_path / "out", CelerySweepBackend(cluster.client,
                                                                  sender(cluster.app)),
                       progress=lambda line: None).run()
    assert len(rows) == 20 and all(row["status"] == "done" for row in rows), rows
    table = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert len(table) == 21 and table[0].startswith("cell,label,problem,seed")
    assert all(row["best_formula"] and row["solved"] is not None for row in rows)


def test_a_redis_restart_during_a_sweep_loses_no_finished_cell(cluster: Cluster,
                                                                tmp_path: Path) -> None:
    cluster.start_together(("branches", {"concurrency": 2}), ("tools", {"concurrency": 2}))
    spec = load_sweep(_write_sweep(tmp_path / "sweep.toml", "restart",
                                   ["feynman-I.12.4", "feynman-I.14.4", "feynman-I.25.13"],
                                   [0, 1]))
    runner = SweepRunner(spec, tmp_path / "out", CelerySweepBackend(cluster.client,
                                                                    sender(cluster.app)),
                         progress=lambda line: None)
    rows: list[Any] = []
    thread = threading.Thread(target=lambda: rows.extend(runner.run()), daemon=True)
    thread.start()
    wait_until(lambda: runner.counts().get("done", 0) >= 1, 120, "a finished cell")
    done_before = {cell: dict(entry) for cell, entry in runner.state.items()
                   if entry["status"] == "done"}
    cluster.server.restart(hard=True)  # type: ignore[attr-defined]
    thread.join(timeout=240)
    assert not thread.is_alive(), runner.counts()
    by_cell = {row["cell"]: row for row in rows}
    for cell, entry in done_before.items():
        assert by_cell[cell]["status"] == "done" and by_cell[cell]["run_id"] == entry["run_id"]
    unfinished = [row for row in rows if row["status"] != "done"]
    assert all(row["error"] for row in unfinished)  # reported: exactly these must be re-run
    assert len(rows) == 6
    status = run_status(cluster.client, by_cell[next(iter(done_before))]["run_id"])
    assert status["status"] in ("completed", "early_stopped")
