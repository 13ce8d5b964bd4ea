"""Parsing of the parameter builders ``param(...)`` and ``grouped_param(...)``.

These are the only calls that take keyword arguments and string literals
(the parameter name); everything else about them goes through the parser's
dispatch table like any other sub-expression.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, Protocol

from .errors import ParseError
from .nodes import Expression, GroupedParameter, Number, Parameter

__all__ = ["PARAMETER_CALLS"]


class _Visitor(Protocol):
    def visit(self, node: ast.AST, depth: int) -> Expression: ...

    def error(self, node: ast.AST | None, construct: str, detail: str,
              hint: str = "") -> ParseError: ...

    def snippet(self, node: ast.AST) -> str: ...


_SIGNATURES: dict[str, tuple[tuple[str, ...], int]] = {
    # builder -> (parameter names, how many may be passed positionally)
    "param": (("name", "value"), 2),
    "grouped_param": (("by", "name", "value", "default"), 1),
}

_USAGE = {
    "param": 'param("a"), param("a", 1.5) or param("a", value=1.5)',
    "grouped_param": 'grouped_param(label, name="k", value={0: 1.0, 1: 2.0}, default=1.0)',
}


def _bind(parser: _Visitor, node: ast.Call, builder: str) -> dict[str, ast.expr]:
    names, positional = _SIGNATURES[builder]
    usage = f"; usage: {_USAGE[builder]}"
    if any(isinstance(arg, ast.Starred) for arg in node.args) or len(node.args) > positional:
        raise parser.error(node, "argument count", f"{builder}() takes at most {positional} "
                           f"positional argument(s), got {len(node.args)}", usage)
    bound = dict(zip(names, node.args, strict=False))
    for keyword in node.keywords:
        if keyword.arg not in names:
            shown = f"**{parser.snippet(keyword.value)}" if keyword.arg is None else keyword.arg
            raise parser.error(keyword, "keyword argument",
                               f"unsupported keyword argument `{shown}` of {builder}()", usage)
        if keyword.arg in bound:
            raise parser.error(keyword, "keyword argument",
                               f"{builder}() got {keyword.arg!r} twice", usage)
        bound[keyword.arg] = keyword.value
    return bound


def _name(parser: _Visitor, node: ast.Call, argument: ast.expr | None, builder: str,
          required: bool) -> str | None:
    if argument is None:
        if required:
            raise parser.error(node, "argument count", f"{builder}() needs a name",
                               f"; usage: {_USAGE[builder]}")
        return None
    value = argument.value if isinstance(argument, ast.Constant) else None
    if not isinstance(value, str) or not value.isidentifier() or value.startswith("__"):
        raise parser.error(argument, "parameter name", f"{builder}() name must be a string "
                           f"literal holding an identifier, got `{parser.snippet(argument)}`",
                           f"; usage: {_USAGE[builder]}")
    return value


def _number(parser: _Visitor, argument: ast.expr | None, depth: int, builder: str,
            field: str) -> float | None:
    if argument is None:
        return None
    value = parser.visit(argument, depth)
    if not isinstance(value, Number):
        raise parser.error(argument, "parameter value", f"{builder}() {field} must be a number "
                           f"literal, got `{parser.snippet(argument)}`",
                           f"; usage: {_USAGE[builder]}")
    return float(value.value)


def _category(parser: _Visitor, key: ast.expr | None) -> Any:
    negative = isinstance(key, ast.UnaryOp) and isinstance(key.op, ast.USub)
    literal = key.operand if negative else key
    if isinstance(literal, ast.Constant) and isinstance(literal.value, str | int | float) and \
            not (negative and isinstance(literal.value, str | bool)):
        return -literal.value if negative else literal.value
    raise parser.error(key, "category label", "grouped_param() value keys must be number or "
                       f"string literals, got `{parser.snippet(key) if key else '**'}`",
                       f"; usage: {_USAGE['grouped_param']}")


def _group_values(parser: _Visitor, argument: ast.expr | None, depth: int,
                  ) -> dict[Any, float] | None:
    if argument is None:
        return None
    if not isinstance(argument, ast.Dict):
        raise parser.error(argument, "parameter value", "grouped_param() value must be a dict "
                           f"literal, got `{parser.snippet(argument)}`",
                           f"; usage: {_USAGE['grouped_param']}")
    return {_category(parser, key): _number(parser, value, depth, "grouped_param", "value")
            for key, value in zip(argument.keys, argument.values, strict=True)}


def _parse_param(parser: _Visitor, node: ast.Call, depth: int) -> Expression:
    bound = _bind(parser, node, "param")
    name = _name(parser, node, bound.get("name"), "param", required=True)
    return Parameter(str(name), _number(parser, bound.get("value"), depth, "param", "value"))


def _parse_grouped(parser: _Visitor, node: ast.Call, depth: int) -> Expression:
    bound = _bind(parser, node, "grouped_param")
    if "by" not in bound:
        raise parser.error(node, "argument count", "grouped_param() needs a label expression",
                           f"; usage: {_USAGE['grouped_param']}")
    return GroupedParameter(
        parser.visit(bound["by"], depth),
        _name(parser, node, bound.get("name"), "grouped_param", required=False),
        _group_values(parser, bound.get("value"), depth),
        _number(parser, bound.get("default"), depth, "grouped_param", "default"),
    )


PARAMETER_CALLS: dict[str, Callable[[Any, ast.Call, int], Expression]] = {
    "param": _parse_param,
    "grouped_param": _parse_grouped,
}
"""Builder name -> handler; consulted by the parser's ``ast.Call`` handler."""
