"""edit_skill: exact SEARCH/REPLACE blocks on custom skills; built-in and shipped ones refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import srh_core.tools.skills  # noqa: F401  (registers the tools)
from srh_core.skills import BUILTIN_DIR, SkillError, SkillManager
from srh_core.skills.bundle import pack_skills, unpack_skills
from srh_core.skills.patch import apply_patch
from srh_core.tools.base import BaseTool

SKILL = ("---\nname: pendulum-laws\ndescription: Pendulum periods.\n---\n# Pendulums\n"
         "T = 2*pi*sqrt(L/g)\nCheck small angles first.\n")


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def skills(tmp_path: Path) -> Path:
    folder = tmp_path / "skills" / "pendulum-laws"
    (folder / "notes").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL)
    (folder / "notes" / "a.md").write_text("one\ntwo\none\n")
    return tmp_path / "skills"


def edit(manager: SkillManager, **params: Any):
    return BaseTool.create("edit_skill", None, skill_manager=manager)(**params)


@pytest.mark.parametrize(("text", "patch", "expected"), [
    ("a\nb\nc\n", block("b", "B"), "a\nB\nc\n"),
    ("a\nb\nc\n", block("b", ""), "a\n\nc\n"),                        # replaced by nothing
    ("a\nb\nc\n", block("a\nb", "x") + "prose between\n" + block("c", "z"), "x\nz\n"),
    ("a\nb\n", block("a", "b") + block("b\nb", "c"), "c\n"),           # in order, on the result
    ("x = 1  # keep\n", block("x = 1  # keep", "x = 2  # keep"), "x = 2  # keep\n"),
])
def test_blocks_apply_in_order(text: str, patch: str, expected: str) -> None:
    assert apply_patch(text, patch, "f") == (expected, patch.count("SEARCH"))


@pytest.mark.parametrize(("patch", "message"), [
    ("", "empty"),
    ("just words", "no '<<<<<<< SEARCH'"),
    (block("zzz", "y"), "does not occur"),
    (block("one", "y"), "occurs 2 times"),
    (block("  ", "y"), "empty SEARCH"),
    ("<<<<<<< SEARCH\none\n=======\nno end marker\n", "outside a complete block"),
    (block("two", "2") + block("two", "3"), "after the blocks before it"),
])
def test_a_patch_that_does_not_apply_changes_nothing(patch: str, message: str) -> None:
    with pytest.raises(SkillError, match=message):
        apply_patch("one\ntwo\none\n", patch, "notes/a.md")


def test_a_custom_skill_is_edited_atomically_and_stays_valid(tmp_path: Path) -> None:
    manager = SkillManager(custom_dir=skills(tmp_path))
    result = edit(manager, name="pendulum-laws",
                  patch=block("Check small angles first.",
                              "Check small angles first (below 10 degrees)."))
    assert result.ok, result.result_str
    assert result.result["blocks"] == 1 and result.result["file_path"] == "SKILL.md"
    assert "(below 10 degrees)" in manager.read("pendulum-laws")
    other = edit(manager, name="pendulum-laws", file_path="notes/a.md",
                 patch=block("two", "2"))
    assert other.ok and manager.read("pendulum-laws", "notes/a.md") == "one\n2\none\n"
    before = manager.read("pendulum-laws")
    renamed = edit(manager, name="pendulum-laws", patch=block("name: pendulum-laws",
                                                              "name: other"))
    assert not renamed.ok and "must equal the folder name" in renamed.result_str
    missing = edit(manager, name="pendulum-laws", patch=block("nowhere", "x"))
    assert not missing.ok and "Nothing was changed" in missing.result_str
    assert manager.read("pendulum-laws") == before
    escape = edit(manager, name="pendulum-laws", file_path="../../x.md", patch=block("a", "b"))
    assert not escape.ok and "leaves the skill folder" in escape.result_str


def test_built_in_and_shipped_skills_are_read_only(tmp_path: Path) -> None:
    builtin = SkillManager()
    name = "sr-harness-engine-syntax"
    text = (BUILTIN_DIR / name / "SKILL.md").read_text()
    result = edit(builtin, name=name, patch=block(text.splitlines()[1], "name: x"))
    assert not result.ok and "built in and read-only" in result.result_str
    assert (BUILTIN_DIR / name / "SKILL.md").read_text() == text
    shipped = unpack_skills(pack_skills(skills(tmp_path)), tmp_path / "worker")
    copy = SkillManager(custom_dir=shipped)
    refused = edit(copy, name="pendulum-laws", patch=block("Check", "check"))
    assert not refused.ok and "copy of the run's skills bundle" in refused.result_str
    unknown = edit(builtin, name="no-such-skill", patch=block("a", "b"))
    assert not unknown.ok and "No skill is named" in unknown.result_str
