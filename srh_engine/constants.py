"""Structural constants: fitted numbers recognised as simple exact values.

A number v is *structural* when it is ``(p/q) * B**k`` with a small rational
``p/q`` (``q <= MAX_DENOMINATOR``, ``|p| <= MAX_NUMERATOR``) and ``B**k`` one
of 1, ``pi**k``, ``e**k`` (k in -2..2), ``sqrt(2)**±1`` or ``sqrt(2*pi)**±1`` (the
Gaussian's):
``0.07957747154594767`` is ``1/(4*pi)``, ``0.3333333`` is ``1/3``.

:func:`recognise_constants` replaces a number of a fitted formula by such a
value only when the data agree. The numbers are taken in preorder; for each,
the structural values near it are tried nearest first (within
``NEAR_RELATIVE`` for a plain ratio, ``|p|, q <= PLAIN_TERMS``, else within
``EXACT_RELATIVE``: there are so many of the others that noisy numbers would
match one by chance; measured at 1% noise, a random constant became a plain
form 1.3% of the time, against 38% with every form at ``NEAR_RELATIVE``),
and the first one is kept whose error stays within Akaike's allowance for one
fewer free number: ``nmse_new <= max(nmse, EXACT_NMSE) * exp(2 / n)``, where
``nmse`` is ``1 - R^2`` (the squared error over the target's variance) of the
formula so far on the ``n`` rows given. On exact data a constant must so be
structural to about 1e-10 (relative); on noisy data it may move as far as the
noise allows. Formulas with more than ``MAX_FITTED_NUMBERS`` fitted numbers
(long expansions) are left alone. Integers, ``pi``, ``e`` and numbers of at most
``KEPT_DIGITS`` significant digits (``0.5``, ``0.0796``: chosen, not fitted)
are left as they are.

A fitted number so small that 0 changes no value on the rows beyond rounding
(``cos(-4.6e-09*alpha)`` is 1 there) is made 0 first (:func:`negligible_zeroed`,
also before the snaps).

The product that holds a recognised constant is written over one
denominator: ``0.0795...*q1/epsilon/r**2`` becomes ``q1/(4*pi*epsilon*r**2)``.

When the formula does not fit exactly (noisy data),
:func:`srh_engine.snapping.recognise_and_snap` then snaps the numbers together
with a refit of the others, under the Bayesian information criterion
(:func:`srh_engine.snapping.snap_constants`): at 1% noise
``exp(-0.9152 - 0.5031*theta**1.9931)`` becomes ``exp(-(theta**2/2))/sqrt(2*pi)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .builders import sqrt
from .errors import EngineError
from .nodes import Binary, Expression, Number, Parameter, Symbol, Unary

__all__ = [
    "EXACT_NMSE",
    "MAX_DENOMINATOR",
    "MAX_NUMERATOR",
    "NEAR_RELATIVE",
    "StructuralConstant",
    "negligible_zeroed",
    "recognise_constants",
    "structural_constants",
]

MAX_DENOMINATOR = 20
MAX_NUMERATOR = 32
#: Structural values further than this (relative) from a number are not tried...
NEAR_RELATIVE = 1e-3
#: ...unless they are plain (``|p|, q <= PLAIN_TERMS``: 1/(4*pi), 3/4, 2*pi), when this is the
#: limit: the other forms are so many that noise would match one of them by chance.
EXACT_RELATIVE = 1e-6
PLAIN_TERMS = 4
#: Errors below this share of the target's variance count as exact (relative error ~1e-10).
EXACT_NMSE = 1e-20
#: Numbers with at most this many significant digits were typed, not fitted: they stay.
KEPT_DIGITS = 3
MAX_TRIED_PER_NUMBER = 3
#: Formulas with more fitted numbers are left alone: the coefficients of a long expansion
#: (a degree-5 polynomial) are not physical constants, and with so many of them noise lets
#: some land near a structural value (measured: 4*e**2 and pi among 250 polynomial terms).
MAX_FITTED_NUMBERS = 8
_PI, _E = Number(math.pi), Number(math.e)
#: (name, value, node) of each base; its powers k are in _POWERS.
_BASES: tuple[tuple[str, float, Expression], ...] = (
    ("pi", math.pi, _PI), ("e", math.e, _E), ("sqrt(2)", math.sqrt(2), sqrt(Number(2))),
    ("sqrt(2*pi)", math.sqrt(2 * math.pi), sqrt(Binary("*", Number(2), _PI))))
_POWERS = {"pi": (-2, -1, 1, 2), "e": (-2, -1, 1, 2), "sqrt(2)": (-1, 1),
           "sqrt(2*pi)": (-1, 1)}

#: The named constants each base is written with (a column of that name would shadow it).
_NAMED_IN_BASE = {"pi": {"pi"}, "e": {"e"}, "sqrt(2*pi)": {"pi"}}

Evaluate = Callable[[Expression], Any]
Path = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StructuralConstant:
    """``ratio * base**power``: a structural value near a fitted number.

    Attributes:
        ratio: The rational factor p/q.
        base: "pi", "e", "sqrt(2)", "sqrt(2*pi)", or None for a plain rational.
        power: The power of the base (0 for a plain rational).
        relative_error: How far the number is from this value, relative.
    """

    ratio: Fraction
    base: str | None
    power: int
    relative_error: float

    @property
    def value(self) -> float:
        return float(self.ratio) * _base_value(self.base) ** self.power

    def factors(self) -> tuple[list[Expression], list[Expression]]:
        """Numerator and denominator factors of ``abs(value)``."""
        numerator: list[Expression] = []
        denominator: list[Expression] = []
        if abs(self.ratio.numerator) != 1:
            numerator.append(Number(abs(self.ratio.numerator)))
        if self.ratio.denominator != 1:
            denominator.append(Number(self.ratio.denominator))
        if self.base is not None:
            power = _power(_base_node(self.base), abs(self.power))
            (numerator if self.power > 0 else denominator).append(power)
        return numerator, denominator

    def expression(self) -> Expression:
        """The value as an engine expression, e.g. ``1/(4*pi)``."""
        quotient = _quotient(*self.factors())
        if self.ratio > 0:
            return quotient
        if isinstance(quotient, Number):
            return Number(-quotient.value)
        if isinstance(quotient, Binary) and quotient.operator in ("*", "/") and \
                isinstance(quotient.left, Number):  # -1/3, -2*pi (never -pi**2 as (-pi)**2)
            return Binary(quotient.operator, Number(-quotient.left.value), quotient.right)
        return Unary("-", quotient)


def structural_constants(value: float) -> list[StructuralConstant]:
    """The structural values within ``NEAR_RELATIVE`` of ``value``, nearest first."""
    if not math.isfinite(value) or value == 0.0:
        return []
    found: dict[float, StructuralConstant] = {}
    forms = [(None, 0), *((name, k) for name, _, _ in _BASES for k in _POWERS[name])]
    for base, power in forms:
        ratio = Fraction(value / _base_value(base) ** power).limit_denominator(MAX_DENOMINATOR)
        if ratio == 0 or abs(ratio.numerator) > MAX_NUMERATOR:
            continue
        candidate = StructuralConstant(ratio, base, power, 0.0)
        error = abs(candidate.value - value) / abs(value)
        plain = abs(ratio.numerator) <= PLAIN_TERMS and ratio.denominator <= PLAIN_TERMS
        if error <= (NEAR_RELATIVE if plain else EXACT_RELATIVE) and candidate.value not in found:
            found[candidate.value] = StructuralConstant(ratio, base, power, error)
    return sorted(found.values(), key=lambda c: (c.relative_error, c.power != 0,
                                                 c.ratio.denominator))


def recognise_constants(expression: Expression, y: Any, evaluate: Evaluate) -> Expression:
    """``expression`` with its fitted numbers replaced by structural values the data accept.

    Args:
        expression: A fitted formula (bound parameters count as numbers).
        y: The target values it is fitted to.
        evaluate: Evaluates an expression on the rows of ``y`` (the caller's data).

    Returns:
        The same tree when nothing was recognised, else the rewritten one.
    """
    return recognised(expression, y, evaluate)[0]


def recognised(expression: Expression, y: Any, evaluate: Evaluate
               ) -> tuple[Expression, float | None]:
    """:func:`recognise_constants` and the normalised error of what it returns (None
    when the formula cannot be evaluated on the data)."""
    inlined = _inline_bound(expression)
    tree = negligible_zeroed(inlined, evaluate)
    target = np.asarray(y, dtype=float)
    current = _error(evaluate, tree, target)
    if current is None:
        return expression, None
    allowance = math.exp(2.0 / max(int(np.isfinite(target).sum()), 1))
    names = {node.name for node in tree.iter_preorder() if isinstance(node, Symbol)}
    replaced: list[Path] = []
    numbers = _fitted_numbers(tree)
    if len(numbers) > MAX_FITTED_NUMBERS:
        return expression, current
    for path, number in numbers:
        # a data column named e or pi would read the constant as the column
        tried = [c for c in structural_constants(float(number.value))
                 if not _NAMED_IN_BASE.get(c.base or "", set()) & names]
        for constant in tried[:MAX_TRIED_PER_NUMBER]:
            trial = _replace_at(tree, path, constant.expression())
            error = _error(evaluate, trial, target)
            if error is not None and error <= max(current, EXACT_NMSE) * allowance:
                tree, current = trial, error
                replaced.append(path)
                break
    if replaced:
        return _tidy(tree, replaced), current
    return (expression if tree is inlined else tree), current


NEGLIGIBLE = 1e-6
"""Fitted numbers of at most this magnitude are tried as 0 (:func:`negligible_zeroed`)."""
NEGLIGIBLE_RTOL = 1e-12
"""... and are 0 when no value on the rows then moves by more than this share of itself."""


def negligible_zeroed(tree: Expression, evaluate: Evaluate) -> Expression:
    """``tree`` with each fitted number of magnitude at most ``NEGLIGIBLE`` made 0 when that
    changes no value on the rows beyond rounding (``NEGLIGIBLE_RTOL``, where the formula
    is finite): ``sqrt(cos(-4.6e-09*alpha))`` is ``sqrt(cos(0*alpha))``, which the writer
    (:func:`srh_engine.readable`) writes 1. The same tree when none is.

    Args:
        tree: A formula with its numbers inlined.
        evaluate: Evaluates an expression on the rows.
    """
    small = [path for path, number in _fitted_numbers(tree)
             if abs(float(number.value)) <= NEGLIGIBLE]
    if not small:
        return tree
    try:
        before = np.asarray(evaluate(tree), dtype=float)
    except (EngineError, ValueError):
        return tree
    finite = np.isfinite(before)
    for path in small:
        trial = _replace_at(tree, path, Number(0))
        try:
            after = np.broadcast_to(np.asarray(evaluate(trial), dtype=float), before.shape)
        except (EngineError, ValueError):
            continue
        with np.errstate(all="ignore"):
            same = np.abs(after[finite] - before[finite]) <= \
                NEGLIGIBLE_RTOL * np.abs(before[finite])
        if finite.any() and bool(np.all(same)):
            tree = trial
    return tree


# ------------------------------------------------------------------ the tree
def _inline_bound(expression: Expression) -> Expression:
    if isinstance(expression, Parameter) and expression.value is not None:
        return Number(expression.value)
    operands = expression.operands
    if not operands:
        return expression
    rebuilt = tuple(_inline_bound(child) for child in operands)
    return expression if rebuilt == operands else expression.with_operands(rebuilt)


def _fitted_numbers(tree: Expression) -> list[tuple[Path, Number]]:
    """Paths of the numbers worth recognising, in preorder."""
    found: list[tuple[Path, Number]] = []
    pending: list[tuple[Path, Expression]] = [((), tree)]
    while pending:
        path, node = pending.pop()
        if isinstance(node, Number) and _fitted(node.value):
            found.append((path, node))
        pending.extend((path + (i,), child) for i, child in reversed(
            list(enumerate(node.operands))))
    return found


def _fitted(value: int | float) -> bool:
    if float(value).is_integer() or abs(value) in (math.pi, math.e):
        return False
    return float(format(value, f".{KEPT_DIGITS}g")) != value


def _node_at(tree: Expression, path: Path) -> Expression:
    for index in path:
        tree = tree.operands[index]
    return tree


def _replace_at(tree: Expression, path: Path, new: Expression) -> Expression:
    if not path:
        return new
    operands = list(tree.operands)
    operands[path[0]] = _replace_at(operands[path[0]], path[1:], new)
    return tree.with_operands(tuple(operands))


def _is_product(node: Expression) -> bool:
    return isinstance(node, Binary) and node.operator in ("*", "/")


def _chain_root(tree: Expression, path: Path) -> Path:
    """The path of the outermost product/quotient that holds ``path`` directly."""
    root = path
    for depth in range(len(path) - 1, -1, -1):
        if not _is_product(_node_at(tree, path[:depth])):
            break
        root = path[:depth]
    return root


def _tidy(tree: Expression, replaced: Sequence[Path]) -> Expression:
    roots = {_chain_root(tree, path) for path in replaced}
    for root in sorted(roots, key=len, reverse=True):  # inner chains first: outer paths hold
        node = _node_at(tree, root)
        if _is_product(node):
            tree = _replace_at(tree, root, _one_denominator(node))
    return tree


def _one_denominator(node: Expression) -> Expression:
    numerator: list[Expression] = []
    denominator: list[Expression] = []
    _collect(node, False, numerator, denominator)
    negative = False
    for factors in (numerator, denominator):
        for index, factor in enumerate(factors):
            if isinstance(factor, Number) and factor.value < 0:
                negative = not negative
                factors[index] = Number(-factor.value)
    for factor in list(numerator):  # pi/(2*pi*r) is 1/(2*r)
        if factor in denominator:
            numerator.remove(factor)
            denominator.remove(factor)
    # numbers and constants lead each side: 2*pi*x/(3*r), not x*2*pi/(r*3)
    numerator = sorted((f for f in numerator if f != Number(1)), key=_has_symbols)
    denominator = sorted((f for f in denominator if f != Number(1)), key=_has_symbols)
    if negative:
        numerator = [Unary("-", numerator[0]) if numerator else Number(-1), *numerator[1:]]
    return _quotient(numerator, denominator)


def _has_symbols(node: Expression) -> bool:
    return any(not isinstance(n, Number) and not n.operands for n in node.iter_preorder())


def _collect(node: Expression, inverted: bool, numerator: list[Expression],
             denominator: list[Expression]) -> None:
    if isinstance(node, Binary) and node.operator in ("*", "/"):
        _collect(node.left, inverted, numerator, denominator)
        _collect(node.right, inverted != (node.operator == "/"), numerator, denominator)
    elif isinstance(node, Unary):  # -a is -1 * a: the sign leaves the chain
        numerator.append(Number(-1))
        _collect(node.operand, inverted, numerator, denominator)
    else:
        (denominator if inverted else numerator).append(node)


def _quotient(numerator: Sequence[Expression], denominator: Sequence[Expression]) -> Expression:
    top = _product(numerator) if numerator else Number(1)
    return Binary("/", top, _product(denominator)) if denominator else top


def _product(factors: Sequence[Expression]) -> Expression:
    product = factors[0]
    for factor in factors[1:]:
        product = Binary("*", product, factor)
    return product


def _power(base: Expression, power: int) -> Expression:
    return base if power == 1 else Binary("**", base, Number(power))


def _base_value(base: str | None) -> float:
    return 1.0 if base is None else next(value for name, value, _ in _BASES if name == base)


def _base_node(base: str) -> Expression:
    return next(node for name, _, node in _BASES if name == base)


# ------------------------------------------------------------------ the error
def _error(evaluate: Evaluate, tree: Expression, target: np.ndarray) -> float | None:
    try:
        return _nmse(evaluate(tree), target)
    except (EngineError, ValueError):  # ValueError: a prediction of another shape
        return None


def _nmse(prediction: Any, target: np.ndarray) -> float | None:
    """``1 - R^2`` over the rows where the target is finite; None when the prediction is not."""
    pred = np.broadcast_to(np.asarray(prediction, dtype=float), target.shape).reshape(-1)
    target = target.reshape(-1)
    rows = np.isfinite(target)
    if not rows.any() or not np.isfinite(pred[rows]).all():
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        residual = float(np.sum(np.square(pred[rows] - target[rows])))
        spread = float(np.sum(np.square(target[rows] - target[rows].mean())))
    if not (np.isfinite(residual) and np.isfinite(spread)):
        return None
    return residual / spread if spread > 0 else residual / int(rows.sum())
