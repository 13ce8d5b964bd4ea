"""Hypothesis strategies: random expression trees and an independent NumPy interpreter."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from srh_engine import Binary, Expression, Function, Number, Parameter, Symbol, Unary

SYMBOL_NAMES = ("x0", "x1", "x2")
UNARY_FUNCTIONS = (
    "sin", "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "exp", "log",
    "log10", "sqrt", "abs", "sigmoid", "sign", "sec", "sech", "csc", "cot", "inv",
)
BINARY_FUNCTIONS = ("arctan2", "hypot")
OPERATORS = ("+", "-", "*", "/", "**")

finite_floats = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False,
                          allow_infinity=False)

numbers = st.one_of(
    st.integers(min_value=-20, max_value=20),
    st.floats(min_value=-10.0, max_value=10.0, allow_nan=False),
    finite_floats,
    st.sampled_from([math.pi, -math.pi, math.e, 0.5, -0.0, 1e-300, 2.0]),
).map(Number)

leaves = st.one_of(
    st.sampled_from(SYMBOL_NAMES).map(Symbol),
    numbers,
    st.tuples(st.sampled_from(("a", "b")), st.floats(-5, 5, allow_nan=False)).map(
        lambda pair: Parameter(*pair)),
)


def _trees(depth: int, inner_levels: int) -> st.SearchStrategy[Expression]:
    """Trees of at most ``depth`` levels whose top ``inner_levels`` are operators."""
    if depth == 0:
        return leaves
    children = st.deferred(lambda: _trees(depth - 1, inner_levels - 1))
    binary = st.builds(Binary, st.sampled_from(OPERATORS), children, children)
    return st.one_of(
        *([] if inner_levels > 0 else [leaves]),
        binary,
        binary,
        st.builds(Unary, st.just("-"), children),
        st.builds(lambda name, arg: Function(name, (arg,)), st.sampled_from(UNARY_FUNCTIONS),
                  children),
        st.builds(lambda name, a, b: Function(name, (a, b)), st.sampled_from(BINARY_FUNCTIONS),
                  children, children),
    )


expressions = st.one_of(leaves, _trees(6, 3))
"""Random expression trees (depth <= 6) over x0..x2, numbers and two bound parameters."""

operator_trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.builds(Binary, st.sampled_from(OPERATORS[::-1]), children, children),
        st.builds(Unary, st.just("-"), children)),
    max_leaves=8,
)
"""Trees of operators only, to stress precedence and associativity in rendering."""

# An interpreter written independently of srh_engine.evaluation: NumPy
# operators on NumPy data; literals stay Python numbers, as in hand-written
# NumPy code; parameters are NumPy scalars; scalar-with-scalar work is done
# in np.float64 (NumPy semantics rather than Python exceptions).
_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": lambda a, b: a**b,
}
_FUNCS = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh,
    "cosh": np.cosh, "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan,
    "exp": np.exp, "log": np.log, "log10": np.log10, "sqrt": np.sqrt, "abs": np.abs,
    "sign": np.sign, "sec": lambda v: 1.0 / np.cos(v), "sech": lambda v: 1.0 / np.cosh(v),
    "csc": lambda v: 1.0 / np.sin(v), "cot": lambda v: 1.0 / np.tan(v),
    "inv": lambda v: 1.0 / v, "arctan2": np.arctan2, "hypot": np.hypot,
}


def _sigmoid(v: Any) -> Any:
    from scipy.special import expit

    return expit(v)


def _scalar(value: Any) -> Any:
    return np.float64(value) if isinstance(value, int | float) else value


def reference(node: Expression, data: dict[str, np.ndarray]) -> Any:
    """Evaluate ``node`` directly with NumPy (call under np.errstate)."""
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Symbol):
        return data[node.name]
    if isinstance(node, Parameter):
        return np.float64(node.value)
    if isinstance(node, Unary):
        return -reference(node.operand, data)
    if isinstance(node, Binary):
        left, right = reference(node.left, data), reference(node.right, data)
        if not isinstance(left, np.ndarray) and not isinstance(right, np.ndarray):
            left, right = _scalar(left), _scalar(right)
        return _OPS[node.operator](left, right)
    arguments = [_scalar(reference(argument, data)) for argument in node.arguments]
    if node.name == "sigmoid":
        return _sigmoid(arguments[0])
    return _FUNCS[node.name](*arguments)


def sample_data(size: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """Mostly moderate values, plus zeros, signs, tiny and large ones to provoke nan/inf."""
    rng = np.random.default_rng(seed)
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, np.pi / 2, 800.0])
    data = {}
    for offset, name in enumerate(SYMBOL_NAMES):
        values = np.concatenate([special, rng.normal(scale=3.0, size=size - special.size)])
        data[name] = np.roll(values, offset)
    return data
