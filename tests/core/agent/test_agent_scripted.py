"""The agent loop driven by a scripted model (text-mode tool calls)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.types import SearchResult
from tests.support.scripted_model import ScriptedAPI, Truncated


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, 200), rng.uniform(1, 5, 200)
    return {"x1": x1, "x2": x2}, {"y": x1 * x2**2}


def make_agent(steps, tmp_path=None, **settings):
    api = ScriptedAPI(steps, tool_parser_name="text")
    # one branch thread: the script is consumed in request order
    defaults = {"tool_parser": "text", "early_stop": False, "run_id": "t", "branch_threads": 1}
    if tmp_path is not None:
        defaults["save_path"] = str(tmp_path / "run")
    return SRAgent(api=api, **{**defaults, **settings}), api


def test_every_failure_family_is_fed_back_and_the_run_completes(data, tmp_path):
    steps = [
        ['CALL evaluate_formula {"f": "x1*x2**2"'],                      # malformed call
        ["I will think first."],                                 # no tool call
        ['CALL evaluate_formula {"f": "x1*x3"}'],                        # tool error: unknown x3
        [Truncated('CALL evaluate_formula {"f": "x1*x2**2"}\nCALL evaluate_formula {"f": "x1')],
        ["done"],
    ]
    agent, api = make_agent(steps, tmp_path, max_refinement_depth=5)
    result = SearchResult.from_dict(agent.run(*data, "find y"))
    api.assert_consumed()
    assert result.status == "completed" and agent.store.node_count == 5
    assert result.best.formula == "x1*x2**2"

    def text(prompt):
        return "\n".join(str(m.get("content")) for m in prompt)

    assert "not run" in text(api.prompts[1]) or "could not" in text(api.prompts[1])
    assert "x3" in text(api.prompts[3]) and "-> error" in text(api.prompts[3])
    assert "cut by the length limit" in text(api.prompts[4])
    nodes = {n["node_id"]: n for n in agent.store.records(include_detail=True)}
    cut = nodes["t:R1-C1-L4-K1"]
    assert [r["ok"] for r in cut["detail"]["tool_results"]] == [True]


def test_the_best_sample_continues_and_errors_break_ties(data):
    steps = [['CALL evaluate_formula {"f": "x1*x2"}', 'CALL evaluate_formula {"f": "x1*x2**2"}',
              "nothing", 'CALL evaluate_formula {"f": "x9"}'],
             ["a", "b", "c", "d"]]
    agent, _ = make_agent(steps, local_sample_size=4, max_refinement_depth=2)
    agent.run(*data, "find y")
    records = {r["node_id"]: r for r in agent.store.records()}
    assert records["t:R1-C1-L2-K1"]["parents"][0] == {
        "parent_node_id": "t:R1-C1-L1-K2", "relation": "continuation"}


def test_node_grid_parents_and_restart_seeds(data):
    reply = 'CALL evaluate_formula {"f": "x1*x2**2"}'
    other = 'CALL evaluate_formula {"f": "x1*x2"}'
    steps = [[reply, other]] * (2 * 2 * 2)
    agent, api = make_agent(steps, local_sample_size=2, max_refinement_depth=2,
                            global_width=2, max_restart_loop=2, restart_top_k=1)
    result = SearchResult.from_dict(agent.run(*data, "find y"))
    api.assert_consumed()
    assert result.status == "completed"
    records = {r["node_id"]: r for r in agent.store.records()}
    assert len(records) == 16
    assert records["t:R1-C1-L1-K1"]["parents"] == []
    assert records["t:R1-C2-L2-K2"]["parents"] == [
        {"parent_node_id": "t:R1-C2-L1-K1", "relation": "continuation"}]
    seeds = records["t:R2-C1-L1-K1"]["parents"]
    assert seeds == [{"parent_node_id": "t:R1-C1-L1-K1", "relation": "restart_seed"}]
    restart_prompt = api.prompts[4][1]["content"]
    assert "Best formulas of earlier restarts" in restart_prompt and "x1*x2**2" in restart_prompt


def test_analysis_output_of_other_samples_is_merged(data):
    steps = [['CALL evaluate_formula {"f": "x1*x2**2"}', "CALL statistics_analysis {}"],
             ["done", "done"]]
    agent, api = make_agent(steps, local_sample_size=2, max_refinement_depth=2)
    agent.run(*data, "find y")
    records = {r["node_id"]: r for r in agent.store.records()}
    assert records["t:R1-C1-L2-K1"]["parents"] == [
        {"parent_node_id": "t:R1-C1-L1-K1", "relation": "continuation"},
        {"parent_node_id": "t:R1-C1-L1-K2", "relation": "context_merge"}]
    text = "\n".join(str(m.get("content")) for m in api.prompts[1])
    assert "statistics_analysis" in text and "evaluate_formula" in text


def test_formula_using_the_target_is_not_a_candidate(data):
    steps = [['CALL evaluate_formula {"f": "y + 0*x1"}']]
    agent, _ = make_agent(steps, max_refinement_depth=1)
    result = SearchResult.from_dict(agent.run(*data, "find y"))
    assert result.candidates == []


def test_early_stop_ends_every_branch_at_the_exact_level(data):
    exact, other = 'CALL evaluate_formula {"f": "x1*x2**2"}', 'CALL evaluate_formula {"f": "x1*x2"}'
    # level 1: neither branch exact; level 2: branch 2 is exact, so branch 1 ends at level 2 too
    steps = [[other], [other], [other], [exact]]
    agent, api = make_agent(steps, max_refinement_depth=5, global_width=2, early_stop=True)
    result = SearchResult.from_dict(agent.run(*data, "find y"))
    api.assert_consumed()
    assert result.status == "early_stopped" and agent.store.node_count == 4
    assert {r["node_label"] for r in agent.store.records()} == {
        "R1-C1-L1-K1", "R1-C2-L1-K1", "R1-C1-L2-K1", "R1-C2-L2-K1"}


def test_run_directory_files(data, tmp_path):
    steps = [['CALL evaluate_formula {"f": "x1*x2**2"}']]
    agent, _ = make_agent(steps, tmp_path, max_refinement_depth=1)
    agent.run(*data, "find y")
    run = tmp_path / "run"
    for name in ("settings.json", "problem.json", "data.npz", "nodes.jsonl", "state.json",
                 "result.json", "tool_calls.jsonl", "candidates.jsonl"):
        assert (run / name).exists(), name
    state = json.loads((run / "state.json").read_text())
    assert state["runtime"]["status"] == "completed"


def test_model_failure_ends_failed_and_keeps_nodes(data, tmp_path):
    steps = [['CALL evaluate_formula {"f": "x1*x2**2"}']]  # the second call is not scripted
    agent, _ = make_agent(steps, tmp_path, max_refinement_depth=2)
    result = SearchResult.from_dict(agent.run(*data, "find y"))
    assert result.status == "failed" and "script is empty" in result.stop_reason
    assert agent.store.node_count == 1 and result.best.formula == "x1*x2**2"
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["status"] == "failed"


def test_the_reference_candidate_accessors_and_hooks(data, caplog):
    steps = [['CALL evaluate_formula {"f": "x1*x2"}'], ['CALL evaluate_formula {"f": "x1*x2**2"}']]
    agent, _ = make_agent(steps, max_refinement_depth=2)
    added = []
    agent.observers.append(lambda event: added.append(event)
                           if event["event"] == "buffer_messages" else None)
    with caplog.at_level("INFO", logger="srh.agent"):
        agent.run(*data, "find y")
    assert agent.best_candidate().formula == "x1*x2**2"
    front = agent.get_pareto_front()
    assert [c.formula for c in front] == [c.formula for c in agent.store.pareto_front()]
    best = agent.best_candidate()
    label, value = agent.get_ranking_metric(best)
    assert label == "validation mse" and value == best.metric("mse", "validation") < 1e-20
    assert agent.get_ranking_metric(best.to_dict()) == (label, value)  # a dict works too
    assert agent.candidate_sort_key(best) == (value, float(best.complexity))
    worse = next(c for c in agent.store.candidates() if c.formula == "x1*x2")
    assert agent.candidate_sort_key(worse) > agent.candidate_sort_key(best)
    assert agent.get_ranking_metric({"formula": "x", "node_id": "n"}) == (None, None)
    assert agent.candidate_sort_key({"formula": "x", "node_id": "n"}) is None
    flat = SRAgent.candidate_to_dict(best)
    assert flat["validation"] == best.split_metrics("validation") and flat["formula"] == "x1*x2**2"
    # the buffer hook saw the initial prompts (R, C) and each step's messages (R, C, L)
    assert [(e.get("R"), e.get("C"), e.get("L")) for e in added] == [(1, 1, None), (1, 1, 1),
                                                                     (1, 1, 2)]
    assert added[0]["messages"][0]["role"] == "system"
    roles = [m["role"] for m in added[1]["messages"]]
    assert roles[0] == "assistant" and roles[-1] == "user", roles  # the call, ..., progress
    # log_info: one line per response, with its calls
    lines = [r.getMessage() for r in caplog.records if r.name == "srh.agent"]
    assert any(line.startswith("R1 C1 L2 K1: evaluate_formula") for line in lines), lines
