"""JSON schemas for tools, built from ``execute()``'s signature and docstring.

The schema is built and checked once, when a tool class is registered: an
annotation we cannot express is a programmer error reported at import of the
tool module, not a surprise in the middle of a run. The same schema then
validates (and gently coerces) the arguments a model sends.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from srh_core.errors import ToolArgumentError, ToolError, did_you_mean

_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def split_docstring(func: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """Return (description before the sections, {argument: description}).

    Google style: the text before ``Args:`` describes the tool; each
    ``name: text`` line in ``Args:`` starts an argument description, and
    deeper-indented lines continue it.
    """
    lines = inspect.cleandoc(func.__doc__ or "").splitlines()
    description: list[str] = []
    arguments: dict[str, list[str]] = {}
    section, current, indent = None, None, 0
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            current, indent = _read_arg_line(line, arguments, current, indent)
    text = "\n".join(description).strip()
    return text, {name: " ".join(words).strip() for name, words in arguments.items()}


def _read_arg_line(
    line: str, arguments: dict[str, list[str]], current: str | None, indent: int
) -> tuple[str | None, int]:
    if not line.strip():
        return current, indent
    line_indent = len(line) - len(line.lstrip())
    match = _ARG_LINE.match(line)
    if match and (current is None or line_indent <= indent):
        name = match.group(1).lstrip("*")
        arguments[name] = [match.group(3)]
        return name, line_indent
    if current is not None:
        arguments[current].append(line.strip())
    return current, indent


def annotation_schema(annotation: Any, where: str) -> dict[str, Any]:
    """Convert a type annotation into a JSON-schema fragment.

    Supports str, int, float, bool, None, Any, list[...], tuple[...],
    dict[str, ...], Optional/Union and Literal (as enum).

    Raises:
        ToolError: For annotations the schema cannot express.
    """
    if annotation is Any or annotation is inspect.Parameter.empty:
        return {}
    if annotation is type(None):
        return {"type": "null"}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return _literal_schema(args, where)
    if origin in (Union, types.UnionType):
        return _union_schema(args, where)
    if annotation in (list, tuple) or origin in (list, tuple):
        return _sequence_schema(origin or annotation, args, where)
    if annotation is dict or origin in (dict, Mapping):
        values = annotation_schema(args[1], where) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    raise ToolError(f"{where}: the type hint {annotation!r} cannot be expressed as a JSON "
                    "schema; use str, int, float, bool, list[...], dict[str, ...], "
                    "Optional, Union or Literal, or declare ToolMetadata.parameters.")


def _literal_schema(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    kinds = {type(value) for value in args}
    if len(kinds) != 1 or next(iter(kinds)) not in _SCALARS:
        raise ToolError(f"{where}: Literal values must share one scalar type; got {args!r}.")
    return {"type": _SCALARS[next(iter(kinds))], "enum": list(args)}


def _union_schema(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    options = [annotation_schema(arg, where) for arg in args]
    if any(not option for option in options):
        return {}
    non_null = [option for option in options if option != {"type": "null"}]
    if len(non_null) == 1:
        return {**non_null[0], "nullable": True} if len(options) > 1 else non_null[0]
    return {"anyOf": options}


def _sequence_schema(kind: Any, args: tuple[Any, ...], where: str) -> dict[str, Any]:
    if kind is tuple and args and args[-1] is not Ellipsis:
        items = [annotation_schema(arg, where) for arg in args]
        return {"type": "array", "prefixItems": items, "minItems": len(items),
                "maxItems": len(items)}
    item = annotation_schema(args[0], where) if args else {}
    return {"type": "array", "items": item} if item else {"type": "array"}


def infer_parameters(func: Callable[..., Any], where: str) -> dict[str, Any]:
    """Build the object schema of ``func``'s keyword-callable parameters."""
    hints = typing.get_type_hints(func)
    _, descriptions = split_docstring(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(func).parameters.items():
        if name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        schema = annotation_schema(hints.get(name, Any), f"{where}({name})")
        if name in descriptions:
            schema["description"] = descriptions[name]
        if parameter.default is parameter.empty:
            required.append(name)
        elif _json_default(parameter.default):
            schema["default"] = parameter.default
        properties[name] = schema
    return {"type": "object", "properties": properties, "required": required}


def _json_default(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return value is not None


def validate_arguments(schema: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Check model arguments against an object schema, coercing obvious mistakes.

    Coercions: integral floats and numeric strings to integers, numeric
    strings to numbers, "true"/"false" to booleans, a JSON string holding a
    list or object to that value, a scalar to a one-element list.

    Raises:
        ToolArgumentError: For unknown or missing arguments and wrong types;
            the message lists the expected arguments.
    """
    if not isinstance(params, Mapping):
        raise ToolArgumentError(
            f"Tool arguments must be a JSON object; got {type(params).__name__}."
        )
    properties = schema.get("properties", {})
    expected = _expected_text(schema)
    for name in params:
        if name not in properties and not schema.get("additionalProperties", False):
            raise ToolArgumentError(
                f"Unknown argument {name!r}.{did_you_mean(name, properties)} "
                f"Expected arguments: {expected}.", parameter=name)
    missing = [name for name in schema.get("required", []) if name not in params]
    if missing:
        raise ToolArgumentError(
            f"Missing required argument(s) {', '.join(map(repr, missing))}. "
            f"Expected arguments: {expected}.", parameter=missing[0])
    return {name: coerce(properties.get(name, {}), value, name) for name, value in params.items()}


def _expected_text(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required", []))
    names = [f"{name}{'' if name in required else '?'}" for name in schema.get("properties", {})]
    return ", ".join(names) + " (? = optional)" if names else "none"


def coerce(schema: Mapping[str, Any], value: Any, name: str) -> Any:
    """Coerce one value to its schema fragment, or raise ToolArgumentError."""
    if value is None and (schema.get("nullable") or not schema):
        return None
    if "anyOf" in schema:
        return _coerce_any_of(schema["anyOf"], value, name)
    kind = schema.get("type")
    converted = _COERCERS[kind](value, name) if kind in _COERCERS else value
    if "enum" in schema and converted not in schema["enum"]:
        raise ToolArgumentError(
            f"Argument {name!r} must be one of {schema['enum']}; got {value!r}.", parameter=name)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        converted = [coerce(schema["items"], item, f"{name}[{i}]")
                     for i, item in enumerate(converted)]
    return converted


def _coerce_any_of(options: list[Mapping[str, Any]], value: Any, name: str) -> Any:
    for option in options:
        try:
            return coerce(option, value, name)
        except ToolArgumentError:
            continue
    kinds = "/".join(str(option.get("type", "any")) for option in options)
    raise ToolArgumentError(f"Argument {name!r} must be {kinds}; got {value!r}.", parameter=name)


def _type_error(name: str, kind: str, value: Any) -> ToolArgumentError:
    return ToolArgumentError(
        f"Argument {name!r} must be {kind}; got {type(value).__name__} {value!r:.80}.",
        parameter=name)


def _to_integer(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise _type_error(name, "an integer", value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return int(value)
    raise _type_error(name, "an integer", value)


def _to_number(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise _type_error(name, "a number", value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise _type_error(name, "a number", value)


def _to_boolean(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise _type_error(name, "a boolean", value)


def _to_string(value: Any, name: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise _type_error(name, "a string", value)


def _to_array(value: Any, name: str) -> list[Any]:
    if isinstance(value, str):
        decoded = _json_or_none(value)
        if isinstance(decoded, list):
            return decoded
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, (int, float)):
        return [value]
    raise _type_error(name, "a list", value)


def _to_object(value: Any, name: str) -> dict[str, Any]:
    decoded = _json_or_none(value) if isinstance(value, str) else value
    if isinstance(decoded, Mapping):
        return dict(decoded)
    raise _type_error(name, "an object", value)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


_COERCERS: dict[str, Callable[[Any, str], Any]] = {
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "string": _to_string,
    "array": _to_array,
    "object": _to_object,
}
