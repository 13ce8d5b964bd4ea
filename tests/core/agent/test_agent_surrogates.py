"""A lone surrogate in a model's tool call fails that call, never the run (issue 22, finding 3)."""

from __future__ import annotations

import json

import numpy as np

from srh_core.agent import SRAgent
from srh_core.embedded.run_dir import RunDirectory
from srh_core.types import SearchResult
from tests.support.scripted_model import ScriptedAPI

# In the model's JSON, "\ud800" is an escape that decodes to a lone surrogate.
REPLY = "\n".join([
    "Trying x1*x2**2 \ud800 first.",
    'CALL evaluate_formula {"f": "x1*x2**2 + \\ud800"}',
    'CALL evaluate_formula {"f": "x1*x2**2", "y": "y\\ud800"}',
    'CALL read_skill {"name": "skill \\ud800"}',
    'CALL evaluate_formula {"f": "x1*x2**2"}',
])


def test_surrogates_in_tool_arguments_are_stored_and_reported(tmp_path) -> None:
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, 200), rng.uniform(1, 5, 200)
    api = ScriptedAPI([[REPLY], ["done \ud800"]], tool_parser_name="text")
    agent = SRAgent(api=api, tool_parser="text", early_stop=False, run_id="t", branch_threads=1,
                    save_path=str(tmp_path / "run"), max_refinement_depth=2)
    result = SearchResult.from_dict(agent.run({"x1": x1, "x2": x2}, {"y": x1 * x2**2}, "find y"))
    api.assert_consumed()
    assert result.status == "completed" and result.best.formula == "x1*x2**2"

    run = RunDirectory(tmp_path / "run")
    for name in ("nodes.jsonl", "tool_calls.jsonl", "plans.jsonl", "state.json", "result.json"):
        (tmp_path / "run" / name).read_bytes().decode("utf-8")  # strict UTF-8 on disk
    calls = run.records("tool_calls")
    assert [call["call"]["params"] for call in calls] == [
        {"f": "x1*x2**2 + \ud800"}, {"f": "x1*x2**2", "y": "y\ud800"}, {"name": "skill \ud800"},
        {"f": "x1*x2**2"}]  # read back exactly as the model sent them
    assert [call["ok"] for call in calls] == [False, False, False, True]
    for call in calls[:2]:
        assert "invalid character '\\ud800'" in call["result_str"]
        assert "nested" not in call["result_str"]
    assert "skill \\ud800" in calls[2]["result_str"]
    nodes = run.records("nodes")
    assert len(nodes) == 2 and agent.store.node_count == 2
    assert any("\ud800" in json.dumps(plan, ensure_ascii=False) for plan in run.records("plans"))
    assert run.snapshot()["runtime"]["status"] == "completed"
    assert run.result().best.formula == "x1*x2**2"
