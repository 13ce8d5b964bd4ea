"""Tree queries and rewrites: parameters, folding, replacement, metrics."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .errors import EvaluationError
from .evaluation import Env, evaluate, group_labels
from .nodes import (
    Binary,
    Expression,
    Function,
    GroupedParameter,
    Number,
    Parameter,
    Symbol,
    Unary,
    map_postorder,
)

__all__ = [
    "bind_parameters",
    "complexity",
    "copy",
    "count_parameters",
    "fold_constants",
    "map_postorder",
    "parameter_values",
    "replace",
    "symbols",
    "unbound_parameters",
]

MAX_EXACT_INTEGER = 2**53
"""Folded integer results at or above this magnitude stay floats."""

_INTEGER_PRESERVING = frozenset({"+", "-", "*"})


def copy(expression: Expression) -> Expression:
    """Return a deep copy: equal tree, no node object shared with the input.

    Args:
        expression: The tree to copy.

    Returns:
        The copy.
    """
    return map_postorder(expression, lambda node: dataclasses.replace(node))


def replace(expression: Expression, old: Expression, new: Expression) -> Expression:
    """Replace every occurrence of the *object* ``old`` (identity, not equality).

    Subtrees that are merely equal to ``old`` are left alone, so one
    occurrence of ``x`` can be replaced while another stays.

    Args:
        expression: The tree to rewrite.
        old: The node object to replace.
        new: Its replacement.

    Returns:
        The rewritten tree (the input itself when ``old`` does not occur).
    """
    if expression is old:
        return new
    children = expression.operands
    if not children:
        return expression
    new_children = tuple(replace(child, old, new) for child in children)
    if all(a is b for a, b in zip(new_children, children, strict=True)):
        return expression
    return expression.with_operands(new_children)


def _folded_number(node: Expression, value: float) -> Number:
    operands = node.operands
    integer_operands = all(isinstance(o, Number) and isinstance(o.value, int) for o in operands)
    operator = getattr(node, "operator", None)
    keeps_integers = operator in _INTEGER_PRESERVING or isinstance(node, Unary) or (
        operator == "**" and isinstance(operands[-1], Number) and operands[-1].value >= 0)
    if integer_operands and keeps_integers and value.is_integer() and \
            abs(value) < MAX_EXACT_INTEGER:
        return Number(int(value))
    return Number(value)


def _fold_node(node: Expression) -> Expression:
    if not isinstance(node, Binary | Unary | Function):
        return node
    if not all(isinstance(operand, Number) for operand in node.operands):
        return node
    value = evaluate(node)
    if not math.isfinite(value):
        return node
    return _folded_number(node, value)


def fold_constants(expression: Expression) -> Expression:
    """Evaluate closed numeric subtrees, without reordering terms.

    ``(2 + 3)*x`` becomes ``5*x``; ``2*x*3`` stays (it is ``(2*x)*3``).
    Integer arithmetic on integer literals stays integer (``2**3`` -> ``8``);
    anything else becomes a float. A subtree whose value is not finite
    (``log(0)``) is kept as written.

    Args:
        expression: The tree to simplify.

    Returns:
        The folded tree.
    """
    return map_postorder(expression, _fold_node)


def _bind_node(node: Expression, parameters: Mapping[str, Any]) -> Expression:
    if isinstance(node, Parameter) and node.name in parameters:
        return Parameter(node.name, float(parameters[node.name]))
    if isinstance(node, GroupedParameter) and node.family in parameters:
        given = parameters[node.family]
        if isinstance(given, Mapping):
            return dataclasses.replace(node, value=given)
        return dataclasses.replace(node, default=float(given))
    return node


def bind_parameters(expression: Expression, parameters: Mapping[str, Any]) -> Expression:
    """Return a tree whose parameter nodes carry the given values.

    Names absent from the tree are ignored. A grouped family takes a
    ``{category: value}`` mapping (or a scalar, which becomes its default).

    Args:
        expression: The tree.
        parameters: Parameter name (or grouped family) -> value.

    Returns:
        The tree with values bound.
    """
    return map_postorder(expression, lambda node: _bind_node(node, parameters))


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def unbound_parameters(expression: Expression) -> list[str]:
    """Names of parameters without a value, unique, in first-appearance order.

    A grouped family counts as unbound when it has neither values nor default.

    Args:
        expression: The tree.

    Returns:
        The parameter names.
    """
    names = []
    for node in expression.iter_preorder():
        if isinstance(node, Parameter) and node.value is None:
            names.append(node.name)
        elif isinstance(node, GroupedParameter) and node.value is None and node.default is None:
            names.append(node.family)
    return _unique(names)


def parameter_values(expression: Expression) -> dict[str, Any]:
    """Values already bound into the tree's parameters.

    Args:
        expression: The tree.

    Returns:
        Parameter name -> float; grouped family -> ``{category: float}``.
    """
    values: dict[str, Any] = {}
    for node in expression.iter_preorder():
        if isinstance(node, Parameter) and node.value is not None:
            values.setdefault(node.name, node.value)
        elif isinstance(node, GroupedParameter) and node.value is not None:
            values.setdefault(node.family, dict(node.value))
    return values


def _category_count(node: GroupedParameter, values: Mapping[str, Any] | None,
                    parameters: Mapping[str, Any] | None) -> int:
    if values is not None:
        try:
            return len(np.unique(group_labels(node, Env(values, parameters))))
        except EvaluationError:  # labels not in ``values``: fall back to known values
            pass
    given = (parameters or {}).get(node.family)
    if isinstance(given, Mapping):
        return len(given)
    return len(node.value) if node.value else 1


def count_parameters(
    expression: Expression,
    values: Mapping[str, Any] | None = None,
    *,
    parameters: Mapping[str, Any] | None = None,
) -> int:
    """Number of independent scalar values a fit would adjust.

    Repeated parameter names count once (bound or not). A grouped family
    counts once per category, taken from the label data in ``values`` when
    given, else from ``parameters`` or its bound values; with no information
    it counts as 1.

    Args:
        expression: The tree.
        values: Optional data, used to count grouped categories.
        parameters: Optional parameter values (grouped families as mappings).

    Returns:
        The count.
    """
    scalars = {node.name for node in expression.iter_preorder() if isinstance(node, Parameter)}
    families = {node.family: node for node in expression.iter_preorder()
                if isinstance(node, GroupedParameter)}
    return len(scalars) + sum(_category_count(node, values, parameters)
                              for node in families.values())


def complexity(expression: Expression) -> int:
    """Node count: every node of the tree counts 1.

    Numbers, symbols and parameters count 1; an operator, unary minus or
    function call counts 1 plus its operands; a grouped parameter counts 1
    plus its label expression. So ``x + 1`` is 3, ``-x`` is 2, ``-2`` (a
    negative literal) is 1, ``sin(2*x)`` is 4.

    Args:
        expression: The tree.

    Returns:
        The node count.
    """
    return sum(1 for _ in expression.iter_preorder())


def symbols(expression: Expression) -> tuple[str, ...]:
    """Names of the data symbols a formula uses, unique, in first-appearance order.

    Constants (``pi``, ``e``) and parameters are not symbols.

    Args:
        expression: The tree.

    Returns:
        The symbol names.
    """
    return tuple(_unique([node.name for node in expression.iter_preorder()
                          if isinstance(node, Symbol)]))
