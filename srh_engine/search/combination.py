"""Sparse linear combinations of enumerated forms: ``y = c0 + c1*f1 + ... + ck*fk``.

Many formulas are short sums of small terms (``r**2*M/F + 1/(M*r)``, a
linear function of five inputs, ``2*y + tau*m*cos(h)``) whose whole tree is
far beyond what enumeration or evolution reaches in seconds, while each term
is a form the enumeration already holds. So, after enumerating, every kept
form of small size is evaluated on a few more rows (the dictionary) and a
beam search of forward selection (orthogonal least squares; FFX and SINDy
fit sparse sums over fixed bases) picks up to ``MAX_TERMS`` forms for each
target transform: every pair and triple of the smallest forms is scored
exactly, then at each step every kept support is extended by the forms that
would reduce its residual most, the extended supports are refitted by least
squares, and the ``BEAM`` best are kept. The dictionary holds no sums (those
are what the pursuit builds) and grows in stages (forms up to size 3, 5, 7),
because lookalikes of two terms at once are larger than the terms; every target
transform and the products go through a stage before any goes through the next, each
in an equal share of the time left, and each stage starts from the previous stage's
supports as well. Before all of that, when the caller gives at least ``2 *
DICTIONARY_ROWS`` rows, a backward elimination fits the target with all of the smallest
monomials at once and drops terms one by one (a sum of five monomials defeats the
forward search, whose first pick is a monomial resembling several terms). A
support that fits exactly ends the search; the best support of every size is
returned either way (for the front and as seeds). Everything but the elimination is
computed on ``DICTIONARY_ROWS`` rows; the caller checks an exact-looking sum on all rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .budget import Budget
from .enumeration import Enumeration
from .operators import Tree

__all__ = ["Combination", "best_pairs", "best_triples", "combinations", "distinct_rows",
           "eliminate", "explained_shares", "normalised_rows", "unit_centred"]

MAX_TERMS = 6
BEAM = 12
BRANCH = 8
WIDE_BEAM_FORMS = 20_000
SMALL_DICTIONARY = 2_000
DICTIONARY_ROWS = 128
DICTIONARY_SIZE = 60_000
"""Most forms in the dictionary (smallest first): 60,000 x 128 rows is 61 MB."""
MAX_FORM_SIZE = 7
STAGES = (3, 5, MAX_FORM_SIZE)
"""The pursuit runs on the forms up to each of these sizes in turn, until one fits exactly:
forward selection in the whole dictionary picks lookalikes of two terms at once
(``sqrt(B)*log(E)`` for ``B - B/E + E``), among small forms only the terms themselves fit."""
PAIR_FORMS = 2000
"""Every pair of the smallest this many forms is scored exactly (one Gram matrix): greedy
pursuit alone starts from the form most correlated with the target, which on a problem of
one or two inputs is a lookalike of the target rather than one of its terms."""
TRIPLE_FORMS = 240
"""Every triple of the smallest this many forms is scored exactly too (closed-form 3x3
normal equations, 2.3 million triples in about 0.2 s): forward selection in a dictionary full of
lookalikes misses ``3*a - b/c + sqrt(a*c)`` whose terms are all among the smallest forms."""
EXACT = 1e-20
"""A sum is exact at this normalised error (the truth reaches 1e-30; lookalikes 1e-14)."""
NEGLIGIBLE = 1e-9
NOISE_BAND = 0.25
"""Supports whose error is within this share of the best one's fit equally well at noise:
two fits of the same quality on the dictionary's 128 rows differ by up to about
``2*sqrt(2/128)``."""
BACKWARD_SIZE = 5
BACKWARD_CANDIDATES = 4000
"""Forms (all kinds, smallest first) whose monomials the backward elimination starts from."""
BACKWARD_FORMS = 160
"""Most monomials in the full fit (and at most a third of the rows)."""
MONOMIAL_OPERATORS = ("*", "/", "sqrt", "square", "cube", "inv", "neg")
"""Operators of the backward elimination's forms (monomials with fractional powers)."""
SUMS = ("+", "-")
"""Root operators of the forms the sum dictionary leaves out and the product one keeps."""


@dataclass(frozen=True, slots=True)
class Combination:
    """A fitted combination on the dictionary rows: ``tree`` is ``f1 + (c2/c1)*f2 + ...``."""

    nmse: float
    terms: int
    tree: Tree


def normalised_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centred = values - values.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(centred, axis=1)
    good = np.isfinite(norms) & (norms > 1e-12 * (np.abs(values).max(axis=1) + 1e-300))
    return centred[good] / norms[good, None], np.flatnonzero(good)


def distinct_rows(normalised: np.ndarray, seed: int | list[int]) -> np.ndarray:
    """Rows that differ after centring and sign (``x`` and ``1 - x`` are one direction):
    the first of each, keyed by float32 rounding and a random projection (``seed``)."""
    weights = np.random.default_rng(seed).normal(size=normalised.shape[1])
    signs = np.sign(normalised[:, 0:1] + (normalised[:, 0:1] == 0))
    keys = ((normalised * signs).astype(np.float32).astype(np.float64)) @ weights
    _, first = np.unique(keys, return_index=True)
    return np.sort(first)


def combinations(enumeration: Enumeration, columns: np.ndarray, targets: dict[str, np.ndarray],
                 over: Budget | Callable[[int], bool], seed: int = 0
                 ) -> dict[str, list[Combination]]:
    """The best combination of each size, per target, on ``columns`` rows.

    Args:
        enumeration: A grown enumeration (its kept forms are the dictionary).
        columns: ``(rows, inputs)`` rows the dictionary is evaluated on.
        targets: Target transform name -> values on those rows.
        over: A :class:`~.budget.Budget`, or a callable: ``over(work)`` is True when the
            budget is spent, ``work`` being the forms scored so far (each form scored
            against a residual counts one), checked between steps, so that an
            evaluation-count budget stays deterministic. A budget is shared out: each
            pursuit (a target at a stage) gets an equal share of what is left.
        seed: Seed of the deduplication keys.
    """
    budget = over if isinstance(over, Budget) else None
    over = over.over if isinstance(over, Budget) else over
    found: dict[str, list[Combination]] = {}
    if columns.shape[0] >= 2 * DICTIONARY_ROWS and "identity" in targets and not over(0):
        # rows to spare: eliminate terms first (on the target only, to bound its cost; on
        # the transforms it was not measured apart from other changes)
        found["identity"] = _backward(enumeration, columns, targets["identity"], seed)
        if any(item.nmse <= EXACT for item in found["identity"]):
            return found
    columns = columns[:DICTIONARY_ROWS]
    targets = {name: values[:DICTIONARY_ROWS] for name, values in targets.items()}
    raw_ids, raw = enumeration.values_on(columns, MAX_FORM_SIZE, DICTIONARY_SIZE,
                                         lambda: over(0))
    if over(0):
        return found
    ids, values, normalised, sizes, roots = _dictionary(enumeration, raw_ids, raw, seed)
    # sums are what the pursuit builds: a form whose smallest lookalike (same direction) is a
    # sum, like log(sqrt(exp(a + c))), only crowds out the terms
    terms = ~np.isin(roots, SUMS)
    ids, values, normalised, sizes = ids[terms], values[terms], normalised[terms], sizes[terms]
    sums = _Dictionary(ids, values, normalised, sizes, _tree)
    work = [0]

    def spent() -> bool:
        return over(work[0])

    # sums of the target, products, then sums of the target's transforms, stage by stage
    # (forms up to 3 nodes for all of them, then 5, then 7), each pursuit in its share of
    # the time: the last stage of one target (a dictionary up to 30 times larger) took all
    # the time before the products' first stage, and without shares the small stages of
    # the transforms of a one-input problem (small dictionaries, wide beams) took 20 s
    # before the target's second stage
    plan = [(name, "sums") for name in targets]
    if "identity" in targets:
        plan.insert(1, ("identity", "products"))
    schedule = [(name, kind, largest) for largest in STAGES for name, kind in plan]
    dictionaries: dict[str, _Dictionary | None] = {"sums": sums}
    done: dict[tuple[str, str], int] = {}
    carried: dict[tuple[str, str], dict[int, list[tuple[int, ...]]]] = {}
    for index, (name, kind, largest) in enumerate(schedule):
        if spent():
            return found
        if kind not in dictionaries:  # built when first needed
            dictionaries[kind] = _product_dictionary(enumeration, raw_ids, raw,
                                                     targets[name], seed)
        dictionary = dictionaries[kind]
        if dictionary is None:
            continue
        count = int(np.searchsorted(dictionary.sizes, largest, side="right"))
        if count == 0 or count == done.get((name, kind), 0):
            continue  # no forms at this stage, or none the last stage did not have
        done[(name, kind)] = count
        share = None if budget is None else budget.share(1.0 / (len(schedule) - index))

        def step_over(share: Budget | None = share) -> bool:
            return spent() if share is None else share.over(work[0])

        target = np.log(np.abs(targets[name])) if kind == "products" else targets[name]
        items = _pursuit(enumeration, dictionary, count, target, step_over, work,
                         carried.setdefault((name, kind), {}))
        found[name] = found.get(name, []) + items
        if any(item.nmse <= EXACT for item in items):
            return found  # an exact fit: nothing else is needed
    return found


@dataclass(slots=True)
class _Dictionary:
    """Forms for a pursuit, smallest first: ids, values (or log values), unit rows, sizes,
    the Gram matrix of the first ``PAIR_FORMS`` and how a support becomes a tree."""

    ids: np.ndarray
    values: np.ndarray
    normalised: np.ndarray
    sizes: np.ndarray
    build: Callable[..., Tree | None]
    gram: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        small = self.normalised[:PAIR_FORMS]
        self.gram = small @ small.T


def _dictionary(enumeration: Enumeration, ids: np.ndarray, values: np.ndarray, seed: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Finite, non-constant, distinct (by direction) forms: ids, values, unit rows, sizes
    and root operators."""
    with np.errstate(all="ignore"):
        finite = np.all(np.isfinite(values), axis=1) & (np.abs(values).max(axis=1) < 1e12)
        ids, values = ids[finite], values[finite]
        normalised, good = normalised_rows(values)
    ids, values = ids[good], values[good]
    distinct = distinct_rows(normalised, [seed, 21])
    sizes, roots = enumeration.describe(ids[distinct])
    return ids[distinct], values[distinct], normalised[distinct], sizes, roots


def _backward(enumeration: Enumeration, columns: np.ndarray, target: np.ndarray, seed: int
              ) -> list[Combination]:
    """Backward elimination over the smallest monomials: the least-squares fit of all of
    them (fewer than a third of the rows), then the term whose removal costs least is
    dropped, and dropped again, down to ``MAX_TERMS``; the best fit of every size.

    Forward selection starts from the form most like the whole target, which among
    monomials is a lookalike of several terms (``sqrt(F*a*sqrt(g))`` for
    ``L + r - w + sqrt(F)*(g/2 + a)``); a full fit holds the true terms, and on exact
    data removing any other term costs nothing.
    """
    raw_ids, raw = enumeration.values_on(columns, BACKWARD_SIZE, BACKWARD_CANDIDATES)
    monomial = enumeration.built_only_from(raw_ids, MONOMIAL_OPERATORS)
    if not monomial.any():
        return []
    ids, values, normalised, _, _ = _dictionary(enumeration, raw_ids[monomial], raw[monomial],
                                                seed)
    count = min(ids.size, columns.shape[0] // 3, BACKWARD_FORMS)
    ids, values, normalised = ids[:count], values[:count], normalised[:count]
    centred = unit_centred(target)
    if count < 2 or centred is None:
        return []
    found = []
    for support, nmse in eliminate(normalised, centred, MAX_TERMS):
        tree = _tree(enumeration, ids, values, support, target)
        if tree is not None:
            found.append(Combination(nmse, len(support), tree))
    return found


def eliminate(normalised: np.ndarray, centred: np.ndarray, max_terms: int, batch: int = 4
              ) -> list[tuple[tuple[int, ...], float]]:
    """Backward elimination: the least-squares fit of all ``normalised`` forms (unit,
    centred rows) to ``centred``, then the terms whose removal costs least are dropped
    (``1/batch`` of those beyond ``max_terms`` at a time, then one by one); the supports of
    ``max_terms`` forms or fewer with their normalised errors, largest first, down to the
    smallest that fits exactly (``EXACT``; on exact data a support with the true terms and
    others fits exactly too, the others with coefficients of round-off size).

    The fits are done in the span of the forms (``D = QR``: a fit of some of the forms to
    the target is the same fit of those columns of ``R`` to ``Q' y``, plus what of the
    target lies outside the span), so that each costs forms**2 per form, not rows.
    """
    energy = float(centred @ centred)
    design_all, target = normalised.T, centred
    outside = 0.0
    if design_all.shape[0] > design_all.shape[1]:
        basis, design_all = np.linalg.qr(design_all)
        target = basis.T @ centred
        left = centred - basis @ target
        outside = float(left @ left)
    support = list(range(normalised.shape[0]))
    found = []
    while len(support) > 1:
        design = design_all[:, support]
        coefficients, inverse_diagonal = _least_squares(design, target)
        residual = target - design @ coefficients
        nmse = (float(residual @ residual) + outside) / energy
        if found and found[-1][1] <= EXACT < nmse:
            break  # the last exact support: every term of it is needed
        if len(support) <= max_terms:
            found.append((tuple(support), nmse))
        # the cost of dropping term j is coefficient_j**2 / (G^-1)_jj, G the Gram matrix
        with np.errstate(all="ignore"):
            cost = coefficients**2 / np.maximum(inverse_diagonal, 1e-300)
        drop = max(1, (len(support) - max_terms) // batch)  # fast while far from the end
        for position in sorted(np.argsort(cost, kind="stable")[:drop], reverse=True):
            del support[int(position)]
    return found


def _least_squares(design: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The minimum-norm least-squares coefficients and the diagonal of the (pseudo-)inverse
    of the Gram matrix, from one SVD (singular values below ``lstsq``'s default cutoff are
    left out, as there)."""
    u, singular, vt = np.linalg.svd(design, full_matrices=False)
    keep = singular > np.finfo(float).eps * max(design.shape) * singular[0]
    u, singular, vt = u[:, keep], singular[keep], vt[keep]
    coefficients = vt.T @ ((u.T @ target) / singular)
    return coefficients, np.sum((vt.T / singular) ** 2, axis=1)


def _product_dictionary(enumeration: Enumeration, ids: np.ndarray, values: np.ndarray,
                        target: np.ndarray, seed: int) -> _Dictionary | None:
    """The dictionary of products of powers, ``y = c * f1**p1 * f2**p2 * ...``: sparse sums
    of ``log|f|`` fitted to ``log|y|`` (None when ``y`` has a zero).

    The multiplicative twin of the sums: ``(d + x)*(k + rho)/(rho - N)`` is three
    additive forms of size 3. Its dictionary is what the sum dictionary leaves out (forms
    whose root is ``+`` or ``-``), with the inputs and the unary functions; the exponents
    must come out as simple fractions (``PRODUCT_EXPONENTS``), so that the product is a
    tree of ``*``, ``/`` and ``sqrt``; signs are left to the caller's all-rows check.
    """
    with np.errstate(all="ignore"):
        if not np.all(np.isfinite(np.log(np.abs(target)))):
            return None
        _, roots = enumeration.describe(ids)
        keep = np.isin(roots, (*SUMS, "v", *enumeration.unary))
        logged = np.log(np.abs(values[keep]))
    ids, logged, normalised, sizes, _ = _dictionary(enumeration, ids[keep], logged, seed)
    if ids.size == 0:
        return None
    return _Dictionary(ids, logged, normalised, sizes, _product_tree)


PRODUCT_EXPONENTS = (1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 1.5, -1.5)
EXPONENT_ERRORS = 3.0
"""A fitted exponent snaps to a simple one within this many of its standard errors: on noisy
data the log-space fit of ``(a + b)*(b + c)/(a - c)`` gives exponents like 0.993 and -1.012
(on exact data the standard errors vanish and the tolerance is ``EXACT_EXPONENT``)."""
MAX_EXPONENT_SLACK = 0.12
"""Never farther than this (half the spacing of the simple exponents is 0.25)."""
EXACT_EXPONENT = 1e-6


def _product_tree(enumeration: Enumeration, ids: np.ndarray, logged: np.ndarray,
                  support: tuple[int, ...], target: np.ndarray) -> Tree | None:
    """``f1**p1 * f2**p2 * ...`` from the log-space fit, or None (exponents not simple)."""
    design = np.column_stack([np.ones(target.size), logged[list(support)].T])
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    slack = _exponent_slack(design, target, coefficients)
    numerator: Tree | None = None
    denominator: Tree | None = None
    for position, exponent, allowed in zip(support, coefficients[1:], slack, strict=True):
        snapped = min(PRODUCT_EXPONENTS, key=lambda p: abs(p - exponent))
        if abs(snapped - exponent) > max(EXACT_EXPONENT * max(1.0, abs(exponent)), allowed):
            return None
        power = _power(enumeration.tree(int(ids[position])), abs(snapped),
                       "sqrt" in enumeration.unary)
        if power is None:
            return None
        if snapped > 0:
            numerator = power if numerator is None else ("*", numerator, power)
        else:
            denominator = power if denominator is None else ("*", denominator, power)
    if numerator is None:
        return None if denominator is None else ("/", ("k", 1.0), denominator)
    return numerator if denominator is None else ("/", numerator, denominator)


def _exponent_slack(design: np.ndarray, target: np.ndarray, coefficients: np.ndarray
                    ) -> np.ndarray:
    """How far each fitted exponent may be from a simple one: ``EXPONENT_ERRORS`` standard
    errors of the least-squares fit (at most ``MAX_EXPONENT_SLACK``)."""
    rows, columns = design.shape
    if rows <= columns:
        return np.zeros(columns - 1)
    with np.errstate(all="ignore"):
        residual = target - design @ coefficients
        variance = float(residual @ residual) / (rows - columns)
        errors = np.sqrt(variance * np.maximum(np.diag(np.linalg.pinv(design.T @ design)), 0.0))
    errors = np.where(np.isfinite(errors), errors, 0.0)[1:]
    return np.minimum(EXPONENT_ERRORS * errors, MAX_EXPONENT_SLACK)


def _power(form: Tree, exponent: float, roots: bool) -> Tree | None:
    whole, half = divmod(exponent, 1.0)
    tree: Tree | None = None
    for _ in range(int(whole)):
        tree = form if tree is None else ("*", tree, form)
    if half:
        if not roots:
            return None
        tree = ("sqrt", form) if tree is None else ("*", tree, ("sqrt", form))
    return tree


def unit_centred(target: np.ndarray) -> np.ndarray | None:
    """``target`` less its mean, divided by its largest magnitude (the shares explained do
    not depend on the scale, and the energy of a target near 1e260 overflows); None for a
    constant or non-finite one."""
    centred = target - target.mean()
    scale = float(np.max(np.abs(centred)))
    return centred / scale if 0 < scale < np.inf else None


def best_pairs(gram: np.ndarray, normalised: np.ndarray, centred: np.ndarray, count: int
                ) -> list[tuple[int, ...]]:
    """The ``count`` pairs of the first ``len(gram)`` forms that explain ``centred`` best."""
    n = gram.shape[0]
    if n < 2:
        return []
    r = normalised[:n] @ (centred / np.linalg.norm(centred))
    with np.errstate(all="ignore"):
        explained = (r[:, None] ** 2 + r[None, :] ** 2 - 2.0 * r[:, None] * r[None, :] * gram) \
            / (1.0 - gram**2)
    explained[~np.isfinite(explained) | (np.abs(gram) > 1.0 - 1e-9)] = -1.0
    explained[np.tril_indices(n)] = -1.0
    flat = np.argpartition(-explained.ravel(), min(count, explained.size - 1))[:count]
    return [tuple(sorted(divmod(int(k), n))) for k in flat if explained.ravel()[k] > 0]


def best_triples(gram: np.ndarray, normalised: np.ndarray, centred: np.ndarray, count: int
                  ) -> list[tuple[int, ...]]:
    """The ``count`` triples of ``TRIPLE_FORMS`` small forms that explain ``centred`` best.

    The forms: the smallest half, and the half of the rest of the pair forms most
    correlated with the target (a term of a sum is correlated with it).

    For unit, centred columns with pairwise correlations ``a, b, c`` the explained share is
    ``r' G^-1 r`` with ``G = [[1, a, b], [a, 1, c], [b, c, 1]]``, written out by cofactors so
    that all triples of one first form are scored at once.
    """
    r_all = normalised[:gram.shape[0]] @ (centred / np.linalg.norm(centred))
    smallest = min(TRIPLE_FORMS // 2, gram.shape[0])
    related = np.argsort(-np.abs(r_all[smallest:]), kind="stable")[:TRIPLE_FORMS - smallest]
    chosen = np.concatenate([np.arange(smallest), smallest + related])
    n = chosen.size
    if n < 3:
        return []
    g = gram[np.ix_(chosen, chosen)]
    r = r_all[chosen]
    best: list[tuple[float, tuple[int, int, int]]] = []
    for i in range(n - 2):
        js, ks = np.triu_indices(n - i - 1, 1)
        js, ks = js + i + 1, ks + i + 1
        a, b, c = g[i, js], g[i, ks], g[js, ks]
        ri, rj, rk = r[i], r[js], r[ks]
        with np.errstate(all="ignore"):
            det = 1.0 + 2.0 * a * b * c - a * a - b * b - c * c
            explained = (ri * ri * (1 - c * c) + rj * rj * (1 - b * b) + rk * rk * (1 - a * a)
                         + 2 * ri * rj * (b * c - a) + 2 * ri * rk * (a * c - b)
                         + 2 * rj * rk * (a * b - c)) / det
        explained[~np.isfinite(explained) | (det < 1e-9)] = -1.0
        top = np.argpartition(-explained, min(count, explained.size - 1))[:count]
        best += [(float(explained[t]), tuple(sorted((int(chosen[i]), int(chosen[js[t]]),
                                                     int(chosen[ks[t]])))))
                 for t in top if explained[t] > 0]
        if len(best) > 4 * count:
            best = sorted(best, reverse=True)[:count]
    return [triple for _, triple in sorted(best, reverse=True)[:count]]


def _pursuit(enumeration: Enumeration, dictionary: _Dictionary, count: int,
             target: np.ndarray, over: Callable[[], bool], work: list[int],
             carried: dict[int, list[tuple[int, ...]]]) -> list[Combination]:
    """The beam search over the first ``count`` forms of ``dictionary``.

    ``carried``: supports by size from the previous stage (forms are smallest first, so
    their indices hold here), scored with each size's candidates, so that a good support
    of small terms competes with the larger stage's lookalikes; replaced by this stage's
    beam, size by size. (It did not by itself find ``L + r - w + sqrt(F)*(g/2 + a)``: the
    backward elimination does.)
    """
    ids, values = dictionary.ids[:count], dictionary.values[:count]
    normalised, build = dictionary.normalised[:count], dictionary.build
    gram = dictionary.gram[:count, :count]
    centred = unit_centred(target)
    if centred is None:
        return []
    energy = float(centred @ centred)
    states: list[tuple[tuple[int, ...], np.ndarray]] = [((), centred)]
    best: list[Combination] = []
    forms = normalised.shape[0]
    for step in range(MAX_TERMS):
        if over():
            break
        exhaustive = {1: best_pairs, 2: best_triples}.get(step)
        supports: set[tuple[int, ...]] = set(
            exhaustive(gram, normalised, centred, 3 * BEAM) if exhaustive else ())
        supports.update(carried.get(step + 1, ()))
        for support, residual in states:
            scores = _reductions(normalised, support, residual)
            work[0] += forms
            branch = 2 * BRANCH if forms <= SMALL_DICTIONARY else BRANCH
            top = np.argpartition(-scores, min(branch, scores.size - 1))[:branch]
            supports.update(tuple(sorted((*support, int(j)))) for j in top)
        scored = []
        for support in supports:
            design = normalised[list(support)].T
            coefficients, *_ = np.linalg.lstsq(design, centred, rcond=None)
            residual = centred - design @ coefficients
            scored.append((float(residual @ residual) / energy, support, residual))
        scored.sort(key=lambda item: (item[0], item[1]))
        # a small dictionary is cheap to search widely; in a large one, the exhaustive pairs
        # all get extended once
        width = 4 * BEAM if forms <= SMALL_DICTIONARY else \
            3 * BEAM if step == 1 and forms <= WIDE_BEAM_FORMS else \
            BEAM if forms <= WIDE_BEAM_FORMS else BEAM // 2
        states = [(support, residual) for _, support, residual in scored[:width]]
        carried[step + 1] = [support for support, _ in states]
        nmse, support, _ = scored[0]
        simplest, error = _simplest_in_band(scored, dictionary.sizes)
        for chosen, chosen_nmse in dict.fromkeys(((support, nmse), (simplest, error))):
            tree = build(enumeration, ids, values, chosen, target)
            if tree is not None:
                best.append(Combination(chosen_nmse, len(chosen), tree))
        if nmse <= EXACT:
            break
    return best


def _simplest_in_band(scored: list[tuple[float, tuple[int, ...], np.ndarray]],
                      sizes: np.ndarray) -> tuple[tuple[int, ...], float]:
    """The support of fewest nodes among those fitting within ``NOISE_BAND`` of the best.

    On noisy data the best support of k forms is often a lookalike (``r*V - 0.83*cos(sqrt(D))
    - E/3`` for ``r*V - E/3 + D/3`` at 1% noise): forms that are almost collinear on the
    rows differ by less than the noise. On exact data the truth fits to 1e-30 and the band
    holds nothing else."""
    floor = scored[0][0]
    band = [(support, nmse) for nmse, support, _ in scored if nmse <= floor * (1.0 + NOISE_BAND)]
    return min(band, key=lambda item: (int(sizes[list(item[0])].sum()), item[0]))


def _reductions(normalised: np.ndarray, support: tuple[int, ...], residual: np.ndarray
                ) -> np.ndarray:
    """How much each form would reduce the residual when added (orthogonal least squares).

    ``(d . r)**2 / |d - proj_S d|**2``: unlike the plain correlation of matching pursuit,
    a form that mostly repeats the support (a lookalike of a chosen term) scores low.
    """
    correlation = normalised @ residual
    if not support:
        return correlation**2
    basis, _ = np.linalg.qr(normalised[list(support)].T)
    scores = explained_shares(correlation, 1.0 - np.sum((normalised @ basis) ** 2, axis=1))
    scores[list(support)] = -1.0
    return scores


def explained_shares(correlation: np.ndarray, left: np.ndarray) -> np.ndarray:
    """What each form would explain of a residual, as in orthogonal least squares: its
    correlation squared over the share of it (unit length) a chosen span leaves (``left``);
    -1 for a form the span holds."""
    return np.where(left > 1e-9, correlation**2 / np.maximum(left, 1e-9), -1.0)


def _tree(enumeration: Enumeration, ids: np.ndarray, values: np.ndarray,
          support: tuple[int, ...], target: np.ndarray) -> Tree | None:
    """``f1 + (c2/c1)*f2 + ...`` with the coefficients of the least-squares fit."""
    design = np.column_stack([np.ones(target.size), values[list(support)].T])
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    weights = coefficients[1:]
    if not np.all(np.isfinite(weights)) or weights[0] == 0:
        return None
    order = np.argsort(-np.abs(weights), kind="stable")
    lead = weights[order[0]]
    order = [k for k in order if abs(weights[k]) > NEGLIGIBLE * abs(lead)]  # no 1e-15*f terms
    tree: Tree | None = None
    for position in order:
        form = enumeration.tree(int(ids[support[position]]))
        ratio = float(weights[position] / lead)
        if tree is None:
            tree = form
        elif abs(ratio - 1.0) <= 1e-12:
            tree = ("+", tree, form)
        elif abs(ratio + 1.0) <= 1e-12:
            tree = ("-", tree, form)
        else:
            tree = ("+", tree, ("*", ("k", ratio), form))
    return tree
