"""Decomposition tests on data: does the problem split into smaller ones?

Each test compares two least-squares fits of a smooth surrogate (a
polynomial in the inputs scaled to [-1, 1], of the highest degree whose
basis stays below ``rows / ROWS_PER_TERM`` terms): one with every monomial,
one restricted to the structure being tested. The property holds when the
restricted surrogate fits about as well as the free one (error at most
``SLACK`` times, plus ``FLOOR``) and the free one fits well (error below
``MAX_SURROGATE_ERROR`` of the target's spread): when the surrogate cannot
represent the target at all, every answer is "no" and the search runs
undivided.

* inputs the target does not depend on (:func:`unused_inputs`): the surrogate without
  an input's monomials fits as well as the free one, to ``UNUSED_RATIO``;
* additive separability ``y = f(A) + g(B)``: monomials of A alone or of B alone;
* multiplicative separability ``y = f(A) * g(B)``: the same test on ``log|y|``
  over the logarithms of the positive inputs (single-signed targets); on a target of
  both signs, whose logarithm is undefined at its zeros, the restricted surrogate is a
  product of a polynomial of A and one of B fitted to ``y`` itself (rank one,
  :func:`product_group`);
* a power factor ``y = x_i**a * g(rest)`` (:func:`power_factors`):
  multiplicative separability in ``x_i`` whose part is linear in ``log x_i``
  with a slope close to a simple fraction;
* dependence through a pair ``y = h(x_i op x_j, rest)`` for op in ``- / * +`` and
  ``hypot`` (:mod:`.invariance`): the surrogate over the combined variable and the rest
  (which passes at ``PAIR_TOLERANCE`` too; where the free surrogate fits only roughly, at
  ``LOOSE_SLACK`` times its error).

Target transforms (``y**2``, ``1/y``, ``log y``, ``sqrt y``) need no
surrogate: the search scores every form against every transform at once.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.linalg import LinAlgError
from scipy.linalg import cho_factor, cho_solve

__all__ = ["PAIR_OPERATORS", "Separation", "additive_separable", "combine",
           "homogeneous_pairs", "homogeneous_quotient", "logged_fits_better",
           "multiplicative_separable", "pair_combinations", "part_with_surrogate",
           "product_group", "product_parts", "separable_group", "separable_parts",
           "surrogate_error", "unused_inputs"]

ROWS_PER_TERM = 5
MAX_TERMS = 160
MAX_DEGREE = 8
SLACK = 2.0
FLOOR = 1e-7
MAX_SURROGATE_ERROR = 0.05
SURROGATE_ROWS = 800
PAIR_OPERATORS = ("-", "/", "*", "+")
PAIR_TOLERANCE = 3e-3
"""A combined variable has a wider range than either input, so its surrogate of the same
degree fits less closely: it passes at this relative error even when the free one does better
(measured: true pairs 1e-6..6e-4, false ones above 0.05)."""
LOOSE_MAX_ERROR = 0.25
LOOSE_SLACK = 1.12
"""A peaked target (a Gaussian of a difference) defeats the free surrogate (relative error
0.1..0.25 on four inputs); the pair tests then pass at this ratio to the free surrogate's
error (measured on four inputs: true pairs 1.06..1.115, false ones above 1.2, except
where the free surrogate was worse still, above 0.5 of the spread). Only on at most
``LOOSE_MAX_INPUTS`` inputs: on eight, a sum of small linear terms and a Gaussian passed
with the product of two of the linear inputs (the surrogate's error is the Gaussian's, and
the product loses little of the small terms); nor on two, where the combined surrogate has
one input and a poor fit of the target by any one function passes."""
LOOSE_MIN_INPUTS = 3
LOOSE_MAX_INPUTS = 4


@dataclass(frozen=True, slots=True)
class Separation:
    """A split of the inputs into two groups (indices into the columns)."""

    kind: str  # "additive" or "multiplicative"
    first: tuple[int, ...]
    second: tuple[int, ...]
    logged: bool = False
    """Whether the test (and so the parts) used the logarithms of the positive inputs."""
    signed: bool = False
    """A multiplicative split of a target of both signs: tested and parted on the target
    itself (:func:`product_group`), not on the logarithm of its magnitude."""


def _scaled(X: np.ndarray) -> np.ndarray:
    low, high = X.min(axis=0), X.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return 2.0 * (X - low) / span - 1.0


def _degree(n_inputs: int, rows: int) -> int:
    budget = min(MAX_TERMS, rows // ROWS_PER_TERM)
    degree = 1
    while degree < MAX_DEGREE and math.comb(n_inputs + degree + 1, degree + 1) <= budget:
        degree += 1
    return degree


def _exponents(n_inputs: int, degree: int) -> list[tuple[int, ...]]:
    found = []
    for total in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(n_inputs), total):
            powers = [0] * n_inputs
            for index in combo:
                powers[index] += 1
            found.append(tuple(powers))
    return found


def _design(Z: np.ndarray, exponents: Sequence[tuple[int, ...]]) -> np.ndarray:
    """The monomials of ``exponents`` over the columns of ``Z``, one column each.

    A monomial is the product of its factors ``Z[:, i]**p`` in column order, left to right
    (what ``np.prod`` over them computes, bit for bit); the powers and the products of
    every leading run of factors are computed once and shared: monomials come in
    graded order, so most extend one already built by one factor.
    """
    design = np.empty((Z.shape[0], len(exponents)))
    powers: dict[tuple[int, int], np.ndarray] = {}
    products: dict[tuple[tuple[int, int], ...], np.ndarray] = {}
    for k, monomial in enumerate(exponents):
        key: tuple[tuple[int, int], ...] = ()
        value: np.ndarray | None = None
        for i, p in enumerate(monomial):
            if not p:
                continue
            factor = powers.get((i, p))
            if factor is None:
                factor = powers[(i, p)] = Z[:, i] ** p
            key += ((i, p),)
            known = products.get(key)
            if known is None:
                known = products[key] = factor if value is None else value * factor
            value = known
        design[:, k] = 1.0 if value is None else value
    return design


def _residual(design: np.ndarray, t: np.ndarray) -> float:
    with np.errstate(all="ignore"):
        coefficients, *_ = np.linalg.lstsq(design, t, rcond=None)
        return _relative_rms(t - design @ coefficients, t)


def _relative_rms(residual: np.ndarray, t: np.ndarray) -> float:
    """The RMS of ``residual`` in units of the spread of ``t`` (0 for a constant ``t``)."""
    spread = float(np.std(t))
    return float(np.sqrt(np.mean(residual**2))) / spread if spread > 0 else 0.0


def _rows(X: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = np.all(np.isfinite(X), axis=1) & np.isfinite(t)
    X, t = X[keep], t[keep]
    if t.size > SURROGATE_ROWS:
        pick = np.linspace(0, t.size - 1, SURROGATE_ROWS).round().astype(int)
        X, t = X[pick], t[pick]
    return X, t


def surrogate_error(X: np.ndarray, t: np.ndarray, degree: int | None = None,
                    logged: bool = False) -> float:
    """Relative RMS error of the free polynomial surrogate of ``t`` over ``X`` (``logged``:
    over the logarithms of its positive columns)."""
    X, t = _rows(_logged(X) if logged else X, t)
    degree = degree or _degree(X.shape[1], t.size)
    return _residual(_design(_scaled(X), _exponents(X.shape[1], degree)), t)


def _holds(free: float, restricted: float, max_error: float = MAX_SURROGATE_ERROR) -> bool:
    return free < max_error and restricted <= SLACK * free + FLOOR


def _logged(X: np.ndarray) -> np.ndarray:
    """Positive columns as logarithms: powers become linear, products sums."""
    positive = np.all(X > 0, axis=0)
    out = X.copy()
    out[:, positive] = np.log(X[:, positive])
    return out


def _separable(X: np.ndarray, t: np.ndarray, first: Sequence[int], logged: bool = False,
               max_error: float = MAX_SURROGATE_ERROR) -> bool:
    X, t = _rows(_logged(X) if logged else X, t)
    degree = _degree(X.shape[1], t.size)
    exponents = _exponents(X.shape[1], degree)
    design = _design(_scaled(X), exponents)
    split = _split_columns(exponents, set(first))
    return _holds(_residual(design, t), _residual(design[:, split], t), max_error)


def separable_group(X: np.ndarray, t: np.ndarray, groups: Sequence[Sequence[int]],
                    logged: bool = False, over: Callable[[], bool] | None = None
                    ) -> tuple[int, ...] | None:
    """The first of ``groups`` that ``t`` is additively separable in (``t = f(group) +
    g(rest)``), or None; the free surrogate is fitted once for all of them. ``over``: stop
    (None) once it returns True."""
    def restricted(design: np.ndarray, free: FreeFit, group: set[int]) -> float:
        return _residual(design[:, _split_columns(free.exponents, group)], free.t)

    return _first_group(X, t, groups, logged, over, restricted)


@dataclass(frozen=True, slots=True)
class FreeFit:
    """The free surrogate of a test: its target rows, monomials, coefficients and error."""

    t: np.ndarray
    exponents: list[tuple[int, ...]]
    coefficients: np.ndarray
    error: float


def _free_fit(X: np.ndarray, t: np.ndarray, logged: bool) -> tuple[np.ndarray, FreeFit]:
    """The design of every monomial (on the tests' rows) and the free surrogate's fit."""
    X, t = _rows(_logged(X) if logged else X, t)
    exponents = _exponents(X.shape[1], _degree(X.shape[1], t.size))
    design = _design(_scaled(X), exponents)
    with np.errstate(all="ignore"):
        coefficients, *_ = np.linalg.lstsq(design, t, rcond=None)
        error = _relative_rms(t - design @ coefficients, t)
    return design, FreeFit(t, exponents, coefficients, error)


def _group_columns(exponents: Sequence[tuple[int, ...]], group: set[int]
                   ) -> tuple[list[int], list[int]]:
    """Indices of the monomials of the group's inputs alone and of the rest's alone (both
    with the constant)."""
    own = [k for k, p in enumerate(exponents)
           if all(v == 0 for i, v in enumerate(p) if i not in group)]
    rest = [k for k, p in enumerate(exponents)
            if all(v == 0 for i, v in enumerate(p) if i in group)]
    return own, rest


def _split_columns(exponents: Sequence[tuple[int, ...]], group: set[int]) -> list[int]:
    """Indices of the monomials of the group's inputs alone or of the rest's alone."""
    own, rest = _group_columns(exponents, group)
    return sorted(set(own) | set(rest))


def _first_group(X: np.ndarray, t: np.ndarray, groups: Sequence[Sequence[int]], logged: bool,
                 over: Callable[[], bool] | None,
                 restricted: Callable[[np.ndarray, FreeFit, set[int]], float]
                 ) -> tuple[int, ...] | None:
    """The first of ``groups`` whose ``restricted`` surrogate (its relative error, given the
    design and the free fit) fits about as well as the free one; None when the free one
    does not fit, or ``over`` says the time is spent."""
    if X.shape[1] < 2:
        return None
    design, free = _free_fit(X, t, logged)
    if free.error >= MAX_SURROGATE_ERROR:
        return None
    for first in groups:
        if over is not None and over():
            return None
        group = set(first)
        if 0 < len(group) < X.shape[1] and _holds(free.error, restricted(design, free, group)):
            return tuple(first)
    return None


def additive_separable(X: np.ndarray, y: np.ndarray, first: Sequence[int],
                       logged: bool = False) -> bool:
    """Whether ``y = f(X[:, first]) + g(X[:, rest])`` on this data (surrogate test);
    ``logged``: the surrogate over the logarithms of the positive inputs."""
    return 0 < len(first) < X.shape[1] and _separable(X, y, first, logged)


def multiplicative_separable(X: np.ndarray, y: np.ndarray, first: Sequence[int],
                             logged: bool = True) -> bool:
    """Whether ``y = f(X[:, first]) * g(X[:, rest])`` on this data (test on ``log|y|``);
    ``logged``: the surrogate over the logarithms of the positive inputs."""
    if not 0 < len(first) < X.shape[1] or not (np.all(y > 0) or np.all(y < 0)):
        return False
    return _separable(X, np.log(np.abs(y)), first, logged=logged)


def logged_fits_better(X: np.ndarray, t: np.ndarray) -> bool:
    """Whether the free surrogate of ``t`` fits better over the logarithms of the positive
    inputs than over the inputs.

    Separability in groups of inputs holds in any monotone reparametrisation of each
    input, so the tests may use whichever the surrogate models better: a part steep near
    the low end of a wide range (``1/sqrt(1 - 1/u**2)`` for ``u`` in 1.5..20) defeats a
    polynomial of ``u`` but not one of ``log u``.
    """
    if not np.any(np.all(X > 0, axis=0)):
        return False
    Xs, ts = _rows(X, t)
    degree = _degree(X.shape[1], ts.size)
    exponents = _exponents(X.shape[1], degree)
    raw = _residual(_design(_scaled(Xs), exponents), ts)
    return _residual(_design(_scaled(_logged(Xs)), exponents), ts) < raw


def combine(X: np.ndarray, i: int, j: int, operator: str) -> np.ndarray | None:
    """Columns with ``x_i op x_j`` in place of ``x_i`` and ``x_j`` (None when not finite);
    ``op`` one of ``- / * +`` or ``hypot`` (``sqrt(x_i**2 + x_j**2)``)."""
    with np.errstate(all="ignore"):
        u = {"-": np.subtract, "/": np.divide, "*": np.multiply, "+": np.add,
             "hypot": np.hypot}[operator](X[:, i], X[:, j])
    if not np.all(np.isfinite(u)):
        return None
    rest = [k for k in range(X.shape[1]) if k not in (i, j)]
    return np.column_stack([u, X[:, rest]])


def pair_combinations(X: np.ndarray, y: np.ndarray, limit: int = 4,
                      candidates: Sequence[tuple[int, int, str]] | None = None,
                      over: Callable[[], bool] | None = None
                      ) -> list[tuple[int, int, str]]:
    """Pairs ``(i, j, op)`` through which alone ``y`` depends on ``x_i`` and ``x_j``.

    Ordered by how much better the combined surrogate fits; at most ``limit``.
    ``candidates``: the ``(i, j, op)`` to test (default: every pair with every op of
    ``PAIR_OPERATORS``). ``over`` is asked before each test (one surrogate fit): once it
    says the time is spent, no pair is reported (the best one may be untested).
    """
    if X.shape[1] < 2:
        return []
    if candidates is None:
        candidates = [(i, j, op) for i, j in itertools.combinations(range(X.shape[1]), 2)
                      for op in PAIR_OPERATORS]  # h(x_j op x_i) is a function of x_i op x_j
    Xs, t = _rows(X, y)
    degree = _degree(X.shape[1], t.size)
    free = _residual(_design(_scaled(Xs), _exponents(X.shape[1], degree)), t)
    if free >= LOOSE_MAX_ERROR:
        return []
    if free >= MAX_SURROGATE_ERROR and not LOOSE_MIN_INPUTS <= X.shape[1] <= LOOSE_MAX_INPUTS:
        return []
    allowed = max(SLACK * free + FLOOR, PAIR_TOLERANCE) if free < MAX_SURROGATE_ERROR else \
        LOOSE_SLACK * free
    reduced_exponents = _exponents(X.shape[1] - 1, degree)
    found = []
    for i, j, operator in candidates:
        if over is not None and over():
            return []
        combined = combine(Xs, i, j, operator)
        if combined is None:
            continue
        error = _residual(_design(_scaled(combined), reduced_exponents), t)
        if error <= allowed:
            found.append((error, i, j, operator))
    found.sort()
    return [(i, j, op) for _, i, j, op in found[:limit]]


HOMOGENEOUS_SLACK = 0.05
"""The degree of a weighted scaling symmetry is snapped to a fraction within this (the
surrogate's slope; the search of the remainder decides)."""
MIN_DEGREE = 0.25
"""Degrees closer to 0 than this are the plain scaling symmetry (``/`` pair tests)."""


def homogeneous_pairs(X: np.ndarray, y: np.ndarray, limit: int = 2,
                      over: Callable[[], bool] | None = None
                      ) -> list[tuple[int, int, float]]:
    """Pairs ``(i, j, k)`` of inputs in which ``y`` is homogeneous of degree ``k``:
    ``y(s*x_i, s*x_j) = s**k * y(x_i, x_j)``, so ``y = x_i**k * h(x_i/x_j, rest)``
    (``C**3/(exp(C/R) - 1)``: the plain scaling test, degree 0, fails on it, and no input
    is a power factor). ``x_i`` is positive; ``x_j`` may take both signs (a Gaussian
    ``exp(-(d/s)**2/2)/s`` of a difference ``d``), and the quotient is then ``x_j/x_i``
    (:func:`homogeneous_quotient`).

    Tested on ``log|y|`` (``y`` of one sign): the surrogate over ``x_i/x_j`` and the rest,
    plus the term ``k*log(x_i)`` with ``k`` fitted, fits about as well as the free one
    (the pair tests' tolerance); ``k`` snapped to a simple fraction and confirmed by the
    same test without the term on ``log|y| - k*log(x_i)``. At most ``limit``, best first;
    ``over`` is asked before each pair's test.
    """
    if X.shape[1] < 2 or not (np.all(y > 0) or np.all(y < 0)):
        return []
    positive = [k for k in range(X.shape[1]) if np.all(X[:, k] > 0)]
    if not positive:
        return []
    Xs, t = _rows(X, np.log(np.abs(y)))
    if not np.std(t) > 0:
        return []
    degree = _degree(X.shape[1], t.size)
    free = _residual(_design(_scaled(Xs), _exponents(X.shape[1], degree)), t)
    if free >= MAX_SURROGATE_ERROR:
        return []
    allowed = max(SLACK * free + FLOOR, PAIR_TOLERANCE)
    reduced = _exponents(X.shape[1] - 1, degree)
    found: list[tuple[float, int, int, float]] = []
    for i, j in ((i, j) for i in positive for j in range(X.shape[1]) if j != i):
        if any((a, b) == (j, i) for _, a, b, _ in found):
            continue  # the same symmetry, read from the other input
        if over is not None and over():
            return []
        combined = combine(Xs, *homogeneous_quotient(X, i, j), "/")
        if combined is None:
            continue
        design = _design(_scaled(combined), reduced)
        logged = np.log(Xs[:, i])
        with np.errstate(all="ignore"):
            coefficients, *_ = np.linalg.lstsq(np.column_stack([design, logged]), t,
                                               rcond=None)
        slope = float(coefficients[-1])
        if not math.isfinite(slope) or abs(slope) < MIN_DEGREE:
            continue
        k = _snapped(slope, HOMOGENEOUS_SLACK)
        if k is None or k == 0:
            continue
        error = _residual(design, t - k * logged)
        if error <= allowed:
            found.append((error, i, j, k))
    found.sort()
    return [(i, j, k) for _, i, j, k in found[:limit]]


def homogeneous_quotient(X: np.ndarray, i: int, j: int) -> tuple[int, int]:
    """``(numerator, denominator)`` of the quotient a homogeneous pair ``(i, j)`` (``x_i``
    positive) is a function of: ``x_i/x_j``, or ``x_j/x_i`` when ``x_j`` is not of one
    sign (``x_i/x_j`` would have a pole among the rows)."""
    one_sign = bool(np.all(X[:, j] > 0) or np.all(X[:, j] < 0))
    return (i, j) if one_sign else (j, i)


def part_with_surrogate(X: np.ndarray, part: np.ndarray, t: np.ndarray, logged: bool = False
                        ) -> tuple[float, float]:
    """Fit ``t ~ c*part + poly(X)``: the coefficient ``c`` and the relative RMS error.

    ``part`` is a found form of the other group of an additive split; fitted together with a
    surrogate of this group's inputs, its coefficient is the one of the real target rather
    than of the surrogate's approximate part, and the error says how well the form and a
    function of this group alone explain the target.
    """
    keep = np.isfinite(part) & np.isfinite(t) & np.all(np.isfinite(X), axis=1)
    pick = np.flatnonzero(keep)
    if pick.size > SURROGATE_ROWS:
        pick = pick[np.linspace(0, pick.size - 1, SURROGATE_ROWS).round().astype(int)]
    Xs = (_logged(X) if logged else X)[pick]
    ts, ps = t[pick], part[pick]
    degree = _degree(X.shape[1], ts.size)
    design = np.column_stack([ps, _design(_scaled(Xs), _exponents(X.shape[1], degree))])
    with np.errstate(all="ignore"):
        coefficients, *_ = np.linalg.lstsq(design, ts, rcond=None)
        residual = ts - design @ coefficients
    error = _relative_rms(residual, ts)
    if not (np.isfinite(error) and np.isfinite(coefficients[0])):
        return 0.0, 1.0
    return float(coefficients[0]), error


def separable_parts(X: np.ndarray, t: np.ndarray, first: Sequence[int], logged: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The restricted surrogate's two parts on every row: ``t ~ c + part1(A) + part2(B)``."""
    if logged:
        X = _logged(X)
    Xs, ts = _rows(X, t)
    degree = _degree(X.shape[1], ts.size)
    exponents = _exponents(X.shape[1], degree)
    group = set(first)
    only_first = [k for k, p in enumerate(exponents) if any(p) and
                  all(v == 0 for i, v in enumerate(p) if i not in group)]
    only_second = [k for k, p in enumerate(exponents) if any(p) and
                   all(v == 0 for i, v in enumerate(p) if i in group)]
    low, high = Xs.min(axis=0), Xs.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    chosen = [0, *only_first, *only_second]
    picked = [exponents[k] for k in chosen]
    with np.errstate(all="ignore"):
        coefficients, *_ = np.linalg.lstsq(_design(2.0 * (Xs - low) / span - 1.0, picked), ts,
                                           rcond=None)
        design = _design(2.0 * (X - low) / span - 1.0, picked)
    n_first = len(only_first)
    part1 = design[:, 1:1 + n_first] @ coefficients[1:1 + n_first]
    part2 = design[:, 1 + n_first:] @ coefficients[1 + n_first:]
    return part1, part2


UNUSED_RATIO = 1.1
"""An input is unused when the surrogate without its monomials has at most this many times
the free surrogate's error (plus ``FLOOR``): a stricter ratio than ``SLACK``, because a
dropped input is never searched again. With noise, the free surrogate's extra terms fit
some of it (on 800 rows, 160 terms against 100: its error is about 0.95 of the
restricted one's), so the ratio is not 1."""


def unused_inputs(X: np.ndarray, t: np.ndarray, logged: bool = False) -> tuple[int, ...]:
    """The inputs ``t`` does not depend on (at most all but one), by the surrogate test."""
    if X.shape[1] < 2:
        return ()
    design, free = _free_fit(X, t, logged)
    if free.error >= MAX_SURROGATE_ERROR:
        return ()
    unused = []
    for i in range(X.shape[1]):
        without = [k for k, powers in enumerate(free.exponents) if powers[i] == 0]
        if _residual(design[:, without], free.t) <= UNUSED_RATIO * free.error + FLOOR:
            unused.append(i)
    return tuple(unused[:X.shape[1] - 1])


PRODUCT_STEPS = 40
"""Alternating least-squares sweeps of the rank-one product fit, at most."""
PRODUCT_CONVERGED = 1e-2
"""The sweeps stop once one improves the relative error by less than this share of it (a
group the target is no product in stalls far above the free surrogate's error at once), or
once the error is low enough to pass."""


def _product_fit(design: np.ndarray, free: np.ndarray, exponents: Sequence[tuple[int, ...]],
                 group: set[int], t: np.ndarray, enough: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray, float]:
    """``t ~ (P a) * (Q b)``: P, Q the monomials of the group's inputs and of the rest's.

    Started from the best rank-one approximation of the free surrogate's coefficients
    (each monomial is one of P times one of Q), then alternating least squares: with one
    factor's values fixed, the other's coefficients are linear. Returns a, b and the
    relative RMS error; stops early once the error is at most ``enough``.
    """
    own, rest = _group_columns(exponents, group)
    position = {exponents[k]: n for n, k in enumerate(own)}, \
        {exponents[k]: n for n, k in enumerate(rest)}
    matrix = np.zeros((len(own), len(rest)))
    for k, powers in enumerate(exponents):
        first = tuple(v if i in group else 0 for i, v in enumerate(powers))
        second = tuple(0 if i in group else v for i, v in enumerate(powers))
        matrix[position[0][first], position[1][second]] = free[k]
    P, Q = design[:, own], design[:, rest]
    try:
        u, singular, vt = np.linalg.svd(matrix)
    except LinAlgError:
        return np.zeros(len(own)), np.zeros(len(rest)), 1.0
    a, b = u[:, 0] * singular[0], vt[0]
    error = np.inf
    with np.errstate(all="ignore"):
        for _ in range(PRODUCT_STEPS):
            g = Q @ b
            a, *_ = np.linalg.lstsq(P * g[:, None], t, rcond=None)
            f = P @ a
            b, *_ = np.linalg.lstsq(Q * f[:, None], t, rcond=None)
            now = _relative_rms(t - f * (Q @ b), t)
            if not np.isfinite(now):
                return a, b, 1.0
            done = now <= enough or error - now <= PRODUCT_CONVERGED * now
            error = min(error, now)
            if done:
                break
    return a, b, float(error)


def product_group(X: np.ndarray, t: np.ndarray, groups: Sequence[Sequence[int]],
                  logged: bool = False, over: Callable[[], bool] | None = None
                  ) -> tuple[int, ...] | None:
    """The first of ``groups`` that ``t`` is a product in (``t = f(group) * g(rest)``),
    tested on ``t`` itself: for a target of both signs, where the test on ``log|t|``
    cannot run. The restricted surrogate is the product of a polynomial of the group's
    inputs and one of the rest's (:func:`_product_fit`); the property holds when it fits
    about as well as the free surrogate, as for the other tests. ``over``: stop (None)
    once it returns True."""
    def restricted(design: np.ndarray, free: FreeFit, group: set[int]) -> float:
        return _product_fit(design, free.coefficients, free.exponents, group, free.t,
                            enough=SLACK * free.error + FLOOR)[2]

    return _first_group(X, t, groups, logged, over, restricted)


def product_parts(X: np.ndarray, t: np.ndarray, first: Sequence[int], logged: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The rank-one surrogate's two factors on every row: ``t ~ part1(A) * part2(B)``
    (each known up to a scale the other makes up)."""
    if logged:
        X = _logged(X)
    Xs, ts = _rows(X, t)
    degree = _degree(X.shape[1], ts.size)
    exponents = _exponents(X.shape[1], degree)
    low, high = Xs.min(axis=0), Xs.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    design = _design(2.0 * (Xs - low) / span - 1.0, exponents)
    with np.errstate(all="ignore"):
        free, *_ = np.linalg.lstsq(design, ts, rcond=None)
    group = set(first)
    a, b, _ = _product_fit(design, free, exponents, group, ts)
    own, rest = _group_columns(exponents, group)
    every = _design(2.0 * (X - low) / span - 1.0, exponents)
    return every[:, own] @ a, every[:, rest] @ b


FACTOR_ROWS = 2000
"""Rows of the power-factor test (more rows than the other tests: it needs no free surrogate)."""
FACTOR_RATIO = 0.95
"""A power factor's extra terms (nonlinear in ``log x_i``, interactions with the rest) leave
at least this share of the restricted model's weighted squared error (measured on generated
problems: true factors 0.96..0.998, inputs inside a sum or a difference 0.1..0.93)."""
EXPONENT_DENOMINATORS = (1, 2, 3)
EXPONENT_TOLERANCE = 2e-3
THIRDS_TOLERANCE = 0.02
"""Thirds are taken only from a slope known this well (measured: inputs inside a sum came
out at 0.66..0.67 with a wide error)."""
EXPONENT_SLACK = 2.5
"""A slope snaps to a fraction within this many of its standard errors (at most
``MAX_EXPONENT_SLACK``): where the rest is hard to model, the slope is known less exactly and
the search of the remainder decides."""
MAX_EXPONENT_SLACK = 0.12
HUBER_STEPS = 4
FIT_FLOOR = 1e-16
"""Squared errors below this share of the target's are round-off (the fits' normal
equations resolve a relative error of about 1e-8): a restricted model that fits that
closely leaves the extra terms nothing, and the input is a factor."""
ORIGINAL_RATIO = 0.95
"""The same comparison without logarithms, ``y / x_i**a`` against a polynomial of the rest
with and without terms in ``x_i``, must keep this share too (measured: inputs inside a sum
0.2..0.9, true factors 0.985..0.997)."""


def power_factors(X: np.ndarray, y: np.ndarray, over: Callable[[], bool] | None = None
                  ) -> dict[int, float]:
    """Inputs that enter ``y`` only as a power factor ``x_i**a`` (a simple rational), by index.

    ``y = x_i**a * g(rest)`` means ``log|y| = a*log(x_i) + log|g(rest)|``: for each positive
    input, a robust (Huber-weighted) fit of ``log|y|`` on ``log x_i`` plus a polynomial of the
    other inputs (their logarithms where positive) is compared with the same fit plus terms
    that a power factor does not need (``log x_i`` squared and cubed, its products with the
    other inputs). The input is a factor when those terms barely help (the restricted model
    keeps ``FACTOR_RATIO`` of its error) and the slope is close to a fraction of small
    denominator. Unlike a test against a free surrogate, this needs no model of the rest that
    fits well, so it works on many inputs and on targets that change sign; the zeros of ``y``
    (where ``log|y|`` is unbounded) are down-weighted by the robust fit rather than cut, so
    that no row is chosen by the value of ``y``. When several inputs pass, each is tested
    again with the others divided out (:func:`_confirmed`).

    ``over`` is asked before each input's test (a few least-squares fits of up to
    ``FACTOR_ROWS`` rows each, seconds on a loaded machine): once it says the time is
    spent, no factor is reported (a partial set would misdirect the decomposition).
    """
    d = X.shape[1]
    if d < 2:
        return {}
    keep = np.all(np.isfinite(X), axis=1) & np.isfinite(y) & (y != 0)
    X, y = X[keep], y[keep]
    if y.size > FACTOR_ROWS:
        pick = np.linspace(0, y.size - 1, FACTOR_ROWS).round().astype(int)
        X, y = X[pick], y[pick]
    if y.size < 20:
        return {}
    found = {}
    for i in range(d):
        if over is not None and over():
            return {}
        exponent = _factor_exponent(X, y, i)
        if exponent is not None:
            found[i] = exponent
    return _confirmed(X, y, found, over) if len(found) >= 2 else found


def _confirmed(X: np.ndarray, y: np.ndarray, found: dict[int, float],
               over: Callable[[], bool] | None) -> dict[int, float]:
    """The factors that pass the test again with the others divided out (and their inputs
    left out); the exponent of the second test.

    On many inputs the surrogate of the rest is poor, and an input inside a function of a
    few others (``u`` in ``1/(mu - cos(u - s))``, ``y`` in ``1/cos(y)``) passed as a factor
    ``u**0.5``, ``y**(-1/3)`` beside the true ones: the extra terms of the test cannot fit
    what the rest's surrogate misses. With the true factors divided out the same test has
    the few inputs of the rest, a surrogate of higher degree that fits them, and the
    input's dependence through the function shows. Every factor is tested against the
    first test's others, so a wrong one only weakens the others' second test (it divides
    out a power of an input that is then left out).
    """
    kept = {}
    for i in found:
        if over is not None and over():
            return {}
        others = [j for j in found if j != i]
        columns = [k for k in range(X.shape[1]) if k not in others]
        with np.errstate(all="ignore"):
            rest = y / np.prod([X[:, j] ** found[j] for j in others], axis=0)
        if not np.all(np.isfinite(rest) & (rest != 0)):
            kept[i] = found[i]
            continue
        exponent = _factor_exponent(X[:, columns], rest, columns.index(i))
        if exponent is not None:
            kept[i] = exponent
    return kept


def _factor_exponent(X: np.ndarray, y: np.ndarray, i: int) -> float | None:
    """The exponent ``a`` when input ``i`` enters ``y`` (rows without zeros) only as a
    factor ``x_i**a`` (the test of :func:`power_factors`), else None."""
    d = X.shape[1]
    if not np.all(X[:, i] > 0):
        return None
    logged = _logged(X)
    if np.ptp(logged[:, i]) <= 0:
        return None
    Z = _scaled(logged)
    t = np.log(np.abs(y))
    degree = _degree(d - 1, y.size * ROWS_PER_TERM // 3)
    rest = [k for k in range(d) if k != i]
    base = _design(Z[:, rest], _exponents(d - 1, degree))
    z = Z[:, i][:, None]
    restricted = np.column_stack([logged[:, i], base])
    extra = np.column_stack([z**2, z**3, z * Z[:, rest], z**2 * Z[:, rest]])
    slope, error, weights = _robust_slope(restricted, t)
    if slope is None:
        return None
    free = np.column_stack([restricted, extra])
    with np.errstate(all="ignore"):
        coefficients = _least_squares(free * weights[:, None], t * weights)
        free_error = float(np.sum((weights * (t - free @ coefficients)) ** 2))
    restricted_error = float(np.sum((weights * error) ** 2))
    floor = FIT_FLOOR * float(np.sum((weights * t) ** 2))
    if not restricted_error > 0 or free_error + floor < FACTOR_RATIO * (restricted_error + floor):
        return None
    spread = float(np.var(logged[:, i]))
    standard_error = math.sqrt(restricted_error / max(np.sum(weights**2), 1.0) /
                               (y.size * spread))
    exponent = _snapped(slope, min(MAX_EXPONENT_SLACK, EXPONENT_SLACK * standard_error))
    if exponent is None or exponent == 0 or \
            _original_ratio(X, y, i, exponent, degree) < ORIGINAL_RATIO:
        return None
    return exponent


def _original_ratio(X: np.ndarray, y: np.ndarray, i: int, exponent: float, degree: int
                    ) -> float:
    """Share of the error of ``y/x_i**a ~ poly(rest)`` left when terms in ``x_i`` are added.

    The log-space test cannot see an input inside a sum whose logarithm is nearly linear
    (``log(a + b)`` over a narrow range); without logarithms a rest that is polynomial (a
    difference, a cube) is modelled closely, and any dependence left on ``x_i`` shows.
    """
    Z = _scaled(X)
    rest = [k for k in range(X.shape[1]) if k != i]
    base = _design(Z[:, rest], _exponents(X.shape[1] - 1, degree))
    z = Z[:, i][:, None]
    free = np.column_stack([base, z, z**2, z**3, z * Z[:, rest], z**2 * Z[:, rest]])
    with np.errstate(all="ignore"):
        r = y / X[:, i] ** exponent
        r = r / (np.std(r) or 1.0)
        restricted_error = float(np.sum((r - base @ _least_squares(base, r)) ** 2))
        free_error = float(np.sum((r - free @ _least_squares(free, r)) ** 2))
    floor = 1e-12 * r.size
    ratio = (free_error + floor) / (restricted_error + floor)
    return ratio if math.isfinite(ratio) else 0.0


def _least_squares(design: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Least-squares coefficients by the normal equations: Cholesky, or where that fails
    (collinear columns) the minimum-norm solution by the Gram matrix's SVD.

    The power-factor test's fits are of up to ``FACTOR_ROWS`` rows and ~150 columns: by
    the normal equations 10x faster than by the SVD of the design (on 100 generated
    problems at load 5 the test took a median 2.4 s, a quarter of a 10 s budget, before).
    The coefficients lose digits (the Gram matrix squares the design's condition), the
    residuals fewer than the tests' ratios resolve (``FIT_FLOOR`` below that).
    """
    with np.errstate(all="ignore"):
        gram, moments = design.T @ design, design.T @ t
        try:
            return cho_solve(cho_factor(gram, check_finite=False), moments,
                             check_finite=False)
        except (LinAlgError, ValueError):  # collinear columns, or not finite
            return np.linalg.lstsq(gram, moments, rcond=None)[0]


def _robust_slope(design: np.ndarray, t: np.ndarray
                  ) -> tuple[float | None, np.ndarray, np.ndarray]:
    """First coefficient of a Huber-weighted fit; residuals and row weights."""
    weights = np.ones(t.size)
    residual = t
    coefficients = None
    with np.errstate(all="ignore"):
        for _ in range(HUBER_STEPS):
            coefficients = _least_squares(design * weights[:, None], t * weights)
            residual = t - design @ coefficients
            scale = 1.4826 * float(np.median(np.abs(residual))) + 1e-300
            weights = np.sqrt(np.minimum(1.0, 2.0 * scale / np.maximum(np.abs(residual),
                                                                      1e-300)))
    if coefficients is None or not np.all(np.isfinite(coefficients)):
        return None, residual, weights
    return float(coefficients[0]), residual, weights


def _snapped(slope: float, slack: float) -> float | None:
    """The simplest fraction within ``slack`` of ``slope`` (at least ``EXPONENT_TOLERANCE``)."""
    slack = max(slack, EXPONENT_TOLERANCE)
    for denominator in EXPONENT_DENOMINATORS:
        snapped = round(slope * denominator) / denominator
        if abs(snapped - slope) <= (min(slack, THIRDS_TOLERANCE) if denominator == 3 else slack):
            return snapped
    return None
