"""SkillManager: discovery, reading, path confinement, search, overrides, bad folders."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from srh_core.skills import (
    BUILTIN_DIR,
    SkillError,
    SkillManager,
    SkillNotFoundError,
    default_skill_manager,
)
from srh_core.skills.frontmatter import FrontMatterError, split_front_matter

BUILTIN_SKILLS = {"discover-symbolic-laws", "sr-harness-engine-syntax",
                  "sr-harness-engine-graph-syntax"}


def write_skill(root: Path, folder: str, text: str, files: dict[str, str] | None = None) -> Path:
    directory = root / folder
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(text, encoding="utf-8")
    for name, content in (files or {}).items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return directory


def skill_text(name: str, description: str = "Fit pendulum laws.", body: str = "Body.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def test_builtin_skills_are_listed_and_readable() -> None:
    manager = default_skill_manager()
    assert {skill.name for skill in manager.list_skills()} == BUILTIN_SKILLS
    assert manager.problems == []
    for name in BUILTIN_SKILLS:
        text = manager.read(name)
        fields, body = split_front_matter(text)
        assert fields["name"] == name and len(fields["description"]) > 40
        assert len(text) < 6_000 and body.startswith("#")
    assert manager.get("discover-symbolic-laws").directory == \
        (BUILTIN_DIR / "discover-symbolic-laws").resolve()


def test_builtin_syntax_skill_examples_parse_with_the_engine() -> None:
    import srh_engine as engine

    text = default_skill_manager().read("sr-harness-engine-syntax")
    examples = text.split("## Examples", 1)[1].strip().splitlines()
    formulas = [line.split("#")[0].strip() for line in examples if line.strip()]
    assert len(formulas) == 5
    for formula in formulas:
        engine.parse_equation(formula)


def test_custom_skills_add_and_override(tmp_path: Path) -> None:
    write_skill(tmp_path, "pendulum-laws", skill_text("pendulum-laws"), {"notes/a.md": "# A"})
    write_skill(tmp_path, "sr-harness-engine-syntax",
                skill_text("sr-harness-engine-syntax", "Local syntax notes."))
    manager = SkillManager(custom_dir=tmp_path)
    skills = {skill.name: skill for skill in manager.list_skills()}
    assert set(skills) == BUILTIN_SKILLS | {"pendulum-laws"}
    override = skills["sr-harness-engine-syntax"]
    assert override.source == "custom" and override.overrides_builtin
    assert override.description == "Local syntax notes."
    assert manager.read("pendulum-laws", "notes/a.md") == "# A"
    assert manager.files("pendulum-laws") == ["SKILL.md", "notes/", "notes/a.md"]
    assert manager.tree("pendulum-laws") == "pendulum-laws/\n  SKILL.md\n  notes/\n    a.md"


def test_missing_custom_dir_is_not_an_error(tmp_path: Path) -> None:
    manager = SkillManager(custom_dir=tmp_path / "not-yet")
    assert {skill.name for skill in manager.list_skills()} == BUILTIN_SKILLS


MALFORMED = {
    "no_front_matter": ("no-front", "# Just markdown\n", "must start with a '---'"),
    "unclosed": ("unclosed", "---\nname: unclosed\n", "no closing"),
    "name_mismatch": ("folder-a", skill_text("folder-b"), "must equal the folder name"),
    "no_description": ("no-description", "---\nname: no-description\n---\nx", "'description'"),
    "bad_line": ("bad-line", "---\nname: bad-line\nthis is not yaml\n---\n", "line 3"),
    "bad_folder_name": ("Bad_Name", skill_text("Bad_Name"), "not a skill name"),
    "binary": ("binary", "---\nname: binary\x00\n---", "binary"),
}


@pytest.mark.parametrize(("folder", "text", "needle"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_skills_are_reported_not_fatal(tmp_path: Path, folder: str, text: str,
                                                 needle: str) -> None:
    write_skill(tmp_path, "good-skill", skill_text("good-skill"))
    write_skill(tmp_path, folder, text)
    manager = SkillManager(custom_dir=tmp_path)
    assert "good-skill" in {skill.name for skill in manager.list_skills()}
    (problem,) = manager.problems
    assert problem.path.endswith(folder) and needle in problem.message


def test_folder_without_skill_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "empty-skill").mkdir()
    (problem,) = SkillManager(custom_dir=tmp_path).problems
    assert "not an existing file" in problem.message


ESCAPES = {
    "dotdot": "../sr-harness-engine-syntax/SKILL.md",
    "absolute": "/etc/passwd",
    "home": "~/.bashrc",
    "backslash_dotdot": "..\\..\\etc\\passwd",
    "windows_drive": "C:/Windows/win.ini",
    "nul": "SKILL.md\x00.txt",
    "symlink_out": "link/passwd",
    "missing": "nothing-here.md",
    "directory": "notes",
}


@pytest.mark.parametrize("file_path", ESCAPES.values(), ids=ESCAPES.keys())
def test_file_paths_are_confined_to_the_skill(tmp_path: Path, file_path: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("secret")
    directory = write_skill(tmp_path / "custom", "pendulum-laws", skill_text("pendulum-laws"),
                            {"notes/a.md": "# A"})
    (directory / "link").symlink_to(outside, target_is_directory=True)
    manager = SkillManager(custom_dir=tmp_path / "custom")
    with pytest.raises(SkillError) as caught:
        manager.read("pendulum-laws", file_path)
    assert "secret" not in str(caught.value)


def test_unknown_skill_suggests_a_close_name() -> None:
    with pytest.raises(SkillNotFoundError, match="Did you mean 'discover-symbolic-laws'"):
        default_skill_manager().get("discover-symbolic-law")


def test_search_ranks_by_keywords(tmp_path: Path) -> None:
    write_skill(tmp_path, "pendulum-laws", skill_text("pendulum-laws", "Periods of pendulums."))
    manager = SkillManager(custom_dir=tmp_path)
    ranked = manager.search("which formula syntax does the engine accept")
    assert ranked[0][0].name == "sr-harness-engine-syntax"
    assert manager.search("pendulum period")[0][0].name == "pendulum-laws"
    assert manager.search("zzzz qqqq") == []


def test_enabled_list_filters_skills() -> None:
    manager = SkillManager(enabled=["sr-harness-engine-syntax"])
    assert [skill.name for skill in manager.list_skills()] == ["sr-harness-engine-syntax"]
    with pytest.raises(SkillNotFoundError):
        manager.get("discover-symbolic-laws")


def test_manager_round_trips_as_plain_data(tmp_path: Path) -> None:
    manager = SkillManager(custom_dir=tmp_path, enabled=["discover-symbolic-laws"])
    rebuilt = SkillManager.from_dict(manager.to_dict())
    assert rebuilt.to_dict() == manager.to_dict()
    assert pickle.loads(pickle.dumps(manager)).to_dict() == manager.to_dict()


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path, "big-skill", skill_text("big-skill"), {"big.txt": "x" * 300_000})
    with pytest.raises(SkillError, match="at most"):
        SkillManager(custom_dir=tmp_path).read("big-skill", "big.txt")


FRONT_MATTER = {
    "quoted": ('name: "a-b"\ndescription: \'Quoted: text\'', {"name": "a-b",
                                                             "description": "Quoted: text"}),
    "continued": ("description: first\n  second", {"description": "first second"}),
    "folded": ("description: >\n  one\n  two", {"description": "one two"}),
    "literal": ("notes: |\n  one\n  two", {"notes": "one\ntwo"}),
    "comment": ("# note\nname: x", {"name": "x"}),
}


@pytest.mark.parametrize(("lines", "fields"), FRONT_MATTER.values(), ids=FRONT_MATTER.keys())
def test_front_matter_subset(lines: str, fields: dict[str, str]) -> None:
    parsed, body = split_front_matter(f"---\n{lines}\n---\n\nBody\n")
    assert parsed == fields and body == "\nBody".strip("\n")


@pytest.mark.parametrize("text", ["", "name: x\n", "---\nname: x\nname: y\n---\n",
                                  "---\n: no key\n---\n"],
                         ids=["empty", "no_fence", "repeated_key", "empty_key"])
def test_front_matter_errors(text: str) -> None:
    with pytest.raises(FrontMatterError):
        split_front_matter(text)
