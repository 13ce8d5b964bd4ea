"""The Agent base: tools bound to one context, set_messages, serial and process-pool execution."""

from __future__ import annotations

import numpy as np
import pytest

from srh_core.agent import Agent, SRAgent
from srh_core.agent.settings import SearchSettings
from srh_core.context import AgentContext
from srh_core.types import ToolCall


class EchoAgent(Agent):
    """The smallest concrete agent: two tools, no loop of its own."""

    def __init__(self) -> None:
        self.settings = SearchSettings.build(llm_provider="offline")

    def enabled_tool_names(self) -> list[str]:
        return ["evaluate_formula", "statistics_analysis"]

    def run(self, formula: str) -> float:
        result = self.execute_action([ToolCall("evaluate_formula", {"f": formula})])[0]
        return result.result["data_split_results"]["train"]["metrics"]["mse"]


@pytest.fixture
def agent() -> EchoAgent:
    x = np.linspace(1.0, 3.0, 30)
    agent = EchoAgent()
    agent.initialize_tools(AgentContext(data={"x": x, "y": x**2}, target="y"))
    return agent


def test_the_base_is_abstract_and_sragent_is_one():
    with pytest.raises(TypeError):
        Agent()  # type: ignore[abstract]
    assert issubclass(SRAgent, Agent)


def test_initialize_tools_binds_one_context_parser_and_model(agent):
    assert set(agent.tools) == {"evaluate_formula", "statistics_analysis"}
    assert all(tool.context is agent.context for tool in agent.tools.values())
    assert agent.api.provider == "offline" and agent.parser.name == "openai"
    assert agent.run("x**2") == 0.0


def test_set_messages_shows_a_copy_of_the_prompt_to_every_tool(agent):
    prompt = [{"role": "user", "content": "find y"}]
    agent.set_messages(prompt)
    prompt[0]["content"] = "changed"
    assert all(tool.values["messages"] == [{"role": "user", "content": "find y"}]
               for tool in agent.tools.values())


def test_serial_and_parallel_execution_give_the_same_results_in_order(agent):
    calls = [ToolCall("evaluate_formula", {"f": "x**2"}), ToolCall("nope", {}),
             ToolCall("evaluate_formula", {"f": "x"}), ToolCall("statistics_analysis", {})]
    serial = agent.execute_action(calls)
    parallel = agent.execute_action_parallel(calls, max_workers=2)
    assert [r.ok for r in serial] == [True, False, True, True] == [r.ok for r in parallel]
    assert "Unknown tool 'nope'" in parallel[1].result_str
    assert [r.result_str for r in serial] == [r.result_str for r in parallel]
