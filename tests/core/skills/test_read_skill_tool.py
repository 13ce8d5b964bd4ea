"""read_skill: listing, searching, reading, errors, where the manager comes from."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import srh_core.tools.skills  # noqa: F401  (registers the tool)
from srh_core.skills import SkillManager
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCallResult


def run(context: Any = None, manager: SkillManager | None = None, **params: Any
        ) -> ToolCallResult:
    values = {"skill_manager": manager} if manager is not None else {}
    return BaseTool.create("read_skill", context, **values)(**params)


def custom_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "pendulum-laws"
    (folder / "data").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: pendulum-laws\ndescription: Pendulum periods."
                                     "\n---\n# Pendulums\nT = 2*pi*sqrt(L/g)\n")
    (folder / "data" / "table.csv").write_text("L,T\n1,2.006\n")
    broken = tmp_path / "broken-skill"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter")
    return tmp_path


def test_no_arguments_lists_skills_and_problems(tmp_path: Path) -> None:
    result = run(manager=SkillManager(custom_dir=custom_dir(tmp_path)))
    assert result.ok and result.result["action"] == "list"
    names = [skill["name"] for skill in result.result["skills"]]
    assert names == ["discover-symbolic-laws", "pendulum-laws", "sr-harness-engine-graph-syntax",
                     "sr-harness-engine-syntax"]
    assert "- pendulum-laws (custom): Pendulum periods." in result.result_str
    assert "Invalid skill folder" in result.result_str and "broken-skill" in result.result_str
    json.dumps(result.to_dict(), allow_nan=False)


def test_name_reads_skill_md_with_optional_tree(tmp_path: Path) -> None:
    manager = SkillManager(custom_dir=custom_dir(tmp_path))
    result = run(manager=manager, name="pendulum-laws", show_tree=True)
    assert result.ok
    assert result.result["content"].endswith("T = 2*pi*sqrt(L/g)\n")
    assert result.result["tree"] == "pendulum-laws/\n  SKILL.md\n  data/\n    table.csv"
    assert result.result_str.startswith("[skill pendulum-laws: SKILL.md]")


def test_file_path_reads_one_file(tmp_path: Path) -> None:
    result = run(manager=SkillManager(custom_dir=custom_dir(tmp_path)), name="pendulum-laws",
                 file_path="data/table.csv")
    assert result.ok and result.result["content"] == "L,T\n1,2.006\n"


def test_builtin_method_skill_is_read_whole() -> None:
    result = run(name="discover-symbolic-laws")
    assert result.ok and "submit_formula" in result.result_str
    assert "truncated" not in result.result_str


def test_query_ranks_skills() -> None:
    result = run(query="what syntax does the formula engine accept?")
    assert result.result["action"] == "search"
    assert result.result["matches"][0]["name"] == "sr-harness-engine-syntax"
    assert "No skill matches" in run(query="qqqq zzzz").result_str


@pytest.mark.parametrize(("params", "needle"), [
    ({"name": "discover-symbolic-law"}, "Did you mean 'discover-symbolic-laws'?"),
    ({"name": "../../etc"}, "No skill is named"),
    ({"name": "discover-symbolic-laws", "file_path": "../sr-harness-engine-syntax/SKILL.md"},
     "leaves the skill folder"),
    ({"name": "discover-symbolic-laws", "file_path": "/etc/passwd"}, "leaves the skill folder"),
    ({"name": "discover-symbolic-laws", "file_path": "missing.md"}, "not an existing file"),
    ({"name": "x" * 300}, "at most 200"),
    ({"query": "q" * 2000}, "at most 1000"),
    ({"show_tree": "sometimes"}, "show_tree"),
], ids=["did_you_mean", "name_escape", "dotdot", "absolute", "missing", "long_name",
        "long_query", "bad_flag"])
def test_bad_requests_are_ok_false_with_a_reason(params: dict[str, Any], needle: str) -> None:
    result = run(**params)
    assert not result.ok
    assert needle in result.result_str


def test_manager_comes_from_context_then_values_then_builtins(tmp_path: Path) -> None:
    custom = SkillManager(custom_dir=custom_dir(tmp_path))
    only_syntax = SkillManager(enabled=["sr-harness-engine-syntax"])
    from_context = run(SimpleNamespace(skill_manager=custom), manager=only_syntax)
    assert "pendulum-laws" in from_context.result_str
    from_values = run(SimpleNamespace(), manager=only_syntax)
    assert [s["name"] for s in from_values.result["skills"]] == ["sr-harness-engine-syntax"]
    assert len(run().result["skills"]) == 3
