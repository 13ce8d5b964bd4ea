"""Data refreshed mid-run on real workers: the next step's tools use it, the model is told."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from srh_core.agent import SearchSettings
from srh_core.errors import ConfigurationError
from srh_workers.store import RedisRunStore
from srh_workers.submit import refresh_run_data
from tests.support.openai_payloads import chat_choice, chat_completion, tool_call
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.workers.cluster import Cluster, lab_endpoint
from tests.workers.conftest import RedisServer

NOTICE = "[Harness] The data changed during the run"


class LabCluster(Cluster):
    server: RedisServer
    model: FakeOpenAIServer
    endpoint: dict[str, str]


@pytest.fixture(scope="module")
def lab(module_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[LabCluster]:
    """The module's redis-server, a scripted model server (endpoint "lab") and a branches
    and a tools worker given that endpoint, started once for both granularities: each case
    answers the model with its own responder and submits a run of its own id; no case stops
    or changes a worker."""
    directory, server = tmp_path_factory.mktemp("refresh"), module_redis
    with FakeOpenAIServer() as model:
        cluster = LabCluster(server.url, directory)
        cluster.server, cluster.model = server, model
        cluster.endpoint = lab_endpoint(directory, model.base_url)
        try:
            cluster.start_pair(**cluster.endpoint)
            yield cluster
        finally:
            cluster.close()


@pytest.mark.parametrize("granularity", ["step", "run"])
def test_a_refresh_reaches_the_workers_at_the_next_step(lab: LabCluster,
                                                        granularity: str) -> None:
    cluster = lab
    rng = np.random.default_rng(5)
    x1, x2 = rng.uniform(1, 5, (2, 60))
    run_id = f"refreshed-{granularity}"
    published: list[int] = []
    lock = threading.Lock()

    def respond(request) -> Reply:
        with lock:  # the first request publishes new data before the model answers
            if not published:
                published.append(refresh_run_data(
                    cluster.client, run_id, {"x1": x1, "x2": x2, "y": x1 + x2},
                    variable_descriptions={"y": "the corrected target"}))
        call = tool_call("evaluate_formula", {"f": "x1 + x2"}, "call_fit")
        return Reply.json(chat_completion([chat_choice(None, tool_calls=[call])]))

    server = cluster.model
    server.respond_with(respond)
    earlier = len(server.requests)  # the other granularity's run asked this server too
    settings = SearchSettings.build(
        run_id=run_id, llm_provider="openai", endpoint="lab", tool_parser="openai",
        tools=["evaluate_formula"], global_width=1, max_refinement_depth=2,
        local_sample_size=1, early_stop=False, granularity=granularity)
    with pytest.MonkeyPatch.context() as submitter:
        submitter.setenv("SRH_ENDPOINTS", cluster.endpoint["SRH_ENDPOINTS"])
        cluster.submit(settings, {"x1": x1, "x2": x2}, {"y": x1 * x2})
    result = cluster.result(run_id, timeout=90)
    bodies = [request.body for request in server.requests[earlier:]]

    assert result.status == "completed", result.stop_reason
    store = RedisRunStore(cluster.client, run_id, register=False)
    assert store.data_revision() == published[0]
    told = [[m["content"] for m in body["messages"]
             if m["role"] == "user" and m["content"].startswith(NOTICE)] for body in bodies]
    assert told[0] == [] and len(told[1]) == 1, json.dumps(bodies[1])[:2000]
    assert "y: the corrected target" in told[1][0]
    assert f"-> {published[0]})" in told[1][0]
    step_two = [c for c in store.candidates() if c.node_id.endswith("R1-C1-L2-K1")]
    assert step_two and step_two[0].metric("mse", "train") == pytest.approx(0.0, abs=1e-20)
    assert step_two[0].details["data_revision"] == published[0]
    with pytest.raises(ConfigurationError, match="later one"):
        store.publish_data(store.payload(published[0]))
