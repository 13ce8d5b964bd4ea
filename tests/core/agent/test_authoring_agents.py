"""DataPreparationAgent and EvaluatorConstructionAgent driven by a scripted OpenAI-compatible
server through the real openai client: files written in the sandbox, validated, committed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from srh_core.agent import DataPreparationAgent, EvaluatorConstructionAgent
from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError
from srh_core.evaluator import DefaultEvaluator
from srh_core.interactive import InteractionManager
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"

WRITE_DATA = '''
import json, os
import numpy as np
rows = [line.split(",") for line in open("raw.csv").read().split()[1:]]
os.makedirs("context.data", exist_ok=True)
np.save("context.data/v.npy", np.array([float(r[0]) for r in rows]))
np.save("context.data/p.npy", np.array([float(r[1]) for r in rows]))
manifest = {"target": "p", "variables": {
    "v": {"file": "v.npy", "description": "volume in m^3", "axes": ["sample"]},
    "p": {"file": "p.npy", "description": "pressure in Pa", "axes": ["sample"]}},
    "axes": {"sample": {"size": len(rows), "description": "measurement"}}}
json.dump(manifest, open("context.data/manifest.json", "w"))
print("wrote", len(rows), "rows")
'''

WRITE_EVALUATOR = '''
import os
os.makedirs("context.evaluator", exist_ok=True)
open("context.evaluator/relative.py", "w").write(SOURCE)
print("written")
'''
EVALUATOR_SOURCE = '''
import numpy as np
from srh_core.evaluator import DefaultEvaluator


class RelativeErrorEvaluator(DefaultEvaluator):
    @classmethod
    def evaluate(cls, f, y, context):
        metrics = super().evaluate(f, y, context)
        metrics["max_relative_error"] = {value}
        return metrics
'''


def reply(content: str | None = None, calls=()) -> Reply:
    return Reply.json(chat_completion(content=content, tool_calls=list(calls)), path=CHAT)


def program_call(program: str, call_id: str) -> dict:
    return tool_call("workspace_code_executor", {"program": program}, call_id)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    v = np.linspace(1.0, 2.0, 24)
    lines = ["v,p"] + [f"{a:.17g},{b:.17g}" for a, b in zip(v, 8.314 * 300 / v, strict=True)]
    (folder / "raw.csv").write_text("\n".join(lines))
    return folder


def agent_options(server) -> dict:
    return {"llm_provider": "openai", "llm_model": "test-model", "base_url": server.base_url}


def test_data_preparation_writes_validates_and_commits(openai_server, workspace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(
        reply(None, [program_call(WRITE_DATA, "c1")]),
        reply(None, [tool_call("validate_context_data", {}, "c2")]),
        reply("context.data holds v and p (24 rows); p is the target."),
    )
    context = AgentContext(workspace=str(workspace))
    manager = InteractionManager()
    agent = DataPreparationAgent(**agent_options(openai_server), context=context,
                                 interaction_manager=manager)
    result = agent.run("Turn raw.csv into context.data; predict p from v.")
    openai_server.assert_script_consumed()
    assert result["stopped"] == "done" and result["steps"] == 3
    assert [event["ok"] for event in result["tool_events"]] == [True, True], result
    assert "valid; it can be committed" in result["tool_events"][1]["result_str"]
    assert result["committed"] and result["validation"]["ok"]
    assert context.target == "p" and context.feature_names() == ("v",)
    assert context.variable_descriptions["v"] == "volume in m^3"
    np.testing.assert_allclose(context.data["p"] * context.data["v"], 8.314 * 300)
    first = openai_server.bodies()[0]
    assert first["messages"][0]["role"] == "system" and "context.data" in \
        first["messages"][0]["content"]
    assert {tool["function"]["name"] for tool in first["tools"]} >= {
        "workspace_code_executor", "validate_context_data", "read_pdf", "web_fetch"}
    kinds = [event["kind"] for event in manager.get_recent_events()["events"]]
    assert kinds[0] == "prompt_added" and "workspace_changed" in kinds
    assert kinds[-1] == "execution_completed"


def test_invalid_data_is_reported_and_not_committed(openai_server, workspace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    broken = WRITE_DATA.replace('"file": "p.npy"', '"file": "missing.npy"')
    openai_server.script(reply(None, [program_call(broken, "c1")]), reply("Done."))
    context = AgentContext(workspace=str(workspace))
    result = DataPreparationAgent(**agent_options(openai_server), context=context).run(
        "Prepare the data.")
    openai_server.assert_script_consumed()
    assert not result["committed"] and not result["validation"]["ok"]
    assert any("missing.npy" in e["message"] or "missing.npy" in e["location"]
               for e in result["validation"]["errors"])
    assert context.revision == 0 and context.target is None


def evaluator_program(value: str) -> str:
    source = EVALUATOR_SOURCE.replace("{value}", value)
    return f"SOURCE = {source!r}\n{WRITE_EVALUATOR}"


def test_evaluator_construction_must_prove_its_file(openai_server, workspace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    validate = tool_call("validate_evaluator", {
        "f": 'param("a")/v', "fit": True,
        "evaluator_file": "context.evaluator/relative.py"}, "c3")
    fixed = 'float(np.sqrt(metrics["mse"]))'
    openai_server.script(
        reply(None, [tool_call("read_source", {"symbol": "DefaultEvaluator.evaluate"}, "c1")]),
        reply(None, [program_call(evaluator_program('float("nan")'), "c2")]),
        reply("The evaluator is ready."),                     # blocked: never validated
        reply(None, [validate]),                              # not valid: the metric is nan
        reply(None, [program_call(evaluator_program(fixed), "c4")]),
        reply(None, [validate]),                              # valid
        reply("relative.py adds max_relative_error; it validates."),
    )
    v = np.linspace(1.0, 2.0, 24)
    context = AgentContext(data={"v": v, "p": 2494.2 / v}, target="p",
                           workspace=str(workspace))
    agent = EvaluatorConstructionAgent(**agent_options(openai_server), context=context)
    result = agent.run("Add the largest relative error as a metric.")
    openai_server.assert_script_consumed()
    assert result["stopped"] == "done" and result["valid"], result
    assert result["evaluator_file"] == "context.evaluator/relative.py" and not result["unproved"]
    proved = result["tool_events"][-1]
    assert proved["name"] == "validate_evaluator" and proved["ok"]
    assert "(RelativeErrorEvaluator): valid" in proved["result_str"]
    assert "train custom metrics: max_relative_error=" in proved["result_str"]
    third = json.dumps(openai_server.bodies()[3]["messages"])
    assert "You cannot finish yet" in third
    fifth = json.dumps(openai_server.bodies()[4]["messages"])
    assert "max_relative_error" in fifth and "not a finite number" in fifth
    assert type(context.evaluator) is DefaultEvaluator  # the live context is untouched


def test_the_offline_provider_and_a_missing_workspace_are_refused(workspace):
    with pytest.raises(ConfigurationError, match="needs a language model"):
        DataPreparationAgent("offline", context=AgentContext(workspace=str(workspace)))
    with pytest.raises(ConfigurationError, match="workspace"):
        EvaluatorConstructionAgent(llm_provider="openai", llm_model="m",
                                   context=AgentContext(data={"x": [1.0, 2.0]}))


def test_queued_settings_apply_at_the_next_response(openai_server, workspace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(reply("First answer."), reply("Second answer."))
    manager = InteractionManager()
    agent = DataPreparationAgent(**agent_options(openai_server),
                                 context=AgentContext(workspace=str(workspace)),
                                 interaction_manager=manager)
    agent.run("Look at raw.csv.")
    agent.queue_runtime_settings({"llm_model": "other-model", "llm_max_tokens": 300})
    with pytest.raises(ConfigurationError, match="cannot change"):
        agent.queue_runtime_settings({"tools": ["web_fetch"]})
    with pytest.raises(ConfigurationError):
        agent.queue_runtime_settings({"llm_max_tokens": 1})
    with pytest.raises(ConfigurationError, match="offline"):
        agent.queue_runtime_settings({"llm_provider": "offline"})
    agent.run("And now?")
    openai_server.assert_script_consumed()
    first, second = openai_server.bodies()
    assert first["model"] == "test-model" and second["model"] == "other-model"
    assert second.get("max_tokens", second.get("max_completion_tokens")) == 300
    assert [m["content"] for m in second["messages"] if m["role"] == "user"] == [
        "Look at raw.csv.", "And now?"]  # the conversation persists across calls
    applied = [e for e in manager.get_recent_events()["events"]
               if e["kind"] == "settings_applied"]
    assert len(applied) == 1 and applied[0]["payload"]["settings"]["llm_model"] == "other-model"


def test_ready_tool_instances_are_bound_to_the_agents_context(workspace):
    from srh_core.tools.base import BaseTool

    reader = BaseTool.create("read_source")
    context = AgentContext(data={"x": [1.0, 2.0, 3.0], "y": [2.0, 4.0, 6.0]}, target="y",
                           workspace=str(workspace))
    agent = EvaluatorConstructionAgent(llm_provider="openai", llm_model="m", context=context,
                                       tools=[reader, "validate_evaluator"])
    assert agent.tools["read_source"] is reader and reader.context is context
    assert set(agent.tools) == {"read_source", "validate_evaluator"}
    assert '"target": "y"' in agent.buffer[0]["content"]  # the data's schema is in the prompt


def test_an_unreadable_call_is_fed_back_and_the_turn_goes_on(openai_server, workspace,
                                                              monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(
        reply(None, [tool_call("workspace_shell", '{"command": "ls"', "c1")]),  # cut JSON
        reply("I could not prepare anything yet."))
    agent = DataPreparationAgent(**agent_options(openai_server),
                                 context=AgentContext(workspace=str(workspace)))
    result = agent.run("Prepare the data.")
    openai_server.assert_script_consumed()
    assert result["steps"] == 2 and result["stopped"] == "done"
    assert not result["committed"] and result["validation"] is None
    second = json.dumps(openai_server.bodies()[1]["messages"])
    assert "workspace_shell" in second and ("not run" in second or "could not" in second)
