"""Snapping at noise: fitted numbers moved to simple exact values, the others refitted.

On noisy data a fitted formula of the right structure carries drifting numbers:
``exp(-0.9152 - 0.5031*theta**1.9931)`` for ``exp(-theta**2/2)/sqrt(2*pi)``. A number
moved alone to its simple value (what :func:`~srh_engine.constants.recognise_constants`
does on exact data) makes the fit worse, because the other numbers were fitted around
the drifted one; moved together with a refit of the others, the fit barely changes.

:func:`snap_constants` takes the fitted numbers (exponents first, then additive numbers,
then factors; in preorder within each) and, for each, tries at
most ``MAX_CANDIDATES`` values, in this order:

- an exponent (the right operand of ``**``): integers, halves and thirds within
  ``EXPONENT_DISTANCE``, nearest first;
- an additive number (an operand of ``+`` or ``-``): first 0 (the term dropped); directly
  inside ``exp``, next ``log(v)`` for the plain values v below, written back as a factor:
  ``exp(-0.9189 + u)`` becomes ``exp(u)/sqrt(2*pi)``;
- any number: the plain values ``(p/q) * B**k`` (``|p|, q <= 4``; ``B**k`` one of 1,
  ``pi**±1``, ``pi**±2``, ``sqrt(2)**±1``, ``sqrt(2*pi)**±1``) within ``SNAP_RELATIVE``,
  plain ratios first, then the other structural values of :mod:`srh_engine.constants`
  near it; nearest first within each group.

Each trial refits the numbers not yet snapped (least squares from their current values)
and is kept when the Bayesian information criterion does not rise: with ``n`` rows and
one free number fewer, ``n * log(nmse_new / nmse) <= log(n)`` (``nmse`` = 1 - R^2 on
the rows given, floored at ``EXACT_NMSE``, so on exact data a snap must stay exact). Only formulas
that already fit (``nmse <= SNAP_MAX_NMSE``, or, given the lowest error any formula
reaches on the rows, within ``FLOOR_FACTOR`` of it: on a nearly flat target noise alone
is above the bound) with at most ``MAX_SNAPPED_NUMBERS`` fitted numbers are tried.
The price: a constant that is not structural but lies within its standard error of a
structural value is snapped too (measured: 19 of 200 random
coefficients, log-uniform in [0.1, 10], 1% noise, 1,500 rows, each snapped to a value
within 0.1% of it).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from scipy.optimize import least_squares

from .constants import (
    _NAMED_IN_BASE,
    EXACT_NMSE,
    PLAIN_TERMS,
    Evaluate,
    Path,
    StructuralConstant,
    _base_value,
    _collect,
    _error,
    _fitted,
    _inline_bound,
    _node_at,
    _quotient,
    _replace_at,
    _tidy,
    negligible_zeroed,
    recognised,
    structural_constants,
)
from .errors import EngineError
from .evaluation import evaluate as evaluate_expression
from .nodes import Binary, Expression, Function, Number, Symbol, Unary

__all__ = ["SNAP_MAX_NMSE", "recognise_and_snap", "snap_candidates", "snap_constants"]

SNAP_MAX_NMSE = 1e-2
"""Formulas that leave more than this share of the variance unexplained are not snapped."""
FLOOR_FACTOR = 1.25
"""A formula whose unexplained share is within this factor of the lowest one on the rows
(``floor``) fits as well as the data allow: on a nearly flat target the noise alone leaves
more than ``SNAP_MAX_NMSE`` unexplained (1% noise on ``log(D)/(2*D)``, D in [2, 4]: 0.23),
and the right formula's drifted numbers were never snapped."""
EXPONENT_DISTANCE = 0.2
SNAP_RELATIVE = 0.05
MAX_CANDIDATES = 3
MAX_REFIT_EVALUATIONS = 30
"""Residual evaluations per free number in one refit (a bound, not a deadline: the same
formula and data always snap the same way)."""
ROUNDING_RTOL = 1e-9
"""A fitted number this close (relatively) to a simple value is that value but for the
fit's rounding: all such numbers are snapped at once with no refit, before the count
limit below (an exact sum of six terms, ``-2.0000000000000004*R*mu +
0.9999999999999998*mu**2 ...``, was left with its drifted numbers)."""
MAX_SNAPPED_NUMBERS = 5
"""Formulas with more fitted numbers are not snapped: each trial refits all the others
(a 6-number formula took 0.5 s under load), and long fits are rarely structural."""
_PLAIN_BASES: tuple[tuple[str | None, int], ...] = (
    (None, 0), ("pi", 1), ("pi", -1), ("pi", 2), ("pi", -2),
    ("sqrt(2)", 1), ("sqrt(2)", -1), ("sqrt(2*pi)", 1), ("sqrt(2*pi)", -1))
_ROLE_ORDER = {"exponent": 0, "exp_offset": 1, "additive": 1, "factor": 2}
"""Structure before scale: exponents first, then additive numbers (0 first: a term dropped),
then factors. A factor snapped first fixes the scale the others are refitted around: in
``a*sqrt(exp(b - u**2))`` (one degree of freedom in ``a`` and ``b``) ``a`` went to 1/12 and
``b`` to pi, where ``b`` first goes to 0 and ``a`` to ``1/sqrt(2*pi)``."""
_RATIOS = tuple(sorted({Fraction(p, q) for p in range(1, PLAIN_TERMS + 1)
                        for q in range(1, PLAIN_TERMS + 1)}))


def snap_candidates(value: float, role: str, names: frozenset[str] = frozenset()
                    ) -> list[Expression]:
    """Simple values near a fitted ``value``, nearest first.

    Args:
        value: The fitted number.
        role: "exponent", "additive", "exp_offset" (additive, directly inside exp) or
            "factor".
        names: Symbols of the formula (a column named pi or e hides that constant).

    Returns:
        Engine expressions of the candidate values (0 first for an additive number).
    """
    if not math.isfinite(value):
        return []
    if role == "exponent":
        near = {Fraction(round(value * q), q) for q in (1, 2, 3)}
        ordered = sorted((abs(float(f) - value), f.denominator, f) for f in near
                         if abs(float(f) - value) <= EXPONENT_DISTANCE)
        return [StructuralConstant(f, None, 0, d).expression() for d, _, f in ordered]
    found = _plain_near(value, names) + [
        c for c in structural_constants(value)
        if not _NAMED_IN_BASE.get(c.base or "", set()) & names]
    unique: dict[float, Expression] = {}
    for constant in sorted(found, key=_simplest_nearest):
        unique.setdefault(round(constant.value, 12), constant.expression())
    candidates = list(unique.values())
    if role == "exp_offset":  # exp of it under/overflows past |value| ~ 745: no log is near
        scale = math.exp(value) if value < EXP_OVERFLOW else math.inf
        logs = sorted((c for c in _plain_near(scale, names) if c.ratio > 0),
                      key=_simplest_nearest)
        candidates = [Function("log", (c.expression(),)) for c in logs
                      if c.value != 1.0] + candidates
    if role in ("additive", "exp_offset"):
        candidates = [Number(0)] + candidates
    return candidates[:MAX_CANDIDATES + (role in ("additive", "exp_offset"))]


EXP_OVERFLOW = math.log(sys.float_info.max)
"""``math.exp`` raises OverflowError above this."""


def _simplest_nearest(constant: StructuralConstant) -> tuple[int, float]:
    """Plain ratios first, then plain multiples of a base, then the rest; nearest first."""
    plain = abs(constant.ratio.numerator) <= PLAIN_TERMS and \
        constant.ratio.denominator <= PLAIN_TERMS
    return (0 if plain and constant.base is None else 1 if plain else 2,
            constant.relative_error)


def _plain_near(value: float, names: frozenset[str]) -> list[StructuralConstant]:
    if value == 0 or not math.isfinite(value):
        return []
    found = []
    sign = 1 if value > 0 else -1
    for base, power in _PLAIN_BASES:
        if _NAMED_IN_BASE.get(base or "", set()) & names:
            continue
        scale = _base_value(base) ** power
        for ratio in _RATIOS:
            error = abs(sign * float(ratio) * scale - value) / abs(value)
            if error <= SNAP_RELATIVE:
                found.append(StructuralConstant(sign * ratio, base, power, error))
    return found


def snap_constants(expression: Expression, y: object, evaluate: Evaluate, *,
                   deadline: float | None = None, floor: float | None = None) -> Expression:
    """``expression`` with fitted numbers snapped to simple values where the BIC allows.

    Args:
        expression: A fitted formula (bound parameters count as numbers).
        y: The target values it is fitted to.
        evaluate: Evaluates an expression on the rows of ``y``.
        deadline: ``time.monotonic()`` after which no further number is tried.
        floor: The lowest unexplained share of the variance any formula reaches on these
            rows (the noise's share, about): a formula within ``FLOOR_FACTOR`` of it fits
            as well as the data allow and is snapped even above ``SNAP_MAX_NMSE``.

    Returns:
        The same object when nothing changed, else the rewritten formula (the numbers of
        each product merged into one first, then the snaps).
    """
    inlined = _inline_bound(expression)
    tree = negligible_zeroed(_merged_chains(inlined), evaluate)
    target = np.asarray(y, dtype=float)
    rows = int(np.isfinite(target).sum())
    if rows < 3:
        return expression
    current = _error(evaluate, tree, target)
    if current is None or current > max(SNAP_MAX_NMSE, FLOOR_FACTOR * (floor or 0.0)):
        return expression
    names = frozenset(n.name for n in tree.iter_preorder() if isinstance(n, Symbol))
    allowance = math.log(rows) / rows  # BIC: one free number fewer
    tree, current, replaced = _rounded(tree, current, target, evaluate, names, allowance)
    numbers = _numbers_with_roles(tree)
    if len(numbers) > MAX_SNAPPED_NUMBERS:
        return _simplified(_tidy(tree, replaced)) if replaced else expression
    if not numbers and not replaced:  # the merged numbers may be simple already:
        return _simplified(tree) if tree != inlined else expression  # -2.8648*(pi/u) is -9/u
    free = [path for path, _, _ in numbers]
    for path, _, role in sorted(numbers, key=lambda number: _ROLE_ORDER[number[2]]):
        if deadline is not None and time.monotonic() > deadline:
            break
        others = [p for p in free if p != path]
        value = float(_node_at(tree, path).value)  # as refitted by the snaps before
        for candidate in snap_candidates(value, role, names):
            trial, error = _refit(_replace_at(tree, path, candidate), others, target, evaluate)
            if _bic_allows(error, current, allowance):
                tree, current, free = trial, error, others
                replaced.append(path)
                break
    if not replaced:  # tree is still the merged one
        return _simplified(tree) if tree != inlined else expression
    return _simplified(_tidy(tree, replaced))


def _rounded(tree: Expression, current: float, target: np.ndarray, evaluate: Evaluate,
             names: frozenset[str], allowance: float
             ) -> tuple[Expression, float, list[Path]]:
    """``tree`` with every fitted number that is a simple value to ``ROUNDING_RTOL`` made
    that value, all at once and without a refit (one evaluation), when the BIC allows;
    its error and the paths replaced."""
    rounded, replaced = tree, []
    for path, value, role in _numbers_with_roles(tree):
        for candidate in snap_candidates(value, role, names):
            exact = _constant_value(candidate)
            if exact is not None and abs(exact - value) <= ROUNDING_RTOL * abs(value):
                rounded = _replace_at(rounded, path, candidate)
                replaced.append(path)
                break
    if not replaced:
        return tree, current, []
    error = _error(evaluate, rounded, target)
    if not _bic_allows(error, current, allowance * len(replaced)):
        return tree, current, []
    return rounded, error, replaced


def _bic_allows(error: float | None, current: float, allowance: float) -> bool:
    """Whether an error (nmse, None: not finite) raises the log of the current one by at
    most ``allowance`` (both floored at ``EXACT_NMSE``): the BIC of fewer free numbers."""
    return error is not None and \
        math.log(max(error, EXACT_NMSE) / max(current, EXACT_NMSE)) <= allowance


def _merged_chains(tree: Expression, in_chain: bool = False) -> Expression:
    """Each product/quotient chain's numbers and constant parts as one number when one of
    them is a fitted number: ``-0.014*(71.26/(a - x))`` is ``-1.0004/(a - x)`` (two
    numbers, one degree of freedom, and neither near a simple value), and
    ``0.22507907903927651*sqrt(pi)/exp(B**2/2)`` is ``0.3989422804014327/exp(B**2/2)``,
    ``1/sqrt(2*pi)``."""
    chain = isinstance(tree, Binary) and tree.operator in ("*", "/")
    operands = tree.operands
    if operands:
        rebuilt = tuple(_merged_chains(child, chain) for child in operands)
        if rebuilt != operands:
            tree = tree.with_operands(rebuilt)
    if not chain or in_chain:
        return tree
    numerator: list[Expression] = []
    denominator: list[Expression] = []
    _collect(tree, False, numerator, denominator)
    top = [_constant_value(f) for f in numerator]
    bottom = [_constant_value(f) for f in denominator]
    constants = [v for v in top + bottom if v is not None]
    if len(constants) < 2 or not any(isinstance(f, Number) and _fitted(f.value)
                                     for f in numerator + denominator):
        return tree
    value = math.prod(v for v in top if v is not None) / \
        math.prod(v for v in bottom if v is not None)
    rest = _quotient([f for f, v in zip(numerator, top, strict=True) if v is None]
                     or [Number(1)],
                     [f for f, v in zip(denominator, bottom, strict=True) if v is None])
    return Binary("*", Number(value), rest) if math.isfinite(value) and value != 0 else tree


def _constant_value(factor: Expression) -> float | None:
    """The value of a factor without symbols (a number, ``sqrt(pi)``); None otherwise."""
    if isinstance(factor, Number):
        return float(factor.value)
    if any(isinstance(node, Symbol) for node in factor.iter_preorder()):
        return None
    try:
        value = float(np.asarray(evaluate_expression(factor, {}), dtype=float))
    except (EngineError, ValueError, TypeError):
        return None
    return value if math.isfinite(value) else None


def _numbers_with_roles(tree: Expression) -> list[tuple[Path, float, str]]:
    found: list[tuple[Path, float, str]] = []
    pending: list[tuple[Path, Expression, str, bool]] = [((), tree, "factor", False)]
    while pending:
        path, node, role, in_exp = pending.pop()
        if isinstance(node, Number) and _fitted(node.value):
            found.append((path, float(node.value), role))
            continue
        additive = isinstance(node, Binary) and node.operator in ("+", "-")
        children = []
        for index, child in enumerate(node.operands):
            if isinstance(node, Binary) and node.operator == "**" and index == 1:
                child_role = "exponent"
            elif additive:
                child_role = "exp_offset" if in_exp else "additive"
            else:
                child_role = "factor"
            inside_exp = isinstance(node, Function) and node.name == "exp"
            children.append((path + (index,), child, child_role, inside_exp))
        pending.extend(reversed(children))
    return found


def _refit(tree: Expression, paths: Sequence[Path], target: np.ndarray,
           evaluate: Evaluate) -> tuple[Expression, float | None]:
    """``tree`` with the numbers at ``paths`` refitted to ``target``, and its nmse."""
    if not paths:
        return tree, _error(evaluate, tree, target)
    start = np.array([float(_node_at(tree, p).value) for p in paths])
    rows = np.isfinite(target).reshape(-1)
    wanted = target.reshape(-1)[rows]
    penalty = 1e3 * (float(np.sqrt(np.mean(wanted**2))) + 1.0)

    def with_values(theta: np.ndarray) -> Expression:
        rebuilt = tree
        for p, v in zip(paths, theta, strict=True):
            rebuilt = _replace_at(rebuilt, p, Number(float(v)))
        return rebuilt

    def residual(theta: np.ndarray) -> np.ndarray:
        try:
            with np.errstate(all="ignore"):
                predicted = np.broadcast_to(np.asarray(evaluate(with_values(theta)), dtype=float),
                                            target.shape).reshape(-1)[rows]
        except (ArithmeticError, ValueError, TypeError):
            return np.full(wanted.shape, penalty)
        difference = predicted - wanted
        return np.where(np.isfinite(difference), difference, penalty)

    try:
        solution = least_squares(residual, start, method="lm",
                                 max_nfev=MAX_REFIT_EVALUATIONS * len(paths))
        theta = solution.x if np.all(np.isfinite(solution.x)) else start
    except (ValueError, ArithmeticError):
        theta = start
    fitted = with_values(theta)
    return fitted, _error(evaluate, fitted, target)


def _simplified(tree: Expression) -> Expression:
    """Identities a snap leaves behind: ``x*1``, ``x + 0``, ``x**1``, ``exp(log(a) + u)``."""
    operands = tree.operands
    if operands:
        rebuilt = tuple(_simplified(child) for child in operands)
        if rebuilt != operands:
            tree = tree.with_operands(rebuilt)
    if isinstance(tree, Function) and tree.name == "exp":
        return _exp_of_log(tree)
    if not isinstance(tree, Binary):
        return tree
    left, right, operator = tree.left, tree.right, tree.operator
    if operator == "+" and _is(left, 0):
        return right
    if operator in ("+", "-") and _is(right, 0):
        return left
    if operator == "-" and _is(left, 0):
        return Unary("-", right)
    if operator == "*" and _is(left, 1):
        return right
    if operator in ("*", "/", "**") and _is(right, 1):
        return left
    return tree


def _exp_of_log(node: Function) -> Expression:
    """``exp(log(a) + u)`` -> ``a*exp(u)``, ``exp(u - log(a))`` -> ``exp(u)/a``."""
    argument = node.arguments[0]
    if not (isinstance(argument, Binary) and argument.operator in ("+", "-")):
        return node
    left, right = argument.left, argument.right
    if _is_log(left):
        rest = right if argument.operator == "+" else Unary("-", right)
        return Binary("*", left.arguments[0], Function("exp", (rest,)))
    if _is_log(right):
        operator = "*" if argument.operator == "+" else "/"
        return Binary(operator, Function("exp", (left,)), right.arguments[0])
    return node


def _is_log(node: Expression) -> bool:
    return isinstance(node, Function) and node.name == "log" and len(node.arguments) == 1 and \
        not any(isinstance(n, Symbol) for n in node.iter_preorder())


def _is(node: Expression, value: float) -> bool:
    return isinstance(node, Number) and node.value == value


def recognise_and_snap(expression: Expression, y: object, evaluate: Evaluate) -> Expression:
    """:func:`~srh_engine.constants.recognise_constants`, then, when the formula does not
    fit exactly (noisy data), :func:`snap_constants` with the other numbers refitted.

    Args:
        expression: A fitted formula (bound parameters count as numbers).
        y: The target values it is fitted to.
        evaluate: Evaluates an expression on the rows of ``y`` (the caller's data).

    Returns:
        The same tree when nothing changed, else the rewritten one.
    """
    result, error = recognised(expression, y, evaluate)
    if error is None or error <= EXACT_NMSE:
        return result
    return snap_constants(result, y, evaluate)
