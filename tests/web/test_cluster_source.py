"""The cluster adapter against a private redis-server: a run the store holds, shown by srh web."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from srh_core.agent.candidates import sample_candidates
from srh_core.agent.settings import SearchSettings
from srh_core.api import ModelResponse
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCall
from tests.web.support import Client, LiveServer
from tests.workers.conftest import redis_server  # noqa: F401 - a private redis-server

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stored_run(redis_server):  # noqa: F811 - the imported fixture
    """A submitted run (no workers: its first action is only collected) with one recorded step."""
    import redis

    import srh_core.tools.catalogue  # noqa: F401 - registers evaluate_formula
    from srh_workers.store import RedisRunStore
    from srh_workers.submit import submit_run

    client = redis.Redis.from_url(redis_server)
    rng = np.random.default_rng(2)
    x1, x2 = rng.uniform(1, 4, 80), rng.uniform(1, 4, 80)
    settings = SearchSettings.build(run_id="cluster-run", max_refinement_depth=3)
    sent: list = []
    submit_run(client, lambda *action: sent.append(action), settings, {"x1": x1, "x2": x2},
               {"y": x1 * x2**2}, "y from x1 and x2")
    context = AgentContext(args=settings)
    context.commit_data({"x1": x1, "x2": x2, "y": x1 * x2**2}, target="y", features=["x1", "x2"])
    call = ToolCall("evaluate_formula", {"f": "x1*x2**2"}, id="c1")
    result = BaseTool.create("evaluate_formula", context)(**call.params)
    response = ModelResponse(content="Try the product.", tool_calls=(call,),
                             message={"role": "assistant", "content": "Try the product."})
    store = RedisRunStore.open(client, "cluster-run")
    node = store.build_node(response, [result], (), R=1, C=1, L=1, K=1,
                            prompt=[{"role": "user", "content": "find y"}],
                            usage={"total_tokens": 12, "prompt_tokens": 10,
                                   "completion_tokens": 2, "price": 0.001})
    store.record_node(node)
    for candidate in sample_candidates([call], [result], node.node_id, "y"):
        store.push_candidate(candidate)
    assert sent, "submit enqueues the first restart"
    return redis_server


def test_the_adapter_reads_runs_in_the_shapes_of_run_directories(stored_run):
    from srh_web.cluster import ClusterSource

    source = ClusterSource(stored_run)
    assert "cluster-run" in source.run_ids() and source.has_run("cluster-run")
    assert not source.has_run("nope")
    listing = source.listing("cluster-run")
    assert listing | {"elapsed_seconds": 0} == {
        "run_id": "cluster-run", "source": "redis", "status": "running", "nodes": 1,
        "max_nodes": 3, "best_formula": "x1*x2**2", "elapsed_seconds": 0, "updated_at": None,
        "cost": None, "interactive": False, "path": None, "interaction_state": None}
    summary = source.summary("cluster-run")
    assert summary["best"]["formula"] == "x1*x2**2" and summary["cost"] == pytest.approx(0.001)
    assert summary["tokens"] == {"prompt": 10, "completion": 2, "total": 12}
    assert summary["problem"]["features"] == ["x1", "x2"]
    nodes = source.nodes("cluster-run")
    assert nodes["total"] == 1 and nodes["nodes"][0]["label"] == "R1-C1-L1-K1"
    detail = source.node("cluster-run", nodes["nodes"][0]["node_id"])
    assert detail["prompt"] == [{"role": "user", "content": "find y"}]
    assert detail["tool_calls"][0]["ok"] is True and "x1*x2**2" in detail["tool_calls"][0][
        "result_str"]
    overview = source.overview()
    assert {q["name"] for q in overview["queues"]} == {"branches", "tools"}
    assert overview["workers"] == []                       # none started here
    assert [run["run_id"] for run in overview["runs_in_flight"]] == ["cluster-run"]


def test_srh_web_lists_and_shows_redis_runs(stored_run, tmp_path):
    from srh_web.cluster import ClusterSource

    with LiveServer([tmp_path], cluster=ClusterSource(stored_run)) as server:
        client = Client(server.url)
        runs = client.json("/api/runs")
        assert runs["cluster"] is True
        assert [(r["key"], r["source"]) for r in runs["runs"]] == [("cluster-run", "redis")]
        assert client.json("/api/runs/cluster-run")["nodes"] == 1
        cluster = client.json("/api/cluster")
        assert cluster["enabled"] and cluster["runs_in_flight"][0]["run_id"] == "cluster-run"
        status, _, body = client.post("/api/runs/cluster-run/control", {"action": "pause"})
        assert status == 409 and b"does not take commands" in body


def test_a_redis_that_does_not_answer_is_reported_not_fatal(runs_root):
    from srh_web.cluster import ClusterSource
    from tests.web.support import free_port

    with LiveServer([runs_root], cluster=ClusterSource(f"redis://127.0.0.1:{free_port()}/0")) \
            as server:
        client = Client(server.url)
        runs = client.json("/api/runs")["runs"]
        assert any(r["key"] == "offline-run" for r in runs)          # directories still list
        assert runs[-1]["status"] == "unavailable" and "did not answer" in runs[-1]["error"]
        status, _, body = client.get("/api/cluster")
        assert status == 503 and b"did not answer" in body
        assert client.get("/api/runs/not-a-directory-run")[0] == 503


def test_srh_web_steers_an_interactive_redis_run_and_streams_its_events(redis_server,  # noqa: F811
                                                                       tmp_path):
    """Commands from the page reach the run's Redis state; a release re-sends parked steps."""
    from collections import deque

    import redis

    from srh_web.cluster import ClusterSource
    from srh_workers.control.submit import submit_interactive
    from srh_workers.flow.handlers import dispatch
    from tests.web.support import read_sse

    client = redis.Redis.from_url(redis_server)
    rng = np.random.default_rng(3)
    x1, x2 = rng.uniform(1, 4, (2, 80))
    sent: list = []
    settings = SearchSettings.build(run_id="steer-web", global_width=2, max_refinement_depth=2,
                                    granularity="step")
    submit_interactive(client, sent.append, settings, {"x1": x1, "x2": x2},
                       {"y": x1 * x2**2}, "y from x1 and x2")
    with LiveServer([tmp_path], cluster=ClusterSource(redis_server)) as server:
        web = Client(server.url)
        control = web.json("/api/runs/steer-web")["control"]
        assert control["interaction_state"] == "running" and control["alive"]
        assert web.post("/api/runs/steer-web/control", {"action": "pause"})[0] == 202
        queue = deque(sent)                   # the workers' side, run here: the steps park
        while queue:
            queue.extend(dispatch(client, queue.popleft()))
        control = web.json("/api/runs/steer-web")["control"]
        assert control["interaction_state"] == "paused" and control["waiting_at_boundary"]
        assert control["held"] == ["step:1:1:1", "step:1:2:1"]
        queued = client.llen("branches")
        assert web.post("/api/runs/steer-web/control", {"action": "resume"})[0] == 202
        assert client.llen("branches") == queued + 2      # the parked steps, sent to the broker
        status, _, body = web.post("/api/runs/steer-web/control", {"action": "resume"})
        assert status == 400 and b"not paused" in body
        listing = next(r for r in web.json("/api/runs")["runs"] if r["key"] == "steer-web")
        assert listing["interactive"] and listing["interaction_state"] == "running"

        def resumed(events: list) -> bool:
            return any(name == "timeline" and data["kind"] == "command_received"
                       and data["payload"].get("action") == "resume"
                       and data["payload"]["accepted"] is False for name, data in events)

        events = read_sse(server.url, "/api/runs/steer-web/events?after=0", resumed)
        states = [data["payload"]["current"] for name, data in events
                  if name == "timeline" and data["kind"] == "state_changed"]
        assert states == ["running", "pausing", "paused", "running"]
        seqs = [data["seq"] for name, data in events if name == "timeline"]
        assert seqs == list(range(1, len(seqs) + 1))


def test_a_cluster_sweep_is_listed_shown_reported_and_controlled(redis_server, tmp_path):  # noqa: F811
    import json as json_module
    import time

    from srh_core.sweep import cells, load_sweep
    from srh_web.cluster import ClusterSource
    from srh_workers.sweeps.store import SweepRecord

    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    path = tmp_path / "sweep.toml"
    path.write_text('[sweep]\nname = "remote"\nproblems = ["feynman-I.12.4", "feynman-I.14.4"]\n'
                    'seeds = [0, 1]\nsamples = 100\n', encoding="utf-8")
    spec = load_sweep(path)
    record = SweepRecord(client, "remote")
    record.publish(spec.model_dump_json(), {}, time.time())
    client.hset(record.meta_key, "applied", 1)  # as a coordinator that took the submission
    for n, cell in enumerate(cells(spec)):
        status = ("done", "done", "running", "pending")[n]
        client.hset(record.cells_key, cell.cell_id, json_module.dumps({
            "problem": cell.problem, "seed": cell.seed, "variant": cell.variant,
            "label": cell.label, "status": status, "attempts": int(status != "pending"),
            "solved": (True, False, None, None)[n], "r2_fresh": (1.0, 0.5, None, None)[n],
            "seconds": (3.0, 5.0, None, None)[n], "run_id": f"remote-{n}-a1",
            "submitted_at": time.time()}))
    with LiveServer([tmp_path], cluster=ClusterSource(redis_server)) as server:
        web = Client(server.url)
        listed = web.json("/api/sweeps")["sweeps"]
        assert [(s["key"], s["source"], s["status"]) for s in listed] == [
            ("remote", "redis", "running")]
        table = web.json("/api/sweeps/remote")
        assert table["total"] == 4 and table["counts"]["done"] == 2 and table["solved"] == 1
        assert table["status"]["controls"] == ["pause", "stop", "cancel"]
        assert table["rows"][0]["cell"] == "feynman-I.12.4|seed=0|default"
        report = web.json("/api/sweeps/remote/report")
        assert report["variants"][0]["solved"] == 1
        status, _, body = web.post("/api/sweeps/remote/control", {"action": "pause"})
        assert status == 202 and json_module.loads(body)["status"] == "paused"
        assert record.control() == "pause"
        assert json_module.loads(web.get("/api/sweeps/remote")[2])["status"]["controls"] == [
            "resume", "stop", "cancel"]
        status, _, body = web.post("/api/sweeps/remote/control", {"action": "resume"})
        assert status == 202 and record.control() is None
        status, _, body = web.post("/api/sweeps/remote/control", {"action": "explode"})
        assert status == 400 and b"Unknown sweep action" in body
        status, _, body = web.post("/api/sweeps/remote/control", {"action": "cancel"})
        assert status == 202 and record.control() == "cancel"
        status, _, body = web.post("/api/sweeps/remote/control", {"action": "pause"})
        assert status == 409 and b"cancelled" in body
        assert web.get("/api/sweeps/nosuch")[0] == 404
        status, _, _ = web.post("/api/sweeps/remote/control", {"action": "pause"}, csrf=False)
        assert status == 403
