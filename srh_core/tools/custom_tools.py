"""Custom tools: a skill's ``tool.py`` offered to the model as a tool, run in the sandbox.

The file's format is in :mod:`srh_core.tools.custom_spec`. Loading a tool
(:func:`load_custom_tool`) reads its schema from the syntax tree and
registers a :class:`CustomTool` subclass under its name; the module is never
imported into this process. Each call runs a fixed harness in the code
sandbox (:mod:`srh_core.sandbox`: time, memory, output, process and network
limits, the run's ``code_max_*`` settings capping the defaults): the harness
executes the module's text, calls ``run`` with the model's arguments (JSON)
and the training rows, and sends back a JSON result. A run that is killed,
raises or returns no JSON value is a :class:`~srh_core.skills.CustomToolError`
naming why (``reason``); the tool answers ``ok=False`` and nothing else is
affected.

Names: a custom tool may not take a built-in tool's name or alias. Within one
skills folder a name belongs to one skill: :func:`discover_custom_tools`
names both skills when two declare the same tool, and loading a second
skill's file with a name the first holds is refused. Reloading the same file
replaces its registration (a failed reload leaves that file without a tool).
A file of another skills folder (another run's, in a worker process that
serves several runs one after another) takes the name over; tool instances
built before keep running their own file.

A loaded tool lives in this process's registry, so a custom tool an agent
offers is found by name like any tool; an edited tool (``edit_tool``) is
what the next call runs, also through a tool instance built before the edit.
A process pool's workers register the run's custom tools from their files
(:mod:`srh_core.embedded.executor`).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, ClassVar

from srh_core.errors import ToolArgumentError
from srh_core.sandbox import limits as sandbox_limits
from srh_core.sandbox.runner import SandboxResult
from srh_core.skills import SkillManager
from srh_core.skills.errors import CustomToolError
from srh_core.tools.base import TOOLS, BaseTool
from srh_core.tools.code_sandbox import (
    STDERR_SHOWN_CHARS,
    CodeLimits,
    SandboxedTool,
    keep_tail,
    outcome_text,
    run_report,
)
from srh_core.tools.custom_spec import TOOL_FILE, CustomToolSpec, read_tool_spec
from srh_core.tools.formula import FormulaTool
from srh_core.types import ToolCallResult, ToolMetadata

OUTPUT_SHOWN_CHARS = 4_000
_LOCK = threading.RLock()
#: Resolved tool.py path -> the name it registered.
_BY_PATH: dict[str, str] = {}

# The fixed program each call runs in the sandbox. The tool's text is compiled
# under its skill-relative name, so a traceback points into tool.py.
CUSTOM_TOOL_HARNESS = r'''
import linecache, sys, traceback
import numpy as np

def _main():
    source, filename, stage = payload["source"], payload["filename"], "load"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__srh_custom_tool__", "__file__": filename}
    try:
        exec(compile(source, filename, "exec"), namespace)
        stage = "run"
        given = {"data": {k: np.asarray(v) for k, v in payload["data"].items()},
                 "target": payload["target"]}
        value = namespace["run"](**payload["arguments"],
                                 **{name: given[name] for name in payload["reserved"]})
        stage = "result"
        emit_result({"value": value})
    except BaseException as error:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
        emit_result({"error": {"stage": stage, "type": type(error).__name__,
                               "message": str(error)[:2000],
                               "traceback": "".join(traceback.format_list(frames))[-3000:]}})
        sys.exit(1)

_main()
'''


class CustomTool(FormulaTool, SandboxedTool):
    """A skill's ``tool.py`` as a tool (subclassed per file by :func:`load_custom_tool`)."""

    spec: ClassVar[CustomToolSpec]

    def __call__(self, **params: Any) -> ToolCallResult:
        """Run the tool as registered now: an instance made before an edit runs the edit."""
        current = TOOLS.find(self.metadata.name, load=False)
        if current is not None and current is not type(self) and \
                issubclass(current, CustomTool) and current.spec.path == self.spec.path:
            return current(self.context, **self.values)(**params)
        return super().__call__(**params)

    def execute(self, **arguments: Any) -> dict[str, Any]:
        """Run the skill's ``run`` function in the sandbox with the model's arguments."""
        spec = self.spec
        context = self.require_context() if spec.reserved or spec.kind == "formula" \
            else self.context
        limits = self.resolve_limits(sandbox_limits.DEFAULT_TIMEOUT_SECONDS,  # the run's caps
                                     sandbox_limits.DEFAULT_MEMORY_LIMIT_MB,  # apply as usual
                                     sandbox_limits.DEFAULT_OUTPUT_LIMIT_BYTES)
        train = context.train_split if "data" in spec.reserved else None
        payload = {"source": spec.source, "filename": f"{spec.skill}/{TOOL_FILE}",
                   "arguments": arguments, "reserved": list(spec.reserved),
                   "data": {} if train is None else dict(train.data),
                   "target": getattr(context, "target", None)}
        result, value = self.run_sandboxed(CUSTOM_TOOL_HARNESS, payload, limits)
        output = checked_output(spec, result, value, limits)
        stdout = keep_tail(result.stdout, STDERR_SHOWN_CHARS)
        if spec.kind == "formula":
            return {**self.scored(output), "tool_stdout": stdout}
        return {"tool": spec.name, "skill": spec.skill, "output": output, "stdout": stdout}

    def scored(self, output: Any) -> dict[str, Any]:
        """A formula tool's output scored as evaluate_formula scores a formula."""
        name = self.spec.name
        if not isinstance(output, dict) or not isinstance(output.get("formula"), str):
            raise CustomToolError(f"The formula tool {name!r} must return a dict with a "
                                  f"'formula' text; it returned {_shown(output)}.", tool=name,
                                  reason="result")
        try:
            formula = self.parse_text(output["formula"], "formula", allow_parameters=True)
            target = self.target_term(output.get("y"))
        except ToolArgumentError as error:
            raise CustomToolError(f"The formula tool {name!r} returned a formula that cannot "
                                  f"be scored: {error}", tool=name, reason="result") from None
        extra = {key: value for key, value in output.items() if key not in ("formula", "y", "fit")}
        entry = self.evaluate_formula(formula, target, fit=bool(output.get("fit", False)))
        return {**entry, "tool": name, "skill": self.spec.skill, "tool_output": extra}

    @classmethod
    def get_doc(cls) -> dict[str, str] | None:
        """The tool's reference as a runtime skill: module docstring, kind and parameters."""
        spec = cls.spec
        rows = [f"- {name}: {schema.get('type', 'any')}"
                f"{'' if name in spec.parameters['required'] else ' (optional)'}"
                f"{': ' + schema['description'] if schema.get('description') else ''}"
                for name, schema in spec.parameters["properties"].items()]
        content = (f"# Custom tool `{spec.name}` (skill `{spec.skill}`)\n\n{spec.description}\n\n"
                   f"Kind: {spec.kind}. Parameters:\n" + ("\n".join(rows) or "(none)")
                   + (f"\n\n{spec.doc}" if spec.doc else ""))
        return {"name": f"tool-{spec.name.replace('_', '-')}",
                "description": f"How to call the custom tool {spec.name} of skill {spec.skill}.",
                "content": content}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The scored formula, or the tool's JSON output and what it printed."""
        if "metrics" in result:
            return cls.format_evaluation_result(result, title=f"{result['tool']} (custom tool)")
        text = json.dumps(result["output"], ensure_ascii=False, default=str)
        printed = f"\nprinted:\n{result['stdout']}" if result["stdout"].strip() else ""
        return f"[{result['tool']}]\n{keep_tail(text, OUTPUT_SHOWN_CHARS)}{printed}"


def checked_output(spec: CustomToolSpec, result: SandboxResult, value: Any,
                   limits: CodeLimits) -> Any:
    """The value ``run`` returned, or a CustomToolError saying how the call ended.

    Raises:
        CustomToolError: Killed (time, output), out of memory, an exception in the
            code, or no JSON value.
    """
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict):
        memory = error.get("type") == "MemoryError"
        reason = "memory" if memory else "exception"
        where = "loading tool.py" if error.get("stage") == "load" else f"{spec.name}'s run()"
        limit = f" (memory limit {limits.memory_limit_mb} MB)" if memory else ""
        raise CustomToolError(f"The custom tool {spec.name!r} failed while {where}: "
                              f"{error.get('type')}{limit}: {error.get('message')}\n"
                              f"{error.get('traceback', '')}".rstrip(), tool=spec.name,
                              reason=reason, name=spec.skill)
    if result.ok and isinstance(value, dict) and "value" in value:
        return value["value"]
    report = run_report(result, limits)
    reason = {"timeout": "timeout", "output_limit": "output_limit"}.get(
        result.killed_reason or "", "memory" if result.memory_error else "killed")
    if result.ok or (result.killed_reason is None and not result.memory_error):
        reason = "result"
    detail = keep_tail(result.result_error or result.stderr.strip(), STDERR_SHOWN_CHARS)
    raise CustomToolError(f"The custom tool {spec.name!r} returned no result: "
                          f"{outcome_text(report)}" + (f"\n{detail}" if detail else ""),
                          tool=spec.name, reason=reason, name=spec.skill)


def _shown(value: Any) -> str:
    return keep_tail(json.dumps(value, default=str), 200)


# ----------------------------------------------------------------- registration
def load_custom_tool(path: str | Path) -> dict[str, Any]:
    """Read, check and register (or re-register) the custom tool in ``path``.

    Returns:
        ``{"tool_name", "skill", "kind", "path", "parameters", "reloaded"}``.

    Raises:
        CustomToolError: The file is not a valid tool (its previous registration is
            dropped), its name is a built-in tool's, or another file holds the name.
    """
    file = str(Path(path).resolve())
    with _LOCK:
        try:
            spec = read_tool_spec(file)
        except CustomToolError:
            unload_custom_tool(file)
            raise
        _check_name_free(spec)
        previous = _BY_PATH.get(file)
        if previous is not None and previous != spec.name:
            TOOLS.remove(previous)
        TOOLS.add(spec.name, _tool_class(spec))
        _BY_PATH[file] = spec.name
    return {"tool_name": spec.name, "skill": spec.skill, "kind": spec.kind, "path": file,
            "parameters": list(spec.parameters["properties"]), "reloaded": previous is not None}


def loaded_custom_tools() -> dict[str, str]:
    """Every loaded tool file (its resolved path) and the name it registered."""
    with _LOCK:
        return dict(_BY_PATH)


def unload_custom_tool(path: str | Path) -> None:
    """Drop the tool ``path`` registered, if any."""
    with _LOCK:
        name = _BY_PATH.pop(str(Path(path).resolve()), None)
        if name is not None:
            TOOLS.remove(name)


def _check_name_free(spec: CustomToolSpec) -> None:
    owner = TOOLS.find(spec.name)
    builtin = owner is not None and not issubclass(owner, CustomTool)
    if builtin or TOOLS.canonical(spec.name) != spec.name:
        raise CustomToolError(f"{spec.skill}/{TOOL_FILE} names its tool {spec.name!r}, a "
                              "built-in tool's name; set TOOL_NAME to another name.",
                              name=spec.skill, tool=spec.name)
    if owner is None or owner.spec.path == spec.path:
        return
    mine, theirs = Path(spec.path), Path(owner.spec.path)
    if mine.parent.parent == theirs.parent.parent and theirs.is_file():
        raise CustomToolError(f"{spec.skill}/{TOOL_FILE} names its tool {spec.name!r}, which "
                              f"the skill {owner.spec.skill!r} of the same skills folder "
                              "already registered; give one of them another TOOL_NAME.",
                              name=spec.skill, tool=spec.name)
    _BY_PATH.pop(owner.spec.path, None)  # another run's folder: this run's load takes the name


def _tool_class(spec: CustomToolSpec) -> type[CustomTool]:
    metadata = ToolMetadata(name=spec.name, description=spec.description,
                            parameters=spec.parameters)
    class_name = "".join(part.title() for part in spec.name.split("_")) + "CustomTool"
    return type(class_name, (CustomTool,), {"spec": spec, "metadata": metadata,
                                             "__module__": __name__})


def discover_custom_tools(skill_manager: SkillManager) -> list[type[BaseTool]]:
    """Load the ``tool.py`` of every skill ``skill_manager`` offers, in skill-name order.

    Raises:
        CustomToolError: A tool file is invalid, takes a built-in tool's name, or two
            skills declare the same tool name (both are named).
    """
    specs: dict[str, CustomToolSpec] = {}
    for skill in skill_manager.list_skills():
        file = skill.directory / TOOL_FILE
        if not file.is_file():
            continue
        spec = read_tool_spec(file, skill.name)
        if spec.name in specs:
            raise CustomToolError(f"The skills {specs[spec.name].skill!r} and {skill.name!r} both "
                                  f"declare the tool {spec.name!r}; give one of them another "
                                  "TOOL_NAME.", name=skill.name, tool=spec.name)
        specs[spec.name] = spec
    return [TOOLS.get(load_custom_tool(spec.path)["tool_name"]) for spec in specs.values()]


def custom_tool_docs(skill_manager: SkillManager) -> dict[str, dict[str, str]]:
    """Runtime skills of the registered tools with docs (``get_doc``), by skill name.

    A custom tool's doc is listed only when its skill is one ``skill_manager``
    offers (from the same folder), so one run never sees another's tools.
    """
    directories = {str(skill.directory) for skill in skill_manager.list_skills()}
    docs: dict[str, dict[str, str]] = {}
    for name in TOOLS.names():
        tool_class = TOOLS.get(name)
        if issubclass(tool_class, CustomTool) and \
                str(Path(tool_class.spec.path).parent) not in directories:
            continue
        doc = tool_class.get_doc()
        if doc is not None:
            docs[doc["name"]] = doc
    return docs

