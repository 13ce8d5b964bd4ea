"""Forward-mode derivatives: value and d(value)/d(parameter) in one pass.

Each handler returns ``(value, gradient)`` where ``gradient`` maps a
parameter index to the partial derivative (an array or a scalar that
broadcasts). Subtrees that contain no fitted parameter return the shared
empty mapping and cost exactly one evaluation, so the Jacobian of
``a*exp(-b*x) + c`` costs little more than its value. The rules cover every
operator and every function of :data:`srh_engine.functions.FUNCTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import graph_evaluation as graph
from .delays import resolve, resolver_slope
from .evaluation import (
    BINARY_OPERATIONS,
    EVALUATORS,
    Env,
    _eval_sugar,
    structured_root,
    symbol_array,
)
from .functions import FUNCTIONS
from .graph_nodes import Aggregate, Delay, RelationLift
from .nodes import Binary, Expression, Function, GroupedParameter, Number, Parameter, Symbol, Unary

__all__ = ["DERIVATIVES", "JacobianEnv", "jacobian", "value_and_gradient"]

Gradient = dict[int, Any]
_NO_GRADIENT: Gradient = {}  # shared; never mutated


class JacobianEnv(Env):
    """Evaluation state plus the position of each fitted value in the vector.

    Attributes:
        index: Scalar parameter name -> column.
        group_columns: Grouped node -> {column: 0/1 indicator of its category}.
    """

    __slots__ = ("index", "group_columns")

    def __init__(self, values: Any, parameters: Any, **structure: Any) -> None:
        super().__init__(values, parameters, **structure)
        self.index: dict[str, int] = {}
        self.group_columns: dict[Expression, Gradient] = {}


def _accumulate(total: Gradient, gradient: Gradient, coefficient: Any) -> None:
    unit = type(coefficient) is float and coefficient == 1.0  # "+": no array copy
    for column, partial in gradient.items():
        term = partial if unit else partial * coefficient
        total[column] = total[column] + term if column in total else term


def _scaled(terms: list[tuple[Gradient, Any]]) -> Gradient:
    total: Gradient = {}
    for gradient, coefficient in terms:
        if gradient:
            _accumulate(total, gradient, coefficient)
    return total


def _d_leaf(node: Expression, env: JacobianEnv) -> tuple[Any, Gradient]:
    return EVALUATORS[type(node)](node, env), _NO_GRADIENT


def _d_parameter(node: Parameter, env: JacobianEnv) -> tuple[Any, Gradient]:
    value = EVALUATORS[Parameter](node, env)
    column = env.index.get(node.name)
    return value, ({column: 1.0} if column is not None else _NO_GRADIENT)


def _d_grouped(node: GroupedParameter, env: JacobianEnv) -> tuple[Any, Gradient]:
    return EVALUATORS[GroupedParameter](node, env), env.group_columns.get(node, _NO_GRADIENT)


def _power_rule(left: Any, left_gradient: Gradient, right: Any, right_gradient: Gradient,
                value: Any) -> Gradient:
    terms = []
    if left_gradient:
        terms.append((left_gradient, right * left ** (right - 1)))
    if right_gradient:
        terms.append((right_gradient, value * np.log(left)))
    return _scaled(terms)


BinaryRule = Callable[[Any, Gradient, Any, Gradient, Any], Gradient]

BINARY_RULES: dict[str, BinaryRule] = {
    "+": lambda lv, lg, rv, rg, v: _scaled([(lg, 1.0), (rg, 1.0)]),
    "-": lambda lv, lg, rv, rg, v: _scaled([(lg, 1.0), (rg, -1.0)]),
    "*": lambda lv, lg, rv, rg, v: _scaled([(lg, rv), (rg, lv)]),
    "/": lambda lv, lg, rv, rg, v: _scaled([(lg, 1.0 / rv), (rg, -v / rv)]),
    "**": _power_rule,
}


def _d_binary(node: Binary, env: JacobianEnv) -> tuple[Any, Gradient]:
    left, left_gradient = DERIVATIVES[type(node.left)](node.left, env)
    right, right_gradient = DERIVATIVES[type(node.right)](node.right, env)
    if type(left) is not np.ndarray and type(right) is not np.ndarray:
        left, right = np.float64(left), np.float64(right)
    value = BINARY_OPERATIONS[node.operator](left, right)
    if not left_gradient and not right_gradient:
        return value, _NO_GRADIENT
    return value, BINARY_RULES[node.operator](left, left_gradient, right, right_gradient, value)


def _d_unary(node: Unary, env: JacobianEnv) -> tuple[Any, Gradient]:
    value, gradient = DERIVATIVES[type(node.operand)](node.operand, env)
    return -value, (_scaled([(gradient, -1.0)]) if gradient else _NO_GRADIENT)


def _d_function(node: Function, env: JacobianEnv) -> tuple[Any, Gradient]:
    values, gradients = [], []
    for argument in node.arguments:
        value, gradient = DERIVATIVES[type(argument)](argument, env)
        values.append(float(value) if type(value) is int else value)
        gradients.append(gradient)
    spec = FUNCTIONS[node.name]
    result = spec.compute(*values)
    if not any(gradients):
        return result, _NO_GRADIENT
    partials = spec.derivative(tuple(values), result)
    return result, _scaled(list(zip(gradients, partials, strict=True)))


def _along_time(partial: Any, ndim: int) -> Any:
    """A per-time-sample partial ``(T,)`` against a value ``(T, ...)``."""
    array = np.asarray(partial)
    return array.reshape(array.shape + (1,) * (ndim - 1)) if array.ndim == 1 and ndim > 1 \
        else partial


def _d_delay(node: Delay, env: JacobianEnv) -> tuple[Any, Gradient]:
    value, value_gradient = DERIVATIVES[type(node.value)](node.value, env)
    delta, delta_gradient = DERIVATIVES[type(node.delta)](node.delta, env)
    time, resolver = env.time, env.delay_resolver
    result = resolve(value, delta, time, resolver)
    gradient: Gradient = {}
    shape = np.shape(value)
    for column, partial in value_gradient.items():  # the delay is linear in the history
        gradient[column] = resolve(np.broadcast_to(partial, shape), delta, time, resolver)
    if delta_gradient:
        slope = resolver_slope(value, delta, time, resolver)
        for column, partial in delta_gradient.items():
            term = slope * _along_time(partial, np.ndim(slope))
            gradient[column] = gradient[column] + term if column in gradient else term
    return result, gradient or _NO_GRADIENT


def _lift_pair(result: tuple[Any, Gradient], apply: Callable[[Any], Any]
               ) -> tuple[Any, Gradient]:
    value, gradient = result
    if not gradient:
        return apply(value), _NO_GRADIENT
    return apply(value), {column: apply(partial) for column, partial in gradient.items()}


DERIVATIVES: dict[type, Callable[[Any, JacobianEnv], tuple[Any, Gradient]]] = {
    Number: _d_leaf,
    Symbol: _d_leaf,
    Parameter: _d_parameter,
    GroupedParameter: _d_grouped,
    Binary: _d_binary,
    Unary: _d_unary,
    Function: _d_function,
    Delay: _d_delay,
    Aggregate: _eval_sugar,
    RelationLift: _eval_sugar,
}
"""Node type -> forward-mode handler. Adding a node type is one entry here."""

DERIVATIVE_MODE = graph.Mode(DERIVATIVES, _lift_pair, lambda value: (value, _NO_GRADIENT),
                             symbol_array)
DERIVATIVES.update(graph.handlers(DERIVATIVE_MODE))


def _finish_pair(result: tuple[Any, Gradient], free: tuple[str, ...], has_domain: bool,
                 num_nodes: int) -> tuple[Any, Gradient]:
    value, gradient = result
    value = graph.finish_root(value, free, has_domain, num_nodes)
    return value, {column: graph.finish_root(partial, free, has_domain, num_nodes)
                   for column, partial in gradient.items()}


def value_and_gradient(expression: Expression, env: JacobianEnv) -> tuple[Any, Gradient]:
    """Forward-mode value and gradient of a whole tree (indexed trees included)."""
    handler = DERIVATIVES[type(expression)]
    state = env.graph
    if state is None or not state.structural(expression):
        return handler(expression, env)
    return structured_root(expression, env, handler, _finish_pair)


def jacobian(expression: Expression, env: JacobianEnv, shape: tuple[int, ...], columns: int,
             ) -> tuple[Any, np.ndarray]:
    """Value and transposed Jacobian of ``expression`` (no errstate here).

    Args:
        expression: The tree.
        env: Evaluation state with parameter columns filled in.
        shape: Shape of the samples (the target's shape); rows are flattened.
        columns: Number of fitted values.

    Returns:
        ``(value, jacobian_t)`` with ``jacobian_t`` C-contiguous of shape
        ``(columns, prod(shape))``: one row per fitted value (MINPACK's
        column-major layout, so it is handed over without a copy). A row whose
        parameter does not occur is zero.
    """
    value, gradient = value_and_gradient(expression, env)
    matrix = np.empty((columns, *shape))
    for column in range(columns):
        matrix[column] = gradient.get(column, 0.0)
    return value, matrix.reshape(columns, -1)
