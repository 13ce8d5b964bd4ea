"""call_llm, subagent and report_model_test: the run's model through the real openai client."""

from __future__ import annotations

import numpy as np
import pytest

from srh_core.agent.settings import SearchSettings
from srh_core.api.endpoints import ModelAccess
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from tests.support.openai_payloads import chat_completion, usage
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"


@pytest.fixture
def context() -> AgentContext:
    x = np.linspace(1.0, 3.0, 20)
    return AgentContext(data={"x": x, "y": 2 * x**2}, target="y")


def settings_for(server, **extra) -> SearchSettings:
    return SearchSettings.build(llm_provider="openai", llm_model="test-model",
                                base_url=server.base_url, **extra)


def test_call_llm_sends_one_plain_request_to_the_runs_endpoint(openai_server, context,
                                                               monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(Reply.json(chat_completion(content="It grows like x squared.",
                                                    usage_block=usage(12, 6)), path=CHAT))
    tool = BaseTool.create("call_llm", context, settings=settings_for(openai_server))
    result = tool(messages="How does y grow?")
    openai_server.assert_script_consumed()
    assert result.ok, result.result_str
    assert result.result["content"] == "It grows like x squared."
    assert result.result["usage"]["total_tokens"] == 18
    body = openai_server.bodies()[0]
    assert body["model"] == "test-model" and "tools" not in body
    assert body["messages"] == [{"role": "user", "content": "How does y grow?"}]


def test_subagent_brief_carries_mode_candidates_and_a_data_summary(openai_server, context,
                                                                   monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(Reply.json(chat_completion(content="Test x**2 against x**3."),
                                    path=CHAT))
    tool = BaseTool.create("subagent", context, settings=settings_for(openai_server))
    result = tool(objective="Which power law?", mode="candidate_critique",
                  candidate_formulas=["2*x**2", "x**3"], evidence="r2 0.99 vs 0.97")
    openai_server.assert_script_consumed()
    assert result.ok, result.result_str
    assert result.result_str.startswith("Independent subagent (candidate_critique):")
    messages = openai_server.bodies()[0]["messages"]
    assert messages[0]["role"] == "system" and "cannot run tools" in messages[0]["content"]
    brief = messages[1]["content"]
    assert "- 2*x**2" in brief and "r2 0.99 vs 0.97" in brief
    assert "y (target)" in brief and "pearson with target" in brief
    assert BaseTool.canonical_name("delegate_subagent") == "subagent"


@pytest.mark.parametrize(("name", "params", "expected"), [
    ("subagent", {"objective": " "}, "objective"),
    ("subagent", {"objective": "q", "mode": "guess"}, "mode must be one of"),
    ("call_llm", {"messages": []}, "messages must be text"),
    ("call_llm", {"messages": [{"role": "tool", "content": "x"}]}, "messages[0]"),
    ("call_llm", {"messages": "hi", "llm_provider": "deepseek"}, "llm_provider must be"),
], ids=["empty-objective", "bad-mode", "no-messages", "bad-role", "other-provider"])
def test_bad_arguments_are_ok_false_and_send_nothing(name, params, expected, context,
                                                     openai_server):
    result = BaseTool.create(name, context, settings=settings_for(openai_server))(**params)
    assert not result.ok and expected in result.result_str
    assert openai_server.requests == []


def test_a_worker_access_refuses_a_base_url_it_does_not_know(context, openai_server):
    worker = ModelAccess(operator=False)  # no endpoints, no key of the run's own
    tool = BaseTool.create("call_llm", context, settings=settings_for(openai_server),
                           model_access=worker)
    result = tool(messages="hello")
    assert not result.ok and "not one of the operator's endpoints" in result.result_str
    assert openai_server.requests == []


def test_offline_and_missing_settings_are_refused_clearly(context):
    offline = SearchSettings.build(llm_provider="offline")
    result = BaseTool.create("subagent", context, settings=offline)(objective="why?")
    assert not result.ok and "not a language model" in result.result_str
    result = BaseTool.create("call_llm", context)(messages="hello")
    assert not result.ok and "needs the run's model settings" in result.result_str


def test_an_sragent_gives_its_tools_the_runs_settings_and_access(context):
    from srh_core.agent import SRAgent

    access = ModelAccess(operator=False)
    agent = SRAgent(llm_provider="offline", tools=["call_llm", "evaluate_formula"],
                    model_access=access)
    agent.initialize_tools(context)
    tool = agent.tools["call_llm"]
    assert tool.values["settings"] is agent.settings and tool.values["model_access"] is access


def test_report_model_test_returns_the_answer(context):
    result = BaseTool.create("model_test", context)(answer="SRH-42")
    assert result.ok and result.result == {"answer": "SRH-42"}
    assert not BaseTool.create("report_model_test", context)().ok


@pytest.mark.parametrize(("name", "parameters", "required"), [
    ("call_llm", ["messages", "llm_provider", "llm_model"], ["messages"]),
    ("subagent", ["objective", "mode", "candidate_formulas", "evidence"], ["objective"]),
    ("read_source", ["path", "symbol", "include_implementation", "include_references"], []),
    ("validate_evaluator", ["f", "evaluator_file", "y", "fit", "show_diagnostics"], ["f"]),
    ("report_model_test", ["answer"], ["answer"]),
], ids=["call_llm", "subagent", "read_source", "validate_evaluator", "report_model_test"])
def test_schemas_follow_the_reference_signatures(name, parameters, required):
    schema = BaseTool.get_class(name).to_dict()["function"]
    assert list(schema["parameters"]["properties"]) == parameters
    assert sorted(schema["parameters"].get("required", [])) == sorted(required)
    assert schema["description"] and all(
        prop.get("description") for prop in schema["parameters"]["properties"].values())


def test_a_cancelled_call_cuts_its_request_in_flight(openai_server, context, monkeypatch):
    import threading

    from srh_core.errors import ToolRunAbort

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(Reply.json(chat_completion(content="too late"), path=CHAT, delay=2.0))
    tool = BaseTool.create("call_llm", context, settings=settings_for(openai_server))
    cancel_when_asked = threading.Thread(
        target=lambda: (openai_server.wait_for_requests(1), tool.cancel()))
    cancel_when_asked.start()
    with pytest.raises(ToolRunAbort):
        tool(messages="hello")
    cancel_when_asked.join()
