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

* additive separability ``y = f(A) + g(B)``: monomials of A alone or of B alone;
* multiplicative separability ``y = f(A) * g(B)``: the same test on ``log|y|``
  over the logarithms of the positive inputs (single-signed targets only);
* a power factor ``y = x_i**a * g(rest)`` (:func:`power_factors`):
  multiplicative separability in ``x_i`` whose part is linear in ``log x_i``
  with a slope close to a simple fraction;
* dependence through a pair ``y = h(x_i op x_j, rest)`` for op in ``- / * +``:
  the surrogate over the combined variable and the rest (which passes at
  ``PAIR_TOLERANCE`` too).

Target transforms (``y**2``, ``1/y``, ``log y``, ``sqrt y``) need no
surrogate: the search scores every form against every transform at once.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PAIR_OPERATORS", "Separation", "additive_separable", "combine",
           "multiplicative_separable", "pair_combinations", "separable_parts", "surrogate_error"]

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


@dataclass(frozen=True, slots=True)
class Separation:
    """A split of the inputs into two groups (indices into the columns)."""

    kind: str  # "additive" or "multiplicative"
    first: tuple[int, ...]
    second: tuple[int, ...]


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
    columns = [np.prod([Z[:, i] ** p for i, p in enumerate(powers) if p], axis=0)
               if any(powers) else np.ones(Z.shape[0]) for powers in exponents]
    return np.column_stack(columns)


def _residual(design: np.ndarray, t: np.ndarray) -> float:
    with np.errstate(all="ignore"):
        coefficients, *_ = np.linalg.lstsq(design, t, rcond=None)
        residual = t - design @ coefficients
    spread = float(np.std(t))
    return float(np.sqrt(np.mean(residual**2))) / spread if spread > 0 else 0.0


def _rows(X: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = np.all(np.isfinite(X), axis=1) & np.isfinite(t)
    X, t = X[keep], t[keep]
    if t.size > SURROGATE_ROWS:
        pick = np.linspace(0, t.size - 1, SURROGATE_ROWS).round().astype(int)
        X, t = X[pick], t[pick]
    return X, t


def surrogate_error(X: np.ndarray, t: np.ndarray, degree: int | None = None) -> float:
    """Relative RMS error of the free polynomial surrogate of ``t`` over ``X``."""
    X, t = _rows(X, t)
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
    group = set(first)
    split = [k for k, powers in enumerate(exponents)
             if all(p == 0 for i, p in enumerate(powers) if i in group)
             or all(p == 0 for i, p in enumerate(powers) if i not in group)]
    return _holds(_residual(design, t), _residual(design[:, split], t), max_error)


def additive_separable(X: np.ndarray, y: np.ndarray, first: Sequence[int]) -> bool:
    """Whether ``y = f(X[:, first]) + g(X[:, rest])`` on this data (surrogate test)."""
    return 0 < len(first) < X.shape[1] and _separable(X, y, first)


def multiplicative_separable(X: np.ndarray, y: np.ndarray, first: Sequence[int]) -> bool:
    """Whether ``y = f(X[:, first]) * g(X[:, rest])`` on this data (test on ``log|y|``)."""
    if not 0 < len(first) < X.shape[1] or not (np.all(y > 0) or np.all(y < 0)):
        return False
    return _separable(X, np.log(np.abs(y)), first, logged=True)


def combine(X: np.ndarray, i: int, j: int, operator: str) -> np.ndarray | None:
    """Columns with ``x_i op x_j`` in place of ``x_i`` and ``x_j`` (None when not finite)."""
    with np.errstate(all="ignore"):
        u = {"-": np.subtract, "/": np.divide, "*": np.multiply, "+": np.add}[operator](
            X[:, i], X[:, j])
    if not np.all(np.isfinite(u)):
        return None
    rest = [k for k in range(X.shape[1]) if k not in (i, j)]
    return np.column_stack([u, X[:, rest]])


def pair_combinations(X: np.ndarray, y: np.ndarray, limit: int = 4
                      ) -> list[tuple[int, int, str]]:
    """Pairs ``(i, j, op)`` through which alone ``y`` depends on ``x_i`` and ``x_j``.

    Ordered by how much better the combined surrogate fits; at most ``limit``.
    """
    if X.shape[1] < 2:
        return []
    Xs, t = _rows(X, y)
    degree = _degree(X.shape[1], t.size)
    free = _residual(_design(_scaled(Xs), _exponents(X.shape[1], degree)), t)
    if free >= MAX_SURROGATE_ERROR:
        return []
    reduced_exponents = _exponents(X.shape[1] - 1, degree)
    found = []
    for i, j in itertools.combinations(range(X.shape[1]), 2):
        for operator in PAIR_OPERATORS:  # h(x_j op x_i) is a function of x_i op x_j too
            combined = combine(Xs, i, j, operator)
            if combined is None:
                continue
            error = _residual(_design(_scaled(combined), reduced_exponents), t)
            if error <= max(SLACK * free + FLOOR, PAIR_TOLERANCE):
                found.append((error, i, j, operator))
    found.sort()
    return [(i, j, op) for _, i, j, op in found[:limit]]


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


POWER_R2 = 1.0 - 1e-5
"""A separable factor's log is this close to linear in ``log x``: it is a power of ``x``."""
EXPONENT_DENOMINATORS = (1, 2, 3, 4)
ZERO_QUANTILE = 0.25
"""Power factors are tested on the rows whose |y| is above this quantile: log|y| is smooth
away from the zeros (and near-zeros) of y."""
EXPONENT_TOLERANCE = 2e-3


def power_factors(X: np.ndarray, y: np.ndarray) -> dict[int, float]:
    """Inputs that enter ``y`` only as a power factor ``x_i**a`` (a simple rational), by index.

    The test, on the rows away from the zeros of ``y``: ``x_i`` positive, ``y``
    multiplicatively separable in ``x_i`` (the surrogate test on ``log|y|``), and the
    surrogate's part of ``x_i`` linear in ``log x_i`` with a slope close to a fraction of
    small denominator.
    """
    if X.shape[1] < 2:
        return {}
    keep = np.abs(y) >= np.quantile(np.abs(y), ZERO_QUANTILE)  # away from zeros of y
    if not np.all(np.abs(y[keep]) > 0):
        return {}
    X, y = X[keep], y[keep]
    t = np.log(np.abs(y))
    found = {}
    for i in range(X.shape[1]):
        x = X[:, i]
        if not np.all(x > 0) or not _separable(X, t, [i], logged=True):
            continue
        part, _ = separable_parts(X, t, [i], logged=True)
        exponent = _snapped_slope(np.log(x), part)
        if exponent is not None and exponent != 0:
            found[i] = exponent
    return found


def _snapped_slope(u: np.ndarray, part: np.ndarray) -> float | None:
    design = np.column_stack([np.ones_like(u), u])
    (_, slope), *_ = np.linalg.lstsq(design, part, rcond=None)
    residual = part - design @ np.linalg.lstsq(design, part, rcond=None)[0]
    spread = float(np.var(part))
    if spread <= 0 or 1.0 - float(np.var(residual)) / spread < POWER_R2:
        return None
    for denominator in EXPONENT_DENOMINATORS:
        snapped = round(slope * denominator) / denominator
        if abs(snapped - slope) <= EXPONENT_TOLERANCE:
            return snapped
    return None
