"""Parsing of the structured syntax: ``x[i]``, ``sum[j](...)``, ``gather``, ``aggr``, ``delay``.

The parser's ``ast.Subscript`` handler and the calls named here come through
the parser's single dispatch table; every sub-expression is visited by the
parser as usual. Subscripts hold index *names* only: ``x[0]``, ``x[0:10]``
and ``x[i + 1]`` are rejected with the reason.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, Protocol

from .desugaring import split_relation_factor
from .errors import ExpressionError, ParseError
from .graph_nodes import Aggregate, Delay, Gather, Index, Indexed, Reduction, RelationLift
from .nodes import Expression

__all__ = ["REDUCTION_NAME", "STRUCTURE_CALLS", "STRUCTURE_NAMES", "visit_reduction",
           "visit_subscript"]

REDUCTION_NAME = "sum"

_USAGE = {
    "sum": "sum[j](A[i, j], f) or sum[j](f)",
    "gather": "gather(A[i, j], f)",
    "aggr": "aggr(A, sour(x) - targ(x)) or aggr(A * sour(x))",
    "sour": "sour(x) or sour(A, x), inside aggr(...)",
    "targ": "targ(x) or targ(A, x), inside aggr(...)",
    "delay": "delay(x, tau)",
}


class _Visitor(Protocol):
    def visit(self, node: ast.AST, depth: int) -> Expression: ...

    def error(self, node: ast.AST | None, construct: str, detail: str,
              hint: str = "") -> ParseError: ...

    def snippet(self, node: ast.AST) -> str: ...


def _index_names(parser: _Visitor, node: ast.Subscript, what: str) -> tuple[Index, ...]:
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    indices = []
    for item in items:
        if not isinstance(item, ast.Name) or item.id.startswith("__"):
            raise parser.error(node, "subscript", f"{what} takes symbolic index names, got "
                               f"`{parser.snippet(item)}`", "; write x[i] or A[i, j]: integer "
                               "positions, slices and expressions are not allowed")
        indices.append(Index(item.id))
    names = [index.name for index in indices]
    if len(set(names)) != len(names):
        raise parser.error(node, "subscript", f"{what} repeats an index in "
                           f"[{', '.join(names)}]", "; each index may appear once")
    return tuple(indices)


def visit_subscript(parser: _Visitor, node: ast.Subscript, depth: int) -> Expression:
    """``x[i]``, ``A[i, j]``, ``gather(...)[i, j]``: an :class:`Indexed` node."""
    if isinstance(node.value, ast.Name) and node.value.id == REDUCTION_NAME:
        raise parser.error(node, "reduction", "sum[...] must be called", f"; usage: "
                           f"{_USAGE['sum']}")
    indices = _index_names(parser, node, "an index")
    return Indexed(parser.visit(node.value, depth), indices)


def visit_reduction(parser: _Visitor, node: ast.Call, depth: int) -> Expression:
    """``sum[j](f)`` or ``sum[j](A[i, j], f)``."""
    func = node.func
    if not isinstance(func, ast.Subscript):  # the parser routes only sum[...](...) here
        raise TypeError("visit_reduction() needs a call of sum[...]")
    indices = _index_names(parser, func, "sum[...]")
    arguments = _positional(parser, node, "sum", (1, 2), depth)
    if len(arguments) == 1:
        return Reduction(indices, arguments[0])
    return Reduction(indices, arguments[1], arguments[0])


def _positional(parser: _Visitor, node: ast.Call, name: str, counts: tuple[int, ...],
                depth: int) -> list[Expression]:
    if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
        raise parser.error(node, "keyword argument", f"{name}() takes positional arguments "
                           "only", f"; usage: {_USAGE[name]}")
    if len(node.args) not in counts:
        expected = " or ".join(str(count) for count in counts)
        raise parser.error(node, "argument count", f"{name}() takes {expected} argument(s), "
                           f"got {len(node.args)}", f"; usage: {_USAGE[name]}")
    return [parser.visit(arg, depth) for arg in node.args]


def _gather(parser: _Visitor, node: ast.Call, depth: int) -> Expression:
    relation, operand = _positional(parser, node, "gather", (2,), depth)
    return Gather(relation, operand)


def _aggregate(parser: _Visitor, node: ast.Call, depth: int) -> Expression:
    arguments = _positional(parser, node, "aggr", (1, 2), depth)
    if len(arguments) == 2:
        return Aggregate(arguments[0], arguments[1])
    try:
        return Aggregate(*split_relation_factor(arguments[0]))
    except ExpressionError as error:
        raise parser.error(node, "aggr", str(error)) from None


def _lift(role: str) -> Callable[[_Visitor, ast.Call, int], Expression]:
    name = "targ" if role == "target" else "sour"

    def visit(parser: _Visitor, node: ast.Call, depth: int) -> Expression:
        arguments = _positional(parser, node, name, (1, 2), depth)
        if len(arguments) == 1:
            return RelationLift(role, arguments[0])  # type: ignore[arg-type]
        return RelationLift(role, arguments[1], arguments[0])  # type: ignore[arg-type]

    return visit


def _delay(parser: _Visitor, node: ast.Call, depth: int) -> Expression:
    value, delta = _positional(parser, node, "delay", (2,), depth)
    return Delay(value, delta)


STRUCTURE_CALLS: dict[str, Callable[[Any, ast.Call, int], Expression]] = {
    "gather": _gather,
    "aggr": _aggregate,
    "sour": _lift("source"),
    "targ": _lift("target"),
    "delay": _delay,
}
"""Call name -> handler; consulted by the parser's ``ast.Call`` handler."""

STRUCTURE_NAMES = frozenset({*STRUCTURE_CALLS, REDUCTION_NAME})
"""Names reserved by the structured syntax (not usable as variables)."""
