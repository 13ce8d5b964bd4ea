"""Branches on threads give the nodes of one thread; the level rules of early stop."""

from __future__ import annotations

from typing import Any

import pytest

from srh_core.agent import BranchState, SRAgent, step_gate
from srh_core.agent.outcome import STOP_EARLY, STOP_TIME_LIMIT, restart_is_last, run_outcome
from srh_core.problems import load_suite
from srh_core.types import SearchResult
from tests.support.results import without_times

# With seed 1 the offline proposer's three branches first fit this problem exactly at
# steps 3, 2 and 2: the restart's exact level is 2 (measured, see the test below).
PROBLEM = "feynman-I.6.2a"


def run(threads: int, **settings: Any) -> tuple[SearchResult, list[tuple[Any, ...]]]:
    problem = load_suite().get(PROBLEM)
    X, y = problem.sample(300, seed=0)
    values = {"global_width": 3, "max_refinement_depth": 4, "local_sample_size": 2, "seed": 1,
              "run_id": "t", "branch_threads": threads, **settings}
    agent = SRAgent(**values)
    result = SearchResult.from_dict(agent.run(X, {problem.output: y}, "find it"))
    nodes = sorted((r["node_id"], tuple(p["parent_node_id"] for p in r["parents"]),
                    r["detail"]["content"]) for r in agent.store.records(include_detail=True))
    return result, nodes


@pytest.mark.parametrize("early_stop", [False, True], ids=["full-budget", "early-stop"])
def test_threads_give_the_nodes_and_result_of_one_thread(early_stop):
    one, one_nodes = run(1, early_stop=early_stop)
    three, three_nodes = run(3, early_stop=early_stop)
    assert one_nodes == three_nodes
    assert without_times(one.to_dict()) == without_times(three.to_dict())
    if early_stop:
        assert one.status == "early_stopped"
        labels = {node_id.split(":")[1] for node_id, _, _ in one_nodes}
        assert labels == {f"R1-C{C}-L{L}-K{K}" for C in (1, 2, 3) for L in (1, 2) for K in (1, 2)}
    else:
        assert one.status == "completed" and len(one_nodes) == 3 * 4 * 2


def branch(C: int, L: int, *, status: str = "running", exact: int | None = None) -> BranchState:
    return BranchState("r", 1, C, L, [], status=status, exact_level=exact)  # type: ignore[arg-type]


@pytest.mark.parametrize(("siblings", "gate"), [
    ([branch(1, 3), branch(2, 3)], "open"),
    ([branch(1, 3), branch(2, 2)], "wait"),
    ([branch(1, 3), branch(2, 2, status="stopped")], "open"),
    ([branch(1, 3), branch(2, 3, exact=2)], "stop"),
    ([branch(1, 3), branch(2, 4, exact=3)], "open"),
], ids=["level-done", "sibling-behind", "sibling-ended", "exact-below", "exact-this-level"])
def test_step_gate(siblings, gate):
    assert step_gate(siblings[0], siblings, early_stop=True) == gate
    assert step_gate(siblings[0], siblings, early_stop=False) == "open"


def test_run_outcome_and_restart_rules():
    done = [branch(1, 5, status="done"), branch(2, 5, status="done")]
    assert run_outcome(done, early_stop=True, time_limit=None).status == "completed"
    assert not restart_is_last(done, 1, 2, early_stop=True)
    exact = [branch(1, 3, status="stopped", exact=2).stop(STOP_EARLY), branch(2, 3, exact=2)]
    assert run_outcome(exact, early_stop=True, time_limit=None).status == "early_stopped"
    assert restart_is_last(exact, 1, 2, early_stop=True)
    assert not restart_is_last([branch(1, 5, status="done", exact=2)], 1, 2, early_stop=False)
    timed = [branch(1, 2).stop(STOP_TIME_LIMIT)]
    outcome = run_outcome(timed, early_stop=True, time_limit=30)
    assert (outcome.status, outcome.reason) == ("interrupted", "time limit of 30s reached")
    assert run_outcome(timed, early_stop=True, time_limit=None, failure="boom").status == "failed"
