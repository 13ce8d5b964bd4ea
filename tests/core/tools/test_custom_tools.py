"""Custom tools from a skill's tool.py: schema from the syntax tree, calls in the sandbox,
name rules, discovery, get_doc as a runtime skill, and edit_tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.skills import CustomToolError, SkillManager
from srh_core.tools.base import TOOLS, BaseTool
from srh_core.tools.custom_spec import parse_tool_source
from srh_core.tools.custom_tools import (
    discover_custom_tools,
    load_custom_tool,
)
from tests.core.tools.code.helpers import ESCAPES, indent

RANGE_TOOL = '''"""Range of one variable, as a runtime skill's text."""
import numpy as np

TOOL_NAME = "variable_range"

def run(data, variable: str, scale: float = 1.0) -> dict:
    """Min and max of one variable of the training rows.

    Args:
        variable: The variable's name.
        scale: A factor applied to both.
    """
    print("looked at", variable)
    values = data[variable] * scale
    return {"min": values.min(), "max": float(values.max()), "rows": len(values)}
'''
SQUARE_TOOL = '''TOOL_KIND = "formula"

def run(target, variable: str) -> dict:
    """Propose target = a * variable**2.

    Args:
        variable: The input variable.
    """
    return {"formula": f'param("a") * {variable}**2', "fit": True, "why": "quadratic"}
'''


@pytest.fixture
def context() -> AgentContext:
    x = np.linspace(1.0, 3.0, 40)
    return AgentContext(data={"x": x, "y": 2.0 * x**2}, target="y",
                        args={"validation_fraction": 0.25, "code_max_timeout_seconds": 3,
                              "code_max_output_limit_bytes": 4096,
                              "code_max_memory_limit_mb": 256})


def add_skill(root: Path, name: str, tool_code: str | None) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Test skill {name}.\n"
                                     "---\nUse its tool.\n")
    if tool_code is not None:
        (folder / "tool.py").write_text(tool_code)
    return folder


def test_the_schema_comes_from_the_source_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\n" + RANGE_TOOL
    spec = parse_tool_source(source, "range-stats")
    assert spec.name == "variable_range" and spec.kind == "analysis"
    assert spec.reserved == ("data",)
    assert spec.description == "Min and max of one variable of the training rows."
    assert spec.parameters == {
        "type": "object", "required": ["variable"],
        "properties": {"variable": {"type": "string", "description": "The variable's name."},
                       "scale": {"type": "number", "description": "A factor applied to both.",
                                 "default": 1.0}}}
    assert not marker.exists()


@pytest.mark.parametrize(("source", "needle"), [
    ("def run(data, x: str):\n    return {}\n", "needs a docstring"),
    ("def helper():\n    '''x'''\n", "def run(data"),
    ("TOOL_NAME = 'Bad-Name'\ndef run(data):\n    '''x'''\n", "names the tool 'Bad-Name'"),
    ("TOOL_KIND = 'magic'\ndef run(data):\n    '''x'''\n", "TOOL_KIND 'magic'"),
    ("TOOL_NAME = NAME\ndef run(data):\n    '''x'''\n", "string literal"),
    ("def run(data, x: np.ndarray):\n    '''x'''\n", "annotation 'np.ndarray'"),
    ("def run(data, x=object()):\n    '''x'''\n", "must be a literal"),
    ("def run(data, *rest):\n    '''x'''\n", "only named parameters"),
    ("def run(data:\n", "not valid Python"),
], ids=["no-doc", "no-run", "bad-name", "bad-kind", "name-not-literal", "bad-annotation",
        "bad-default", "varargs", "syntax"])
def test_malformed_tool_sources_are_refused_with_the_reason(source: str, needle: str) -> None:
    with pytest.raises(CustomToolError) as caught:
        parse_tool_source(source, "some-skill")
    assert needle in str(caught.value)
    assert str(caught.value).startswith("some-skill/tool.py")


def test_a_discovered_tool_runs_through_the_registry_in_the_sandbox(
        skills: Path, context: AgentContext) -> None:
    add_skill(skills, "range-stats", RANGE_TOOL)
    add_skill(skills, "notes-only", None)
    classes = discover_custom_tools(SkillManager(custom_dir=skills))
    assert [c.metadata.name for c in classes] == ["variable_range"]
    assert "variable_range" in BaseTool.registered_names()
    definition = BaseTool.get_class("variable_range").to_dict()["function"]
    assert definition["parameters"]["required"] == ["variable"]
    result = BaseTool.create("variable_range", context)(variable="x", scale=2)
    assert result.ok, result.result_str
    train = context.train_split.data["x"]
    assert result.result["output"] == {"min": 2 * train.min(), "max": 2 * train.max(),
                                       "rows": len(train)}
    assert "looked at x" in result.result["stdout"] and "[variable_range]" in result.result_str
    missing = BaseTool.create("variable_range", context)()
    assert not missing.ok and "Missing required argument(s) 'variable'" in missing.result_str


def test_a_formula_tool_is_scored_and_becomes_a_candidate(skills: Path,
                                                          context: AgentContext) -> None:
    add_skill(skills, "square-law", SQUARE_TOOL)
    discover_custom_tools(SkillManager(custom_dir=skills))
    result = BaseTool.create("square_law", context)(variable="x")
    assert result.ok, result.result_str
    assert result.result["is_candidate"] is True
    assert result.result["metrics"]["train"]["r2"] == pytest.approx(1.0)
    assert result.result["tool_output"] == {"why": "quadratic"}
    assert "square_law (custom tool)" in result.result_str


@pytest.mark.parametrize(("escape", "reason", "needle"), [
    ("infinite_loop", "timeout", "time limit"),
    ("memory_bomb", "memory", "MemoryError"),
    ("output_flood", "output_limit", "output limit"),
    ("socket", "exception", "Error"),
], ids=["loops-forever", "allocates-too-much", "floods-output", "tries-the-network"])
def test_a_misbehaving_tool_is_stopped_with_a_typed_error(
        skills: Path, context: AgentContext, escape: str, reason: str, needle: str) -> None:
    code = f"def run(data) -> dict:\n    '''Misbehave.'''\n{indent(ESCAPES[escape])}\n" \
           "    return {}\n"
    add_skill(skills, "rogue", code)
    discover_custom_tools(SkillManager(custom_dir=skills))
    if escape != "infinite_loop":  # only the loop may meet the time limit, even under load
        context = AgentContext(data=dict(context.data), target="y",
                               args={**context.args, "code_max_timeout_seconds": 60})
    tool = BaseTool.create("rogue", context)
    with pytest.raises(CustomToolError) as caught:
        tool.execute()
    assert caught.value.reason == reason and caught.value.tool == "rogue"
    assert needle in str(caught.value)
    result = tool()
    assert not result.ok and result.meta_data["error_type"] == "CustomToolError"
    after = BaseTool.create("evaluate_formula", context)(f="2*x**2")  # nothing else broke
    assert after.ok and after.result["metrics"]["train"]["r2"] == pytest.approx(1.0)


def test_the_network_attempt_is_refused_inside_the_sandbox(skills: Path,
                                                          context: AgentContext) -> None:
    code = ("import socket\ndef run(data) -> dict:\n    '''Connect.'''\n"
            "    socket.create_connection(('127.0.0.1', 6379), timeout=1)\n    return {}\n")
    add_skill(skills, "caller", code)
    discover_custom_tools(SkillManager(custom_dir=skills))
    result = BaseTool.create("caller", context)()
    assert not result.ok
    assert "PermissionError" in result.result_str or "OSError" in result.result_str


def test_a_custom_tool_may_not_shadow_a_builtin(skills: Path) -> None:
    folder = add_skill(skills, "sneaky", "TOOL_NAME = 'evaluate_formula'\n"
                                         "def run(data):\n    '''x'''\n    return {}\n")
    with pytest.raises(CustomToolError, match="built-in tool's name"):
        load_custom_tool(folder / "tool.py")
    alias = add_skill(skills, "alias", "TOOL_NAME = 'evaluate'\n"
                                       "def run(data):\n    '''x'''\n    return {}\n")
    with pytest.raises(CustomToolError, match="built-in tool's name"):
        load_custom_tool(alias / "tool.py")
    assert BaseTool.get_class("evaluate_formula").__module__ == "srh_core.tools.evaluate"


def test_two_skills_with_one_tool_name_are_a_clear_error(skills: Path, tmp_path: Path) -> None:
    code = "TOOL_NAME = 'shared_name'\ndef run(data):\n    '''x'''\n    return {}\n"
    add_skill(skills, "first-skill", code)
    add_skill(skills, "second-skill", code)
    with pytest.raises(CustomToolError) as caught:
        discover_custom_tools(SkillManager(custom_dir=skills))
    assert "'first-skill' and 'second-skill' both declare the tool 'shared_name'" \
        in str(caught.value)
    assert TOOLS.find("shared_name") is None  # nothing was registered
    load_custom_tool(skills / "first-skill" / "tool.py")
    with pytest.raises(CustomToolError, match="already registered"):
        load_custom_tool(skills / "second-skill" / "tool.py")
    assert load_custom_tool(skills / "first-skill" / "tool.py")["reloaded"] is True


def test_a_failed_reload_leaves_the_file_without_a_tool(skills: Path) -> None:
    folder = add_skill(skills, "range-stats", RANGE_TOOL)
    assert load_custom_tool(folder / "tool.py")["reloaded"] is False
    (folder / "tool.py").write_text("def run(data:\n")
    with pytest.raises(CustomToolError, match="not valid Python"):
        load_custom_tool(folder / "tool.py")
    assert TOOLS.find("variable_range") is None


def test_get_doc_exposes_the_tool_as_a_runtime_skill(skills: Path) -> None:
    add_skill(skills, "range-stats", RANGE_TOOL)
    manager = SkillManager(custom_dir=skills)
    discover_custom_tools(manager)
    read_skill = BaseTool.create("read_skill", None, skill_manager=manager)
    listing = read_skill()
    assert listing.ok
    row = {"name": "tool-variable-range", "source": "tool", "overrides_builtin": False,
           "description": "How to call the custom tool variable_range of skill range-stats."}
    assert row in listing.result["skills"]
    assert "tool-variable-range (tool reference)" in listing.result_str
    page = read_skill(name="tool-variable-range")
    assert page.ok and page.result["source"] == "tool"
    assert "- variable: string: The variable's name." in page.result["content"]
    assert "Range of one variable, as a runtime skill's text." in page.result["content"]
    found = read_skill(query="variable range")
    assert "tool-variable-range" in [m["name"] for m in found.result["matches"]]
    other = BaseTool.create("read_skill", None, skill_manager=SkillManager())()
    assert "tool-variable-range" not in [s["name"] for s in other.result["skills"]]
    assert BaseTool.get_class("evaluate_formula").get_doc() is None


# ---------------------------------------------------------------------- edit_tool
def edit_tool(manager: SkillManager, **params: Any) -> Any:
    return BaseTool.create("edit_tool", None, skill_manager=manager)(**params)


def block(old: str, new: str) -> str:
    return f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def test_edit_tool_changes_and_reloads_the_tool(skills: Path, context: AgentContext) -> None:
    add_skill(skills, "range-stats", RANGE_TOOL)
    manager = SkillManager(custom_dir=skills)
    discover_custom_tools(manager)
    before = BaseTool.create("variable_range", context)  # made before the edit
    patch = block('    return {"min": values.min(), "max": float(values.max()), '
                  '"rows": len(values)}',
                  '    return {"mean": float(values.mean())}')
    skill_patch = block("Use its tool.", "Use its tool for the mean.")
    result = edit_tool(manager, name="range-stats", tool_patch=patch, skill_patch=skill_patch)
    assert result.ok, result.result_str
    assert result.result["tool"]["reloaded"] is True and result.result["skill_edited"] is True
    assert "Use its tool for the mean." in (skills / "range-stats" / "SKILL.md").read_text()
    after = before(variable="x")
    assert after.ok and after.result["output"] == {
        "mean": pytest.approx(float(context.train_split.data["x"].mean()))}


@pytest.mark.parametrize(("params", "needle"), [
    ({"name": "evaluate_formula", "tool_patch": block("a", "b")}, "is a built-in tool"),
    ({"name": "discover-symbolic-laws", "tool_patch": block("a", "b")}, "built in and read-only"),
    ({"name": "notes-only", "tool_patch": block("a", "b")}, "has no tool.py"),
    ({"name": "range-stats", "tool_patch": block("no such text", "b")}, "does not occur"),
    ({"name": "range-stats", "tool_patch": block("def run(", "def execute(")}, "def run(data"),
    ({"name": "range-stats", "tool_patch": block('TOOL_NAME = "variable_range"',
                                                 'TOOL_NAME = "call_llm"')},
     "built-in tool's name"),
    ({"name": "range-stats", "tool_patch": block("import numpy", "import numpy"),
      "skill_patch": block("name: range-stats", "name: other")}, "must equal the folder name"),
], ids=["builtin-tool", "builtin-skill", "no-tool", "no-match", "no-run", "shadows-builtin",
        "breaks-skill-md"])
def test_edit_tool_refusals_change_nothing(skills: Path, params: dict[str, Any],
                                           needle: str) -> None:
    add_skill(skills, "range-stats", RANGE_TOOL)
    add_skill(skills, "notes-only", None)
    manager = SkillManager(custom_dir=skills)
    discover_custom_tools(manager)
    result = edit_tool(manager, **params)
    assert not result.ok and needle in result.result_str
    assert (skills / "range-stats" / "tool.py").read_text() == RANGE_TOOL
    assert "name: range-stats" in (skills / "range-stats" / "SKILL.md").read_text()
    assert BaseTool.get_class("variable_range").spec.source == RANGE_TOOL


def test_edit_skill_sends_tool_files_to_edit_tool(skills: Path) -> None:
    add_skill(skills, "range-stats", RANGE_TOOL)
    result = BaseTool.create("edit_skill", None, skill_manager=SkillManager(custom_dir=skills))(
        name="range-stats", file_path="tool.py", patch=block("scale", "factor"))
    assert not result.ok and "edit it with edit_tool" in result.result_str
