"""The Redis store by key family: each family's writers touch only the keys it owns.

Every writer of a family runs on an empty Redis (fakeredis, and a private
redis-server), then every key in Redis must belong to that family by the key
schema (:data:`srh_workers.store.keys.KEY_SCHEMA`); the run's ``keys``
registry, which every writer of a coordinate key adds to, is the one shared key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import fakeredis
import pytest
import redis

from srh_core.agent.branch import BranchState
from srh_core.types import CandidateRecord, SearchNode, ToolCall, ToolCallResult
from srh_workers.store import RedisRunStore
from srh_workers.store.cluster import ClusterIndex
from srh_workers.store.control import ControlChange
from srh_workers.store.keys import (
    CLUSTER_KEY_SCHEMA,
    FAMILY_OWNERS,
    KEY_PREFIX,
    KEY_SCHEMA,
)

RUN = "families"
SHARED = {"keys"}  # the registry: every writer of a coordinate key adds the key's name


def family_of(key: str) -> str:
    """The family of a key by the schema (a run key or a cluster key)."""
    for spec in CLUSTER_KEY_SCHEMA:
        if key == spec.template:
            return spec.family
    prefix = f"{KEY_PREFIX}:{{{RUN}}}:"
    assert key.startswith(prefix), f"{key!r} is neither a key of run {RUN!r} nor a cluster key"
    name = key.removeprefix(prefix)
    for spec in KEY_SCHEMA:
        pattern = re.sub(r"\\\{\w+\\\}", r"[^:]+", re.escape(spec.template))
        if re.fullmatch(pattern, name):
            return "shared" if spec.template in SHARED else spec.family
    raise AssertionError(f"{key!r} is in no family of the key schema")


@pytest.fixture(scope="module", params=["fakeredis", pytest.param("redis-server",
                                                                   marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    if request.param == "fakeredis":
        client = fakeredis.FakeStrictRedis(server=fakeredis.FakeServer())
    else:
        client = redis.Redis.from_url(request.getfixturevalue("redis_server"))
    yield client
    client.close()


def written(client: redis.Redis, write: Callable[[RedisRunStore], object]) -> set[str]:
    """The families of the keys in Redis after ``write`` on a store made without writes."""
    client.flushdb()
    store = RedisRunStore(client, RUN, register=False)
    write(store)
    return {family_of(key.decode()) for key in client.keys("*")}


def branch(R: int = 1, C: int = 1) -> BranchState:
    return BranchState(run_id=RUN, R=R, C=C, L=1, buffer=[])


def node_of(store: RedisRunStore) -> SearchNode:
    result = ToolCallResult(True, {"mse": 0.5}, "mse=0.5")
    return store.build_node(("reply", [ToolCall("evaluate", {"formula": "x"})],
                             {"role": "assistant"}), [result], (), R=1, C=1, L=1, K=1)


FLOW_WRITES: dict[str, Callable[[RedisRunStore], object]] = {
    "save_branches": lambda s: s.flow.save_branches([branch(), branch(1, 2)]),
    "finish_branch": lambda s: s.flow.finish_branch(branch()),
    "level_done": lambda s: s.flow.level_done(1, 1, 1, 2),
    "claim_advance": lambda s: s.flow.claim_advance(1, 1, 1, 1),
    "claim_restart": lambda s: s.flow.claim_restart(1, 1),
    "store_results": lambda s: s.flow.store_results(1, 1, 1, 1, [ToolCallResult(True, {}, "ok")]),
    "request_stop": lambda s: s.flow.request_stop("cancelled"),
    "hold_lock": lambda s: s.flow.hold_lock("task", 5.0),
}
CONTROL_WRITES: dict[str, Callable[[RedisRunStore], object]] = {
    "update_control": lambda s: s.controls.update_control(lambda state, taken: ControlChange(
        state={"interaction_state": "running"}, command={"action": "pause"}, hold="run",
        taken={"x": 1}, events=({"kind": "context"},)), taken_field="1:1:1"),
    "publish_events": lambda s: s.controls.publish_events([{"kind": "context"}]),
}
DELIVERY_WRITES: dict[str, Callable[[RedisRunStore], object]] = {
    "count_delivery": lambda s: s.delivery.count_delivery("task", 0, 60),
    "report_poison": lambda s: s.delivery.report_poison("task", "{}"),
}
CANDIDATE_WRITES: dict[str, Callable[[RedisRunStore], object]] = {
    "record_node": lambda s: s.record_node(node_of(s)),
    "push_candidate": lambda s: s.push_candidate(CandidateRecord(
        "x + 1", node_of(s).node_id, {"metrics": {"train": {"mse": 1.0}}, "complexity": 3})),
    "log_tool_calls": lambda s: s.log_tool_calls(
        {"R": 1, "C": 1, "L": 1, "K": 1}, [ToolCall("evaluate", {"formula": "x"})],
        [ToolCallResult(True, {}, "ok")], True),
}
CASES = [(family, name, write) for family, writes in (
    ("flow", FLOW_WRITES), ("controls", CONTROL_WRITES), ("delivery", DELIVERY_WRITES),
    ("candidates", CANDIDATE_WRITES)) for name, write in writes.items()]


@pytest.mark.parametrize(("family", "name", "write"), CASES,
                         ids=[f"{family}.{name}" for family, name, _ in CASES])
def test_a_family_writes_only_its_own_keys(backend, family, name, write):
    families = written(backend, write)
    assert families, f"{name} wrote nothing"
    assert families <= {family, "shared"}, (name, families)


def test_the_cluster_index_writes_only_cluster_keys(backend):
    def write(store: RedisRunStore) -> None:
        index = ClusterIndex(backend)
        index.index_run("a", 1.0)
        index.watch_progress("a", "marker", 2.0)
        index.take_watchdog_turn("worker", 1000)
        index.publish_endpoints([{"name": "local"}])
        index.drain_worker("node@host", ["tools"])

    assert written(backend, write) == {"cluster"}
    index = ClusterIndex(backend)
    assert index.recent_runs() == ["a"] and index.submitted_at("a") == 1.0
    assert index.watched_runs(10) == [("a", 2.0)] and index.watched_count() == 1
    assert not index.take_watchdog_turn("other", 1000)  # the interval is taken
    assert index.endpoints() == [{"name": "local"}]
    assert index.drained_workers() == ["node@host"]
    assert index.drained_worker("node@host")["queues"] == ["tools"]
    index.undrain_worker("node@host")
    index.unindex_run("a")
    assert index.recent_runs() == [] and index.watched_count() == 0
    assert index.drained_worker("node@host") is None


def test_a_sample_write_spans_families_in_one_script(backend):
    """record_sample is the store's: its flow KEYS come from the flow's owner."""
    families = written(backend, lambda s: s.record_sample(node_of(s), [], samples=1,
                                                          results=[], log_lines=["{}"]))
    assert families == {"candidates", "flow", "shared"}


def test_every_family_has_one_owner():
    assert {spec.family for spec in (*KEY_SCHEMA, *CLUSTER_KEY_SCHEMA)} == set(FAMILY_OWNERS)
    store = RedisRunStore(fakeredis.FakeStrictRedis(), RUN, register=False)
    owners = {"candidates": store, "run": store, "flow": store.flow,
              "controls": store.controls, "delivery": store.delivery, "cluster": store.cluster}
    assert {family: type(owner).__name__ for family, owner in owners.items()} == FAMILY_OWNERS
