from __future__ import annotations

import json
import math
import random
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import fakeredis
import numpy as np
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from srh_core.agent.branch import BranchState
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.state import SearchRunState
from srh_core.types import CandidateRecord, ParentLink, SearchNode, ToolCall, ToolCallResult
from srh_workers.store import RedisRunStore
from srh_workers.store.keys import (
    FINISHED_RUN_TTL_SECONDS,
    KEY_SCHEMA,
    MAX_COMPLEXITY,
    RunKeys,
    entry_field,
    rank_member,
)
from srh_workers.store.scripts import SCRIPTS, script_source
from tests.support.results import snapshot_without_times, without_times

RUN = "run"


def candidate(formula: str, node: str, mse: float, complexity: int | None, *,
              validation: float | None = None, key: str | None = None) -> CandidateRecord:
    metrics = {"train": {"mse": mse, "r2": 1 - mse}}
    if validation is not None:
        metrics["validation"] = {"mse": validation, "r2": 1 - validation}
    return CandidateRecord(formula, node, {"metrics": metrics, "complexity": complexity,
                                           "canonical_key": key or formula})


def dicts(records: list[CandidateRecord]) -> list[dict]:
    return [record.to_dict() for record in records]


def node_of(store: RedisRunStore | SearchRunState, R: int = 1, C: int = 1, L: int = 1,
            K: int = 1, content: str = "reply") -> SearchNode:
    call = ToolCall("evaluate", {"formula": "x"})
    result = ToolCallResult(True, {"mse": 0.5}, "mse=0.5")
    parents = (ParentLink(f"{RUN}:R1-C1-L1-K1", "continuation"),) if L > 1 else ()
    return store.build_node((content, [call], {"role": "assistant"}), [result], parents,
                            R=R, C=C, L=L, K=K, prompt=[{"role": "user"}] if K == 1 else None)


def same_state(store: RedisRunStore, state: SearchRunState) -> None:
    assert dicts(store.ranked_candidates()) == dicts(state.ranked_candidates())
    assert dicts(store.pareto_front()) == dicts(state.pareto_front())
    assert store.pareto_indices() == state.pareto_indices()
    assert dicts(store.candidates()) == dicts(state.candidates())
    best, expected = store.best_candidate(), state.best_candidate()
    assert (best and best.to_dict()) == (expected and expected.to_dict())


# ---------------------------------------------------------------- backends
@pytest.fixture(scope="module", params=["fakeredis", pytest.param("redis-server",
                                                                   marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """A fakeredis[lua] client (bytes replies) or a private redis-server (str replies)."""
    if request.param == "fakeredis":
        client = fakeredis.FakeStrictRedis(server=fakeredis.FakeServer())
    else:
        client = redis.Redis.from_url(request.getfixturevalue("redis_server"),
                                      decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def client(backend: redis.Redis) -> redis.Redis:
    backend.flushdb()
    return backend


@pytest.fixture
def store(client: redis.Redis) -> RedisRunStore:
    return RedisRunStore(client, RUN)


def run_keys_in_redis(client: redis.Redis, run_id: str) -> set[str]:
    keys = client.scan_iter(match=RunKeys(run_id).pattern)
    return {key.decode() if isinstance(key, bytes) else key for key in keys}


# -------------------------------------------------------------------- keys
def test_keys_follow_one_template_with_the_run_hash_tag():
    keys = RunKeys("r-1.a:b")
    assert keys.nodes == "srh:{r-1.a:b}:nodes" and keys.registry == "srh:{r-1.a:b}:keys"
    built = {keys.branch(1, 2), keys.plan(1, 2, 3), keys.done(1, 2, 3), keys.advanced(1, 2, 3),
             keys.restart_finished(4), keys.restart_advanced(4), keys.results(1, 2, 3),
             keys.delivery("t", 0), keys.level(1, 2), keys.level_released(1, 2),
             *keys.static_keys()}
    assert len(built) == len(KEY_SCHEMA)
    assert all(key.startswith("srh:{r-1.a:b}:") for key in built)
    assert "srh:{r-1.a:b}:restart:4:finished" in built


@pytest.mark.parametrize("run_id", ["", "a b", "a{b}", "x" * 201, 7], ids=repr)
def test_run_id_that_breaks_the_hash_tag_is_rejected(run_id):
    with pytest.raises(ConfigurationError, match="run id"):
        RunKeys(run_id)


@pytest.mark.parametrize("coordinate", [0, -1, True, 1.0], ids=repr)
def test_coordinates_are_one_based_ints(coordinate):
    with pytest.raises(ConfigurationError, match="one-based"):
        RunKeys(RUN).done(1, coordinate, 1)


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)


@settings(max_examples=300, deadline=None)
@given(first=st.tuples(st.integers(0, 10**6), texts, texts),
       second=st.tuples(st.integers(0, 10**6), texts, texts))
def test_rank_member_bytes_order_like_the_sort_key_tail(first, second):
    def encode(item):
        return rank_member(item[0], entry_field(item[1], item[2])).encode()
    assert (encode(first) < encode(second)) == (first < second)
    assert (encode(first) == encode(second)) == (first == second)


def test_out_of_range_complexity_cannot_be_ranked():
    with pytest.raises(SearchStateError, match="complexity"):
        rank_member(MAX_COMPLEXITY + 1, "x")


def test_every_script_passes_its_keys_in_keys():
    for name in SCRIPTS:
        source = script_source(name)
        assert "srh:" not in source and ".." not in source, name


# ------------------------------------------------------------------- nodes
def test_record_node_is_idempotent_and_matches_the_embedded_state(store):
    state = SearchRunState(None, "mse", False, run_id=RUN)
    nodes = [node_of(store, K=1), node_of(store, K=2), node_of(store, L=2, K=1)]
    assert [store.record_node(node) for node in nodes] == [True, True, True]
    assert [store.record_node(node) for node in nodes] == [False, False, False]
    assert not store.record_node(node_of(store, K=2, content="a re-sampled reply"))
    for node in nodes:
        state.record_node(node)
    assert store.node_count == 3 and store.latest_coordinate == state.latest_coordinate
    assert store.records() == state.records()
    assert store.records(include_detail=True) == state.records(include_detail=True)
    assert store.node_record(nodes[1].node_id) == state.node_record(nodes[1].node_id)
    assert store.node_record("missing") is None
    assert nodes[1].detail["prompt_node"] == f"{RUN}:R1-C1-L1-K1"


def test_a_sample_scope_batches_its_writes_into_one_record(store, client):
    node = node_of(store, K=2)
    with store.sample(1, 1, 1, 2, 2) as batch:
        assert store.record_node(node, batch=batch)
        assert store.push_candidate(candidate("x", node.node_id, 0.1, 1), batch=batch)
        store.log_tool_calls({"R": 1, "C": 1, "L": 1}, [ToolCall("evaluate", {"f": "x"})],
                             [ToolCallResult(True, {}, "fine")], False, batch=batch)
        batch.keep_results([ToolCallResult(True, {}, "fine")])
        assert store.node_count == 0  # nothing is written before the scope ends
        # the batch is an argument, not ambient: a write without it applies at once
        assert store.push_candidate(candidate("u", "run:R9-C1-L1-K1", 0.2, 1))
        assert [c.formula for c in store.candidates()] == ["u"]
    assert batch.outcome is not None and batch.outcome.recorded and not batch.outcome.claimed
    assert store.node_count == 1 and sorted(c.formula for c in store.candidates()) == ["u", "x"]
    assert [line["call"]["name"] for line in store.tool_log()] == ["evaluate"]
    assert client.hexists(store.keys.results(1, 1, 1), "2")
    with store.sample(1, 1, 1, 1, 2) as last:
        store.record_node(node_of(store, K=1), batch=last)
    assert last.outcome.complete and last.outcome.claimed


def test_empty_store_answers_empty(store):
    assert store.ranked_candidates() == [] and store.pareto_front() == []
    assert store.best_candidate() is None and store.top_k(3) == []
    assert store.latest_coordinate is None and store.node_count == 0


# -------------------------------------------------------------- candidates
def test_push_candidate_is_idempotent_and_rejects_unrankable(store):
    assert store.push_candidate(candidate("x", "run:R1-C1-L1-K1", 0.1, 1))
    assert not store.push_candidate(candidate("x", "run:R1-C1-L1-K1", 0.1, 1))
    assert not store.push_candidate(candidate("x", "run:R1-C1-L1-K1", 0.0, 1))
    assert not store.push_candidate(candidate("y", "run:R1-C1-L1-K1", math.nan, 1))
    assert not store.push_candidate(candidate("z", "run:R1-C1-L1-K1", math.inf, 1))
    assert not store.push_candidate(candidate("w", "run:R1-C1-L1-K1", 0.1, None))
    assert store.push_candidate(candidate("x", "run:R1-C2-L1-K1", 0.1, 1))
    assert len(store.ranked_candidates()) == 1 and len(store.candidates()) == 2
    assert store.ranked_candidates()[0].node_id == "run:R1-C1-L1-K1"


@pytest.mark.parametrize("order", ["worse_first", "better_first"])
def test_dedup_by_canonical_key_keeps_the_best_ranked_entry(store, order):
    pool = [candidate("x*y", "run:R1-C2-L1-K1", 0.3, 3, key="k"),
            candidate("y*x", "run:R1-C1-L2-K1", 0.1, 3, key="k"),
            candidate("x+y", "run:R1-C1-L1-K1", 0.2, 3, key="other"),
            candidate("y*x", "run:R1-C1-L1-K3", 0.1, 3, key="k")]
    for item in pool if order == "worse_first" else pool[::-1]:
        assert store.push_candidate(item)
    ranked = store.ranked_candidates()
    assert [(c.formula, c.node_id) for c in ranked] == [("y*x", "run:R1-C1-L1-K3"),
                                                        ("x+y", "run:R1-C1-L1-K1")]
    assert len(store.candidates()) == 4


def test_larger_is_better_and_validation_split(client):
    store = RedisRunStore(client, RUN, "r2", larger_is_better=True)
    state = SearchRunState(None, "r2", True, run_id=RUN)
    pool = [candidate("a", "n1", 0.5, 3), candidate("b", "n1", 0.1, 3),
            candidate("c", "n1", 0.0, 2, validation=0.7), candidate("nan", "n1", math.nan, 1)]
    for item in pool:
        assert store.push_candidate(item) == state.push_candidate(item)
    assert [c.formula for c in store.ranked_candidates()] == ["b", "a", "c"]
    same_state(store, state)


def test_ties_order_by_complexity_node_id_then_key_and_scores_are_exact(store):
    state = SearchRunState(None, "mse", False, run_id=RUN)
    next_double = math.nextafter(0.1, 1.0)
    pool = [candidate("f", "n", next_double, 1), candidate("e", "n", 0.1, 9),
            candidate("d", "run:K10", -0.0, 2), candidate("c", "run:K1", 0.0, 2),
            candidate("b", "run:K1", 0.0, 2, key="a\x00"), candidate("a", "run:K1\x00", 0.0, 2),
            candidate("g", "n", 5e-324, 1), candidate("h", "n", 1e-310, 1),
            candidate("i", "n", 0.0, 1), candidate("j", "n", 1e-300, 12)]
    for item in pool:
        store.push_candidate(item)
        state.push_candidate(item)
    expected = ["i", "b", "c", "a", "d", "g", "h", "j", "e", "f"]
    assert [c.formula for c in store.ranked_candidates()] == expected
    same_state(store, state)
    assert [c.formula for c in store.pareto_front()] == ["i"]
    assert [c.formula for c in store.top_k(3)] == expected[:3] and store.top_k(0) == []


def test_pareto_front_walks_the_ranked_pool(store):
    pool = [candidate("a", "n", 0.0, 9), candidate("b", "n", 0.1, 9), candidate("c", "n", 0.2, 4),
            candidate("d", "n", 0.3, 5), candidate("e", "n", 0.4, 1)]
    for item in pool:
        store.push_candidate(item)
    assert store.pareto_indices() == [0, 2, 4]
    assert [c.formula for c in store.pareto_front()] == ["a", "c", "e"]
    assert store.get_pareto_front() == store.pareto_front()


def test_update_diagnostics_touches_every_record_of_the_formula(store):
    store.push_candidate(candidate("x", "n1", 0.1, 1))
    store.push_candidate(candidate("x", "n2", 0.1, 1))
    store.push_candidate(candidate("y", "n1", 0.2, 1))
    store.update_diagnostics("x", {"aic": math.nan, "ok": True})
    details = {(c.formula, c.node_id): c.details.get("diagnostics") for c in store.candidates()}
    assert details == {("x", "n1"): {"aic": None, "ok": True},
                       ("x", "n2"): {"aic": None, "ok": True}, ("y", "n1"): None}


# ------------------------------------------------------------ tool-task path
def test_record_sample_fans_in_and_survives_redelivery(store):
    nodes = [node_of(store, K=k) for k in (1, 2, 3)]
    pool = [[candidate("a", nodes[0].node_id, 0.3, 2), candidate("b", nodes[0].node_id, 0.2, 5)],
            [candidate("a", nodes[1].node_id, 0.1, 2)],
            [candidate("nan", nodes[2].node_id, math.nan, 1),
             candidate("c", nodes[2].node_id, 0.5, 1), candidate("c", nodes[2].node_id, 0.5, 1)]]
    first = [store.record_sample(n, c, samples=3) for n, c in zip(nodes, pool, strict=True)]
    assert [o.complete for o in first] == [False, False, True]
    assert [o.done for o in first] == [1, 2, 3] and all(o.recorded for o in first)
    assert first[2].pushed == (False, True, False) and first[0].pushed == (True, True)
    snapshot = store.export_state()
    again = store.record_sample(nodes[0], pool[0], samples=3)
    assert (again.recorded, again.pushed, again.complete) == (False, (False, False), True)
    assert store.export_state() == snapshot
    assert [c.formula for c in store.ranked_candidates()] == ["a", "b", "c"]
    assert store.ranked_candidates()[0].node_id == nodes[1].node_id


@pytest.mark.parametrize("callers", [2, 8])
def test_exactly_one_concurrent_caller_wins_claim_advance(store, callers):
    barrier = threading.Barrier(callers)

    def claim(sample: int) -> bool:
        barrier.wait()
        return store.flow.claim_advance(1, 1, 1, claimant=sample)

    with ThreadPoolExecutor(callers) as pool:
        wins = list(pool.map(claim, range(1, callers + 1)))
    assert wins.count(True) == 1
    winner = wins.index(True) + 1
    assert store.flow.claim_advance(1, 1, 1, claimant=winner)  # a re-delivered winner
    assert not any(store.flow.claim_advance(1, 1, 1, claimant=k) for k in range(1, callers + 1)
                   if k != winner)
    assert store.flow.claim_advance(1, 1, 2, claimant=2)  # another step, another flag


def test_k_set_fan_in_advances_once_under_concurrent_redelivery(store):
    samples = 4
    nodes = [node_of(store, K=k) for k in range(1, samples + 1)]
    barrier = threading.Barrier(2 * samples)

    def tool_task(node: SearchNode) -> int | None:
        barrier.wait()
        outcome = store.record_sample(node, [candidate("x", node.node_id, 0.1, 1)],
                                      samples=samples)
        K = node.coordinate.K
        return K if outcome.complete and store.flow.claim_advance(1, 1, 1, claimant=K) else None

    with ThreadPoolExecutor(2 * samples) as pool:
        advanced = [K for K in pool.map(tool_task, nodes + nodes) if K is not None]
    assert len(set(advanced)) == 1  # one sample advances (once, or again when re-delivered)
    assert store.node_count == samples and len(store.candidates()) == samples


def ended(R: int, C: int, L: int = 2) -> BranchState:
    return BranchState(RUN, R, C, L, [], status="done", stop_reason="depth")


def test_finish_branch_counts_each_branch_once(store, client):
    assert store.flow.finish_branch(ended(1, 1)) == 1
    assert store.flow.finish_branch(ended(1, 1)) == 1
    state = ended(1, 2, L=4)
    assert store.flow.finish_branch(state) == 2
    assert store.flow.finish_branch(ended(2, 1)) == 1
    assert json.loads(client.get(store.keys.branch(1, 2))) == state.to_dict()
    assert [store.flow.claim_restart(1, c) for c in (2, 1, 2)] == [True, False, True]


def test_level_done_releases_a_level_once_every_branch_is_done_with_it(store):
    assert not store.flow.level_done(1, 1, 1, 3)
    store.flow.finish_branch(ended(1, 3))  # an ended branch is done with every level
    assert store.flow.level_done(1, 1, 2, 3)
    assert store.flow.level_done(1, 1, 2, 3)  # the releaser again (a re-delivery)
    assert not store.flow.level_done(1, 1, 1, 3)
    assert not store.flow.level_done(1, 2, 1, 3)


# ---------------------------------------------------- result, TTL, deletion
def test_result_is_stored_and_starts_the_ttl(store, client):
    state = SearchRunState(None, "mse", False, run_id=RUN)
    node = node_of(store)
    store.record_sample(node, [candidate("x", node.node_id, 0.0, 1)], samples=1)
    state.push_candidate(candidate("x", node.node_id, 0.0, 1))
    store.flow.claim_advance(1, 1, 1, 1)
    store.flow.finish_branch(ended(1, 1))
    assert all(client.ttl(key) == -1 for key in run_keys_in_redis(client, RUN))
    result = store.result("early_stopped", "done", stop_reason="exact fit")
    assert without_times(result.to_dict()) == without_times(state.result(
        "early_stopped", "done", stop_reason="exact fit").to_dict())
    assert store.stored_result().to_dict() == result.to_dict()
    summary = store.run_summary()
    assert (summary["status"], summary["ranking_metric"], summary["larger_is_better"]) == (
        "early_stopped", "mse", "0")
    assert (summary["nodes"], summary["candidates"], summary["ranked"]) == (1, 1, 1)
    keys = run_keys_in_redis(client, RUN)
    assert keys == {key for key in store.run_keys() if client.exists(key)}
    assert len(keys) == 14
    assert all(0 < client.ttl(key) <= FINISHED_RUN_TTL_SECONDS for key in keys)
    assert store.persist_run() == 14
    assert all(client.ttl(key) == -1 for key in keys)


def test_a_second_finalizer_gets_the_first_result(store):
    """Two branches ending at once both finalize: the first stored result is the run's (the
    second one's totals differ by its later clock), so the run directory writes the same."""
    node = node_of(store)
    store.record_sample(node, [candidate("x", node.node_id, 0.0, 1)], samples=1)
    first = store.result("early_stopped", "done", stop_reason="exact fit")
    second = store.result("completed", "later")
    assert second.to_dict() == first.to_dict() == store.stored_result().to_dict()
    assert store.run_summary()["status"] == "early_stopped"


@pytest.mark.parametrize(("selection", "best"), [("best", "truth"), ("accuracy", "overfit")])
def test_the_result_reports_the_best_formula_by_the_selection_rule(store, selection, best):
    state = SearchRunState(None, "mse", False, run_id=RUN)
    node = node_of(store)
    pool = [candidate("overfit", node.node_id, 0.99e-4, 100, validation=0.99e-4),
            candidate("truth", node.node_id, 1.0e-4, 5, validation=1.0e-4),
            candidate("constant", node.node_id, 1.0, 1, validation=1.0)]
    store.record_sample(node, pool, samples=1)
    for record in pool:
        state.push_candidate(record)
    result = store.result("completed", "done", selection=selection)
    assert result.best.formula == best and result.candidates[0].formula == "overfit"
    assert without_times(result.to_dict()) == without_times(
        state.result("completed", "done", selection=selection).to_dict())


def test_ttl_none_keeps_finished_runs_and_bad_ttl_is_rejected(client):
    store = RedisRunStore(client, RUN, ttl_seconds=None)
    store.push_candidate(candidate("x", "n", 0.1, 1))
    store.result("completed", "done")
    assert client.ttl(store.keys.rank) == -1
    with pytest.raises(ConfigurationError, match="ttl_seconds"):
        RedisRunStore(client, RUN, ttl_seconds=0)


def test_delete_run_removes_every_key_of_the_run_only(client):
    store = RedisRunStore(client, RUN)
    other = RedisRunStore(client, "other")
    for each in (store, other):
        node = node_of(each)
        each.record_sample(node, [candidate("x", node.node_id, 0.1, 1)], samples=2)
        each.flow.claim_advance(1, 1, 1, 1)
        each.flow.finish_branch(ended(1, 1))
        each.flow.claim_restart(1, 1)
    assert store.delete_run() == 14
    assert run_keys_in_redis(client, RUN) == set()
    assert len(run_keys_in_redis(client, "other")) == 14
    assert store.stored_result() is None


# ---------------------------------------------------------- run and policy
def test_a_run_keeps_its_ranking_policy(client):
    RedisRunStore(client, RUN, "r2", True, agent_metadata={"model": "offline"})
    with pytest.raises(SearchStateError, match="ranks by 'r2'"):
        RedisRunStore(client, RUN, "mse", False)
    opened = RedisRunStore.open(client, RUN)
    assert (opened.ranking_metric, opened.larger_is_better) == ("r2", True)
    assert opened.export_state()["agent_metadata"] == {"model": "offline"}
    with pytest.raises(SearchStateError, match="no run 'missing'"):
        RedisRunStore.open(client, "missing")


def test_works_with_decode_responses_either_way():
    for decode in (False, True):
        client = fakeredis.FakeStrictRedis(server=fakeredis.FakeServer(),
                                           decode_responses=decode)
        store = RedisRunStore(client, "é-run")
        node = node_of(store)
        store.record_sample(node, [candidate("é", node.node_id, 0.1, 1, key="k\x00é")],
                            samples=1)
        assert store.ranked_candidates()[0].canonical_key == "k\x00é"
        assert store.export_state()["nodes"][0]["node_id"] == "é-run:R1-C1-L1-K1"


# --------------------------------------------------------- snapshot/resume
def test_snapshot_round_trips_through_the_embedded_state(store, client):
    node = node_of(store)
    store.record_sample(node, [candidate("a", node.node_id, 0.1, 3),
                               candidate("b", node.node_id, 0.2, 1, validation=0.05)], samples=1)
    store.record_node(node_of(store, L=2))
    snapshot = store.save_snapshot({"restart": 1})
    assert snapshot["runtime"] == {"restart": 1}
    state = SearchRunState.from_state(snapshot)
    same_state(store, state)
    assert state.records(include_detail=True) == store.records(include_detail=True)
    assert snapshot_without_times(state.export_state()) == snapshot_without_times(
        store.export_state())
    # and back: an embedded snapshot (with an unrankable record) loads into Redis exactly
    state.push_candidate(candidate("c", "n", 0.0, 1))
    exported = state.export_state()
    exported["run_id"] = "resumed"
    exported["candidates"].append(candidate("nan", "n", math.nan, 1).to_dict())
    exported["spend"] = {**exported["spend"], "requests": 2, "cost": 0.5}
    resumed = RedisRunStore.from_snapshot(client, exported)
    exported = snapshot_without_times(exported)
    assert snapshot_without_times(resumed.export_state()) == exported
    again = RedisRunStore.from_snapshot(client, exported).export_state()
    assert snapshot_without_times(again) == exported
    assert (resumed.spend().requests, resumed.spend().cost) == (2, 0.5)
    same_state(resumed, SearchRunState.from_state(exported))


@pytest.mark.parametrize("snapshot", [{"version": 99}, {"version": 1}], ids=["version", "run_id"])
def test_malformed_snapshot_is_rejected(client, snapshot):
    with pytest.raises(SearchStateError, match="version|Malformed"):
        RedisRunStore.from_snapshot(client, snapshot)


# -------------------------------------------------------- property and load
node_ids = st.sampled_from(["run:R1-C1-L1-K1", "run:R1-C1-L1-K10", "run:R1-C1-L1-K2",
                            "run:R1-C2-L1-K1", "run:R2-C1-L1-K1", "run:é", "run:\x00", "run"])
canonical_keys = st.sampled_from(["a", "ab", "a\x00", "b", "é", "", None])
metric_values = st.one_of(
    st.sampled_from([0.0, -0.0, 5e-324, 1e-310, 0.1, math.nextafter(0.1, 1), 1.0, -1.0, 1e300,
                     math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=True, allow_infinity=True))
candidate_specs = st.lists(st.tuples(st.sampled_from("xyz"), node_ids, canonical_keys,
                                     metric_values, st.one_of(st.integers(0, 6), st.none()),
                                     st.one_of(st.none(), metric_values)), max_size=25)


def specs_to_pool(specs) -> list[CandidateRecord]:
    return [candidate(formula, node, mse, complexity, validation=validation, key=key)
            for formula, node, key, mse, complexity, validation in specs]


@settings(max_examples=80, deadline=None)
@given(specs=candidate_specs, larger=st.booleans())
def test_redis_store_ranks_exactly_like_the_embedded_state(backend, specs, larger):
    run_id = uuid.uuid4().hex
    store = RedisRunStore(backend, run_id, "mse", larger)
    state = SearchRunState(None, "mse", larger, run_id=run_id)
    for item in specs_to_pool(specs):
        assert store.push_candidate(item) == state.push_candidate(item)
    same_state(store, state)
    assert dicts(store.top_k(3)) == dicts(state.top_k(3))
    assert without_times(store.result("completed", "").to_dict()) == without_times(
        state.result("completed", "").to_dict())
    store.delete_run()


def random_pool(size: int, seed: int) -> list[CandidateRecord]:
    """Random candidates, one per (node id, canonical key), so pooling order cannot matter."""
    rng = random.Random(seed)
    pool = [candidate(rng.choice("xyz"), f"run:R1-C{rng.randint(1, 4)}-L{rng.randint(1, 3)}-K1",
                      rng.choice([0.0, 0.1, 0.2, math.nan, rng.random()]), rng.randint(1, 6),
                      key=rng.choice(["a", "b", "c", "d", None]))
            for _ in range(size)]
    return list({(c.node_id, c.canonical_key): c for c in pool[::-1]}.values())


def test_concurrent_pushes_end_in_the_serial_state(client):
    pool = random_pool(200, seed=3)
    serial = RedisRunStore(client, "serial")
    concurrent = RedisRunStore(client, "concurrent")
    flags = [serial.push_candidate(item) for item in pool]
    shuffled = random.Random(7).sample(pool, len(pool))
    with ThreadPoolExecutor(8) as threads:
        results = list(threads.map(concurrent.push_candidate, shuffled + shuffled))
    assert sum(results) == sum(flags)
    assert dicts(concurrent.ranked_candidates()) == dicts(serial.ranked_candidates())
    assert dicts(concurrent.pareto_front()) == dicts(serial.pareto_front())
    key = lambda c: (c.node_id, c.canonical_key)  # noqa: E731
    assert sorted(map(key, concurrent.candidates())) == sorted(map(key, serial.candidates()))


@pytest.mark.integration
def test_a_run_survives_a_redis_kill_with_aof(redis_server_factory):
    server = redis_server_factory(appendonly=True)
    client = server.client()
    store = RedisRunStore(client, RUN)
    node = node_of(store)
    store.record_sample(node, [candidate("x", node.node_id, 0.1, 1)], samples=2)
    before = store.export_state()
    server.restart(hard=True)
    reopened = RedisRunStore.open(client, RUN)
    assert reopened.export_state() == before
    second = node_of(reopened, K=2)  # the script cache is gone: scripts reload on NOSCRIPT
    assert reopened.record_sample(second, [], samples=2).complete
    client.close()


def test_status_elapsed_time_stops_when_the_result_is_written(client):
    from srh_core.agent.settings import SearchSettings
    from srh_core.api import ModelResponse
    from srh_core.records import StepPlan
    from srh_workers import submit

    x = np.linspace(1.0, 2.0, 20)
    settings = SearchSettings(run_id="timed", max_refinement_depth=1)
    sent: list = []
    submit.submit_run(client, lambda *action: sent.append(action), settings, {"x": x},
                      {"y": 2 * x})
    running = submit.run_status(client, "timed")
    time.sleep(0.02)
    assert submit.run_status(client, "timed")["elapsed_seconds"] > running["elapsed_seconds"]
    plan = StepPlan(1, 1, 1, [], [ModelResponse("a")], [], usage={
        "prompt_tokens": 10, "completion_tokens": 5, "price": 0.01, "latency_s": 0.5})
    RedisRunStore.open(client, "timed").save_plan(plan)
    live = submit.run_status(client, "timed")["totals"]  # one GET while the run is running
    assert (live["tokens"], live["cost"], live["model_seconds"], live["tool_seconds"]) == (
        15, 0.01, 0.5, None)
    assert live["wall_seconds"] > 0
    from srh_core.cli.display import spend_line

    assert spend_line(live).endswith("model 0.5s, tools -, wall " +
                                     f"{live['wall_seconds']:.1f}s")
    RedisRunStore.open(client, "timed").result("completed", "done")
    finished = submit.run_status(client, "timed")
    time.sleep(0.02)
    assert finished["status"] == "completed" and sent
    assert submit.run_status(client, "timed")["elapsed_seconds"] == finished["elapsed_seconds"]
