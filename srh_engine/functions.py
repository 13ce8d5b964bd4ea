"""The table of supported functions: NumPy implementation, derivative, LaTeX.

This table is the single place that decides which function names exist.
The parser, the evaluator, the derivative pass and the renderers all look
names up here, so adding a function is one :class:`FunctionSpec` entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FUNCTIONS", "FUNCTION_ALIASES", "FunctionSpec", "resolve_function_name"]

Array = Any  # an ndarray or a NumPy scalar
Partials = tuple[Array, ...]

LN10 = float(np.log(10.0))


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """How one supported function is computed, differentiated and typeset.

    Attributes:
        name: Canonical name, as rendered.
        arity: Number of arguments.
        compute: NumPy implementation, elementwise.
        derivative: ``(arguments, value) -> partials``: one partial
            derivative per argument, evaluated at the arguments.
        latex: ``str.format`` template with ``{0}``, ``{1}`` for arguments.
    """

    name: str
    arity: int
    compute: Callable[..., Array]
    derivative: Callable[[Partials, Array], Partials]
    latex: str


def _sigmoid(x: Array) -> Array:
    # expit is the numerically stable logistic; scipy.special is imported on
    # first use so that importing srh_engine stays cheap.
    from scipy.special import expit

    return expit(x)


def _reciprocal(x: Array) -> Array:
    return np.divide(1.0, x)


def _spec(
    name: str, compute: Callable[..., Array], derivative: Callable[..., Array], latex: str
) -> FunctionSpec:
    return FunctionSpec(name, 1, compute, lambda args, value: (derivative(args[0], value),), latex)


def _op(command: str) -> str:
    return "\\" + command + "\\left({0}\\right)"


def _name(command: str) -> str:
    return "\\operatorname{{" + command + "}}\\left({0}\\right)"


_UNARY: tuple[FunctionSpec, ...] = (
    _spec("sin", np.sin, lambda x, v: np.cos(x), _op("sin")),
    _spec("cos", np.cos, lambda x, v: -np.sin(x), _op("cos")),
    _spec("tan", np.tan, lambda x, v: 1.0 + v * v, _op("tan")),
    _spec("tanh", np.tanh, lambda x, v: 1.0 - v * v, _op("tanh")),
    _spec("sinh", np.sinh, lambda x, v: np.cosh(x), _op("sinh")),
    _spec("cosh", np.cosh, lambda x, v: np.sinh(x), _op("cosh")),
    _spec("arcsin", np.arcsin, lambda x, v: 1.0 / np.sqrt(1.0 - x * x), _op("arcsin")),
    _spec("arccos", np.arccos, lambda x, v: -1.0 / np.sqrt(1.0 - x * x), _op("arccos")),
    _spec("arctan", np.arctan, lambda x, v: 1.0 / (1.0 + x * x), _op("arctan")),
    _spec("exp", np.exp, lambda x, v: v, _op("exp")),
    _spec("log", np.log, lambda x, v: 1.0 / x, _op("log")),
    _spec("log10", np.log10, lambda x, v: 1.0 / (x * LN10), "\\log_{{10}}\\left({0}\\right)"),
    _spec("sqrt", np.sqrt, lambda x, v: 0.5 / v, "\\sqrt{{{0}}}"),
    _spec("abs", np.abs, lambda x, v: np.sign(x), "\\left|{0}\\right|"),
    _spec("sigmoid", _sigmoid, lambda x, v: v * (1.0 - v), "\\sigma\\left({0}\\right)"),
    _spec("sign", np.sign, lambda x, v: np.zeros_like(v), _name("sgn")),
    _spec("sec", lambda x: np.divide(1.0, np.cos(x)), lambda x, v: v * np.tan(x), _op("sec")),
    _spec("sech", lambda x: np.divide(1.0, np.cosh(x)), lambda x, v: -v * np.tanh(x),
          _name("sech")),
    _spec("csc", lambda x: np.divide(1.0, np.sin(x)), lambda x, v: -v / np.tan(x), _op("csc")),
    _spec("cot", lambda x: np.divide(1.0, np.tan(x)), lambda x, v: -1.0 - v * v, _op("cot")),
    _spec("inv", _reciprocal, lambda x, v: -v * v, "\\frac{{1}}{{{0}}}"),
)


def _arctan2_partials(args: Partials, value: Array) -> Partials:
    y, x = args
    radius2 = x * x + y * y
    return x / radius2, -y / radius2


def _hypot_partials(args: Partials, value: Array) -> Partials:
    return args[0] / value, args[1] / value


_NARY: tuple[FunctionSpec, ...] = (
    FunctionSpec("arctan2", 2, np.arctan2, _arctan2_partials,
                 "\\operatorname{{atan2}}\\left({0}, {1}\\right)"),
    FunctionSpec("hypot", 2, np.hypot, _hypot_partials,
                 "\\operatorname{{hypot}}\\left({0}, {1}\\right)"),
)

FUNCTIONS: dict[str, FunctionSpec] = {spec.name: spec for spec in _UNARY + _NARY}
"""Canonical function name -> specification."""

FUNCTION_ALIASES: dict[str, str] = {
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "atan2": "arctan2",
    "ln": "log",
}
"""Accepted alternative spellings -> canonical name."""


def resolve_function_name(name: str) -> str | None:
    """Return the canonical name for ``name`` (alias or canonical), else None.

    Args:
        name: A function name as written.

    Returns:
        The canonical name, or None when the name is not supported.
    """
    canonical = FUNCTION_ALIASES.get(name, name)
    return canonical if canonical in FUNCTIONS else None
