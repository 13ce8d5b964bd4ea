"""Vectorised NumPy evaluation of expression trees.

One dispatch table maps each node type to its handler. Handlers do nothing
per node beyond the NumPy call itself: symbol arrays are converted once per
evaluation and cached, numeric literals stay Python ``int``/``float`` (so
``x ** 2`` hits NumPy's fast square path, as hand-written code does), and
scalar-with-scalar operations are done on ``np.float64`` so that they follow
NumPy semantics (``0.0 ** -1 == inf``, ``(-8.0) ** (1/3)`` is nan) instead of
raising Python exceptions. Domain errors give nan/inf silently: the whole
evaluation runs under a single ``np.errstate(all="ignore")``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import graph_evaluation as graph
from .delays import DelayResolver, resolve
from .desugaring import desugar
from .errors import EvaluationError
from .functions import FUNCTIONS
from .graph_analysis import NotLoweredError
from .graph_nodes import Aggregate, Delay, RelationField, RelationLift
from .nodes import Binary, Expression, Function, GroupedParameter, Number, Parameter, Symbol, Unary

__all__ = ["Env", "EVALUATORS", "evaluate", "evaluate_node", "group_labels", "with_context"]

BINARY_OPERATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**": operator.pow,
}


IN_PLACE_OPERATIONS: dict[str, np.ufunc] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
}

FRESH_RESULT: frozenset[type] = frozenset({Binary, Unary, Function})
"""Node types whose array result is a new temporary that may be overwritten."""


class Env:
    """Per-evaluation state: raw values, converted symbol cache, parameters.

    Attributes:
        values: Symbol name -> raw data as given by the caller.
        parameters: Parameter name -> value (a mapping for grouped families).
        cache: Symbol name -> float64 array or np.float64, filled on first use.
        groups: Grouped-parameter node -> per-sample values, precomputed by
            the fitter (empty for ordinary evaluation).
        time: Sample times for ``delay`` (None: 0, 1, 2, ...).
        delay_resolver: Custom ``delay`` history lookup, or None.
        graph: State of indexed evaluation (None without ``num_nodes``).
        demand: The structural points being evaluated (None outside indexed trees).
    """

    __slots__ = ("values", "parameters", "cache", "groups", "time", "delay_resolver", "graph",
                 "demand")

    def __init__(self, values: Mapping[str, Any] | None,
                 parameters: Mapping[str, Any] | None, *, num_nodes: int | None = None,
                 time: Any = None, delay_resolver: DelayResolver | None = None) -> None:
        self.values: Mapping[str, Any] = values if values is not None else {}
        self.parameters: Mapping[str, Any] = parameters if parameters is not None else {}
        self.cache: dict[str, Any] = {}
        self.groups: dict[Expression, Any] = {}
        self.time = time
        self.delay_resolver = delay_resolver
        self.graph = None if num_nodes is None else graph.GraphState(_node_count(num_nodes))
        self.demand: Any = None


def _node_count(num_nodes: Any) -> int:
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int | np.integer) or \
            num_nodes < 1:
        raise EvaluationError(f"num_nodes must be a positive int, got {num_nodes!r}",
                              reason="bad num_nodes")
    return int(num_nodes)


def _did_you_mean(name: str, candidates: Any) -> str:
    import difflib

    close = difflib.get_close_matches(name, [str(c) for c in candidates], n=1, cutoff=0.5)
    return f"; did you mean {close[0]!r}?" if close else ""


def as_float(value: Any, name: str) -> Any:
    """Convert data to a float64 array, or to ``np.float64`` when scalar."""
    if type(value) is np.ndarray and value.dtype == np.float64 and value.ndim:
        return value
    if type(value) is float:
        return np.float64(value)
    if isinstance(value, RelationField):
        value = value.values
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise EvaluationError(
            f"values for symbol {name!r} must be numeric, got {type(value).__name__}: {error}",
            name=name, reason="non-numeric values") from error
    return array if array.ndim else np.float64(array)


def _raw_symbol(node: Symbol, env: Env) -> Any:
    values = env.values
    if node.name in values:
        return values[node.name]
    if node.value is not None:
        return node.value
    known = ", ".join(sorted(map(str, values))) or "none"
    raise EvaluationError(
        f"unknown symbol {node.name!r}: no values were given for it (known symbols: {known})"
        f"{_did_you_mean(node.name, values)}", name=node.name, reason="unknown symbol")


def symbol_array(node: Symbol, env: Env) -> Any:
    """The symbol's data as float64, converted once per evaluation."""
    cache = env.cache
    name = node.name
    if name in cache:
        return cache[name]
    result = cache[name] = as_float(_raw_symbol(node, env), name)
    return result


def _eval_symbol(node: Symbol, env: Env) -> Any:
    result = symbol_array(node, env)
    if env.demand is not None:
        graph.check_bare(node, result, env)
    return result


def _eval_number(node: Number, env: Env) -> Any:
    return node.value


def _eval_parameter(node: Parameter, env: Env) -> Any:
    value = env.parameters.get(node.name, node.value)
    if value is None:
        raise EvaluationError(
            f"parameter {node.name!r} has no value: pass parameters={{{node.name!r}: ...}} "
            "or fit the expression first", name=node.name, reason="unbound parameter")
    return as_float(value, node.name)


def _eval_binary(node: Binary, env: Env) -> Any:
    left_node, right_node = node.left, node.right
    left = EVALUATORS[type(left_node)](left_node, env)
    right = EVALUATORS[type(right_node)](right_node, env)
    left_array, right_array = type(left) is np.ndarray, type(right) is np.ndarray
    if not left_array and not right_array:
        return BINARY_OPERATIONS[node.operator](np.float64(left), np.float64(right))
    # Reuse a temporary we own as the output buffer, as NumPy's temporary elision
    # does for hand-written expressions; ** keeps NumPy's fast scalar-power paths.
    ufunc = IN_PLACE_OPERATIONS.get(node.operator)
    if ufunc is not None:
        if left_array and type(left_node) in FRESH_RESULT and (
                not right_array or right.shape == left.shape):
            return ufunc(left, right, out=left)
        if right_array and type(right_node) in FRESH_RESULT and (
                not left_array or left.shape == right.shape):
            return ufunc(left, right, out=right)
    return BINARY_OPERATIONS[node.operator](left, right)


def _eval_unary(node: Unary, env: Env) -> Any:
    operand = node.operand
    value = EVALUATORS[type(operand)](operand, env)
    if type(value) is np.ndarray and type(operand) in FRESH_RESULT:
        return np.negative(value, out=value)
    return -value


def _eval_function(node: Function, env: Env) -> Any:
    compute = FUNCTIONS[node.name].compute
    if len(node.arguments) == 1:
        argument = node.arguments[0]
        value = EVALUATORS[type(argument)](argument, env)
        if type(value) is np.ndarray:
            if type(argument) in FRESH_RESULT and type(compute) is np.ufunc:
                return compute(value, out=value)
            return compute(value)
        return compute(float(value) if type(value) is int else value)
    arguments = []
    for argument in node.arguments:
        value = EVALUATORS[type(argument)](argument, env)
        arguments.append(float(value) if type(value) is int else value)
    return compute(*arguments)


def group_labels(node: GroupedParameter, env: Env) -> np.ndarray:
    """Category label of each sample for a grouped parameter (any dtype)."""
    by = node.by
    raw = _raw_symbol(by, env) if isinstance(by, Symbol) else evaluate_node(by, env)
    return np.atleast_1d(np.asarray(raw))


def _group_table(node: GroupedParameter, env: Env) -> tuple[dict[Any, float], float | None]:
    given = env.parameters.get(node.family)
    if given is None:
        return dict(node.value or ()), node.default
    if isinstance(given, Mapping):
        return {**dict(node.value or ()), **given}, node.default
    return {}, float(given)


def _eval_grouped(node: GroupedParameter, env: Env) -> Any:
    if node in env.groups:
        return env.groups[node]
    categories, codes = np.unique(group_labels(node, env), return_inverse=True)
    table, default = _group_table(node, env)
    per_category = [table.get(category.item(), default) for category in categories]
    missing = [c.item() for c, v in zip(categories, per_category, strict=True) if v is None]
    if missing:
        raise EvaluationError(
            f"grouped parameter {node.family!r} has no value for categories {missing[:5]}: "
            "pass parameters, a default, or fit it first",
            name=node.family, reason="unbound parameter")
    return np.asarray(per_category, dtype=np.float64)[codes.reshape(-1)]


def _eval_delay(node: Delay, env: Env) -> Any:
    value = EVALUATORS[type(node.value)](node.value, env)
    delta = EVALUATORS[type(node.delta)](node.delta, env)
    return resolve(value, delta, env.time, env.delay_resolver)


EVALUATORS: dict[type, Callable[[Any, Env], Any]] = {
    Number: _eval_number,
    Symbol: _eval_symbol,
    Parameter: _eval_parameter,
    Binary: _eval_binary,
    Unary: _eval_unary,
    Function: _eval_function,
    GroupedParameter: _eval_grouped,
    Delay: _eval_delay,
}
"""Node type -> handler. Adding a node type is one entry here."""

def _eval_sugar(node: Expression, env: Env) -> Any:
    raise NotLoweredError(f"{type(node).__name__} must be lowered first: call desugar()",
                          reason="not desugared")


EVALUATORS[Aggregate] = EVALUATORS[RelationLift] = _eval_sugar

EVALUATION_MODE = graph.Mode(EVALUATORS, lambda result, apply: apply(result), lambda value: value,
                             symbol_array)
EVALUATORS.update(graph.handlers(EVALUATION_MODE))


def evaluate_node(expression: Expression, env: Env) -> Any:
    """Evaluate ``expression`` in ``env`` (no errstate, no result conversion)."""
    try:
        handler = EVALUATORS[type(expression)]
    except KeyError:
        raise EvaluationError(
            f"cannot evaluate node type {type(expression).__name__}; supported: "
            f"{', '.join(t.__name__ for t in EVALUATORS)}", reason="unsupported node") from None
    state = env.graph
    if state is None or not state.structural(expression):
        return handler(expression, env)
    return structured_root(expression, env, handler)


def structured_root(expression: Expression, env: Env, handler: Callable[[Any, Env], Any],
                    finish_result: Callable[..., Any] | None = None) -> Any:
    """Evaluate an indexed tree: analyse it, set the root demand, shape the output."""
    state = env.graph
    info = state.analysis(expression)
    free = info.free[id(expression)]
    env.demand = graph.root_demand(state, free)
    try:
        result = handler(expression, env)
    finally:
        env.demand = None
    has_domain = info.domain.get(id(expression)) is not None
    shape = finish_result or graph.finish_root
    return shape(result, free, has_domain, state.num_nodes)


def with_context(values: Any, num_nodes: int | None) -> tuple[Any, int | None]:
    """Accept a context-like object (``.data``, ``.num_nodes``) in place of a mapping."""
    if values is None or isinstance(values, Mapping) or not hasattr(values, "data"):
        return values, num_nodes
    return values.data, num_nodes if num_nodes is not None else getattr(values, "num_nodes", None)


def finish(result: Any) -> Any:
    """Return a float64 array, or a Python float for a scalar result."""
    if type(result) is np.ndarray:
        return result if result.dtype == np.float64 else result.astype(np.float64)
    return float(result)


def evaluate(
    expression: Expression,
    values: Mapping[str, Any] | None = None,
    *,
    parameters: Mapping[str, Any] | None = None,
    time: Any = None,
    delay_resolver: DelayResolver | None = None,
    num_nodes: int | None = None,
) -> Any:
    """Evaluate an expression on NumPy data without executing any Python code.

    Sample arrays broadcast against each other and against scalars. Domain
    errors (``log(-1)``, ``1/0``, overflow) produce nan/inf without warnings.
    Indexed formulas (``x[i]``, ``sum[j](A[i, j], ...)``) need ``num_nodes``;
    see :mod:`srh_engine.graph_evaluation` for their shapes.

    Args:
        expression: The expression tree (``aggr``/``sour``/``targ`` are lowered first).
        values: Symbol name -> scalar or array of samples (a
            :class:`RelationField` for an edge field of a named relation), or a
            context exposing ``data`` and ``num_nodes``.
        parameters: Parameter name -> value; overrides values bound in the
            tree. A grouped family takes a ``{category: value}`` mapping.
        time: Sample times along the leading axis, for ``delay``.
        delay_resolver: ``f(value, delta, time)`` replacing the default linear
            interpolation of ``delay``.
        num_nodes: Number of graph nodes, for indexed formulas.

    Returns:
        A float64 array, or a Python float when every input is scalar.

    Raises:
        EvaluationError: Unknown symbol, unbound parameter, non-numeric data,
            a shape that does not fit the indices, a missing ``num_nodes``,
            or a tree too deep to evaluate.
    """
    values, num_nodes = with_context(values, num_nodes)
    env = Env(values, parameters, num_nodes=num_nodes, time=time, delay_resolver=delay_resolver)
    with np.errstate(all="ignore"):
        try:
            try:
                result = evaluate_node(expression, env)
            except NotLoweredError:  # lowered only when met: no tree walk on every call
                expression = desugar(expression)
                env = Env(values, parameters, num_nodes=num_nodes, time=time,
                          delay_resolver=delay_resolver)
                result = evaluate_node(expression, env)
        except RecursionError:
            raise EvaluationError("expression is too deeply nested to evaluate",
                                  reason="too deep") from None
    if isinstance(expression, Symbol) and type(result) is np.ndarray:
        return result.copy()
    return finish(result)
