"""A run with a skills folder offers its skills' tool.py tools to the model; a call runs in the
run's tool-worker processes (which register the tool from its file) and can give a candidate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from srh_core.agent import SearchSettings
from srh_core.agent.sragent import SRAgent
from srh_core.embedded.runner import run_search
from srh_core.errors import ConfigurationError
from srh_core.skills import SkillManager
from srh_core.tools.base import BaseTool
from srh_core.tools.custom_tools import (
    discover_custom_tools,
)
from tests.support.openai_payloads import chat_choice, chat_completion, tool_call
from tests.support.openai_server import FakeOpenAIServer, Reply

SQUARE_LAW = '''TOOL_KIND = "formula"

def run(data, variable: str) -> dict:
    """Propose target = a * variable**2 with a fitted.

    Args:
        variable: The input variable.
    """
    assert len(data[variable]) > 0
    return {"formula": f'param("a") * {variable}**2', "fit": True}
'''


@pytest.fixture
def skills(skills: Path) -> Path:
    """The shared skills folder (tests/core/tools/conftest.py) with the square-law skill."""
    folder = skills / "square-law"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: square-law\ndescription: Try a square law."
                                     "\n---\nCall square_law.\n")
    (folder / "tool.py").write_text(SQUARE_LAW)
    return skills


def test_a_runs_custom_tool_is_offered_and_runs_in_its_tool_workers(
        skills: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def respond(request: Any) -> Reply:
        call = tool_call("square_law", {"variable": "x1"}, "call_square")
        return Reply.json(chat_completion([chat_choice(None, tool_calls=[call])]))

    x1, x2 = np.random.default_rng(1).uniform(1, 4, (2, 60))
    with FakeOpenAIServer() as server:
        server.respond_with(respond)
        settings = SearchSettings.build(
            llm_provider="openai", llm_model="test-model", base_url=server.base_url,
            tool_parser="openai", skills_dir=str(skills), max_workers=1, global_width=1,
            max_refinement_depth=1, local_sample_size=1, early_stop=False)
        agent = SRAgent(settings)
        result = run_search(agent, {"x1": x1, "x2": x2}, {"y": 3.0 * x1**2}, "y of x1, x2")
        offered = [tool["function"]["name"] for tool in server.bodies()[0]["tools"]]
    assert "square_law" in offered and "evaluate_formula" in offered
    assert result.best is not None, result.stop_reason
    assert result.best.details["tool"] == "square_law"
    assert result.best.details["metrics"]["train"]["r2"] == pytest.approx(1.0)


def test_the_tools_setting_may_name_a_custom_tool_and_conflicts_stop_the_run(
        skills: Path) -> None:
    agent = SRAgent(SearchSettings.build(skills_dir=str(skills),
                                         tools=["evaluate_formula", "square_law"]))
    assert agent.enabled_tool_names() == ["evaluate_formula", "square_law"]
    twin = skills / "square-twin"
    twin.mkdir()
    (twin / "SKILL.md").write_text("---\nname: square-twin\ndescription: Twin.\n---\nTwin.\n")
    (twin / "tool.py").write_text(SQUARE_LAW.replace('TOOL_KIND', 'TOOL_NAME = "square_law"\n'
                                                                  'TOOL_KIND'))
    with pytest.raises(ConfigurationError, match="'square-law' and 'square-twin' both declare"):
        SRAgent(SearchSettings.build(skills_dir=str(skills))).enabled_tool_names()


def test_another_runs_folder_takes_the_name_and_earlier_instances_keep_their_file(
        skills: Path, tmp_path: Path) -> None:
    discover_custom_tools(SkillManager(custom_dir=skills))
    first = BaseTool.create("square_law", None)
    other = tmp_path / "other-run" / "square-law"
    other.mkdir(parents=True)
    (other / "SKILL.md").write_text((skills / "square-law" / "SKILL.md").read_text())
    (other / "tool.py").write_text(SQUARE_LAW.replace("a * variable**2", "a * variable**3"))
    discover_custom_tools(SkillManager(custom_dir=other.parent))
    assert "variable**3" in BaseTool.get_class("square_law").spec.description
    assert "variable**2" in type(first).spec.description


def test_srh_tool_call_runs_a_skills_tool(skills: Path, tmp_path: Path) -> None:
    x = np.linspace(1.0, 2.0, 30)
    rows = "\n".join(f"{a:.17g},{3.0 * a * a:.17g}" for a in x)
    (tmp_path / "d.csv").write_text(f"x1,y\n{rows}\n")
    command = [sys.executable, "-m", "srh_core", "tool", "call", "square_law", "--data", "d.csv",
               "--target", "y", "--skills-dir", str(skills), "--json",
               "--params", '{"variable": "x1"}']
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] and result["result"]["is_candidate"] is True
    (skills / "square-law" / "tool.py").write_text("TOOL_NAME = 'evaluate'\n" + SQUARE_LAW)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          check=False)
    assert done.returncode == 2 and "built-in tool's name" in done.stderr
    assert "Traceback" not in done.stderr
