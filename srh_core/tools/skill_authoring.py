"""``create_skill`` and ``edit_tool``: the model writes skills and custom tools.

``create_skill(request, force=False, history_messages=None)`` asks the run's
model (the request path of ``call_llm``: :class:`~srh_core.tools.model_tools.ModelQueryTool`,
so the run's endpoint, key and quota; the offline provider is refused) to
draft a skill from the conversation and the request. The conversation is
the calling branch's in a search run (SRAgent attaches the step's buffer,
bounded by :meth:`CreateSkillTool.call_conversation`, to the call: it travels
with the call to a pool worker or a cluster's sample task), else the messages
:meth:`~srh_core.agent.base.Agent.set_messages` set (the authoring agents'); the
last ``history_messages`` of them, at most :data:`MAX_HISTORY_CHARS` characters.
The draft is one JSON object: a ``kind`` (``instructions``: SKILL.md only; ``data_analysis``: a
custom tool returning an analysis; ``formula_proposal``: a custom tool
returning a formula, ``TOOL_KIND = "formula"``), a ``name``, a
``description``, the Markdown ``content`` and the ``tool_code``. It is
checked before anything is written (skill name rules, front matter, the
tool's syntax-tree schema, its kind); a refused draft goes back to the model
with the reason, up to :data:`MAX_ROUNDS` requests. The skill is written into
the run's custom skills folder (``--skills-dir``; built-in skills and a
worker's copy of shipped skills are read-only); an existing custom skill is
replaced only with ``force`` (SKILL.md and tool.py; other files stay). A
tool is registered at once (:func:`~srh_core.tools.custom_tools.load_custom_tool`);
if that fails, the folder is put back as it was.

``edit_tool(name, tool_patch, skill_patch="")`` applies exact SEARCH/REPLACE
blocks (:mod:`srh_core.skills.patch`) to the ``tool.py`` of the custom skill
``name`` (and optionally to its SKILL.md), checks the result, writes it and
reloads the tool; a tool that does not load is put back as it was.

A tool created or edited during a run is registered in the run's process and
runs at once through ``srh tool call`` or an existing instance; the model's
list of tools is built when a run starts, so a new tool's name reaches the
model from the next run on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from srh_core.errors import ToolArgumentError
from srh_core.jsonio import atomic_write_text
from srh_core.parsers.lenient_json import iter_json_spans
from srh_core.skills import SKILL_FILE, SkillError, SkillManager
from srh_core.skills.errors import CustomToolError
from srh_core.skills.manager import SKILL_NAME, checked_skill, read_text_file, resolve_in_skill
from srh_core.skills.patch import apply_patch
from srh_core.tools.base import TOOLS, BaseTool
from srh_core.tools.custom_spec import TOOL_FILE, parse_tool_source
from srh_core.tools.custom_tools import CustomTool, load_custom_tool, unload_custom_tool
from srh_core.tools.model_tools import ModelQueryTool
from srh_core.tools.skills import MAX_NAME_CHARS, MAX_PATCH_CHARS, tool_skill_manager

MAX_ROUNDS = 3
MAX_REQUEST_CHARS = 4_000
MAX_HISTORY_CHARS = 40_000
MAX_MESSAGE_CHARS = 6_000
KINDS = {
    "instructions": "SKILL.md only: reusable guidance; tool_code is empty.",
    "data_analysis": (
        "SKILL.md plus tool_code: a module with `def run(data, <parameters>) -> dict` whose "
        "docstring describes the tool and each parameter under 'Args:'; data maps each "
        "variable of the training rows to a numpy array; return a JSON-ready dict."),
    "formula_proposal": (
        "SKILL.md plus tool_code: a module with TOOL_KIND = \"formula\" and `def run(data, "
        "<parameters>) -> dict` returning {\"formula\": \"<formula of the data variables, "
        "param(\\\"a\\\") for a free constant>\", \"fit\": true|false}; the harness scores it."),
}
EXAMPLE_TOOL = '''"""What the tool is for (shown with read_skill)."""
import numpy as np

TOOL_NAME = "log_slope"

def run(data, x: str, y: str) -> dict:
    """Slope of log(y) against log(x) on the training rows.

    Args:
        x: Input variable.
        y: Output variable.
    """
    slope = np.polyfit(np.log(data[x]), np.log(data[y]), 1)[0]
    return {"slope": float(slope)}
'''
AUTHORING_SYSTEM = (
    "You write reusable skills for a symbolic-regression agent. From the conversation and "
    "the request, capture a lesson or capability that will help on other data sets; leave "
    "out one-off numbers, final formulas of this data set, secrets and unverified guesses.\n"
    "Choose the kind:\n" + "\n".join(f"- {kind}: {text}" for kind, text in KINDS.items())
    + "\nTool code runs isolated: no network, no files outside its folder, numpy and scipy "
    "available. Example tool_code:\n" + EXAMPLE_TOOL
    + "\nAnswer with exactly one JSON object and nothing else: {\"kind\": \"instructions\" | "
    "\"data_analysis\" | \"formula_proposal\", \"name\": \"lowercase-hyphenated-name\", "
    "\"description\": \"one line: when to use the skill\", \"content\": \"Markdown body "
    "without front matter\", \"tool_code\": \"Python source or empty\"}.")


@BaseTool.register("create_skill")
class CreateSkillTool(ModelQueryTool):
    """The run's model drafts a reusable skill (and its tool) from the conversation."""

    def execute(self, request: str, force: bool = False,
                history_messages: int | None = None) -> dict[str, Any]:
        """Create a reusable skill in one call: the run's model drafts it from this conversation.

        The model decides whether the skill is instruction-only, a data-analysis tool or a
        formula-proposal tool, the draft is checked, and the skill is written to the run's
        skills folder (its tool registered).

        Args:
            request: The reusable capability or lesson to capture, and when it applies.
            force: Replace an existing custom skill of the same name (its SKILL.md and
                tool.py; other files stay). Built-in skills cannot be replaced.
            history_messages: How many of the latest conversation messages the author
                sees; empty for all (within a size bound).
        """
        if not isinstance(request, str) or not request.strip():
            raise ToolArgumentError("request must say which reusable lesson or capability to "
                                    "capture.", parameter="request")
        if len(request) > MAX_REQUEST_CHARS:
            raise ToolArgumentError(f"request has {len(request)} characters; at most "
                                    f"{MAX_REQUEST_CHARS}.", parameter="request")
        if history_messages is not None and history_messages < 0:
            raise ToolArgumentError(f"history_messages must be an int >= 0 or empty. Got "
                                    f"{history_messages} instead.", parameter="history_messages")
        manager = tool_skill_manager(self)
        manager.writable_dir()  # refuse before spending a request
        messages = [{"role": "system", "content": AUTHORING_SYSTEM},
                    {"role": "user", "content": self.brief(request, history_messages)}]
        usage: list[dict[str, Any]] = []
        problem = ""
        for round_number in range(1, MAX_ROUNDS + 1):
            answer = self.ask(messages)
            usage.append(answer["usage"])
            try:
                written = write_draft(manager, read_draft(answer["content"]), force)
            except _DraftRefused as refused:
                problem = str(refused)
                messages += [{"role": "assistant", "content": answer["content"]},
                             {"role": "user", "content": f"The draft was refused: {problem}\n"
                              "Send the corrected JSON object only."}]
                continue
            return {**written, "rounds": round_number, "usage": _total(usage)}
        raise SkillError(f"The model gave no acceptable skill draft in {MAX_ROUNDS} requests; "
                         f"the last was refused: {problem}")

    @classmethod
    def call_conversation(cls, messages: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
        """The newest of the branch's ``messages`` within :data:`MAX_HISTORY_CHARS`, as
        text (each at most :data:`MAX_MESSAGE_CHARS`): what a call carries."""
        kept: list[dict[str, str]] = []
        size = 0
        for message in reversed(messages):
            text = _text(message.get("content"))
            size += len(text)
            if size > MAX_HISTORY_CHARS:
                break
            kept.append({"role": str(message.get("role", "?")), "content": text})
        return kept[::-1]

    def brief(self, request: str, history_messages: int | None) -> str:
        """The conversation so far (newest kept within the bound) and the request."""
        history = self.conversation()
        if history_messages is not None:
            history = history[len(history) - history_messages:] if history_messages else []
        lines: list[str] = []
        size = 0
        for message in reversed(history):
            line = f"[{message.get('role', '?')}] {_text(message.get('content'))}"
            size += len(line)
            if size > MAX_HISTORY_CHARS:
                lines.append(f"[... {len(history) - len(lines)} earlier messages left out]")
                break
            lines.append(line)
        transcript = "\n\n".join(reversed(lines)) or "(no conversation)"
        return f"Conversation:\n{transcript}\n\nCreate-skill request:\n{request.strip()}"

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """What was written and registered."""
        verb = "Replaced" if result["replaced"] else "Created"
        text = (f"{verb} the {result['kind']} skill {result['name']!r} "
                f"({', '.join(result['files'])}) in {result['rounds']} request(s).")
        if result["tool"]:
            text += (f" Its tool {result['tool']['tool_name']!r} is registered; the model's "
                     "tool list includes it from the next run.")
        return text + f" Read it with read_skill(name={result['name']!r})."


class _DraftRefused(SkillError):
    """A draft the authoring model can correct (sent back to it)."""


def read_draft(content: str) -> dict[str, str]:
    """The draft object of a model's answer (the first JSON object with a ``name``).

    Raises:
        _DraftRefused: No such object, or a field that is not text.
    """
    for span in iter_json_spans(content or ""):
        try:
            value = json.loads(span.text)
        except ValueError:
            continue
        if isinstance(value, dict) and "name" in value:
            fields = {key: value.get(key, "") for key in
                      ("kind", "name", "description", "content", "tool_code")}
            if not all(isinstance(text, str) for text in fields.values()):
                raise _DraftRefused("every field (kind, name, description, content, tool_code) "
                                    "must be a JSON string.")
            return {key: text.strip() for key, text in fields.items()}
    raise _DraftRefused("the answer holds no JSON object with the fields kind, name, "
                        "description, content and tool_code.")


def write_draft(manager: SkillManager, draft: Mapping[str, str], force: bool) -> dict[str, Any]:
    """Check ``draft``, write it into the manager's custom folder and register its tool.

    Raises:
        _DraftRefused: The draft breaks a rule the model can fix.
        SkillError: The name is a built-in skill's, or a custom skill's without ``force``.
    """
    kind, name = draft["kind"], draft["name"]
    if kind not in KINDS:
        raise _DraftRefused(f"kind must be one of {', '.join(KINDS)}; got {kind!r}.")
    if not SKILL_NAME.match(name) or len(name) > MAX_NAME_CHARS:
        raise _DraftRefused(f"name {name!r} is not a skill name: lowercase letters, digits and "
                            "single hyphens, e.g. 'fit-power-laws'.")
    existing = manager.discover()[0].get(name)
    if existing is not None and existing.source == "builtin":
        raise SkillError(f"{name!r} is a built-in skill and read-only; ask for another name.",
                         name=name)
    if existing is not None and not force:
        raise SkillError(f"The custom skill {name!r} exists; call create_skill with force=true "
                         "to replace it, or change it with edit_skill / edit_tool.", name=name)
    folder = manager.writable_dir() / name
    skill_text = skill_file_text(folder, draft)
    tool_code = draft["tool_code"]
    if (kind == "instructions") != (not tool_code):
        raise _DraftRefused("an instructions skill has empty tool_code; the other kinds need it.")
    if tool_code:
        try:
            spec = parse_tool_source(tool_code, name)
        except CustomToolError as error:
            raise _DraftRefused(str(error)) from None
        if (spec.kind == "formula") != (kind == "formula_proposal"):
            raise _DraftRefused("a formula_proposal tool sets TOOL_KIND = \"formula\"; a "
                                "data_analysis tool does not.")
    return _write(folder, skill_text, tool_code, kind, replaced=existing is not None)


def skill_file_text(folder: Path, draft: Mapping[str, str]) -> str:
    """SKILL.md of ``draft``: our front matter, then its body.

    Raises:
        _DraftRefused: No body, or a description the front matter rules refuse.
    """
    body = re.sub(r"\A---\n.*?\n---\n", "", draft["content"] + "\n", flags=re.DOTALL).strip()
    if not body:
        raise _DraftRefused("content (the Markdown body of SKILL.md) is empty.")
    description = " ".join(draft["description"].split())
    text = f"---\nname: {folder.name}\ndescription: {description}\n---\n\n{body}\n"
    try:
        checked_skill(folder, text, "custom")
    except SkillError as error:
        raise _DraftRefused(str(error)) from None
    return text


def _write(folder: Path, skill_text: str, tool_code: str, kind: str, *,
           replaced: bool) -> dict[str, Any]:
    """Write the files; register the tool; put everything back if that fails."""
    skill_path, tool_path = folder / SKILL_FILE, folder / TOOL_FILE
    before = {path: path.read_text(encoding="utf-8") if path.is_file() else None
              for path in (skill_path, tool_path)}
    atomic_write_text(skill_path, skill_text)
    tool = None
    try:
        if tool_code:
            atomic_write_text(tool_path, tool_code.rstrip() + "\n")
            tool = load_custom_tool(tool_path)
        elif tool_path.is_file():
            unload_custom_tool(tool_path)
            tool_path.unlink()
    except CustomToolError as error:
        _restore(folder, before, replaced)
        raise _DraftRefused(str(error)) from None
    return {"name": folder.name, "kind": kind, "path": str(folder), "replaced": replaced,
            "files": [SKILL_FILE, *([TOOL_FILE] if tool_code else [])], "tool": tool}


def _restore(folder: Path, before: Mapping[Path, str | None], replaced: bool) -> None:
    for path, text in before.items():
        if text is not None:
            atomic_write_text(path, text)
        else:
            path.unlink(missing_ok=True)
    if not replaced and not any(folder.iterdir()):
        folder.rmdir()
    if before[folder / TOOL_FILE] is not None:
        try:
            load_custom_tool(folder / TOOL_FILE)
        except CustomToolError:
            pass  # the old tool did not load either; it stays unregistered


def _text(content: Any) -> str:
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + " [...]"


def _total(usage: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("prompt_tokens", "completion_tokens", "total_tokens", "price")
    return {key: sum(item.get(key) or 0 for item in usage) for key in keys}


@BaseTool.register("edit_tool")
class EditToolTool(BaseTool):
    """Correct a custom tool (a skill's tool.py) with exact search/replace blocks; reload it."""

    def execute(self, name: str, tool_patch: str, skill_patch: str = "") -> dict[str, Any]:
        """Edit and reload a custom tool with exact search/replace blocks.

        Built-in tools and built-in skills are read-only. The edited tool.py must still
        define run() with a docstring; if it does not load, nothing is changed.

        Args:
            name: The skill holding the tool (the folder name, not the tool's name).
            tool_patch: Blocks for tool.py, each: a line '<<<<<<< SEARCH', the old text copied
                exactly (unique in the file), a line '=======', the new text, a line
                '>>>>>>> REPLACE'. All blocks apply or none.
            skill_patch: Optional blocks of the same form for the skill's SKILL.md.
        """
        for parameter, patch in (("tool_patch", tool_patch), ("skill_patch", skill_patch)):
            if len(patch) > MAX_PATCH_CHARS:
                raise ToolArgumentError(f"{parameter} has {len(patch)} characters; at most "
                                        f"{MAX_PATCH_CHARS}.", parameter=parameter)
        manager = tool_skill_manager(self)
        skill = self.editable_skill(manager, name.strip())
        tool_path = resolve_in_skill(skill, TOOL_FILE)
        if not tool_path.is_file():
            raise ToolArgumentError(f"The skill {skill.name!r} has no {TOOL_FILE}; edit its "
                                    "SKILL.md with edit_skill.", parameter="name")
        shown = f"{skill.name}/{TOOL_FILE}"
        before = read_text_file(tool_path, shown)
        try:
            after, blocks = apply_patch(before, tool_patch, shown)
            parse_tool_source(after, skill.name)
        except SkillError as error:
            raise ToolArgumentError(str(error), parameter="tool_patch") from None
        try:
            skill_text = self.patched_skill(skill, skill_patch)
        except SkillError as error:
            raise ToolArgumentError(str(error), parameter="skill_patch") from None
        atomic_write_text(tool_path, after)
        try:
            loaded = load_custom_tool(tool_path)
        except CustomToolError as error:
            atomic_write_text(tool_path, before)
            load_custom_tool(tool_path)
            raise ToolArgumentError(f"{error} Nothing was changed.",
                                    parameter="tool_patch") from None
        if skill_text is not None:
            atomic_write_text(skill.directory / SKILL_FILE, skill_text)
        return {"name": skill.name, "tool": loaded, "blocks": blocks,
                "skill_edited": skill_text is not None}

    @staticmethod
    def editable_skill(manager: SkillManager, name: str) -> Any:
        """The custom skill ``name``; a built-in tool's or skill's name is refused."""
        registered = TOOLS.find(name)
        if registered is not None and not issubclass(registered, CustomTool):
            raise ToolArgumentError(f"{name!r} is a built-in tool; built-in tools cannot be "
                                    "edited. Give the name of a custom skill with a tool.py.",
                                    parameter="name")
        try:
            return manager.editable(name)
        except SkillError as error:
            raise ToolArgumentError(str(error), parameter="name") from None

    @staticmethod
    def patched_skill(skill: Any, skill_patch: str) -> str | None:
        if not skill_patch.strip():
            return None
        shown = f"{skill.name}/{SKILL_FILE}"
        text, _ = apply_patch(read_text_file(skill.directory / SKILL_FILE, shown), skill_patch,
                              shown)
        checked_skill(skill.directory, text, "custom")
        return text

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """What changed and the reloaded tool's parameters."""
        tool = result["tool"]
        also = " and SKILL.md" if result["skill_edited"] else ""
        return (f"Edited {result['name']}/{TOOL_FILE}{also} ({result['blocks']} block(s)) and "
                f"reloaded the tool {tool['tool_name']!r} ({tool['kind']}; parameters: "
                f"{', '.join(tool['parameters']) or 'none'}).")
