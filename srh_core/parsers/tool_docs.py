"""Turn tool metadata into text a model can read, and into native schemas.

Tools reach a parser in several shapes: a :class:`ToolMetadata`, a tool
instance or class with a ``metadata`` attribute, or a plain mapping with
``name``/``description``/``parameters``. :func:`tool_metadata` normalises
all of them, so the parsers only deal with ``ToolMetadata``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeAlias

from srh_core.errors import ConfigurationError
from srh_core.types import ToolMetadata

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_EXAMPLE_BY_TYPE: dict[str, Any] = {
    "string": "...",
    "number": 1.0,
    "integer": 1,
    "boolean": True,
    "array": [],
    "object": {},
}


class HasMetadata(Protocol):
    """Anything that exposes tool metadata (a tool instance or class)."""

    metadata: ToolMetadata


ToolLike: TypeAlias = "ToolMetadata | HasMetadata | Mapping[str, Any]"


def tool_metadata(tool: ToolLike) -> ToolMetadata:
    """Return the :class:`ToolMetadata` of a tool-like object.

    Args:
        tool: A ``ToolMetadata``, an object with a ``metadata`` attribute, or a
            mapping with at least ``name``.

    Returns:
        The metadata.

    Raises:
        ConfigurationError: When the object carries no tool name.
    """
    if isinstance(tool, ToolMetadata):
        return tool
    metadata = getattr(tool, "metadata", None)
    if isinstance(metadata, ToolMetadata):
        return metadata
    if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
        return ToolMetadata(tool["name"], tool.get("description"), tool.get("parameters"))
    raise ConfigurationError(
        "A tool must be a ToolMetadata, have a 'metadata: ToolMetadata' attribute, or be a "
        f"mapping with a 'name'. Got {type(tool).__name__} instead.",
        setting="tools",
    )


def schema_of(metadata: ToolMetadata) -> dict[str, Any]:
    """The tool's parameter schema, or an empty object schema when it has none."""
    return dict(metadata.parameters) if metadata.parameters else dict(EMPTY_SCHEMA)


def openai_function(metadata: ToolMetadata) -> dict[str, Any]:
    """Return the Chat Completions function-tool entry for one tool."""
    return {
        "type": "function",
        "function": {
            "name": metadata.name,
            "description": metadata.description or "",
            "parameters": schema_of(metadata),
        },
    }


def render_tool_section(metadata: ToolMetadata) -> str:
    """Render one tool as a Markdown section: description and one line per parameter."""
    lines = [f"### {metadata.name}", (metadata.description or "(no description)").strip()]
    schema = schema_of(metadata)
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    if not properties:
        lines.append("Arguments: none (use {}).")
        return "\n".join(lines)
    lines.append("Arguments:")
    for name, spec in properties.items():
        lines.append(_parameter_line(name, spec if isinstance(spec, Mapping) else {}, required))
    return "\n".join(lines)


def _parameter_line(name: str, spec: Mapping[str, Any], required: set[str]) -> str:
    facts = [_type_label(spec), "required" if name in required else "optional"]
    if "default" in spec:
        facts.append(f"default {json.dumps(spec['default'])}")
    if "enum" in spec:
        facts.append("one of " + ", ".join(json.dumps(value) for value in spec["enum"]))
    description = str(spec.get("description") or "").strip()
    return f"- {name} ({', '.join(facts)})" + (f": {description}" if description else "")


def _type_label(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array" and isinstance(spec.get("items"), Mapping):
        return f"array of {_type_label(spec['items'])}"
    if kind is None and isinstance(spec.get("anyOf"), list):
        return " or ".join(_type_label(option) for option in spec["anyOf"])
    return str(kind or "any")


def example_arguments(metadata: ToolMetadata) -> dict[str, Any]:
    """Build plausible example arguments: required parameters, else the first one."""
    schema = schema_of(metadata)
    properties = schema.get("properties") or {}
    names = [name for name in schema.get("required") or [] if name in properties]
    names = names or list(properties)[:1]
    return {name: _example_value(properties[name]) for name in names}


def _example_value(spec: Any) -> Any:
    if not isinstance(spec, Mapping):
        return "..."
    for key in ("examples", "enum"):
        if isinstance(spec.get(key), list) and spec[key]:
            return spec[key][0]
    if "default" in spec:
        return spec["default"]
    kind = spec.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    return _EXAMPLE_BY_TYPE.get(str(kind), "...")


def render_tool_catalog(tools: Iterable[ToolMetadata]) -> str:
    """Render every tool's section, separated by blank lines."""
    return "\n\n".join(render_tool_section(metadata) for metadata in tools)
