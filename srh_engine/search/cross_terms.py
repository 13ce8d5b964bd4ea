"""Sums with cross terms: sparse fits over products of simple features of the inputs.

The sums of :mod:`.combination` take their terms from the enumeration, smallest
first; a cross term such as ``a*b*cos(t)`` (in ``a**2 + b**2 - 2*a*b*cos(t)``, the
square of a law of cosines) is a mid-sized form there, ranked hundreds deep among
lookalikes, beyond the pairs and triples the pursuit scores exactly, and its forward
selection starts from a lookalike of the whole target. Here the dictionary is built for
such sums instead: *monomials* of simple features of the inputs (each input ``x``,
``1/x``, and ``sin(x)``, ``cos(x)``, ``log(x)``, ``exp(x)``, ``sqrt(x)`` where the
operators allow them): products of up to three powers (``a*b*k``, ``x**2``, ``a/b``),
of up to two powers and one function (``a*b*cos(t)``, ``B*v*sin(t)``) and of two
functions (``cos(p)*cos(q)``), deduplicated by value. A sparse sum of them is fitted to
the target and to its square, inverse and inverse square (``sqrt((a - b)**2 + (c -
d)**2)``, ``1/(1/a + 1/b)``, ``1/sqrt(Q)``) by backward elimination from one
least-squares fit of many of them at once (:func:`.combination.eliminate`: on exact
data that fit holds the true terms, and dropping any other term costs nothing): the
smallest monomials, and of the others those most correlated with what the smallest
leave of the target. When no sum is exact, ratios of two such sums are fitted to the
target the same way, as one linear fit (:func:`ratio_sums`: ``(u + v)/(1 + u*v)``,
``(a*r + b*s)/(a + b)``), and to its square (:func:`root_ratios`: ``sqrt((a + b)/(a - b))``,
kept apart). The caller checks an exact-looking sum on all rows.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .combination import (
    MAX_TERMS,
    Combination,
    best_pairs,
    best_triples,
    distinct_rows,
    eliminate,
    explained_shares,
    normalised_rows,
    unit_centred,
)
from .operators import UNARY, Tree, evaluate_tree, size

__all__ = ["Monomials", "cross_sums", "monomials", "ratio_sums", "root_ratios"]

FUNCTIONS = ("sin", "cos", "sqrt", "log", "exp")
"""Unary functions of an input that may be a factor of a monomial (when searched), the
commonest first."""
MAX_FEATURES = 40
"""Most simple features (inputs, their inverses and functions): the dictionary grows with
their cube."""
MAX_MONOMIALS = 1500
"""Most monomials, by kind: single features, then products of two powers, of a power and a
function, of three powers, of two powers and a function, of two functions (on many inputs
the last kinds are cut)."""
QUADRUPLE_POWERS = 8
"""Products of four powers join the dictionary (last) when there are at most this many
powers (four inputs and their inverses)."""
FIT_ROWS_PER_TERM = 3
"""The full fit takes at most one monomial per this many rows."""
MAX_FULL_FIT = 150
"""Most monomials in one full least-squares fit (its cost is rows x monomials**2)."""
SCREENING_BLOCKS = 4
"""The monomials beyond the first half are chosen in this many blocks."""
SPAN_TOLERANCE = 1e-10
"""A monomial adds a direction to a span when this much of it (unit length) lies outside."""
ELIMINATED_POWERS = 2
"""Powers of the target whose sums are eliminated: those whose full fit leaves least (the
elimination, one SVD per step, costs most)."""
ELIMINATION_BATCH = 2
"""The elimination drops half of the terms beyond ``MAX_TERMS`` at a time: on exact data
every term but the true ones costs nothing to drop."""
MAX_ABS = 1e12
NEGLIGIBLE = 1e-9
"""Terms whose coefficients are this small beside the largest one are left out."""
EXACT = 1e-20
"""A fitted sum is exact at this normalised error (as in :mod:`.combination`)."""


@dataclass(frozen=True, slots=True)
class Monomials:
    """The dictionary: trees, their values on the rows (one row per monomial), sizes; the
    products of powers alone come first."""

    trees: list[Tree]
    values: np.ndarray
    sizes: np.ndarray
    unit: np.ndarray
    """The values centred, of unit length."""


def _features(columns: np.ndarray, binary: tuple[str, ...], unary: tuple[str, ...]
              ) -> tuple[list[tuple[Tree, np.ndarray, int]], list[tuple[Tree, np.ndarray, int]]]:
    """Powers (``x``, ``1/x``) and functions (``sin(x)``...) of each input, finite on
    every row, each with its count of functions (0 or 1)."""
    powers, functions = [], []
    varying = [i for i in range(columns.shape[1]) if np.ptp(columns[:, i]) > 0]
    with np.errstate(all="ignore"):
        for i in varying:
            x = columns[:, i]
            powers.append((("v", i), x, 0))
            if "/" in binary and np.all(x != 0):
                powers.append((("/", ("k", 1.0), ("v", i)), 1.0 / x, 0))
        for name in (name for name in FUNCTIONS if name in unary):  # by kind: caps cut the last
            for i in varying:
                values = UNARY[name](columns[:, i])
                if np.all(np.isfinite(values)) and np.ptp(values) > 0 and \
                        np.abs(values).max() < MAX_ABS:
                    functions.append(((name, ("v", i)), values, 1))
    return powers, functions


def monomials(columns: np.ndarray, binary: tuple[str, ...], unary: tuple[str, ...]
              ) -> Monomials | None:
    """Products of up to three powers, or of up to two powers and one function, or of two
    functions, of the inputs; at most ``MAX_MONOMIALS`` (by kind, smallest kinds first),
    ordered by size, distinct by value up to scale and offset; None without ``*``."""
    if "*" not in binary:
        return None
    powers, functions = _features(columns, binary, unary)
    if len(powers) + len(functions) > MAX_FEATURES:
        functions = functions[:max(MAX_FEATURES - len(powers), 0)]

    def times(*factors: tuple[Tree, np.ndarray, int]) -> tuple[Tree, np.ndarray, int]:
        """The product, equal factors (neighbours in a combination) as one power:
        ``a*x**2``, ``a**2*b**2``, not ``a*x*x``."""
        parts = []
        for _, run in itertools.groupby(factors, key=lambda factor: factor[0]):
            same = list(run)
            parts.append(functools.reduce(lambda x, y: _product(y, x, unary), same[-2::-1],
                                          same[-1]))
        return functools.reduce(lambda x, y: _product(x, y, unary), parts)

    pairs = list(itertools.combinations_with_replacement(powers, 2))
    kinds = itertools.chain(
        ((item,) for item in (*powers, *functions)), pairs,
        itertools.product(powers, functions),
        itertools.combinations_with_replacement(powers, 3),
        ((*pair, f) for f in functions for pair in pairs),
        itertools.combinations(functions, 2),
        itertools.combinations_with_replacement(powers, 4) if len(powers) <= QUADRUPLE_POWERS
        else ())
    items = [times(*factors) for factors in itertools.islice(kinds, MAX_MONOMIALS)]
    return _distinct(items)


def _product(first: tuple[Tree, np.ndarray, int], second: tuple[Tree, np.ndarray, int],
             unary: tuple[str, ...]) -> tuple[Tree, np.ndarray, int]:
    """``first*second`` written as a person does (``x**2``, ``a/b``, ``1/(a*b)``), with
    its count of functions."""
    (left, a, f), (right, b, g) = first, second
    values, i = a * b, f + g
    left_over = _reciprocal_of(left)
    right_over = _reciprocal_of(right)
    if left == right and "square" in unary:
        return (("square", left) if left_over is None else
                ("/", ("k", 1.0), ("square", left_over))), values, i
    if left_over is not None and right_over is not None:
        return ("/", ("k", 1.0), ("*", left_over, right_over)), values, i
    if right_over is not None:
        return ("/", left, right_over), values, i
    if left_over is not None:
        return ("/", right, left_over), values, i
    return ("*", left, right), values, i


def _reciprocal_of(tree: Tree) -> Tree | None:
    """``d`` when ``tree`` is ``1/d``."""
    if tree[0] == "/" and tree[1] == ("k", 1.0):
        return tree[2]
    return None


def _distinct(items: list[tuple[Tree, np.ndarray, int]]) -> Monomials | None:
    """The finite, non-constant items, the first of each direction: products of powers
    first, then those with functions, each smallest first (the full fit's fixed half is
    the first: smooth functions of inputs on a short range are spanned to 1e-11 by a few
    dozen others, and a cross term like ``a*x**2`` would be taken for a lookalike of the
    span of such products)."""
    if not items:
        return None
    sizes = np.array([size(item[0]) for item in items])
    order = np.lexsort((sizes, [item[2] > 0 for item in items]))
    values = np.array([items[k][1] for k in order])
    with np.errstate(all="ignore"):
        finite = np.all(np.isfinite(values), axis=1) & (np.abs(values).max(axis=1) < MAX_ABS)
        unit, good = normalised_rows(values[finite])
    good = np.flatnonzero(finite)[good]  # rows of ``values``
    if good.size == 0:
        return None
    first = distinct_rows(unit, 5)  # one per direction, up to sign
    kept = order[good[first]]
    trees = [items[k][0] for k in kept]
    return Monomials(trees, values[good[first]], sizes[kept], unit[first])


def _powered(target: np.ndarray) -> dict[float, np.ndarray]:
    """The powers of the target (:data:`POWERS`) that are finite and vary; other than
    ``y`` and ``1/y`` only for a target of one sign (whose roots have that sign)."""
    signed = bool(np.all(target > 0) or np.all(target < 0))
    found = {}
    with np.errstate(all="ignore"):
        for power in POWERS:
            if power in (1.0, -1.0) or signed:
                found[power] = np.abs(target) ** power * (np.sign(target) if power in
                                                           (1.0, -1.0) else 1.0)
    return {power: values for power, values in found.items()
            if np.all(np.isfinite(values)) and np.std(values) > 0}


def cross_sums(columns: np.ndarray, target: np.ndarray, binary: tuple[str, ...],
               unary: tuple[str, ...], over: Callable[[], bool],
               dictionary: Monomials | None = None) -> list[tuple[str, float, Tree]]:
    """Sparse sums of monomials fitted to ``target`` and its powers.

    Args:
        columns: ``(rows, inputs)`` rows of the view's inputs.
        target: The target on those rows.
        binary, unary: The searched operators (the monomials use only them).
        over: True when the budget is spent (checked between fits).
        dictionary: :func:`monomials` of ``columns``, when the caller has it already.

    Returns:
        ``(transform of :mod:`.views`, nmse on the rows, tree)``, best first: the best sum
        of every size per power of the target, as a form of a transform (``y**(2/3) = S``
        as ``S*sqrt(S)`` of ``y`` itself, ``y**-2 = S`` as ``sqrt(S)`` of ``1/y``).
    """
    if dictionary is None:
        dictionary = monomials(columns, binary, unary)
    if dictionary is None or over():
        return []
    limit = _full_fit_limit(target.size)
    span = _Span.of(dictionary.unit, min(limit, dictionary.unit.shape[0]) // 2)
    screened = []  # (what the full fit leaves, power, values, centred, chosen)
    powered = _powered(target)
    for power, values in powered.items():
        centred = unit_centred(values)
        if centred is None or over():
            continue
        chosen, left = _screened(dictionary.unit, centred, span, limit)
        if chosen.size >= 2:
            screened.append((left, power, values, centred, chosen))
    found = []
    for _, power, values, centred, chosen in sorted(screened, key=lambda entry: entry[0])[
            :ELIMINATED_POWERS]:
        if over():
            break
        transform, shape = POWERS[power]
        for item in _sums(dictionary, values, centred, chosen):
            tree = item.tree if shape is None else _shaped(dictionary, item, values, shape)
            if tree is None:
                continue
            found.append((transform, item.nmse, tree))
            if item.nmse <= EXACT:
                return sorted(found, key=lambda entry: entry[1])
    if not over():
        found += [("identity", nmse, tree)
                  for nmse, tree in ratio_sums(dictionary, target, limit, over)]
    return sorted(found, key=lambda entry: entry[1])


def root_ratios(columns: np.ndarray, target: np.ndarray, binary: tuple[str, ...],
                unary: tuple[str, ...], over: Callable[[], bool],
                dictionary: Monomials | None = None) -> list[tuple[str, float, Tree]]:
    """Ratios of sums fitted to the square of a target of one sign, ``y = sqrt(P/Q)``
    (``sqrt((a + b)/(a - b))``), as ``("square", nmse, P/Q)``, best first.

    Apart from :func:`cross_sums`: such a ratio is exact for ``N/sqrt(Q)`` too (``P = N**2``),
    where it is the truth written less simply, and judged apart from it without signs
    (``sqrt(N**2) = |N|``); the caller keeps it for when nothing else is exact.
    """
    powered = _powered(target)
    if 2.0 not in powered or over():
        return []
    if dictionary is None:
        dictionary = monomials(columns, binary, unary)
    if dictionary is None:
        return []
    return [("square", nmse, tree) for nmse, tree in
            ratio_sums(dictionary, powered[2.0], _full_fit_limit(target.size), over)]


def _full_fit_limit(rows: int) -> int:
    """Most monomials in one full fit on ``rows`` rows."""
    return min(rows // FIT_ROWS_PER_TERM, MAX_FULL_FIT)


def _sums(dictionary: Monomials, target: np.ndarray, centred: np.ndarray, chosen: np.ndarray
          ) -> list[Combination]:
    """The best sum of each size of the ``chosen`` monomials, eliminated backward from
    their full fit to ``target`` (``centred``: it centred, unit)."""
    found = []
    for support, nmse in eliminate(dictionary.unit[chosen], centred, MAX_TERMS,
                                   ELIMINATION_BATCH):
        tree = _sum_tree(dictionary, chosen, support, target)
        if tree is not None:
            found.append(Combination(nmse, len(support), tree))
    return found


def _sum_tree(dictionary: Monomials, ids: np.ndarray, support: tuple[int, ...],
              target: np.ndarray) -> Tree | None:
    """``f1 + (c2/c1)*f2 + ...`` fitted by least squares, led by the term whose coefficient
    the most others match in size (``a**2 + b**2 - 2*a*b*cos(t)``, not ``a*b*cos(t) -
    a**2/2 - b**2/2``: fewer constants), the others smallest first; terms of round-off
    size are left out."""
    chosen = ids[list(support)]
    design = np.column_stack([np.ones(target.size), dictionary.values[chosen].T])
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    weights = coefficients[1:]
    if not np.all(np.isfinite(weights)) or not np.any(weights):
        return None
    kept = np.flatnonzero(np.abs(weights) > NEGLIGIBLE * np.abs(weights).max())
    tree, _ = _led_sum(dictionary, [int(k) for k in chosen[kept]], weights[kept])
    return tree


def _led_sum(dictionary: Monomials, ids: list[int], weights: np.ndarray) -> tuple[Tree, float]:
    """``m1 + (w2/w1)*m2 + ...`` of the monomials ``ids`` and their weights, and ``w1``: led
    by the term whose weight the most others match in size (fewer constants), then the
    smallest, the others smallest first."""
    magnitude = np.abs(weights)
    matches = np.sum(np.isclose(magnitude[:, None], magnitude[None, :], rtol=1e-9), axis=1)
    order = sorted(range(len(ids)), key=lambda k: (-matches[k], dictionary.sizes[ids[k]],
                                                   -magnitude[k]))
    lead = float(weights[order[0]])
    tree: Tree = dictionary.trees[ids[order[0]]]
    for k in sorted(order[1:], key=lambda k: dictionary.sizes[ids[k]]):
        tree = _plus(tree, dictionary.trees[ids[k]], float(weights[k]) / lead)
    return tree, lead


def _plus(tree: Tree, form: Tree | None, ratio: float) -> Tree:
    """``tree + ratio*form`` (``form`` None: the number ``ratio``), its sign as a minus."""
    term: Tree = ("k", abs(ratio)) if form is None else \
        form if abs(abs(ratio) - 1.0) <= 1e-9 else ("*", ("k", abs(ratio)), form)
    return "+" if ratio > 0 else "-", tree, term


@dataclass(frozen=True, slots=True)
class _Span:
    """An orthonormal basis of the span of the first ``count`` monomials, and how much of
    each monomial (unit rows) lies outside it."""

    count: int
    basis: np.ndarray  # (rows, rank)
    left: np.ndarray  # (monomials,): 1 - the squared norm of each one's projection

    @classmethod
    def of(cls, unit: np.ndarray, count: int) -> _Span:
        basis = _orthonormal(unit[:count].T, np.zeros((unit.shape[1], 0)))
        return cls(count, basis, 1.0 - np.sum((unit @ basis) ** 2, axis=1))

    def grown(self, unit: np.ndarray, chosen: np.ndarray) -> _Span:
        """The span with the monomials ``chosen`` added (only what of them is new)."""
        more = _orthonormal(unit[chosen].T, self.basis)
        return _Span(self.count + chosen.size, np.hstack([self.basis, more]),
                     self.left - np.sum((unit @ more) ** 2, axis=1))


def _orthonormal(columns: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """An orthonormal basis of what of ``columns`` lies outside the orthonormal ``basis``
    (projected out twice, as classical Gram-Schmidt needs; directions of round-off size
    dropped)."""
    for _ in range(2):
        columns = columns - basis @ (basis.T @ columns)
    q, r = np.linalg.qr(columns)
    keep = np.abs(np.diag(r)) > SPAN_TOLERANCE
    return q[:, keep]


def _screened(unit: np.ndarray, centred: np.ndarray, span: _Span, limit: int
              ) -> tuple[np.ndarray, float]:
    """Indices of at most ``limit`` monomials for the full fit, and the share of
    ``centred`` their fit leaves: the first half (products of powers, smallest first:
    ``span``), then, block by block, those that would explain most of what the chosen ones
    leave of the target (the cross term of a sum of squares, once its squares are fitted;
    a block at a time, since a term that the first ones explain is not needed)."""
    count = unit.shape[0]
    energy = float(centred @ centred)
    if count <= limit:
        span = span.grown(unit, np.arange(span.count, count))
    chosen = np.arange(min(span.count, count))
    block = max(1, (limit - chosen.size) // SCREENING_BLOCKS)
    residual = centred - span.basis @ (span.basis.T @ centred)
    while chosen.size < min(limit, count) and float(residual @ residual) > EXACT * energy:
        # as in orthogonal least squares: the share of the residual a monomial would
        # explain, from what of it the chosen ones do not already span
        score = explained_shares(unit @ residual, span.left)
        score[chosen] = -1.0
        best = np.argsort(-score, kind="stable")[:min(block, limit - chosen.size)]
        best = best[score[best] > 0]  # never one chosen or spanned already (scored -1)
        if best.size == 0:
            break
        span = span.grown(unit, best)
        chosen = np.concatenate([chosen, best])
        residual = centred - span.basis @ (span.basis.T @ centred)
    return np.sort(chosen), float(residual @ residual) / energy


def _shaped(dictionary: Monomials, item: Combination, target: np.ndarray,
            shape: Callable[[Tree], Tree]) -> Tree | None:
    """``shape(sum + c)`` for a sum fitted to a root's power of the target: the constant goes
    inside the root, and the sign of the sum is chosen so that what is under it is
    positive (None when no sign is)."""
    values = _tree_values(dictionary, item.tree)
    if values is None:
        return None
    design = np.column_stack([np.ones(target.size), values])
    (offset, scale), *_ = np.linalg.lstsq(design, target, rcond=None)
    if not (np.isfinite(offset) and np.isfinite(scale)) or scale == 0:
        return None
    shift = float(offset / scale)
    if abs(shift) <= NEGLIGIBLE * float(np.max(np.abs(values))):  # round-off: no constant
        return shape(item.tree) if np.all(values > 0) else \
            shape(("neg", item.tree)) if np.all(values < 0) else None
    inside = values + shift
    if np.all(inside > 0):
        return shape(("+", item.tree, ("k", shift)))
    if np.all(inside < 0):
        return shape(("-", ("k", -shift), item.tree))
    return None


def _root(inside: Tree) -> Tree:
    return ("sqrt", inside)


def _root_cubed(inside: Tree) -> Tree:
    return ("*", inside, ("sqrt", inside))


POWERS: dict[float, tuple[str, Callable[[Tree], Tree] | None]] = {
    1.0: ("identity", None), 2.0: ("square", None), -1.0: ("inv", None),
    -2.0: ("inv", _root), 2.0 / 3.0: ("identity", _root_cubed), -2.0 / 3.0: ("inv", _root_cubed),
}
"""Powers ``p`` of the target a sum ``S`` is fitted to, each with the transform of
:mod:`.views` whose form it gives and how (None: ``S`` itself; ``y**-2 = S`` is
``1/y = sqrt(S)``, ``y**(2/3) = S`` is ``y = S*sqrt(S)``: a field ``1/r**3`` of a distance
``r``), in the order they are tried."""


def _tree_values(dictionary: Monomials, tree: Tree) -> np.ndarray | None:
    """Values of a sum of the dictionary's monomials on its rows (None if not finite)."""
    memo = {t: dictionary.values[k] for k, t in enumerate(dictionary.trees)}
    with np.errstate(all="ignore"):
        values = np.asarray(evaluate_tree(tree, [], memo), dtype=float)
    return values if values.ndim == 1 and np.all(np.isfinite(values)) else None


RATIO_DENOMINATORS = 300
"""Monomials (the smallest) that may be terms of a ratio's denominator."""
RATIO_SMALL = 60
"""The smallest columns of each side whose pairs and triples are all scored exactly."""
RATIO_CANDIDATES = 8
"""Supports of each kind (pairs, triples, eliminated) whose ratios are written."""
POLE_MARGIN = 1e-6
"""A denominator is kept when its smallest magnitude on the rows is at least this share of its
largest and it keeps one sign: a fit with a pole among the rows is a lookalike."""


def ratio_sums(dictionary: Monomials, target: np.ndarray, limit: int, over: Callable[[], bool]
               ) -> list[tuple[float, Tree]]:
    """Ratios of sums of monomials fitted to ``target``: ``y = P/Q``.

    ``y*Q = P`` is linear in the numbers of ``P`` and ``Q``: with ``Q``'s mean on the rows
    fixed to 1, ``y = P - y*(Q - 1)`` is a sum of the monomials ``m`` and of ``y*(m - mean
    m)``, fitted as the sums are (``(u + v)/(1 + u*v)``, ``(a*r + b*s)/(a + b)``,
    ``(1 - a**2)/(1 + a*cos(t))``). Fixing the mean rather than ``Q``'s constant term
    leaves no fit with ``Q`` near 0 everywhere (smooth functions of one input sum to a
    constant within 1e-13 on a short range, and ``y*Q = 0`` then fits any ``y``), and
    denominators without a constant (``a + b``) are ratios too. One exact ratio has many
    supports (``P*R/(Q*R)``): all pairs and triples of the smallest columns are scored
    exactly (:func:`.combination.best_triples`), then the backward elimination looks
    further.

    Returns:
        ``(nmse on the rows, tree)`` of the ratios with one-signed denominators, best
        first (the tree is the ratio up to scale).
    """
    count = dictionary.values.shape[0]
    shares = dictionary.values[:RATIO_DENOMINATORS]
    scaled = (shares - shares.mean(axis=1, keepdims=True)) * target
    values = np.vstack([dictionary.values, scaled])
    denominator = np.r_[np.zeros(count, bool), np.ones(scaled.shape[0], bool)]
    monomial = np.r_[np.arange(count), np.arange(scaled.shape[0])]
    with np.errstate(all="ignore"):
        unit, good = normalised_rows(values)
    centred = unit_centred(target)
    if centred is None or good.size < 2 or over():
        return []
    denominator, monomial, values = denominator[good], monomial[good], values[good]
    small = np.r_[np.flatnonzero(~denominator)[:RATIO_SMALL],
                  np.flatnonzero(denominator)[:RATIO_SMALL]]
    gram = unit[small] @ unit[small].T
    supports = {tuple(int(small[k]) for k in support)
                for support in best_pairs(gram, unit[small], centred, RATIO_CANDIDATES)
                + best_triples(gram, unit[small], centred, RATIO_CANDIDATES)}
    if not over():
        order = np.r_[small, np.setdiff1d(np.arange(denominator.size), small)]
        span = _Span.of(unit[order], small.size)
        chosen, _ = _screened(unit[order], centred, span, limit)
        chosen = order[chosen]
        supports |= {tuple(int(k) for k in chosen[list(support)]) for support, _ in
                     eliminate(unit[chosen], centred, MAX_TERMS, ELIMINATION_BATCH)[
                         -RATIO_CANDIDATES:]}
    found = []
    for support in supports:
        if not any(denominator[k] for k in support):
            continue  # a plain sum: :func:`_sums` fits those
        item = _ratio_tree(dictionary, [(bool(denominator[k]), int(monomial[k]))
                                        for k in support], target, shares)
        if item is not None:
            found.append(item)
    return sorted(found, key=lambda entry: entry[0])


def _ratio_tree(dictionary: Monomials, terms: list[tuple[bool, int]], target: np.ndarray,
                shares: np.ndarray) -> tuple[float, Tree] | None:
    """``(nmse, P/Q)`` for the ratio whose terms are ``(in the denominator, monomial)``,
    fitted by least squares; None when ``Q`` has a pole among the rows or a side is 0."""
    top = [k for below, k in terms if not below]
    bottom = [k for below, k in terms if below]
    centre = shares[bottom].mean(axis=1)
    design = np.column_stack([np.ones(target.size), dictionary.values[top].T,
                              ((shares[bottom].T - centre) * target[:, None])])
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    if not np.all(np.isfinite(coefficients)):
        return None
    constant, upper, lower = coefficients[0], coefficients[1:len(top) + 1], \
        -coefficients[len(top) + 1:]
    below = 1.0 + lower @ (shares[bottom] - centre[:, None])
    if not (np.all(below > 0) or np.all(below < 0)):
        return None
    if np.min(np.abs(below)) < POLE_MARGIN * np.max(np.abs(below)):
        return None
    numerator = _linear_tree(dictionary, top, upper, constant)
    divisor = _linear_tree(dictionary, bottom, lower, 1.0 - float(lower @ centre))
    if numerator is None or divisor is None or divisor == ("k", 1.0):
        return None  # a constant denominator: a plain sum
    with np.errstate(all="ignore"):
        residual = target - (constant + dictionary.values[top].T @ upper) / below
    variance = float(np.var(target))
    return float(residual @ residual) / (target.size * variance), ("/", numerator, divisor)


def _linear_tree(dictionary: Monomials, ids: list[int], weights: np.ndarray, constant: float
                 ) -> Tree | None:
    """``c + sum(w*m)`` up to scale: ``m1 + (w2/w1)*m2 + ... + c/w1``, led as
    :func:`_sum_tree` leads (the term whose weight most others match), with terms and a
    constant of round-off size beside the largest term left out; None when it is 0."""
    spread = [float(np.sqrt(np.mean(dictionary.values[k] ** 2))) * abs(w)
              for k, w in zip(ids, weights, strict=True)]
    largest = max([*spread, abs(constant)], default=0.0)
    if not largest > 0:
        return None
    kept = [position for position, s in enumerate(spread) if s > NEGLIGIBLE * largest]
    if not kept:
        return ("k", 1.0)  # a constant: the scale carries it
    tree, lead = _led_sum(dictionary, [ids[k] for k in kept], weights[kept])
    if abs(constant) > NEGLIGIBLE * largest:
        tree = _plus(tree, None, constant / lead)
    return tree
