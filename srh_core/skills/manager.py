"""SkillManager: discover, list, read and search skills (folders with a ``SKILL.md``).

A skill is a folder whose name is the skill's name (``[a-z0-9]+(-[a-z0-9]+)*``)
holding ``SKILL.md`` (front matter with ``name:`` equal to the folder name
and a non-empty ``description:``, then Markdown) and optional further files.
Built-in skills ship in ``srh_core/skills/builtin``; a custom directory adds
skills and overrides built-ins of the same name. Folders that break these
rules are reported in :attr:`SkillManager.problems`, never fatal.

The manager keeps only plain data (two directories and an optional allow
list), so a tool worker rebuilds it with :meth:`SkillManager.from_dict`;
folders are scanned again at every call, so skills written during a run
appear at once. File paths are confined to their skill folder: absolute
paths, ``..`` and symlinks leading outside are refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from srh_core.errors import ConfigurationError, did_you_mean
from srh_core.jsonio import atomic_write_text
from srh_core.skills.bundle import UNPACKED_DIR
from srh_core.skills.errors import SkillError, SkillNotFoundError
from srh_core.skills.frontmatter import FrontMatterError, split_front_matter
from srh_core.skills.patch import apply_patch

BUILTIN_DIR = Path(__file__).with_name("builtin")
SKILL_FILE = "SKILL.md"
SKILL_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_DESCRIPTION_CHARS = 1_024
MAX_FILE_BYTES = 256 * 1024
MAX_TREE_ENTRIES = 200
MAX_PATH_CHARS = 512
DEFAULT_SEARCH_LIMIT = 5
NAME_WEIGHT, DESCRIPTION_WEIGHT, BODY_WEIGHT = 3.0, 1.0, 0.25
SKIPPED_ENTRIES = frozenset({"__pycache__", ".DS_Store"})
TOKEN = re.compile(r"[a-z0-9]+")

Source = Literal["builtin", "custom"]


@dataclass(frozen=True, slots=True)
class Skill:
    """One discovered skill.

    Attributes:
        name: Skill name (= folder name).
        description: When to use it (from the front matter).
        directory: The skill folder, resolved.
        source: "builtin" or "custom".
        overrides_builtin: A custom skill that replaces a built-in of the same name.
    """

    name: str
    description: str
    directory: Path
    source: Source
    overrides_builtin: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Name, description and source as plain data."""
        return {"name": self.name, "description": self.description, "source": self.source,
                "overrides_builtin": self.overrides_builtin}


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """A folder that is not a valid skill, and why."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """``{"path", "message"}``."""
        return {"path": self.path, "message": self.message}


class SkillManager:
    """Registry of built-in and custom skills.

    Args:
        builtin_dir: Folder of built-in skills; default: the package's ``builtin``.
        custom_dir: Folder of custom skills (may not exist yet); None for none.
        enabled: Skill names offered; None offers all.
    """

    def __init__(self, builtin_dir: str | Path | None = None,
                 custom_dir: str | Path | None = None,
                 enabled: Iterable[str] | None = None) -> None:
        self.builtin_dir = Path(builtin_dir) if builtin_dir is not None else BUILTIN_DIR
        self.custom_dir = Path(custom_dir) if custom_dir is not None else None
        self.enabled = None if enabled is None else tuple(enabled)

    # ------------------------------------------------------------- plain data
    def to_dict(self) -> dict[str, Any]:
        """The manager as plain JSON data (see :meth:`from_dict`)."""
        return {"builtin_dir": str(self.builtin_dir),
                "custom_dir": None if self.custom_dir is None else str(self.custom_dir),
                "enabled": None if self.enabled is None else list(self.enabled)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SkillManager:
        """Rebuild a manager from :meth:`to_dict` output."""
        return cls(data.get("builtin_dir"), data.get("custom_dir"), data.get("enabled"))

    def __repr__(self) -> str:
        return (f"SkillManager(builtin_dir={str(self.builtin_dir)!r}, "
                f"custom_dir={None if self.custom_dir is None else str(self.custom_dir)!r})")

    # -------------------------------------------------------------- discovery
    def discover(self) -> tuple[dict[str, Skill], list[SkillProblem]]:
        """Scan both folders: valid skills by name (custom over built-in) and problems."""
        skills: dict[str, Skill] = {}
        problems: list[SkillProblem] = []
        for source, root in (("builtin", self.builtin_dir), ("custom", self.custom_dir)):
            if root is None or not root.is_dir():
                continue
            for folder in sorted(p for p in root.iterdir() if p.is_dir()):
                if folder.name in SKIPPED_ENTRIES or folder.name.startswith("."):
                    continue
                try:
                    skill = load_skill(folder, source)  # type: ignore[arg-type]
                except SkillError as error:
                    problems.append(SkillProblem(str(folder), str(error)))
                    continue
                if self.enabled is None or skill.name in self.enabled:
                    overrides = source == "custom" and skill.name in skills
                    skills[skill.name] = _with_override(skill, overrides)
        return skills, problems

    def list_skills(self) -> list[Skill]:
        """Every valid, enabled skill, sorted by name."""
        return sorted(self.discover()[0].values(), key=lambda skill: skill.name)

    @property
    def problems(self) -> list[SkillProblem]:
        """Folders that are not valid skills, and why."""
        return self.discover()[1]

    def get(self, name: str) -> Skill:
        """Return the skill called ``name``.

        Raises:
            SkillNotFoundError: No such skill (the message lists close names).
        """
        skills = self.discover()[0]
        if name in skills:
            return skills[name]
        listing = ", ".join(sorted(skills)) or "none"
        raise SkillNotFoundError(f"No skill is named {name!r}.{did_you_mean(name, skills)} "
                                 f"Skills: {listing}.", name=name)

    # ---------------------------------------------------------------- reading
    def read(self, name: str, file_path: str = "") -> str:
        """Text of ``SKILL.md`` (``file_path`` empty) or of one file of the skill.

        Raises:
            SkillNotFoundError: Unknown skill.
            SkillError: The path leaves the folder, is not a file, is too big or binary.
        """
        skill = self.get(name)
        path = resolve_in_skill(skill, file_path or SKILL_FILE)
        return read_text_file(path, f"{name}/{file_path or SKILL_FILE}")

    def files(self, name: str) -> list[str]:
        """Relative paths in the skill folder (folders end with '/'), at most MAX_TREE_ENTRIES."""
        root = self.get(name).directory
        entries = []
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root)
            if SKIPPED_ENTRIES.intersection(relative.parts) or path.suffix == ".pyc":
                continue
            entries.append(relative.as_posix() + ("/" if path.is_dir() else ""))
            if len(entries) >= MAX_TREE_ENTRIES:
                break
        return entries

    def tree(self, name: str) -> str:
        """An indented listing of the skill folder."""
        lines = [f"{name}/"]
        for entry in self.files(name):
            depth = entry.rstrip("/").count("/")
            lines.append("  " * (depth + 1) + entry.rstrip("/").rsplit("/", 1)[-1]
                         + ("/" if entry.endswith("/") else ""))
        return "\n".join(lines)

    # -------------------------------------------------------------- searching
    # ---------------------------------------------------------------- editing
    def edit(self, name: str, patch: str, file_path: str = SKILL_FILE) -> dict[str, Any]:
        """Apply exact SEARCH/REPLACE blocks (:mod:`srh_core.skills.patch`) to a skill file.

        Only skills of the custom folder can be edited, and only where that folder is
        the user's own (not a copy a worker unpacked from a run's bundle: an edit there
        would reach neither the submitting machine nor the other workers). An edited
        ``SKILL.md`` must still be a valid skill of the same name. The file is
        replaced atomically; on any error it stays as it was.

        Returns:
            ``{"name", "file_path", "blocks", "characters_before", "characters_after"}``.

        Raises:
            SkillNotFoundError: Unknown skill.
            SkillError: A built-in or shipped skill, a path outside the skill, a
                malformed or non-matching patch, or an edit that breaks SKILL.md.
        """
        skill = self.editable(name)
        path = resolve_in_skill(skill, file_path or SKILL_FILE)
        shown = f"{name}/{path.relative_to(skill.directory).as_posix()}"
        before = read_text_file(path, shown)
        after, blocks = apply_patch(before, patch, shown)
        if path == skill.directory / SKILL_FILE:
            checked_skill(skill.directory, after, "custom")
        atomic_write_text(path, after)
        return {"name": name, "file_path": path.relative_to(skill.directory).as_posix(),
                "blocks": blocks, "characters_before": len(before),
                "characters_after": len(after)}

    def editable(self, name: str) -> Skill:
        """The custom skill ``name``, when this manager may change its files.

        Raises:
            SkillNotFoundError: Unknown skill.
            SkillError: A built-in skill, or a worker's copy of a run's shipped skills.
        """
        skill = self.get(name)
        if skill.source != "custom":
            raise SkillError(f"Skill {name!r} is built in and read-only; to change it, write a "
                             "custom skill of the same name (it overrides the built-in).",
                             name=name)
        self.writable_dir()
        return skill

    def writable_dir(self) -> Path:
        """The custom folder, when skills may be written there.

        Raises:
            SkillError: No custom folder, or it is a worker's copy of a run's shipped skills
                (a change there would reach neither the submitter nor the other workers).
        """
        if self.custom_dir is None:
            raise SkillError("This run has no custom skills folder, and the built-in skills are "
                             "read-only; start the run with --skills-dir DIR (skills_dir).")
        if self.custom_dir.parent.name == UNPACKED_DIR:
            raise SkillError("The skills here are this worker's copy of the run's skills bundle "
                             "and read-only; edit the skills directory the run was submitted "
                             "from.")
        return self.custom_dir

    def search(self, query: str, limit: int = DEFAULT_SEARCH_LIMIT) -> list[tuple[Skill, float]]:
        """Skills ranked by keyword overlap with ``query`` (name x3, description, body x0.25)."""
        words = set(TOKEN.findall(query.lower()))
        ranked = []
        for skill in self.list_skills():
            score = _score(words, skill)
            if score > 0:
                ranked.append((skill, score))
        ranked.sort(key=lambda item: (-item[1], item[0].name))
        return ranked[:max(1, limit)]


def _with_override(skill: Skill, overrides: bool) -> Skill:
    if not overrides:
        return skill
    return Skill(skill.name, skill.description, skill.directory, skill.source, True)


def _score(words: set[str], skill: Skill) -> float:
    try:
        body = read_text_file(skill.directory / SKILL_FILE, skill.name)
    except SkillError:
        body = ""
    return (NAME_WEIGHT * len(words & set(TOKEN.findall(skill.name)))
            + DESCRIPTION_WEIGHT * len(words & set(TOKEN.findall(skill.description.lower())))
            + BODY_WEIGHT * len(words & set(TOKEN.findall(body.lower()))))


def load_skill(folder: Path, source: Source) -> Skill:
    """Validate one skill folder.

    Raises:
        SkillError: The folder name, SKILL.md or its front matter break the rules.
    """
    if not SKILL_NAME.match(folder.name):
        raise SkillError(f"Folder name {folder.name!r} is not a skill name (lowercase letters, "
                         "digits and single hyphens, e.g. 'fit-power-laws').", path=str(folder))
    return checked_skill(folder, read_text_file(folder / SKILL_FILE,
                                                f"{folder.name}/{SKILL_FILE}"), source)


def checked_skill(folder: Path, text: str, source: Source) -> Skill:
    """The skill that ``text`` as ``folder``'s SKILL.md describes.

    Raises:
        SkillError: The front matter is malformed, names another skill, or lacks a
            description.
    """
    try:
        fields, _ = split_front_matter(text)
    except FrontMatterError as error:
        raise SkillError(f"{folder.name}/{SKILL_FILE}: {error}", path=str(folder)) from None
    name, description = fields.get("name", ""), fields.get("description", "")
    if name != folder.name:
        raise SkillError(f"{folder.name}/{SKILL_FILE}: front matter 'name: {name}' must equal the "
                         f"folder name {folder.name!r}.", path=str(folder))
    if not description or len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(f"{folder.name}/{SKILL_FILE}: 'description' must be 1 to "
                         f"{MAX_DESCRIPTION_CHARS} characters; got {len(description)}.",
                         path=str(folder))
    return Skill(name, description, folder.resolve(), source)


def resolve_in_skill(skill: Skill, file_path: str) -> Path:
    """Resolve a path inside the skill folder, refusing every way out.

    Raises:
        SkillError: Absolute, with '..', too long, or leaving the folder through a symlink.
    """
    hint = "give a path relative to the skill folder, such as 'SKILL.md'"
    if not isinstance(file_path, str) or "\x00" in file_path or len(file_path) > MAX_PATH_CHARS:
        raise SkillError(f"Invalid file path {file_path!r:.80}; {hint}.", name=skill.name)
    parts = [part for part in file_path.replace("\\", "/").split("/") if part not in ("", ".")]
    absolute = file_path.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", file_path)
    if absolute or ".." in parts:
        raise SkillError(f"File path {file_path!r} leaves the skill folder; {hint}.",
                         name=skill.name, path=file_path)
    path = skill.directory.joinpath(*parts).resolve()
    if not path.is_relative_to(skill.directory):
        raise SkillError(f"File path {file_path!r} leads outside the skill folder (symlink); "
                         f"{hint}.", name=skill.name, path=file_path)
    return path


def read_text_file(path: Path, shown: str) -> str:
    """Read a UTF-8 text file of at most MAX_FILE_BYTES.

    Raises:
        SkillError: Missing, not a file, too big or binary.
    """
    if not path.is_file():
        raise SkillError(f"{shown} is not an existing file.", path=shown)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SkillError(f"{shown} has {size} bytes; at most {MAX_FILE_BYTES} can be read.",
                         path=shown)
    data = path.read_bytes()
    if b"\x00" in data:
        raise SkillError(f"{shown} is a binary file; only text files can be read.", path=shown)
    return data.decode("utf-8", errors="replace")


def default_skill_manager() -> SkillManager:
    """A manager over the built-in skills only."""
    return SkillManager()


def run_skill_manager(skills_dir: str | Path | None,
                      enabled: Iterable[str] | None) -> SkillManager:
    """The manager a run's settings ask for (``skills_dir``, ``skills``), checked now.

    Raises:
        ConfigurationError: ``skills_dir`` is not a directory, or ``enabled`` names a
            skill that neither the built-in nor the custom folder holds.
    """
    if skills_dir is not None and not Path(skills_dir).is_dir():
        raise ConfigurationError(f"skills_dir {str(skills_dir)!r} is not a directory (a folder "
                                 "with one sub-folder per skill, each with a SKILL.md).",
                                 setting="skills_dir")
    manager = SkillManager(custom_dir=skills_dir, enabled=enabled)
    if enabled is not None:
        known = SkillManager(custom_dir=skills_dir).discover()[0]
        unknown = [name for name in manager.enabled or () if name not in known]
        if unknown:
            raise ConfigurationError(
                f"skills names {unknown[0]!r}, which is not a skill here."
                f"{did_you_mean(unknown[0], known)} Skills: {', '.join(sorted(known))}.",
                setting="skills")
    return manager
