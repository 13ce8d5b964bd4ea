"""The offline proposer calls expression_search where the closed-form tools do not fit."""

from __future__ import annotations

import pytest

from srh_core.agent import SRAgent
from srh_core.api.offline.reader import ConversationView, FrontRow, Variable
from srh_core.api.offline.search_step import (
    BUDGET_SHARE,
    SECONDS_SETTING,
    configured_seconds,
    search_move,
    seconds_left,
)
from srh_core.errors import ConfigurationError
from srh_core.problems import Problem

LOG_OF_A_SUM = Problem.from_dict({"id": "y", "output": "y", "formula": "log(a + b)*c",
                                  "variables": [{"name": n, "low": 1, "high": 3}
                                                for n in "abc"]})


def test_a_problem_the_closed_forms_miss_is_solved_by_the_search(monkeypatch):
    monkeypatch.setenv(SECONDS_SETTING, "3")
    X, y = LOG_OF_A_SUM.sample(400, seed=0)
    agent = SRAgent(max_refinement_depth=3, local_sample_size=2, global_width=1, run_id="t")
    result = agent.run(X, {"y": y}, "Find y")
    best = result["candidates"][result["best_candidate"]]
    assert LOG_OF_A_SUM.judge(best["formula"]).solved, best["formula"]
    searched = [call for node in agent.store.records(include_detail=True)
                for call in node["detail"]["tool_calls"] if call["name"] == "expression_search"]
    assert len(searched) == 1 and searched[0]["params"]["time_budget"] == 3.0
    assert best["node_id"].endswith("-L2-K1")  # the step of the search, its first sample


def view(step: int, front: list[FrontRow] | None = None, tried: set[str] | None = None,
         ) -> ConversationView:
    return ConversationView(target=Variable("y", 1.0, 2.0), step=step, max_steps=4,
                            front=front or [], tried=tried or set())


def progress(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"[Progress] Step 2 of 4 (restart 1/1, branch 1/1); "
                                        f"2 more after it{text}"}]


def test_the_budget_is_a_share_of_the_run_time_left():
    assert seconds_left(progress("; 20s of run time left.")) == 20.0
    assert seconds_left(progress(".")) is None
    move = search_move(view(2), progress("; 20s of run time left."))
    assert move is not None and move.params["time_budget"] == round(BUDGET_SHARE * 20.0, 1)
    assert search_move(view(2), progress(".")).params["time_budget"] == 10.0  # the default
    assert search_move(view(2), progress("; 1s of run time left.")) is None  # too little


@pytest.mark.parametrize("case", ["first-step", "exact-front", "already-searched", "off"])
def test_no_search_when_it_is_not_due(case):
    messages = progress(".")
    if case == "first-step":
        assert search_move(view(1), messages) is None
    elif case == "exact-front":
        assert search_move(view(2, front=[FrontRow(3, 0.0, "a*b")]), messages) is None
    elif case == "already-searched":
        tried = {'expression_search{"seed": 0, "time_budget": 10.0}'}
        assert search_move(view(2, tried=tried), messages) is None
    else:
        assert search_move(view(2), messages, configured=0.0) is None


def test_a_malformed_setting_is_a_configuration_error():
    assert configured_seconds(None) is None and configured_seconds("2.5") == 2.5
    with pytest.raises(ConfigurationError, match=SECONDS_SETTING):
        configured_seconds("soon")
