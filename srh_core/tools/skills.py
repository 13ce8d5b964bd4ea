"""``read_skill`` and ``edit_skill``: read and edit the skills of a
:class:`~srh_core.skills.SkillManager`.

The manager comes from ``context.skill_manager``, else the tool's
``values["skill_manager"]`` (set by the agent), else a manager over the
built-in skills, so a tool rebuilt on a worker from its name still works.

Besides the skill folders, ``read_skill`` offers runtime skills: the docs of
registered tools (``BaseTool.get_doc``; a custom tool's is its reference,
named ``tool-<name>``), with ``source`` "tool" (only a custom tool of one of
the manager's skills is listed).

Structured ``result`` by action:

- ``{"action": "list", "skills": [{"name", "description", "source",
  "overrides_builtin"}], "problems": [{"path", "message"}]}``;
- ``{"action": "search", "query", "matches": [{"name", "description", "score"}]}``;
- ``{"action": "read", "name", "file_path", "content", "source", "tree": str | None}``.

``edit_skill`` applies exact SEARCH/REPLACE blocks to a custom skill's file
(:meth:`~srh_core.skills.SkillManager.edit`; built-in skills are read-only; a
``tool.py`` is edited with ``edit_tool``, which checks and reloads it) and
returns ``{"name", "file_path", "blocks", "characters_before", "characters_after"}``.
"""

from __future__ import annotations

from typing import Any

from srh_core.errors import ToolArgumentError
from srh_core.skills import (
    SKILL_FILE,
    SkillError,
    SkillManager,
    SkillNotFoundError,
    default_skill_manager,
)
from srh_core.tools.base import BaseTool
from srh_core.tools.custom_spec import TOOL_FILE
from srh_core.tools.custom_tools import custom_tool_docs

TOOL_NAME = "read_skill"
EDIT_TOOL_NAME = "edit_skill"
MAX_PATCH_CHARS = 60_000
MAX_QUERY_CHARS = 1_000
MAX_NAME_CHARS = 200
SHOWN_PROBLEMS = 5


@BaseTool.register(TOOL_NAME)
class ReadSkillTool(BaseTool):
    """Read the method notes (skills) shipped with the harness or added by the user."""

    result_str_limit = 12_000  # a skill is worth reading whole

    def execute(self, name: str = "", file_path: str = "", show_tree: bool = False,
                query: str = "") -> dict[str, Any]:
        """Read a skill: step-by-step guidance for a task, e.g. how to discover a law.

        Call it without arguments to list the skills, with query to find the
        relevant ones, with name to read a skill's SKILL.md, and with name and
        file_path to read one of its other files.

        Args:
            name: Exact skill name, e.g. "discover-symbolic-laws". Empty lists or searches.
            file_path: A file inside the skill, relative to its folder, e.g.
                "examples/kepler.md". Empty reads SKILL.md.
            show_tree: Also list every file of the skill.
            query: Words describing your task, to rank the skills when name is empty.
        """
        manager = self.skill_manager()
        name, query = _checked(name, "name", MAX_NAME_CHARS), _checked(query, "query",
                                                                     MAX_QUERY_CHARS)
        docs = tool_docs(manager)
        if not name:
            return self._search(manager, query, docs) if query else self._listing(manager, docs)
        if name in docs and name not in manager.discover()[0]:
            return {"action": "read", "name": name, "file_path": SKILL_FILE,
                    "content": docs[name]["content"], "source": "tool", "tree": None}
        try:
            skill = manager.get(name)
            content = manager.read(name, file_path)
            tree = manager.tree(name) if show_tree else None
        except SkillError as error:
            parameter = "name" if isinstance(error, SkillNotFoundError) else "file_path"
            raise ToolArgumentError(str(error), parameter=parameter) from None
        return {"action": "read", "name": name, "file_path": file_path or SKILL_FILE,
                "content": content, "source": skill.source, "tree": tree}

    def skill_manager(self) -> SkillManager:
        return tool_skill_manager(self)

    @staticmethod
    def _listing(manager: SkillManager, docs: dict[str, dict[str, str]]) -> dict[str, Any]:
        skills, problems = manager.discover()
        rows = [skill.to_dict() for skill in skills.values()]
        rows += [{"name": name, "description": doc["description"], "source": "tool",
                  "overrides_builtin": False} for name, doc in docs.items() if name not in skills]
        return {"action": "list", "skills": sorted(rows, key=lambda row: row["name"]),
                "problems": [problem.to_dict() for problem in problems]}

    @staticmethod
    def _search(manager: SkillManager, query: str,
                docs: dict[str, dict[str, str]]) -> dict[str, Any]:
        matches = [{"name": skill.name, "description": skill.description, "score": score}
                   for skill, score in manager.search(query)]
        words = set(query.lower().split())
        matches += [{"name": name, "description": doc["description"], "score": float(len(
            words & set(f"{name} {doc['description']}".lower().replace("-", " ").split())))}
            for name, doc in docs.items()]
        matches = sorted((m for m in matches if m["score"] > 0),
                         key=lambda m: (-m["score"], m["name"]))
        return {"action": "search", "query": query, "matches": matches}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The skill text, or a one-line-per-skill listing."""
        if result["action"] == "read":
            head = f"[skill {result['name']}: {result['file_path']}]"
            tree = f"\n\nFiles:\n{result['tree']}" if result["tree"] else ""
            return f"{head}\n{result['content']}{tree}"
        if result["action"] == "search":
            if not result["matches"]:
                return (f"No skill matches {result['query']!r}; call read_skill without "
                        "arguments to list them all.")
            rows = [f"- {m['name']} (score {m['score']:g}): {m['description']}"
                    for m in result["matches"]]
            return f"Skills matching {result['query']!r}:\n" + "\n".join(rows)
        return _listing_text(result)


@BaseTool.register(EDIT_TOOL_NAME)
class EditSkillTool(BaseTool):
    """Correct or extend a custom skill with exact search/replace blocks."""

    def execute(self, name: str, patch: str, file_path: str = "") -> dict[str, Any]:
        """Edit an existing custom skill with exact search/replace blocks.

        Use it when a skill is relevant but should be corrected, refined or extended
        from concrete results of this work: small, evidence-backed edits, not a one-off
        detail of this data set, a final formula or an unverified guess. Built-in
        skills are read-only; if no skill fits the lesson, write a new one instead.

        Args:
            name: The exact skill name to edit.
            patch: One or more blocks, each: a line '<<<<<<< SEARCH', the old text copied
                exactly from the file (unique in it), a line '=======', the new text, a
                line '>>>>>>> REPLACE'. All blocks apply or none.
            file_path: A file of the skill relative to its folder; empty edits SKILL.md.
        """
        if not isinstance(patch, str) or len(patch) > MAX_PATCH_CHARS:
            raise ToolArgumentError(f"patch must be text of at most {MAX_PATCH_CHARS} "
                                    "characters.", parameter="patch")
        name = _checked(name, "name", MAX_NAME_CHARS)
        if not name:
            raise ToolArgumentError("name must be the exact name of a custom skill (read_skill "
                                    "without arguments lists them).", parameter="name")
        manager = tool_skill_manager(self)
        file_path = _checked(file_path, "file_path", MAX_NAME_CHARS)
        if file_path.replace("\\", "/").strip("/").removeprefix("./") == TOOL_FILE:
            raise ToolArgumentError(f"{TOOL_FILE} is a custom tool: edit it with edit_tool, which "
                                    "checks and reloads it.", parameter="file_path")
        try:
            return manager.edit(name, patch, file_path)
        except SkillError as error:
            parameter = "name" if isinstance(error, SkillNotFoundError) else "patch"
            raise ToolArgumentError(str(error), parameter=parameter) from None

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        return (f"Edited skill {result['name']}: {result['file_path']}, {result['blocks']} "
                f"block(s) applied ({result['characters_before']} -> "
                f"{result['characters_after']} characters).")


def tool_skill_manager(tool: BaseTool) -> SkillManager:
    """The context's manager, else the agent's, else the built-in skills."""
    manager = getattr(tool.context, "skill_manager", None)
    if manager is None:
        manager = tool.values.get("skill_manager")
    return manager if manager is not None else default_skill_manager()


def tool_docs(manager: SkillManager) -> dict[str, dict[str, str]]:
    """Runtime skills: the docs of the registered tools (``BaseTool.get_doc``) this manager's
    run may see (:func:`srh_core.tools.custom_tools.custom_tool_docs`)."""
    docs = custom_tool_docs(manager)
    enabled = manager.enabled
    return {name: doc for name, doc in docs.items() if enabled is None or name in enabled}


def _listing_text(result: dict[str, Any]) -> str:
    marks = {"custom": " (custom)", "tool": " (tool reference)"}
    rows = [f"- {s['name']}{marks.get(s['source'], '')}: {s['description']}"
            for s in result["skills"]]
    lines = ["Skills (read one with read_skill(name=...)):", *(rows or ["(none)"])]
    problems = result["problems"]
    lines += [f"Invalid skill folder {p['path']}: {p['message']}"
              for p in problems[:SHOWN_PROBLEMS]]
    if len(problems) > SHOWN_PROBLEMS:
        lines.append(f"... and {len(problems) - SHOWN_PROBLEMS} more invalid skill folders.")
    return "\n".join(lines)


def _checked(value: Any, parameter: str, limit: int) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if len(text) > limit:
        raise ToolArgumentError(f"The {parameter!r} parameter of {TOOL_NAME} has {len(text)} "
                                f"characters; at most {limit} are allowed.", parameter=parameter)
    return text
