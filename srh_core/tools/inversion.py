"""Undo a transformed target: solve ``lhs(target) = rhs`` for the target.

A formula fitted against ``y="log(T)"`` predicts ``log(T)``; :func:`invert_target`
turns it back into a formula for ``T`` when every layer of the transform is
invertible (on the data's range, for layers like ``sin`` that are invertible
only on part of their domain).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

import srh_engine as engine

MAX_INVERSION_STEPS = 8
"""Layers of a transformed target (log, /x1, **2, ...) undone at most."""


def invert_target(lhs: engine.Expression, target: str, rhs: engine.Expression,
                  data: Mapping[str, Any] | None = None) -> engine.Expression | None:
    """Solve ``lhs(target, data) = rhs`` for ``target`` when each layer is invertible.

    Undoes log, log10, exp, sqrt, unary minus, constant powers and exponentials,
    and sums, differences, products and quotients with a part free of the
    target. With ``data`` (the training rows, target included), layers that
    are invertible only on part of their domain are undone when the data lie
    there: ``sin`` (argument in [-pi/2, pi/2]), ``cos`` ([0, pi]), ``tan``
    ((-pi/2, pi/2)), ``abs`` and even powers (argument of one sign; a negative
    one gives ``-sqrt(...)``). Returns None for anything else (the target
    twice, sin without data...).
    """
    for _ in range(MAX_INVERSION_STEPS):
        if lhs == engine.Symbol(target):
            return rhs
        peeled = _peel(lhs, target, rhs, data)
        if peeled is None:
            return None
        lhs, rhs = peeled
    return None


def _has(node: engine.Expression, target: str) -> bool:
    return target in engine.symbols(node)


_FUNCTION_INVERSES: dict[str, Callable[[engine.Expression], engine.Expression]] = {
    "log": engine.exp, "exp": engine.log, "sqrt": lambda r: r ** engine.Number(2),
    "log10": lambda r: engine.Number(10) ** r,
}


_PRINCIPAL_RANGES: dict[str, tuple[float, float, Callable[[engine.Expression],
                                                         engine.Expression]]] = {
    "sin": (-math.pi / 2, math.pi / 2, engine.arcsin),
    "cos": (0.0, math.pi, engine.arccos),
    "tan": (-math.pi / 2, math.pi / 2, engine.arctan),
}
"""Functions invertible on a principal range: (low, high, inverse)."""

PRINCIPAL_RANGE_ATOL = 1e-12
"""Slack of the principal-range check (rounding at the ends)."""


def _argument_sign(node: engine.Expression, data: Mapping[str, Any] | None) -> float | None:
    """+1 or -1 when ``node`` has one strict sign on every finite row of ``data``, else None."""
    values = _values(node, data)
    if values is None:
        return None
    if np.all(values > 0):
        return 1.0
    return -1.0 if np.all(values < 0) else None


def _values(node: engine.Expression, data: Mapping[str, Any] | None) -> np.ndarray | None:
    if data is None:
        return None
    try:
        with np.errstate(all="ignore"):
            values = np.asarray(engine.evaluate(node, data), dtype=float).reshape(-1)
    except engine.EngineError:
        return None
    values = values[np.isfinite(values)]
    return values if values.size else None


def _peel_ranged(node: engine.Function, rhs: engine.Expression,
                 data: Mapping[str, Any] | None,
                 ) -> tuple[engine.Expression, engine.Expression] | None:
    argument = node.arguments[0]
    if node.name == "abs":
        sign = _argument_sign(argument, data)
        return None if sign is None else (argument, rhs if sign > 0 else -rhs)
    low, high, inverse = _PRINCIPAL_RANGES[node.name]
    values = _values(argument, data)
    if values is None or values.min() < low - PRINCIPAL_RANGE_ATOL \
            or values.max() > high + PRINCIPAL_RANGE_ATOL:
        return None
    return argument, inverse(rhs)


def _peel(node: engine.Expression, target: str, rhs: engine.Expression,
          data: Mapping[str, Any] | None = None,
          ) -> tuple[engine.Expression, engine.Expression] | None:
    if isinstance(node, engine.Function) and node.name in _FUNCTION_INVERSES:
        return node.arguments[0], _FUNCTION_INVERSES[node.name](rhs)
    if isinstance(node, engine.Function) and (node.name in _PRINCIPAL_RANGES
                                              or node.name == "abs"):
        return _peel_ranged(node, rhs, data)
    if isinstance(node, engine.Unary):
        return node.operand, -rhs
    if not isinstance(node, engine.Binary):
        return None
    left, right = _has(node.left, target), _has(node.right, target)
    if left == right:
        return None
    if node.operator == "**":
        return _peel_power(node, left, rhs, data)
    inner, other = (node.left, node.right) if left else (node.right, node.left)
    solved = {("+", True): rhs - other, ("+", False): rhs - other,
              ("-", True): rhs + other, ("-", False): other - rhs,
              ("*", True): rhs / other, ("*", False): rhs / other,
              ("/", True): rhs * other, ("/", False): other / rhs}
    return inner, solved[(node.operator, left)]


def _peel_power(node: engine.Binary, base_has_target: bool, rhs: engine.Expression,
                data: Mapping[str, Any] | None = None,
                ) -> tuple[engine.Expression, engine.Expression] | None:
    if base_has_target:
        if not isinstance(node.right, engine.Number) or node.right.value == 0:
            return None
        power = node.right.value
        simple = {1: rhs, -1: engine.Number(1) / rhs, 2: engine.sqrt(rhs)}
        if power in simple:
            root = simple[power]
        elif float(power).is_integer():
            root = rhs ** engine.Binary("/", engine.Number(1), engine.Number(power))
        else:
            root = rhs ** engine.Number(1.0 / power)
        even = float(power).is_integer() and int(power) % 2 == 0
        if even and _argument_sign(node.left, data) == -1.0:
            root = -root  # an even power of a negative base: the negative root
        return node.left, root
    if not isinstance(node.left, engine.Number) or node.left.value <= 0 or node.left.value == 1:
        return None
    return node.right, engine.log(rhs) / engine.log(node.left)
