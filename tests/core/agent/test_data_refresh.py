"""Data changed mid-run: new splits and tools, the model told once per branch, candidates
marked with the data they were scored on; prepare_tool_context is the tools' context."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.agent.data_refresh import data_change, refresh_message
from srh_core.context import AgentContext
from srh_core.types import SearchResult
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"
NOTICE = "[Harness] The data changed during the run"


def evaluate(f: str, call_id: str) -> Reply:
    return Reply.json(chat_completion(content=None, tool_calls=[
        tool_call("evaluate_formula", {"f": f}, call_id)]), path=CHAT)


def columns() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {"x1": rng.uniform(1, 5, 80), "x2": rng.uniform(1, 5, 80)}


def notices(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"]
            if m["role"] == "user" and m["content"].startswith(NOTICE)]


def test_a_commit_mid_run_is_picked_up_at_the_next_step(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(evaluate("x1*x2", "c1"), evaluate("x1 + x2", "c2"),
                         evaluate("x1 + x2", "c3"))
    X = columns()
    context = AgentContext()
    agent = SRAgent(llm_provider="openai", llm_model="m", base_url=openai_server.base_url,
                    tool_parser="openai", tools=["evaluate_formula"], context=context,
                    max_refinement_depth=3, early_stop=False, run_id="refresh",
                    save_path=str(tmp_path / "run"))

    def prepare_new_data(event: dict[str, Any]) -> None:  # a data-preparation agent's commit
        if event["event"] == "responses" and event["L"] == 1:
            context.commit_data({**X, "y": X["x1"] + X["x2"]}, target="y",
                                variable_descriptions={"y": "the new target"})

    agent.observers.append(prepare_new_data)
    result = SearchResult.from_dict(agent.run(X, {"y": X["x1"] * X["x2"]}, "y"))

    assert result.status == "completed", result.stop_reason
    bodies = openai_server.bodies()
    assert notices(bodies[0]) == []
    told = notices(bodies[1])  # step 2's prompt: the commit came during step 1
    assert len(told) == 1, json.dumps(bodies[1]["messages"])[:2000]
    revision = context.revision
    assert f"{revision - 1} -> {revision}" in told[0] and "y: the new target" in told[0]
    assert agent.tools_revision == revision  # the tools were rebuilt for the new data
    found = {c.node_id.rsplit(":", 1)[1]: c for c in agent.store.candidates()}
    old, new = found["R1-C1-L1-K1"], found["R1-C1-L2-K1"]
    assert old.details["data_revision"] == revision and new.details["data_revision"] == revision
    assert new.metric("mse", "train") == pytest.approx(0.0, abs=1e-20)
    assert len(notices(bodies[2])) == 1  # told once: the third step carries the same one


def test_refresh_data_rebuilds_the_tools_only_when_the_revision_moved() -> None:
    X = columns()
    context = AgentContext()
    context.commit_data({**X, "y": X["x1"] * X["x2"]}, target="y")
    agent = SRAgent(llm_provider="offline", tools=["evaluate_formula"])
    from srh_core.state import SearchRunState

    agent.bind_run(context, SearchRunState(None, "mse", False, run_id="r"), None)
    tools = agent.tools
    assert agent.refresh_data() is None and agent.tools is tools
    context.add_features({"x3": X["x1"] ** 2})
    change = agent.refresh_data()
    assert change is not None and agent.tools is not tools
    assert change["previous_revision"] == context.revision - 1
    assert change["features"] == ["x1", "x2", "x3"] and change["n_samples"] == 80
    assert change["splits"]["train"] + change["splits"]["validation"] == 80
    assert agent.refresh_data() is None
    assert SRAgent.build_data_refresh_message(change) == refresh_message(change)
    agent.release_run()


class WrappingAgent(SRAgent):
    """Binds its tools to a context of its own: the hook decides what tools see."""

    entered: list[str] = []

    @contextmanager
    def prepare_tool_context(self, tool_context: Any) -> Iterator[Any]:
        type(self).entered.append("enter")
        shifted = AgentContext(args=tool_context.settings(), evaluator=tool_context.evaluator)
        data = dict(tool_context.data)
        shifted.commit_data({**data, tool_context.target: data[tool_context.target] + 1.0},
                            target=tool_context.target)
        try:
            yield shifted
        finally:
            type(self).entered.append("exit")


def test_prepare_tool_context_is_what_the_tools_see_and_it_exits_with_the_run() -> None:
    X = columns()
    WrappingAgent.entered = []
    agent = WrappingAgent(llm_provider="offline", tools=["evaluate_formula", "submit_formula"],
                          max_refinement_depth=2, early_stop=False)
    agent.run(X, {"y": X["x1"] * X["x2"]}, "y")
    assert WrappingAgent.entered == ["enter", "exit"]
    assert agent.tools["evaluate_formula"].context is agent.context
    target = agent.context.target_values()
    assert np.allclose(target, X["x1"] * X["x2"] + 1.0)


def test_data_change_describes_only_described_variables() -> None:
    X = columns()
    context = AgentContext()
    context.commit_data({**X, "y": X["x1"]}, target="y", variable_descriptions={"x1": "length"})
    change = data_change(context, 0)
    assert change["variable_descriptions"] == {"x1": "length"}
    assert json.loads(json.dumps(change)) == change
