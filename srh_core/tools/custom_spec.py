"""What a custom tool (a skill's ``tool.py``) offers, read from its source without running it.

A custom tool is one file, ``tool.py``, in a skill folder::

    \"\"\"Optional module docstring: the tool's documentation (see CustomTool.get_doc).\"\"\"
    import numpy as np

    TOOL_NAME = "variable_range"   # optional; default: the skill name with '_' for '-'
    TOOL_KIND = "analysis"         # optional; "analysis" (default) or "formula"

    def run(data, variable: str, quantile: float = 0.5) -> dict:
        \"\"\"Summarise one variable of the training rows.

        Args:
            variable: The variable's name.
            quantile: Which quantile to report, in [0, 1].
        \"\"\"
        values = data[variable]
        return {"min": values.min(), "quantile": np.quantile(values, quantile)}

The schema the model sees comes from the module's syntax tree (:mod:`ast`),
never from importing it: ``TOOL_NAME`` / ``TOOL_KIND`` must be string
literals; ``run``'s docstring gives the description (the text before
``Args:``) and the argument descriptions; its annotations give the JSON
types, from a fixed table (``str``, ``int``, ``float``, ``bool``, ``list``,
``dict``, ``list[X]``, ``dict[str, X]``, ``X | None``, ``Optional[X]``,
``Literal[...]``; none means any JSON value) and its literal defaults the
defaults. Two parameter names are filled by the harness and hidden from the
model: ``data`` (every variable of the training rows, by name, as numpy
arrays) and ``target`` (the target's name). A ``"formula"`` tool returns
``{"formula": "<engine formula>", ...}``; the harness parses and scores that
formula (it becomes a candidate, as an ``evaluate_formula`` result does).
"""

from __future__ import annotations

import ast
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from srh_core.skills.errors import CustomToolError
from srh_core.tools.schema import annotation_schema, split_docstring

TOOL_FILE = "tool.py"
ENTRY_FUNCTION = "run"
TOOL_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
RESERVED_PARAMETERS = ("data", "target")
MAX_TOOL_SOURCE_CHARS = 64_000
MAX_DESCRIPTION_CHARS = 2_000

ToolKind = Literal["analysis", "formula"]
KINDS: tuple[str, ...] = typing.get_args(ToolKind)
_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "list": list,
                          "dict": dict, "Any": Any, "None": type(None)}
_GENERICS: dict[str, Any] = {"list": list, "List": list, "dict": dict, "Dict": dict}


@dataclass(frozen=True, slots=True)
class CustomToolSpec:
    """A custom tool as its source declares it.

    Attributes:
        name: The tool's registered name.
        kind: "analysis" (the result is returned as it is) or "formula" (the
            returned formula is scored).
        description: What the model reads about the tool.
        parameters: JSON object schema of the model's arguments.
        reserved: The harness-filled parameters ``run`` takes (``data``, ``target``).
        source: The module's text (what runs in the sandbox).
        path: The file the source came from ("" for a draft not written yet).
        skill: The skill folder's name.
        doc: The module docstring ("" when none).
    """

    name: str
    kind: ToolKind
    description: str
    parameters: dict[str, Any]
    reserved: tuple[str, ...]
    source: str
    path: str
    skill: str
    doc: str = ""


def read_tool_spec(path: str | Path, skill: str | None = None) -> CustomToolSpec:
    """The spec of a ``tool.py`` file (``skill`` defaults to its folder's name).

    Raises:
        CustomToolError: Unreadable, too long, or not a valid tool module.
    """
    file = Path(path)
    skill = skill or file.parent.name
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CustomToolError(f"Cannot read the custom tool {file}: {error}", name=skill,
                              path=str(file)) from None
    return parse_tool_source(source, skill, str(file.resolve()))


def parse_tool_source(source: str, skill: str, path: str = "") -> CustomToolSpec:
    """The spec ``source`` declares, checked; nothing of it runs.

    Args:
        source: The text of ``tool.py``.
        skill: The skill folder's name (gives the default tool name and messages).
        path: Where the source lives, or "" for a draft.

    Raises:
        CustomToolError: A syntax error, no ``run`` function, a bad name or kind,
            a parameter type the table does not know, or a non-literal default.
    """
    shown = f"{skill}/{TOOL_FILE}"
    if len(source) > MAX_TOOL_SOURCE_CHARS:
        raise _error(shown, f"has {len(source)} characters; at most {MAX_TOOL_SOURCE_CHARS}.")
    try:
        module = ast.parse(source, filename=shown)
    except SyntaxError as error:
        raise _error(shown, f"is not valid Python: {error.msg} (line {error.lineno}).") from None
    constants = _string_constants(module, shown)
    name = constants.get("TOOL_NAME", skill.replace("-", "_"))
    if not TOOL_NAME_PATTERN.match(name):
        raise _error(shown, f"names the tool {name!r}; a tool name is a lowercase letter, then "
                     "lowercase letters, digits or '_' (at most 64), e.g. 'variable_range'.")
    kind = constants.get("TOOL_KIND", "analysis")
    if kind not in KINDS:
        raise _error(shown, f"has TOOL_KIND {kind!r}; it must be one of {', '.join(KINDS)}.")
    entry = _entry_function(module, shown)
    description, arguments = _docstring_parts(ast.get_docstring(entry) or "")
    if not description:
        raise _error(shown, f"{ENTRY_FUNCTION}() needs a docstring: what the tool does, then "
                     "'Args:' describing each parameter.")
    parameters, reserved = _parameters(entry, arguments, shown)
    return CustomToolSpec(name, kind, description[:MAX_DESCRIPTION_CHARS],  # type: ignore[arg-type]
                          parameters, reserved, source, path, skill,
                          ast.get_docstring(module) or "")


def _error(shown: str, message: str) -> CustomToolError:
    return CustomToolError(f"{shown} {message}", name=shown.split("/")[0], path=shown)


def _string_constants(module: ast.Module, shown: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in module.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for target in targets:
            if isinstance(target, ast.Name) and target.id in ("TOOL_NAME", "TOOL_KIND"):
                value = getattr(node, "value", None)
                if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                    raise _error(shown, f"must set {target.id} to a string literal.")
                found[target.id] = value.value
    return found


def _entry_function(module: ast.Module, shown: str) -> ast.FunctionDef:
    entries = [node for node in module.body
               if isinstance(node, ast.FunctionDef) and node.name == ENTRY_FUNCTION]
    if not entries:
        asynchronous = any(isinstance(node, ast.AsyncFunctionDef) for node in module.body)
        raise _error(shown, f"must define a module-level function `def {ENTRY_FUNCTION}(data, "
                     "...)`" + (" (not async)." if asynchronous else "."))
    if len(entries) > 1:
        raise _error(shown, f"defines {ENTRY_FUNCTION}() {len(entries)} times; keep one.")
    return entries[0]


def _docstring_parts(docstring: str) -> tuple[str, dict[str, str]]:
    """(description, {argument: description}) of a Google-style docstring."""
    holder = type("Doc", (), {"__doc__": docstring})
    return split_docstring(holder)  # type: ignore[arg-type]


def _parameters(entry: ast.FunctionDef, descriptions: dict[str, str], shown: str
                ) -> tuple[dict[str, Any], tuple[str, ...]]:
    arguments = entry.args
    if arguments.vararg or arguments.kwarg or arguments.posonlyargs:
        raise _error(shown, f"{ENTRY_FUNCTION}() may take only named parameters (no *args, "
                     "**kwargs or positional-only ones).")
    plain = list(arguments.args)
    defaults: list[ast.expr | None] = [None] * (len(plain) - len(arguments.defaults))
    pairs = [*zip(plain, defaults + list(arguments.defaults), strict=True),
             *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]
    properties: dict[str, Any] = {}
    required: list[str] = []
    reserved: list[str] = []
    for argument, default in pairs:
        if argument.arg in RESERVED_PARAMETERS:
            reserved.append(argument.arg)
            continue
        where = f"{shown}: {ENTRY_FUNCTION}({argument.arg})"
        schema = annotation_schema(_annotation(argument.annotation, where), where)
        if argument.arg in descriptions:
            schema["description"] = descriptions[argument.arg]
        if default is None:
            required.append(argument.arg)
        else:
            value = _literal(default, where)
            if value is not None:
                schema["default"] = value
        properties[argument.arg] = schema
    return {"type": "object", "properties": properties, "required": required}, tuple(reserved)


def _literal(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise CustomToolError(f"{where}: a default value must be a literal (a number, text, "
                              "True/False/None, or a list or dict of them).") from None


def _annotation(node: ast.expr | None, where: str) -> Any:
    """The Python type an annotation's syntax names, from the fixed table."""
    if node is None:
        return Any
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "str" written quoted
        return _annotation(ast.parse(node.value, mode="eval").body, where)
    if isinstance(node, ast.Constant) and node.value is None:
        return type(None)
    if isinstance(node, ast.Name) and node.id in _TYPES:
        return _TYPES[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return typing.Union[_annotation(node.left, where),  # noqa: UP007 - built from syntax
                            _annotation(node.right, where)]
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name | ast.Attribute):
        return _subscript(node, where)
    raise CustomToolError(f"{where}: the annotation {ast.unparse(node)!r} is not one a custom "
                          "tool may use: str, int, float, bool, list, dict, list[X], "
                          "dict[str, X], X | None, Optional[X] or Literal[...].")


def _subscript(node: ast.Subscript, where: str) -> Any:
    head = node.value.id if isinstance(node.value, ast.Name) else node.value.attr  # type: ignore[union-attr]
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if head == "Literal":
        values = tuple(_literal(item, where) for item in items)
        return Literal.__getitem__(values)  # type: ignore[attr-defined]
    if head == "Optional" and len(items) == 1:
        return typing.Optional[_annotation(items[0], where)]  # noqa: UP045 - built from syntax
    if head in _GENERICS:
        return _GENERICS[head][tuple(_annotation(item, where) for item in items)] \
            if len(items) > 1 else _GENERICS[head][_annotation(items[0], where)]
    raise CustomToolError(f"{where}: the annotation {ast.unparse(node)!r} is not one a custom "
                          "tool may use: list[X], dict[str, X], Optional[X] or Literal[...].")
