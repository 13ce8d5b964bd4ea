"""Sweeps as cluster jobs: coordinated by the workers, taken over, paused, stopped, cancelled.

Real Redis (private), real worker processes, the ``srh`` command line in
subprocesses with time limits. The model is ``test-cancellable`` (each request
waits ``wait-S`` seconds) so cells last long enough to be controlled.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from srh_core.errors import ConfigurationError
from srh_core.sweep import load_sweep
from srh_workers.artifacts import export_run
from srh_workers.store import RUNS_INDEX, RedisRunStore
from srh_workers.submit import cancel_run, run_result, run_status
from srh_workers.sweeps import control
from srh_workers.sweeps.store import SweepRecord
from tests.workers.cluster import Cluster
from tests.workers.support import ROOT, wait_until

SWEEP_ENV = {"SRH_SWEEP_INTERVAL": "0.2", "SRH_SWEEP_LEASE": "2",
             # the cells' tasks last well under a second: a killed worker's are re-delivered
             # after 7 s instead of the cluster tests' 12 (hold 4 + backoff 2 + a 1 s margin)
             "SRH_TOOL_SOFT_LIMIT": "3", "SRH_TOOL_HARD_LIMIT": "4",
             "SRH_BRANCH_SOFT_LIMIT": "3", "SRH_BRANCH_HARD_LIMIT": "4",
             "SRH_VISIBILITY_TIMEOUT": "7"}
COMMAND_SECONDS = 60


def write_sweep(path: Path, name: str, *, problems: list[str], seeds: list[int],
                max_parallel: int, wait: float, depth: int) -> Path:
    path.write_text(
        f'[sweep]\nname = "{name}"\nproblems = {json.dumps(problems)}\nseeds = {seeds}\n'
        f'samples = 200\nretries = 1\nmax_parallel = {max_parallel}\nstall_seconds = 60\n\n'
        f'[settings]\nllm_provider = "test-cancellable"\nllm_model = "wait-{wait}"\n'
        f'tool_parser = "text"\nmax_refinement_depth = {depth}\nlocal_sample_size = 1\n'
        'global_width = 1\nearly_stop = false\n', encoding="utf-8")
    return path


def srh(cluster: Cluster, *args: str, timeout: float = COMMAND_SECONDS
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "srh_core", *args], env=cluster.env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def view(cluster: Cluster, name: str) -> dict[str, Any]:
    return control.sweep_status_view(cluster.client, name)


def runs_of(cluster: Cluster, name: str) -> list[str]:
    return sorted(r.decode() for r in cluster.client.zrange(RUNS_INDEX, 0, -1)
                  if r.decode().startswith(f"{name}-"))


@pytest.fixture
def sweep_cluster(cluster: Cluster) -> Cluster:
    cluster.env.update(SWEEP_ENV)
    return cluster


def test_a_submitted_sweep_runs_without_its_shell_and_survives_its_coordinators_death(
        sweep_cluster: Cluster, tmp_path: Path) -> None:
    cluster = sweep_cluster
    artifacts = tmp_path / "artifacts"
    cluster.env["SRH_ARTIFACTS"] = str(artifacts)
    first, second, _ = cluster.start_together(
        ("branches", {"concurrency": 4}), ("branches", {"concurrency": 4}),
        ("tools", {"concurrency": 2, "SRH_SWEEP_INTERVAL": "0"}))  # tools coordinate no sweep
    path = write_sweep(tmp_path / "sweep.toml", "orphans", seeds=[0, 1], max_parallel=2,
                       problems=["feynman-I.12.4", "feynman-I.14.4", "feynman-I.25.13"],
                       wait=0.2, depth=3)
    started = time.monotonic()
    submitted = srh(cluster, "sweep", "submit", str(path))
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.strip() == "orphans"
    assert time.monotonic() - started < 20  # it returns at once (the command's start-up)

    wait_until(lambda: view(cluster, "orphans")["cells"]["done"] >= 1, 90, "a finished cell")
    holder = SweepRecord(cluster.client, "orphans").lease_holder()
    assert holder is not None
    victim = first if holder.endswith(f":{first.process.pid}") else second
    assert holder.endswith(f":{victim.process.pid}"), holder
    victim.stop(signal.SIGKILL)

    wait_until(lambda: view(cluster, "orphans")["over"], 150, "the sweep to end")
    final = view(cluster, "orphans")
    assert final["status"] == "completed" and final["cells"]["done"] == 6, final
    new_holder = SweepRecord(cluster.client, "orphans").meta()["owner"]
    assert new_holder != holder  # the other worker's coordinator took the sweep over
    rows = control.sweep_rows(cluster.client, "orphans")
    assert all(row["attempts"] == 1 for row in rows), rows
    runs = runs_of(cluster, "orphans")
    assert sorted(row["run_id"] for row in rows) == runs  # one run per cell, none twice
    for run_id in runs:  # written by the worker that finished it, just after its result
        wait_until(lambda run_id=run_id: (artifacts / "runs" / run_id / "result.json").is_file(),
                   30, f"{run_id}'s run directory")
    for run_id in runs:  # every node of a run is recorded once
        lines = (artifacts / "runs" / run_id / "nodes.jsonl").read_text().splitlines()
        ids = [json.loads(line)["node_id"] for line in lines]
        assert ids and len(ids) == len(set(ids))

    for row in rows:  # every cell's evidence under the artifact root, whoever finished it
        run_dir = artifacts / "runs" / row["run_id"]
        assert (run_dir / "result.json").is_file() and (run_dir / "nodes.jsonl").is_file()
        judgement = json.loads((run_dir / "judgement.json").read_text())
        assert judgement["solved"] == row["solved"] and judgement["sweep"] == "orphans"
        store = RedisRunStore(cluster.client, row["run_id"], register=False)
        assert store.is_compacted() and store.stored_result() is not None
        assert not cluster.client.exists(store.keys.context)
    shown = srh(cluster, "show", str(artifacts / "runs" / rows[0]["run_id"]), "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["run_id"] == rows[0]["run_id"]

    status = srh(cluster, "sweep", "status", "orphans", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["status"] == "completed"
    again = srh(cluster, "sweep", "submit", str(path))  # idempotent: nothing is missing
    assert again.returncode == 0, again.stderr
    wait_until(lambda: view(cluster, "orphans")["over"], 30, "the resubmission to be applied")
    assert runs_of(cluster, "orphans") == runs
    listing = srh(cluster, "sweep", "list", "--json")
    assert [row["sweep"] for row in json.loads(listing.stdout)["sweeps"]] == ["orphans"]


def test_pause_resume_stop_and_cancel(sweep_cluster: Cluster, tmp_path: Path) -> None:
    cluster = sweep_cluster
    cluster.start_together(("branches", {"concurrency": 2}), ("tools", {"concurrency": 1}))
    spec = load_sweep(write_sweep(tmp_path / "sweep.toml", "knobs", max_parallel=1,
                                  problems=["feynman-I.12.4", "feynman-I.14.4"], seeds=[0, 1],
                                  wait=0.3, depth=4))
    client = cluster.client
    control.submit_sweep(client, spec)

    def states() -> dict[str, int]:
        return view(cluster, "knobs")["cells"]

    # pause: the running cell finishes, no new one starts
    wait_until(lambda: states()["running"] == 1, 60, "a running cell")
    assert control.pause_sweep(client, "knobs")["status"] == "paused"
    wait_until(lambda: states()["done"] == 1 and states()["running"] == 0, 60,
               "the running cell to finish")
    time.sleep(1.0)  # several coordinator looks: still nothing starts
    assert states()["pending"] == 3 and view(cluster, "knobs")["status"] == "paused"

    # resume, then stop: the running cell finishes, then "stopped" with cells pending
    control.resume_sweep(client, "knobs")
    wait_until(lambda: states()["running"] == 1, 30, "a cell to start after resume")
    control.stop_sweep(client, "knobs")
    wait_until(lambda: view(cluster, "knobs")["status"] == "stopped", 60, "stopped")
    assert states()["done"] == 2 and states()["pending"] == 2

    # cancel: the running cell's run cancelled within 30 s, no model request after it
    control.resume_sweep(client, "knobs")
    wait_until(lambda: states()["running"] == 1, 30, "a cell to start after resume")
    running = next(r for r in control.sweep_rows(client, "knobs") if r["status"] == "running")
    wait_until(lambda: RedisRunStore(client, running["run_id"],
                                     register=False).flow.model_requests() >= 1, 30, "a request")
    cancelled_at = time.monotonic()
    assert control.cancel_sweep(client, "knobs")["status"] == "cancelled"
    wait_until(lambda: view(cluster, "knobs")["over"], 30, "the cancel to end the sweep")
    assert time.monotonic() - cancelled_at < 30
    assert states()["cancelled"] == 1 and states()["done"] == 2 and states()["pending"] == 1
    store = RedisRunStore(client, running["run_id"], register=False)
    requests = store.flow.model_requests()
    time.sleep(1.5)
    assert store.flow.model_requests() == requests

    # a later submission runs the cancelled and pending cells; a cell cancelled by
    # `srh cancel RUN_ID` is counted as cancelled, never as done
    control.submit_sweep(client, spec)
    wait_until(lambda: states()["running"] == 1, 30, "a cell to start after resubmit")
    single = next(r for r in control.sweep_rows(client, "knobs") if r["status"] == "running")
    assert single["attempts"] == 2 or single["cell"] != running["cell"]
    # the coordinator saves a cell "running" under its run id before it submits the run
    wait_until(lambda: RedisRunStore(client, single["run_id"], register=False).spec_json()
               is not None, 30, "the cell's run to be submitted")
    cancel_run(client, single["run_id"])
    wait_until(lambda: view(cluster, "knobs")["over"], 90, "the resubmission to finish")
    final = view(cluster, "knobs")
    assert final["status"] == "completed", final
    assert final["cells"]["cancelled"] == 1 and final["cells"]["done"] == 3, final


def test_controls_of_an_unknown_sweep_say_so(sweep_cluster: Cluster) -> None:
    result = srh(sweep_cluster, "sweep", "pause", "nosuch")
    assert result.returncode == 2
    assert "No sweep named 'nosuch'" in result.stderr


def test_the_sweep_gauges_count_an_active_sweeps_cells(redis_server: str, tmp_path: Path
                                                      ) -> None:
    import redis
    from prometheus_client import CollectorRegistry, generate_latest

    from srh_workers.observability.sweep_metrics import SweepCollector

    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    spec = load_sweep(write_sweep(tmp_path / "sweep.toml", "gauged", max_parallel=1,
                                  problems=["feynman-I.12.4"], seeds=[0, 1, 2], wait=0, depth=1))
    record = SweepRecord(client, "gauged")
    record.publish(spec.model_dump_json(), {}, time.time())
    for n, (status, solved) in enumerate((("done", True), ("done", False), ("running", None))):
        client.hset(record.cells_key, f"cell{n}", json.dumps({"status": status,
                                                              "solved": solved}))
    client.zadd("srh:active", {"run-a": 1.0, "run-b": 2.0})
    registry = CollectorRegistry()
    registry.register(SweepCollector(redis_server))
    text = generate_latest(registry).decode()
    assert "srh_runs_in_flight 2.0" in text
    assert "srh_sweeps_in_flight 1.0" in text
    assert 'srh_sweep_cells{state="done",sweep="gauged"} 2.0' in text
    assert 'srh_sweep_cells{state="running",sweep="gauged"} 1.0' in text
    assert 'srh_sweep_cells_solved{sweep="gauged"} 1.0' in text
    down = CollectorRegistry()
    down.register(SweepCollector("redis://127.0.0.1:1/0"))
    assert "srh_sweeps_up 0.0" in generate_latest(down).decode()


def test_srh_export_writes_a_run_directory_and_compacts_it(cluster: Cluster, tmp_path: Path
                                                          ) -> None:
    import numpy as np

    from srh_core.agent import SearchSettings

    cluster.start("tools", concurrency=1)
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 100))
    run_id = cluster.submit(SearchSettings.build(run_id="exported", max_refinement_depth=2),
                            {"x1": x1, "x2": x2}, {"y": x1 * x2})
    cluster.result(run_id)
    store = RedisRunStore(cluster.client, run_id, register=False)
    before = sum(int(cluster.client.memory_usage(key) or 0) for key in store.run_keys())
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(ConfigurationError, match="not an empty directory"):
        export_run(cluster.client, run_id, tmp_path / "full")
    done = srh(cluster, "export", run_id, str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "result.json").is_file()
    after = sum(int(cluster.client.memory_usage(key) or 0) for key in store.run_keys())
    assert store.is_compacted() and after < before
    assert run_status(cluster.client, run_id)["status"] in ("completed", "early_stopped")
    assert run_result(cluster.client, run_id).run_id == run_id  # what status and result read
    again = srh(cluster, "export", run_id, str(tmp_path / "again"))
    assert again.returncode != 0 and "exported already" in again.stderr
    shown = srh(cluster, "show", str(tmp_path / "out"), "--json")
    assert shown.returncode == 0, shown.stderr


def test_an_unwritable_artifact_root_loses_no_result(cluster: Cluster, tmp_path: Path) -> None:
    import numpy as np

    from srh_core.agent import SearchSettings

    root = tmp_path / "readonly"
    root.mkdir()
    (root / "runs").write_text("not a directory")  # the run directory cannot be made
    cluster.start("tools", concurrency=1, SRH_ARTIFACTS=str(root))
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 100))
    run_id = cluster.submit(SearchSettings.build(run_id="kept", max_refinement_depth=1),
                            {"x1": x1, "x2": x2}, {"y": x1 * x2})
    assert cluster.result(run_id).status in ("completed", "early_stopped")
    store = RedisRunStore(cluster.client, run_id, register=False)
    assert not store.is_compacted() and cluster.client.exists(store.keys.context)
    exported = srh(cluster, "export", run_id, str(tmp_path / "later"))
    assert exported.returncode == 0, exported.stderr


def test_a_drained_worker_takes_no_new_task_and_status_says_so(cluster: Cluster) -> None:
    import socket

    import numpy as np

    from srh_core.agent import SearchSettings

    worker = cluster.start("tools", concurrency=1, SRH_LOG_FORMAT="json")
    node = f"tools-{worker.log.stem}@{socket.gethostname()}"
    unknown = srh(cluster, "worker", "drain", "nobody@nowhere")
    assert unknown.returncode == 2 and "No worker 'nobody@nowhere' answers" in unknown.stderr
    drained = srh(cluster, "worker", "drain", node)
    assert drained.returncode == 0, drained.stderr
    assert "drained" in drained.stdout
    status = srh(cluster, "status")
    assert f"{node} (drained)" in status.stdout, status.stdout
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 100))
    run_id = cluster.submit(SearchSettings.build(run_id="after-drain", max_refinement_depth=1),
                            {"x1": x1, "x2": x2}, {"y": x1 * x2})
    time.sleep(1.5)  # a consuming worker starts an offline run's task within milliseconds
    assert RedisRunStore(cluster.client, run_id, register=False).stored_result() is None
    assert cluster.client.llen("tools") >= 1  # the task waits in its queue
    undone = srh(cluster, "worker", "drain", node, "--undo")
    assert undone.returncode == 0, undone.stderr
    assert cluster.result(run_id, timeout=60).status in ("completed", "early_stopped")
    assert not cluster.client.hexists("srh:workers:drained", node)  # status lists it plainly
    events = []  # a log collector counts runs from these lines
    for line in worker.log_text().splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and record.get("run_id") == run_id:
                events.append(record.get("event"))
    assert events.count("run_started") == 1 and events.count("run_finished") == 1, events


def test_a_sweep_whose_files_are_too_large_to_ship_is_refused_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from srh_core.errors import InputTooLargeError

    (tmp_path / "data.csv").write_text("x1,y\n" + "1,2\n" * 100)
    path = tmp_path / "sweep.toml"
    path.write_text('[sweep]\nname = "heavy"\nseeds = [0]\n\n[[datasets]]\nname = "d"\n'
                    'path = "data.csv"\ntarget = "y"\n', encoding="utf-8")
    monkeypatch.setattr(control, "MAX_INPUT_BYTES", 100)
    with pytest.raises(InputTooLargeError, match="heavy: its files weigh") as raised:
        control.pack_inputs(load_sweep(path))
    assert raised.value.limit == 100 and raised.value.size > 100


def test_a_sweeps_skills_dirs_travel_with_its_inputs(tmp_path: Path) -> None:
    from srh_core.sweep.runner import cell_data
    from srh_core.sweep.spec import cells as sweep_cells

    for name in ("common", "extra"):
        folder = tmp_path / name / f"{name}-skill"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}-skill\ndescription: d\n---\nbody\n")
    path = tmp_path / "sweep.toml"
    path.write_text('[sweep]\nname = "skilled"\nproblems = ["feynman-I.12.4"]\nseeds = [0]\n\n'
                    '[settings]\nskills_dir = "common"\n\n[[variants]]\nname = "a"\n\n'
                    '[[variants]]\nname = "b"\nskills_dir = "extra"\n', encoding="utf-8")
    packed, inputs = control.pack_inputs(load_sweep(path))
    assert sorted(inputs) == ["skills/0/common-skill/SKILL.md", "skills/1/extra-skill/SKILL.md"]
    here = control.materialize(packed, inputs, tmp_path / "worker")
    found = {}
    for cell in sweep_cells(here):
        folder = Path(cell_data(here, cell).settings.skills_dir)
        found[cell.variant] = sorted(p.name for p in folder.iterdir())
    assert found == {"a": ["common-skill"], "b": ["extra-skill"]}
