"""create_skill: the run's model (real openai client, scripted server) drafts a skill from the
conversation; the draft is checked before it is written; force, history_messages, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from srh_core.agent.settings import SearchSettings
from srh_core.context import AgentContext
from srh_core.skills import SkillManager
from srh_core.tools.base import BaseTool
from tests.support.openai_payloads import chat_completion
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"
CONVERSATION = [
    {"role": "system", "content": "You are an SR agent."},
    {"role": "user", "content": "Find y(x)."},
    {"role": "assistant", "content": "log-log slope of y against x is 2.0: a power law."},
    {"role": "tool", "content": "power_law_fit: y = 2.0*x**2, r2 = 1.0"},
]
SLOPE_TOOL = '''import numpy as np

TOOL_NAME = "log_slope"

def run(data, x: str, y: str) -> dict:
    """Slope of log(y) against log(x).

    Args:
        x: Input variable.
        y: Output variable.
    """
    return {"slope": float(np.polyfit(np.log(data[x]), np.log(data[y]), 1)[0])}
'''


def draft(kind: str = "data_analysis", name: str = "log-slope-check", tool_code: str = SLOPE_TOOL,
          **extra: Any) -> str:
    fields = {"kind": kind, "name": name, "description": "Check for a power law first.",
              "content": "# Log slope\nCompute the log-log slope before fitting.",
              "tool_code": tool_code, **extra}
    return "Here is the skill:\n" + json.dumps(fields)


@pytest.fixture
def context() -> AgentContext:
    x = np.linspace(1.0, 3.0, 30)
    return AgentContext(data={"x": x, "y": 2.0 * x**2}, target="y",
                        args={"validation_fraction": 0.2})


def create_skill(server: Any, context: Any, skills_dir: Path | None, **params: Any) -> Any:
    settings = SearchSettings.build(llm_provider="openai", llm_model="test-model",
                                    base_url=server.base_url)
    tool = BaseTool.create("create_skill", context, settings=settings,
                           skill_manager=SkillManager(custom_dir=skills_dir))
    tool.values["messages"] = CONVERSATION  # what Agent.set_messages gives every tool
    return tool(**params)


def test_a_data_analysis_skill_is_drafted_written_and_its_tool_runs(
        openai_server: Any, skills: Path, context: AgentContext,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(Reply.json(chat_completion(content=draft()), path=CHAT))
    result = create_skill(openai_server, context, skills,
                          request="Capture the log-log slope check as a tool.")
    openai_server.assert_script_consumed()
    assert result.ok, result.result_str
    assert result.result["kind"] == "data_analysis" and result.result["rounds"] == 1
    assert result.result["tool"]["tool_name"] == "log_slope"
    skill_md = (skills / "log-slope-check" / "SKILL.md").read_text()
    assert skill_md.startswith("---\nname: log-slope-check\ndescription: Check for a power")
    assert (skills / "log-slope-check" / "tool.py").read_text() == SLOPE_TOOL
    messages = openai_server.bodies()[0]["messages"]
    assert messages[0]["role"] == "system" and "formula_proposal" in messages[0]["content"]
    brief = messages[1]["content"]
    assert "[tool] power_law_fit: y = 2.0*x**2" in brief
    assert brief.endswith("Capture the log-log slope check as a tool.")
    slope = BaseTool.create("log_slope", context)(x="x", y="y")
    assert slope.ok and slope.result["output"]["slope"] == pytest.approx(2.0)
    listed = BaseTool.create("read_skill", None,
                             skill_manager=SkillManager(custom_dir=skills))(name="log-slope-check")
    assert listed.ok and "Compute the log-log slope" in listed.result["content"]


def test_a_refused_draft_goes_back_to_the_model_with_the_reason(
        openai_server: Any, skills: Path, context: AgentContext,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.script(
        Reply.json(chat_completion(content=draft(name="Log Slope")), path=CHAT),
        Reply.json(chat_completion(content=draft(tool_code="def run(data):\n    return 1\n")),
                   path=CHAT),
        Reply.json(chat_completion(content=draft(kind="instructions", tool_code="")), path=CHAT))
    result = create_skill(openai_server, context, skills, request="Keep the lesson.",
                          history_messages=1)
    openai_server.assert_script_consumed()
    assert result.ok and result.result["rounds"] == 3 and result.result["tool"] is None
    bodies = openai_server.bodies()
    assert "name 'Log Slope' is not a skill name" in bodies[1]["messages"][-1]["content"]
    assert "needs a docstring" in bodies[2]["messages"][-1]["content"]
    assert "[tool] power_law_fit" in bodies[0]["messages"][1]["content"]
    assert "Find y(x)." not in bodies[0]["messages"][1]["content"]  # history_messages=1
    assert sorted(p.name for p in (skills / "log-slope-check").iterdir()) == ["SKILL.md"]


def test_an_existing_skill_needs_force_and_force_replaces_it(
        openai_server: Any, skills: Path, context: AgentContext,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    folder = skills / "log-slope-check"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: log-slope-check\ndescription: old\n---\nold\n")
    (folder / "notes.md").write_text("kept")
    openai_server.script(Reply.json(chat_completion(content=draft()), path=CHAT),
                         Reply.json(chat_completion(content=draft()), path=CHAT))
    refused = create_skill(openai_server, context, skills, request="Capture it.")
    assert not refused.ok and "force=true" in refused.result_str
    replaced = create_skill(openai_server, context, skills, request="Capture it.", force=True)
    openai_server.assert_script_consumed()
    assert replaced.ok and replaced.result["replaced"] is True
    assert "Check for a power law" in (folder / "SKILL.md").read_text()
    assert (folder / "notes.md").read_text() == "kept"


def test_a_formula_proposal_kind_must_declare_a_formula_tool(
        openai_server: Any, skills: Path, context: AgentContext,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    proposer = ('TOOL_KIND = "formula"\n\ndef run(data, x: str) -> dict:\n    """Square law.\n\n'
                '    Args:\n        x: Input.\n    """\n'
                '    return {"formula": f"param(\\"a\\")*{x}**2", "fit": True}\n')
    openai_server.script(
        Reply.json(chat_completion(content=draft(kind="formula_proposal")), path=CHAT),
        Reply.json(chat_completion(content=draft(kind="formula_proposal", name="square-law",
                                                 tool_code=proposer)), path=CHAT))
    result = create_skill(openai_server, context, skills, request="A square-law proposer.")
    openai_server.assert_script_consumed()
    assert result.ok, result.result_str
    assert "TOOL_KIND = \\\"formula\\\"" in json.dumps(openai_server.bodies()[1]["messages"][-1])
    scored = BaseTool.create("square_law", context)(x="x")
    assert scored.ok and scored.result["is_candidate"] is True


def test_a_builtin_tool_name_in_the_draft_leaves_no_files(
        openai_server: Any, skills: Path, context: AgentContext,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    shadow = SLOPE_TOOL.replace('"log_slope"', '"evaluate_formula"')
    replies = [Reply.json(chat_completion(content=draft(tool_code=shadow)), path=CHAT)] * 3
    openai_server.script(*replies)
    result = create_skill(openai_server, context, skills, request="Capture it.")
    openai_server.assert_script_consumed()
    assert not result.ok and "built-in tool's name" in result.result_str
    assert not (skills / "log-slope-check").exists()
    assert BaseTool.get_class("evaluate_formula").__module__ == "srh_core.tools.evaluate"


@pytest.mark.parametrize(("skills_dir", "params", "provider", "needle"), [
    ("none", {"request": "x"}, "openai", "no custom skills folder"),
    ("dir", {"request": " "}, "openai", "request must say"),
    ("dir", {"request": "x", "history_messages": -1}, "openai", "history_messages must be"),
    ("dir", {"request": "x"}, "offline", "not a language model"),
    ("bundle", {"request": "x"}, "openai", "copy of the run's skills bundle"),
], ids=["no-skills-dir", "empty-request", "negative-history", "offline", "worker-copy"])
def test_refusals_send_no_request(openai_server: Any, tmp_path: Path, context: AgentContext,
                                  skills_dir: str, params: dict[str, Any], provider: str,
                                  needle: str) -> None:
    folders = {"none": None, "dir": tmp_path / "skills",
               "bundle": tmp_path / "srh-skills" / "0123456789abcdef"}
    folder = folders[skills_dir]
    if folder is not None:
        folder.mkdir(parents=True)
    settings = SearchSettings.build(llm_provider=provider, llm_model="test-model",
                                    base_url=openai_server.base_url) if provider == "openai" \
        else SearchSettings.build(llm_provider="offline")
    tool = BaseTool.create("create_skill", context, settings=settings,
                           skill_manager=SkillManager(custom_dir=folder))
    result = tool(**params)
    assert not result.ok and needle in result.result_str
    assert openai_server.requests == []


@pytest.mark.parametrize("max_workers", [0, 1], ids=["serial", "process-pool"])
def test_in_a_search_run_the_draft_sees_the_calling_branch_s_conversation(
        openai_server: Any, skills: Path, monkeypatch: pytest.MonkeyPatch,
        max_workers: int) -> None:
    from srh_core.agent import SRAgent
    from tests.support.openai_payloads import tool_call

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    skills_dir = skills  # the tool the draft registers is dropped afterwards
    request = "Capture the log-log slope check as a tool."
    openai_server.script(
        Reply.json(chat_completion(content="The log-log slope is 2.0; keep it.", tool_calls=[
            tool_call("create_skill", {"request": request}, "c1")]), path=CHAT),
        Reply.json(chat_completion(content=draft()), path=CHAT))  # the drafting request
    x = np.linspace(1.0, 3.0, 30)
    agent = SRAgent(llm_provider="openai", llm_model="test-model",
                    base_url=openai_server.base_url, tool_parser="openai",
                    tools=["evaluate_formula", "create_skill"], skills_dir=str(skills_dir),
                    max_refinement_depth=1, max_workers=max_workers, early_stop=False,
                    save_path=str(skills.parent / "run"))
    result = agent.run({"x": x}, {"y": 2.0 * x**2}, "Pendulum periods: marker-7f3e.")
    openai_server.assert_script_consumed()
    assert result["status"] == "completed", result["stop_reason"]
    step, drafting = openai_server.bodies()
    assert drafting["messages"][0]["content"].startswith("You write reusable skills")
    brief = drafting["messages"][1]["content"]
    for message in step["messages"]:  # the branch's messages before the call, in order
        assert f"[{message['role']}] {message['content'][:200]}" in brief
    assert "marker-7f3e" in brief and "(no conversation)" not in brief
    assert brief.endswith(request)
    assert (skills_dir / "log-slope-check" / "tool.py").read_text() == SLOPE_TOOL
    logged = (Path(agent.settings.save_path) / "tool_calls.jsonl").read_text()
    assert '"create_skill"' in logged and "marker-7f3e" not in logged  # not logged again


def test_the_carried_conversation_is_bounded() -> None:
    from srh_core.tools.skill_authoring import (
        MAX_HISTORY_CHARS,
        MAX_MESSAGE_CHARS,
        CreateSkillTool,
    )

    messages = [{"role": "user", "content": f"{i}:" + "x" * 10_000} for i in range(20)]
    kept = CreateSkillTool.call_conversation(messages)
    assert 0 < len(kept) < len(messages)
    assert sum(len(m["content"]) for m in kept) <= MAX_HISTORY_CHARS
    assert all(len(m["content"]) <= MAX_MESSAGE_CHARS + 6 for m in kept)
    assert kept[-1]["content"].startswith("19:")  # the newest are kept
    assert BaseTool.get_class("evaluate_formula").call_conversation(messages) is None
