"""A closed cluster: workers keep their keys to the operator's endpoints, replays change nothing.

One private redis-server and one worker per queue (one task at a time each)
serve both tests. Two local OpenAI-compatible listeners record every
Authorization header: the "submitter's host" (any URL a run may name) and
the "operator's endpoint" (listed in the workers' SRH_ENDPOINTS file).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from srh_core.agent import SearchSettings
from srh_core.api.endpoints import EndpointAccessError, ModelAccess
from srh_workers.app import PING_TASKS
from srh_workers.endpoints import published_endpoints
from srh_workers.flow import names
from srh_workers.flow.tasks import sender
from srh_workers.store import RedisRunStore
from srh_workers.submit import submit_run
from tests.support.openai_payloads import evaluating_reply
from tests.support.openai_server import FakeOpenAIServer
from tests.workers.cluster import Cluster
from tests.workers.conftest import RedisOptions, RedisServer
from tests.workers.support import wait_until

pytestmark = pytest.mark.integration

WORKER_KEY = "sk-worker-own-secret"
OPERATOR_KEY = "sk-operator-endpoint"
RUN_KEY = "sk-brought-by-the-run"
FORMULAS = ("x1*x2", "x1 + x2")


class Closed:
    def __init__(self, cluster: Cluster, host: FakeOpenAIServer,
                 operator: FakeOpenAIServer) -> None:
        self.cluster, self.host, self.operator = cluster, host, operator


@pytest.fixture(scope="module")
def closed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Closed]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not on PATH")
    directory = tmp_path_factory.mktemp("closed")
    server = RedisServer(binary, directory / "redis", RedisOptions())
    server.start()
    cluster = Cluster(server.url, directory)
    with FakeOpenAIServer() as host, FakeOpenAIServer() as operator:
        for listener in (host, operator):
            listener.respond_with(evaluating_reply(FORMULAS))
        env = {"OPENAI_API_KEY": WORKER_KEY, "LAB_KEY": OPERATOR_KEY,
               "SRH_ENDPOINTS": str(_endpoints_file(directory, operator.base_url))}
        try:
            for worker in [cluster.start("branches", wait=False, **env),
                           cluster.start("tools", wait=False, **env)]:
                Cluster.ready(worker)
            yield Closed(cluster, host, operator)
        finally:
            cluster.close()
            server.stop()


def _endpoints_file(directory: Path, base_url: str) -> Path:
    path = directory / "endpoints.toml"
    path.write_text(f'[endpoints.lab]\nprovider = "openai"\nbase_url = "{base_url}"\n'
                    f'api_key_env = "LAB_KEY"\nmodel = "lab-model"\n', encoding="utf-8")
    return path


def _settings(run_id: str, **values: object) -> SearchSettings:
    return SearchSettings.build(run_id=run_id, llm_provider="openai", llm_model="m",
                                tool_parser="openai", tools=["evaluate_formula"],
                                max_refinement_depth=1, early_stop=False, **values)


def _data() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    x1, x2 = np.random.default_rng(0).uniform(1, 5, (2, 60))
    return {"x1": x1, "x2": x2}, {"y": x1 * x2}


def _keys(server: FakeOpenAIServer) -> set[str]:
    return {request.headers.get("authorization", "") for request in server.requests}


def test_workers_send_only_the_operators_or_the_runs_key(
        closed: Closed, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, host, operator = closed.cluster, closed.host, closed.operator
    assert published_endpoints(cluster.client).names() == ["lab"]
    X, y = _data()

    # an unlisted URL without a key of its own is refused at submit, before anything is sent
    with pytest.raises(EndpointAccessError, match="not one of the operator's endpoints"):
        cluster.submit(_settings("steal", base_url=host.base_url), X, y)
    assert not cluster.client.exists("srh:{steal}:spec")

    # ... and by the workers, when a run gets past the submitter's check
    import srh_workers.submit as submit

    monkeypatch.setattr(submit, "submit_access", lambda client, key: ModelAccess(operator=True))
    forged = cluster.submit(_settings("forged", base_url=host.base_url), X, y)
    monkeypatch.undo()
    result = cluster.result(forged, timeout=60)
    assert result.status == "failed" and "not one of the operator's endpoints" in (
        result.stop_reason or "")

    # the run's own key is the only key sent to the run's URL
    own = submit_run(cluster.client, sender(cluster.app), _settings("own", base_url=host.base_url),
                     X, y, "find y", api_key=RUN_KEY).run_id
    assert cluster.result(own).status == "completed"

    # an endpoint by name, and its URL given as a base URL, use the operator's key
    by_name = cluster.submit(_settings("by-name", endpoint="lab"), X, y)
    by_url = cluster.submit(_settings("by-url", base_url=operator.base_url + "/"), X, y)
    assert cluster.result(by_name).status == cluster.result(by_url).status == "completed"

    assert _keys(host) == {f"Bearer {RUN_KEY}"}
    assert len(host.requests) >= 1
    assert _keys(operator) == {f"Bearer {OPERATOR_KEY}"}
    assert {r.body["model"] for r in operator.requests} == {"m"}
    for request in [*host.requests, *operator.requests]:
        assert WORKER_KEY not in str(request.headers)


# ------------------------------------------------------------------------ replays
R, C, L, K = 2, 1, 1, 2


def snapshot(cluster: Cluster, run_id: str) -> dict[str, Any]:
    store = RedisRunStore.open(cluster.client, run_id)
    result = store.stored_result()
    return {
        "records": store.records(include_detail=True),
        "pool": [c.to_dict() for c in store.candidates()],
        "ranked": [c.canonical_key for c in store.ranked_candidates()],
        "branches": [b.to_dict() if b else None for r in range(1, R + 2)
                     for b in store.flow.load_branches(r, C)],
        "model_requests": store.flow.model_requests(),
        "tool_log": len(store.tool_log()),
        "result": result.to_dict() if result else None,
        "run_dir": (cluster.directory / "runs" / run_id / "result.json").read_text(),
        "stop": store.flow.stop_reason(),
    }


def replays(run_id: str) -> list[tuple[str, list[Any]]]:
    tasks: list[tuple[str, list[Any]]] = [(names.RESTART, [run_id, r]) for r in range(1, R + 2)]
    for r in range(1, R + 1):
        for c in range(1, C + 1):
            for level in range(1, L + 2):
                tasks += [(names.STEP, [run_id, r, c, level]),
                          (names.ADVANCE, [run_id, r, c, level])]
                tasks += [(names.SAMPLE, [run_id, r, c, level, k]) for k in range(1, K + 1)]
    tasks += [(names.FINALIZE, [run_id]), (names.WHOLE_RUN, [run_id])]
    assert {name for name, _ in tasks} == set(names.FLOW_TASKS)  # every kind is replayed
    return tasks


def drain(cluster: Cluster) -> None:
    """Wait until every queued task ran (one task at a time per queue: a ping comes last)."""
    for _ in range(2):  # twice: tasks that a replay enqueued are drained as well
        pings = [cluster.app.send_task(name, args=["after-replay"]) for name in PING_TASKS]
        for ping in pings:
            ping.get(timeout=60)
    wait_until(lambda: not any(cluster.client.llen(q) for q in ("tools", "branches"))
               and not cluster.client.hlen("unacked"), 30, "the queues to drain")


def test_replaying_every_task_kind_after_the_run_finished_changes_nothing(
        closed: Closed) -> None:
    cluster = closed.cluster
    x1, x2 = np.random.default_rng(2).uniform(1, 5, (2, 200))
    settings = SearchSettings.build(run_id="replayed", max_restart_loop=R, global_width=C,
                                    max_refinement_depth=L, local_sample_size=K,
                                    early_stop=False, seed=4, granularity="step")
    run_id = cluster.submit(settings, {"x1": x1, "x2": x2}, {"y": x1 * x2 + x1})
    assert cluster.result(run_id).status == "completed"
    path = cluster.directory / "runs" / run_id / "result.json"
    wait_until(path.exists, 30, "the run directory")
    drain(cluster)
    before = snapshot(cluster, run_id)
    assert len(before["records"]) == R * C * L * K

    for name, args in replays(run_id):
        cluster.app.send_task(name, args=args)
    drain(cluster)

    after = snapshot(cluster, run_id)
    assert after == before
    for worker in cluster.workers:
        assert "raised unexpected" not in worker.log_text()


# --------------------------------------------------------- a tool that asks the model
def test_call_llm_on_a_worker_reaches_the_model_under_the_runs_rules(closed: Closed) -> None:
    """The run brings its own key to its own URL: call_llm on a tools worker sends that key,
    never the worker's (a tool built with this process's access would send WORKER_KEY)."""
    from tests.support.openai_payloads import chat_choice, chat_completion, tool_call
    from tests.support.openai_server import Reply

    cluster, host = closed.cluster, closed.host

    def respond(request: Any) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if not body.get("tools"):  # call_llm's request: no tools
            return Reply.json(chat_completion(content="y grows with x1 and x2."))
        calls = [tool_call("call_llm", {"messages": "How does y grow?"}, "ask"),
                 tool_call("evaluate_formula", {"f": "x1*x2"}, "eval")]
        return Reply.json(chat_completion([chat_choice(None, tool_calls=calls)]))

    before = len(host.requests)
    host.respond_with(respond)
    try:
        X, y = _data()
        settings = _settings("asks", base_url=host.base_url).replace(
            tools=["evaluate_formula", "call_llm"])
        run_id = submit_run(cluster.client, sender(cluster.app), settings, X, y, "find y",
                            api_key=RUN_KEY).run_id
        assert cluster.result(run_id, timeout=60).status == "completed"
    finally:
        host.respond_with(evaluating_reply(FORMULAS))
    requests = host.requests[before:]
    asked = [r for r in requests if not r.body.get("tools")]
    assert len(asked) == 1 and asked[0].body["model"] == "m"
    assert {r.headers.get("authorization") for r in requests} == {f"Bearer {RUN_KEY}"}
    logged = json.dumps(RedisRunStore.open(cluster.client, run_id).tool_log())
    assert "y grows with x1 and x2." in logged
