"""One loop: an SRAgent subclass gives the same nodes embedded and on real Celery workers.

The subclass (:class:`tests.support.marked_agent.MarkedAgent`) overrides a hook
of the step opening and one of the recording; the cluster rebuilds it from its
import path. Both granularities of the cluster are checked (a step as tasks, a
whole run as chunked tasks), with early stop on and off: the same node labels,
parent links, responses and marks, the same result, the same run-directory files.
A stop decision (the run's stop flag) and a pause and its resume are checked the same
way: both runtimes pass them through the scheduler's one gate, in process (the embedded
loop and the task bodies) at a restart and at a level, and a pause at the run's first
boundary on real workers (both granularities).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis

from srh_core.agent import SearchSettings
from srh_core.agent.branch import BranchState
from srh_core.agent.outcome import STOP_CANCELLED
from srh_core.embedded.runner import StopFlag, finish_run, make_context, search_loop
from srh_core.interactive import ControlCommand
from srh_core.problems import load_suite
from srh_core.state import SearchRunState
from srh_workers.control.channel import RedisControlChannel
from srh_workers.control.parking import step_member
from srh_workers.control.submit import submit_interactive
from srh_workers.flow.handlers import dispatch
from srh_workers.flow.names import RESTART, STEP, Action
from srh_workers.flow.tasks import sender
from srh_workers.store import RedisRunStore
from srh_workers.submit import submit_run
from tests.support.marked_agent import PROMPT_MARK, InteractiveMarkedAgent, MarkedAgent
from tests.support.results import without_times
from tests.workers.cluster import Cluster
from tests.workers.conftest import RedisServer
from tests.workers.support import wait_until

pytestmark = pytest.mark.integration

# With seed 1 the offline proposer's two branches first fit this problem exactly at
# steps 3 and 2, so early stop ends the first restart at step 2 (see test_concurrent_branches).
PROBLEM = "feynman-I.6.2a"
VALUES = {"max_restart_loop": 2, "global_width": 2, "max_refinement_depth": 3,
          "local_sample_size": 2, "seed": 1}


def without_run_id(text: str) -> str:
    return text.split(":", 1)[1]


def fingerprint(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What must agree: each node's label, parents, response and the subclass's marks."""
    rows = []
    for record in records:
        detail = record["detail"]
        prompt_marks = [m["content"] for m in detail.get("prompt") or []
                        if PROMPT_MARK in str(m.get("content"))]
        rows.append((record["node_label"],
                     tuple((without_run_id(p["parent_node_id"]), p["relation"])
                           for p in record["parents"]),
                     detail["content"], detail["usage"].get("mark"), tuple(prompt_marks),
                     detail["usage"].get("step_mark")))
    return sorted(rows)


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    drop = ("run_id",)
    candidates = [{**c, "node_id": without_run_id(c["node_id"])} for c in result["candidates"]]
    result = without_times(result)
    return {**{k: v for k, v in result.items() if k not in drop}, "candidates": candidates}


def response_lines(run_dir: Path) -> list[dict[str, Any]]:
    """response.jsonl without what differs between runs (ids, latency), by coordinate."""
    lines = [json.loads(line) for line in (run_dir / "response.jsonl").read_text().splitlines()]
    drop = ("run_id", "node_id", "latency_s")
    return sorted(({k: v for k, v in line.items() if k not in drop} for line in lines),
                  key=lambda line: (line["R"], line["C"], line["L"], line["K"]))


@pytest.fixture(scope="module")
def parity_cluster(module_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[Cluster]:
    """A branches worker (4 threads) and a tools worker (2 processes) on the module's
    redis-server, started once for both cases of the subclass test: each submits runs of
    its own ids, and no case stops or changes a worker."""
    cluster = Cluster(module_redis.url, tmp_path_factory.mktemp("parity"))
    try:
        cluster.start_together(("branches", {"concurrency": 4}), ("tools", {"concurrency": 2}))
        yield cluster
    finally:
        cluster.close()


@pytest.mark.parametrize("early_stop", [False, True], ids=["full-budget", "early-stop"])
def test_a_subclass_behaves_the_same_embedded_and_on_the_cluster(parity_cluster: Cluster,
                                                                 tmp_path: Path, early_stop):
    problem = load_suite().get(PROBLEM)
    X, y = problem.sample(300, seed=0)
    embedded = MarkedAgent(run_id="emb", save_path=str(tmp_path / "embedded"),
                           early_stop=early_stop, **VALUES)
    expected = embedded.run(X, {problem.output: y}, "find y")
    expected_nodes = fingerprint(embedded.store.records(include_detail=True))
    assert all(row[3] == row[0] for row in expected_nodes)  # the recording hook ran
    assert all(row[4] for row in expected_nodes if row[0].endswith("K1"))  # the opening one
    assert all(row[5] == f"{row[0].rsplit('-', 1)[0]}-2" for row in expected_nodes), \
        expected_nodes[:2]  # record_llm_result ran once per step, with its K responses
    assert expected["candidates"] and all(c["details"]["pushed_by"] == "MarkedAgent"
                                          for c in expected["candidates"])
    if early_stop:
        assert expected["status"] == "early_stopped" and len(expected_nodes) == 2 * 2 * 2
    else:
        assert expected["status"] == "completed" and len(expected_nodes) == 2 * 2 * 3 * 2
    files = {path.name for path in (tmp_path / "embedded").iterdir()}

    cluster = parity_cluster
    for granularity in ("step", "run"):
        run_id = f"par-{granularity}-{int(early_stop)}"
        settings = SearchSettings.build(run_id=run_id, early_stop=early_stop,
                                        granularity=granularity, **VALUES)
        cluster.submit(settings, X, {problem.output: y}, agent_class=MarkedAgent)
        result = cluster.result(run_id).to_dict()
        records = RedisRunStore.open(cluster.client, run_id).records(include_detail=True)
        assert fingerprint(records) == expected_nodes, granularity
        assert comparable(result) == comparable(expected), granularity
        run_dir = cluster.directory / "runs" / run_id
        wait_until(lambda: (run_dir / "result.json").exists(), 30,  # noqa: B023
                   "the finalizing worker to write the run directory")
        assert {path.name for path in run_dir.iterdir()} == files, granularity
        assert json.loads((run_dir / "result.json").read_text()) == result
        assert response_lines(run_dir) == response_lines(tmp_path / "embedded"), granularity


@pytest.mark.parametrize("early_stop", [False, True], ids=["at-a-restart", "at-a-level"])
def test_a_stop_decides_the_same_in_both_runtimes(redis_server: str, early_stop):
    """The run's stop flag passes the one gate in both runtimes: set at a boundary both
    reach in the same state (restart 2 starts; with early stop on, every branch finished
    step 1), every running branch ends 'cancelled' before it opens another step."""
    problem = load_suite().get(PROBLEM)
    X, y = problem.sample(300, seed=0)
    values = {**VALUES, "early_stop": early_stop, "max_refinement_depth": 2}

    def at_boundary(R: int, L: int) -> bool:
        return L >= 2 if early_stop else R == 2

    agent = MarkedAgent(run_id="stop-emb", **values)
    store = SearchRunState(None, agent.settings.ranking_metric, agent.settings.larger_is_better,
                           run_id="stop-emb")
    agent.bind_run(make_context(agent, X, {problem.output: y}), store, None, "find y")
    control = StopFlag()  # the embedded run's stop flag, set at a restart below

    def checkpoint(R: int, branches: Sequence[BranchState]) -> None:
        if all(at_boundary(R, branch.L) for branch in branches if not branch.finished):
            control.reason = control.reason or STOP_CANCELLED  # `srh cancel` there

    outcome = search_loop(agent, 1, None, checkpoint, control, threads=1)
    assert outcome is not None and (outcome.status, outcome.reason) == ("interrupted",
                                                                       STOP_CANCELLED)
    expected = agent.build_search_result(outcome.status, stop_reason=outcome.reason).to_dict()

    client = redis.Redis.from_url(redis_server)
    run_id = f"stop-cel-{int(early_stop)}"
    queue: deque[Action] = deque()
    settings = SearchSettings.build(run_id=run_id, granularity="step", **values)
    submit_run(client, queue.append, settings, X, {problem.output: y}, "find y",
               agent_class=MarkedAgent)
    celery_store = RedisRunStore.open(client, run_id)
    while queue:
        action = queue.popleft()
        if (action.task == RESTART and at_boundary(action.args[1], 1)) or \
                (action.task == STEP and at_boundary(action.args[1], action.args[3])):
            celery_store.flow.request_stop(STOP_CANCELLED)
        queue.extend(dispatch(client, action))
    result = celery_store.stored_result()
    assert result is not None
    assert (result.status, result.stop_reason) == (outcome.status, outcome.reason)
    assert fingerprint(celery_store.records(include_detail=True)) == \
        fingerprint(store.records(include_detail=True))
    assert comparable(result.to_dict()) == comparable(expected)
    last = celery_store.flow.latest_restart()
    ended = [(b.C, b.L, b.status, b.stop_reason) for b in celery_store.flow.load_branches(last, 2)]
    assert ended == [(C, 1 if last == 2 else 2, "stopped", STOP_CANCELLED) for C in (1, 2)]
    client.close()


def state_changes(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["payload"]["previous"], e["payload"]["current"]) for e in events
            if e["kind"] == "state_changed"]


@pytest.mark.parametrize("early_stop", [False, True], ids=["at-a-restart", "at-a-level"])
def test_a_pause_and_its_resume_decide_the_same_in_both_runtimes(redis_server: str,
                                                                  early_stop):
    """A pause asked at a boundary both runtimes reach in the same state passes the one
    gate: no step opens until the resume; the embedded runner holds the first branch on
    its thread, the step tasks park every branch's next step; after the resume both go
    on to the same nodes and result, and the controls went through the same states."""
    problem = load_suite().get(PROBLEM)
    X, y = problem.sample(300, seed=0)
    values = {**VALUES, "early_stop": early_stop, "max_refinement_depth": 2}
    options = {"pause_on_tool_free": False}

    def at_boundary(R: int, L: int) -> bool:
        return L >= 2 if early_stop else R == 2

    agent = InteractiveMarkedAgent(run_id="pause-emb", **options, **values)
    store = SearchRunState(None, agent.settings.ranking_metric, agent.settings.larger_is_better,
                           run_id="pause-emb")
    agent.bind_run(make_context(agent, X, {problem.output: y}), store, None, "find y")
    manager = agent.interaction_manager
    control = StopFlag(agent.pause_gate())
    held: list[tuple[int, int, int]] = []
    at_hold: dict[str, Any] = {}
    last: list[BranchState] = []

    def resume_once_held() -> None:
        end = time.monotonic() + 60
        while not manager.status()["waiting_at_boundary"] and time.monotonic() < end:
            time.sleep(0.01)
        # resumed either way (the run must not hang); `held` says whether it was held
        at_hold["held_on_thread"] = manager.status()["waiting_at_boundary"]
        manager.command("resume")

    def checkpoint(R: int, branches: Sequence[BranchState]) -> None:
        last[:] = [b.copy() for b in branches]
        if not held and manager.state == "running" and \
                all(at_boundary(R, b.L) for b in branches if not b.finished):
            manager.command("pause")  # `srh pause` there
            threading.Thread(target=resume_once_held, daemon=True).start()

    def on_event(event: dict[str, Any]) -> None:
        if event["event"] == "held":
            held.append((event["R"], event["C"], event["L"]))
            at_hold.setdefault("labels", sorted(r["node_label"] for r in store.records()))
            at_hold.setdefault("steps", sorted(step_member(b.R, b.C, b.L) for b in last
                                               if not b.finished))

    agent.observers.append(on_event)
    outcome = search_loop(agent, 1, None, checkpoint, control, threads=1)
    assert outcome is not None
    expected = finish_run(agent, store, outcome).to_dict()  # its `finished` ends the controls
    first = (2, 1, 1) if not early_stop else (1, 1, 2)
    assert held == [first]  # held once, the first branch, before it opened the step
    assert at_hold["held_on_thread"]
    embedded_states = state_changes(manager.get_recent_events(0)["events"])
    assert embedded_states == [("idle", "running"), ("running", "pausing"),
                               ("pausing", "paused"), ("paused", "running"),
                               ("running", "idle")]

    client = redis.Redis.from_url(redis_server)
    run_id = f"pause-cel-{int(early_stop)}"
    queue: deque[Action] = deque()
    settings = SearchSettings.build(run_id=run_id, granularity="step", **values)
    submit_interactive(client, queue.append, settings, X, {problem.output: y}, "find y",
                       agent_class=InteractiveMarkedAgent, options=options)
    celery_store = RedisRunStore.open(client, run_id)
    channel = RedisControlChannel(client, run_id, queue.append)
    paused = False
    while queue:
        action = queue.popleft()
        if not paused and ((action.task == RESTART and at_boundary(action.args[1], 1)) or
                           (action.task == STEP and at_boundary(action.args[1],
                                                                action.args[3]))):
            channel.send(ControlCommand("pause"))
            paused = True
        queue.extend(dispatch(client, action))
        if paused and not queue and celery_store.stored_result() is None:
            # every task ended: the run holds no worker, its next steps parked
            assert celery_store.controls.held_steps() == at_hold["steps"]
            assert sorted(r["node_label"] for r in celery_store.records()) == at_hold["labels"]
            assert step_member(*first) in at_hold["steps"]
            channel.send(ControlCommand("resume"))  # re-sends the parked steps
    result = celery_store.stored_result()
    assert result is not None and paused
    assert (result.status, result.stop_reason) == (outcome.status, outcome.reason)
    assert fingerprint(celery_store.records(include_detail=True)) == \
        fingerprint(store.records(include_detail=True))
    assert comparable(result.to_dict()) == comparable(expected)
    assert state_changes(channel.read_events(0)["events"]) == embedded_states
    client.close()


@pytest.mark.parametrize("granularity", ["step", "run"])
def test_a_pause_before_the_first_step_holds_the_same_on_real_workers(cluster: Cluster,
                                                                       granularity):
    """Asked before any step opened (the run's first boundary), a pause holds the run in
    both runtimes; on real workers no worker is held (the steps, or the whole-run task,
    park), and the resume goes on to the embedded run's nodes and result."""
    problem = load_suite().get(PROBLEM)
    X, y = problem.sample(300, seed=0)
    values = {**VALUES, "early_stop": False, "max_refinement_depth": 2}
    options = {"pause_on_tool_free": False}

    agent = InteractiveMarkedAgent(run_id="first-emb", **options, **values)
    store = SearchRunState(None, agent.settings.ranking_metric, agent.settings.larger_is_better,
                           run_id="first-emb")
    agent.bind_run(make_context(agent, X, {problem.output: y}), store, None, "find y")
    manager = agent.interaction_manager
    held: list[tuple[int, int, int]] = []
    resumed: list[bool] = []

    def resume_once_held() -> None:
        end = time.monotonic() + 60
        while not manager.status()["waiting_at_boundary"] and time.monotonic() < end:
            time.sleep(0.01)
        resumed.append(manager.status()["waiting_at_boundary"] and not store.records())
        manager.command("resume")

    def checkpoint(R: int, branches: Sequence[BranchState]) -> None:
        if not resumed and manager.state == "running" and all(b.L == 1 for b in branches):
            manager.command("pause")  # the run's first boundary: no step opened yet
            threading.Thread(target=resume_once_held, daemon=True).start()

    agent.observers.append(lambda e: e["event"] == "held" and held.append((e["R"], e["C"],
                                                                           e["L"])))
    outcome = search_loop(agent, 1, None, checkpoint, StopFlag(agent.pause_gate()), 1)
    assert outcome is not None
    expected = finish_run(agent, store, outcome).to_dict()
    assert held == [(1, 1, 1)] and resumed == [True]

    run_id = f"first-cel-{granularity}"
    settings = SearchSettings.build(run_id=run_id, granularity=granularity, **values)
    submit_interactive(cluster.client, sender(cluster.app), settings, X, {problem.output: y},
                       "find y", agent_class=InteractiveMarkedAgent, options=options)
    channel = RedisControlChannel(cluster.client, run_id, sender(cluster.app))
    channel.apply(ControlCommand("pause"))  # before any worker took the run's first task
    cluster.start_together(("branches", {"concurrency": 2}), ("tools", {"concurrency": 1}))
    celery_store = RedisRunStore.open(cluster.client, run_id)
    parked = ["run"] if granularity == "run" else [step_member(1, C, 1) for C in (1, 2)]
    wait_until(lambda: celery_store.controls.held_steps() == parked, 60,
               f"the {granularity} tasks to park")
    assert celery_store.records() == []  # held before any step opened
    status = channel.apply(ControlCommand("resume"))  # re-sends what parked
    assert status["interaction_state"] == "running"
    result = cluster.result(run_id)
    assert fingerprint(celery_store.records(include_detail=True)) == \
        fingerprint(store.records(include_detail=True))
    assert comparable(result.to_dict()) == comparable(expected)
