"""Each sample's candidates are found once, on real Celery workers too.

A step is a step task, K sample tasks and a close in the last sample's task;
the candidates a sample task found are stored with its results, so the close
parses no formula again. The workers count every candidate parse in Redis
(``SRH_TEST_COUNT_PARSES``, tests/workers/cluster_plugins.py). A record written
before the candidates were kept (a bare results list) still closes its step.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from typing import Any

import pytest
import redis

from srh_core.agent import SearchSettings
from srh_core.problems import load_suite
from srh_workers.flow.handlers import dispatch
from srh_workers.flow.names import Action
from srh_workers.store import RedisRunStore
from srh_workers.submit import submit_run
from tests.workers.cluster import Cluster
from tests.workers.cluster_plugins import COUNT_PARSES_ENV, PARSES_KEY

pytestmark = pytest.mark.integration


def test_a_step_closed_in_another_task_parses_no_formula_again(cluster: Cluster):
    for queue in ("branches", "tools"):
        cluster.start(queue, concurrency=2, **{COUNT_PARSES_ENV: "1"})
    problem = load_suite().get("feynman-I.6.2a")
    X, y = problem.sample(200, seed=0)
    settings = SearchSettings.build(run_id="parse-once", granularity="step", early_stop=False,
                                    max_restart_loop=1, global_width=2,
                                    max_refinement_depth=2, local_sample_size=2, seed=1)
    cluster.submit(settings, X, {problem.output: y})
    result = cluster.result("parse-once")
    assert result.status == "completed"
    parses = {key.decode(): int(count)
              for key, count in cluster.client.hgetall(PARSES_KEY).items()}
    nodes = {record["node_id"] for record in
             RedisRunStore.open(cluster.client, "parse-once").records()}
    per_node = Counter(key.split("|", 1)[0] for key in parses)
    assert set(per_node) == nodes and len(nodes) == 2 * 2 * 2  # every sample parsed formulas
    assert set(parses.values()) == {1}, {k: v for k, v in parses.items() if v != 1}


def as_old_records(client: redis.Redis, store: RedisRunStore) -> int:
    """Rewrite every stored sample record the way it was written before candidates were
    kept (a bare results list); how many were rewritten."""
    rewritten = 0
    for key in client.smembers(store.keys.registry):
        if b":results:" not in key:
            continue
        for field, raw in client.hgetall(key).items():
            data = json.loads(raw)
            if isinstance(data, dict):
                client.hset(key, field, json.dumps(data["results"]))
                rewritten += 1
    return rewritten


def run_in_process(client: redis.Redis, run_id: str, *, old_records: bool) -> RedisRunStore:
    problem = load_suite().get("feynman-I.6.2a")
    X, y = problem.sample(200, seed=0)
    settings = SearchSettings.build(run_id=run_id, granularity="step", early_stop=False,
                                    max_restart_loop=1, global_width=2,
                                    max_refinement_depth=2, local_sample_size=2, seed=1)
    queue: deque[Action] = deque()
    submit_run(client, queue.append, settings, X, {problem.output: y}, "find y")
    store = RedisRunStore.open(client, run_id)
    rewritten = 0
    while queue:
        queue.extend(dispatch(client, queue.popleft()))
        if old_records:  # as if the earlier samples were recorded by a worker before the upgrade
            rewritten += as_old_records(client, store)
    assert rewritten or not old_records
    return store


def branches(store: RedisRunStore) -> list[tuple[Any, ...]]:
    """The branches' ends and fronts, node ids without the run id."""
    return [(b.L, b.status, [{**c, "node_id": c["node_id"].split(":", 1)[1]} for c in b.front])
            for b in store.flow.load_branches(1, 2)]


def test_a_step_whose_samples_were_stored_without_candidates_still_closes(redis_server):
    client = redis.Redis.from_url(redis_server)
    new = run_in_process(client, "carried-new", old_records=False)
    old = run_in_process(client, "carried-old", old_records=True)
    assert old.stored_result() is not None and new.stored_result() is not None

    def nodes(store: RedisRunStore) -> list[tuple[str, str]]:
        return sorted((r["node_label"], r["detail"]["content"])
                      for r in store.records(include_detail=True))

    assert nodes(old) == nodes(new)
    assert [c.formula for c in old.stored_result().candidates] == \
        [c.formula for c in new.stored_result().candidates]
    assert branches(old) == branches(new)
    client.close()
