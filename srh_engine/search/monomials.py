"""Inputs that enter the target only through one power-law monomial ``x_i**p * x_j**q ...``.

If ``y = h(x_1**p_1 * ... * x_k**p_k, rest)``, then in logarithms ``L_i = log x_i``
``y = h(exp(p . L), rest)`` and the gradient of ``y`` over ``L_1..L_k`` is ``h' * p``
at every point: the elasticities ``x_i * dy/dx_i`` of those inputs keep one ratio
everywhere (``p_i : p_j``), whatever ``h`` is. ``a/b`` and ``a*b``, two of the pair
combinations of :mod:`.invariance`, are the cases ``p = (1, -1)`` and ``(1, 1)``;
``m*v**2``, ``a/b**2`` or ``G*M/r`` are others, with exponents read from the data.

The test uses the decomposition tests' surrogate (:mod:`.decomposition`): the free
polynomial surrogate of the target over the inputs (the positive ones as logarithms)
gives the gradients; for each group of positive inputs whose gradient columns are
nearly parallel (the second singular value at most ``RANK_RATIO`` of the first: pairs,
then grown greedily up to ``MAX_INPUTS`` inputs), the leading singular vector is snapped
to small integers; the monomial is then confirmed as the pair combinations are: the
surrogate over ``p . L`` and the other inputs (a restriction of the free one) fits about
as well as the free one. At most ``MAX_TESTS`` confirmations. With the units of the group
known (:mod:`.consistency`), only a dimensionless monomial is taken (any other is not
invariant under a change of units).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np

from . import decomposition as dec
from .consistency import TOLERANCE, Vector

__all__ = ["Monomial", "monomial_combinations"]

RANK_RATIO = 0.05
"""Most second-to-first singular value of a group's log-gradients (parallel columns)."""
MAX_INPUTS = 4
"""Most inputs in one monomial."""
MAX_TESTS = 6
"""Most monomials confirmed by a surrogate fit in one call."""
MAX_MULTIPLIER = 4
SNAP_TOLERANCE = 0.04
"""The normalised exponent vector times 1..``MAX_MULTIPLIER`` must be this close to integers
(per component, divided by the multiplier)."""
MIN_ROW = 1e-3
"""Rows whose gradient is shorter than this share of the longest are left out."""
MIN_SHARE = 1e-3
"""A group's gradients must carry at least this share of the whole gradient's size."""


@dataclass(frozen=True, slots=True)
class Monomial:
    """``prod(x[indices[k]] ** exponents[k])``: integer exponents, no common factor, the
    first positive."""

    indices: tuple[int, ...]
    exponents: tuple[int, ...]

    def values(self, X: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.prod([X[:, i] ** float(e) for i, e in zip(self.indices, self.exponents,
                                                                strict=True)], axis=0)


def monomial_combinations(X: np.ndarray, y: np.ndarray,
                          dimensions: Sequence[Vector | None] | None = None,
                          limit: int = 2) -> list[Monomial]:
    """Groups of positive inputs through whose monomial alone ``y`` depends on them.

    The groups of most inputs first, then by the confirming surrogate's error; at most
    ``limit``.
    """
    Xs, t = dec._rows(X, y)
    positive = [i for i in range(X.shape[1]) if np.all(Xs[:, i] > 0) and np.ptp(Xs[:, i]) > 0]
    if len(positive) < 2 or t.size < 20 or np.std(t) <= 0:
        return []
    logged = dec._logged(Xs)
    low, high = logged.min(axis=0), logged.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    Z = 2.0 * (logged - low) / span - 1.0
    degree = dec._degree(X.shape[1], t.size)
    exponents = dec._exponents(X.shape[1], degree)
    design = dec._design(Z, exponents)
    with np.errstate(all="ignore"):
        coefficients, *_ = np.linalg.lstsq(design, t, rcond=None)
        free = float(np.sqrt(np.mean((t - design @ coefficients) ** 2)) / np.std(t))
    if not free < dec.MAX_SURROGATE_ERROR:
        return []
    gradients = np.column_stack([_slopes(Z, exponents, coefficients, i) * 2.0 / span[i]
                                 for i in positive])
    groups = _parallel_groups(gradients)
    allowed = dec.SLACK * free + dec.FLOOR  # a restriction of the free surrogate
    found: list[tuple[float, Monomial]] = []
    seen: set[Monomial] = set()
    for group, direction in groups:
        monomial = _snapped(tuple(positive[k] for k in group), direction)
        if monomial is None or monomial in seen or not _dimensionless(monomial, dimensions):
            continue
        seen.add(monomial)
        error = _reduced_error(logged, t, monomial, degree)
        if error <= allowed:
            found.append((error, monomial))
        if len(seen) >= MAX_TESTS:
            break
    found.sort(key=lambda item: (-len(item[1].indices), item[0]))  # most inputs taken out
    return [monomial for _, monomial in found[:limit]]


def _slopes(Z: np.ndarray, exponents: Sequence[tuple[int, ...]], coefficients: np.ndarray,
            i: int) -> np.ndarray:
    """The surrogate's derivative over ``Z[:, i]`` on every row."""
    total = np.zeros(Z.shape[0])
    for coefficient, powers in zip(coefficients, exponents, strict=True):
        if powers[i] == 0 or coefficient == 0:
            continue
        term = np.full(Z.shape[0], coefficient * powers[i])
        for k, p in enumerate(powers):
            e = p - 1 if k == i else p
            if e:
                term = term * Z[:, k] ** e
        total += term
    return total


def _ratio(G: np.ndarray) -> tuple[float, np.ndarray]:
    """``(s2/s1, leading right singular vector)`` of the gradient columns ``G``, each row
    scaled to length 1 (rows below ``MIN_ROW`` of the longest left out): the direction at
    every point counts alike, so a peaked target's few steep rows do not decide alone."""
    lengths = np.linalg.norm(G, axis=1)
    keep = lengths > MIN_ROW * lengths.max() if lengths.size and lengths.max() > 0 else []
    if np.count_nonzero(keep) < 2:
        return math.inf, np.ones(G.shape[1])
    _, s, vt = np.linalg.svd(G[keep] / lengths[keep, None], full_matrices=False)
    if s[0] <= 0:
        return math.inf, vt[0]
    return float(s[1] / s[0]), vt[0]


def _parallel_groups(G: np.ndarray) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Groups of columns (pairs grown greedily) whose gradients are nearly parallel, best
    first, with their common direction."""
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.mean(G**2, axis=0))
    if not np.all(np.isfinite(norms)) or norms.max() <= 0:
        return []
    strong = [k for k in range(G.shape[1]) if norms[k] >= MIN_SHARE * norms.max()]
    pairs = []
    for a_index, a in enumerate(strong):
        for b in strong[a_index + 1:]:
            ratio, _ = _ratio(G[:, [a, b]])
            if ratio <= RANK_RATIO:
                pairs.append((ratio, (a, b)))
    pairs.sort()
    groups: dict[tuple[int, ...], tuple[float, np.ndarray]] = {}
    for _, pair in pairs:
        group = pair
        while len(group) < MAX_INPUTS:
            options = [(_ratio(G[:, [*group, k]])[0], k) for k in strong if k not in group]
            options = [option for option in options if option[0] <= RANK_RATIO]
            if not options:
                break
            group = tuple(sorted((*group, min(options)[1])))
        for candidate in dict.fromkeys((group, pair)):  # the grown group, and the pair
            if candidate not in groups:
                ratio, direction = _ratio(G[:, list(candidate)])
                groups[candidate] = (ratio, direction)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[0]), item[1][0]))
    return [(group, direction) for group, (_, direction) in ordered]


def _snapped(indices: tuple[int, ...], direction: np.ndarray) -> Monomial | None:
    """Small integer exponents along ``direction`` (None when none are close)."""
    unit = direction / np.max(np.abs(direction))
    for multiplier in range(1, MAX_MULTIPLIER + 1):
        scaled = unit * multiplier
        rounded = np.round(scaled)
        if np.max(np.abs(scaled - rounded)) / multiplier > SNAP_TOLERANCE:
            continue
        if np.any(rounded == 0):
            return None  # an input with no share in the monomial: not this group
        integers = [int(v) for v in rounded]
        common = reduce(math.gcd, (abs(v) for v in integers))
        sign = 1 if integers[0] > 0 else -1
        return Monomial(indices, tuple(sign * v // common for v in integers))
    return None


def _dimensionless(monomial: Monomial, dimensions: Sequence[Vector | None] | None) -> bool:
    """Whether the monomial is dimensionless, or its inputs' units are not all known."""
    if dimensions is None or any(dimensions[i] is None for i in monomial.indices):
        return True
    total = np.sum([np.asarray(dimensions[i]) * e
                    for i, e in zip(monomial.indices, monomial.exponents, strict=True)], axis=0)
    return bool(np.all(np.abs(total) <= TOLERANCE))


def _reduced_error(logged: np.ndarray, t: np.ndarray, monomial: Monomial, degree: int
                   ) -> float:
    """The surrogate's error over ``log`` of the monomial and the other inputs."""
    u = logged[:, list(monomial.indices)] @ np.array(monomial.exponents, dtype=float)
    rest = [k for k in range(logged.shape[1]) if k not in monomial.indices]
    combined = np.column_stack([u, logged[:, rest]])
    return dec._residual(dec._design(dec._scaled(combined),
                                     dec._exponents(combined.shape[1], degree)), t)
