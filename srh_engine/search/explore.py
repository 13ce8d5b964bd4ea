"""Decomposing a problem and searching its pieces, recursively.

At the top a quick probe searches the undivided problem for small forms and
their sums and products; then power factors are divided out, an additive or
multiplicative split searches its two groups in turn, and pairs of inputs the
target depends on only through their combination become views of their own
(tests in :mod:`.decomposition`); every piece is searched by
:func:`.view_search.search_view`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..nodes import Binary, Expression, Number
from ..rendering import to_str
from . import decomposition as dec
from .budget import Budget
from .invariance import invariant_views
from .operators import size, to_expression
from .refit import exact_on_all_rows
from .view_search import search_view
from .views import Found, Run, View, column_values

__all__ = ["explore"]


ANALYSIS_SHARE = 0.1
SURROGATE_NMSE = 1e-8
"""A surrogate's part is matched this closely by a form that is the exact part."""
MAX_PAIR_INPUTS = 6
"""Pair tests cost ~5 d**2/2 surrogate fits: without units, skipped on wider problems."""
MAX_DEPTH = 3
"""Most nested splits."""
PROBE_SHARE = 0.15
PROBE_SIZE = 5
FACTORED_SHARE = 0.7
"""Time for the remainder once power factors are divided out (the rest: the whole problem)."""


def explore(run: Run, base: View, target: np.ndarray, budget: Budget, depth: int = 0,
            factoring: bool = True) -> list[Found]:
    """Decompose (pairs, then a split), then search every view and sub-problem.

    At the top, a quick probe first: forms up to ``PROBE_SIZE`` and their sums and
    products, with no decomposition (a wrong one, say an input taken for a power factor,
    would otherwise cost most of the time before the undivided problem is searched).
    ``factoring=False`` divides out no power factors here or below.
    """
    probe: list[Found] = []
    if depth == 0:
        probe = search_view(run, base, target, budget.share(PROBE_SHARE), run.seed + 7,
                            evolve=False, largest=PROBE_SIZE)
        if exact_on_all_rows(run, probe, target):
            return probe
    return probe + _decomposed(run, base, target, budget, depth, factoring)


def _decomposed(run: Run, base: View, target: np.ndarray, budget: Budget, depth: int,
                factoring: bool) -> list[Found]:
    analysis = budget.share(ANALYSIS_SHARE)
    views, split, factors = [base], None, {}
    if base.columns.shape[1] >= 2 and depth < MAX_DEPTH:
        factors = dec.power_factors(base.columns, target, budget.over) if factoring else {}
        if not factors and not analysis.over():
            split = _split(run, base, target, analysis)
        if not factors and split is None and not analysis.over():
            views += _pair_views(run, base, target, budget)
    if factors:
        now = _factored(run, base, target, factors, budget.share(FACTORED_SHARE), depth)
        if exact_on_all_rows(run, now, target):
            return now
        # the factor test is statistical: an input of a dominant term of a sum (``V`` in
        # ``(V*(v - w) - cos(z))/q``) passes it. Not exact, so the problem is decomposed
        # again without power factors
        run.notes.append("no exact formula with the power factors divided out: "
                         "decomposed again without them")
        return now + _decomposed(run, base, target, budget, depth, factoring=False)
    # views with an invariance taken out first: fewer inputs, and the test is strict
    plans: list = ([("split", split)] if split else []) + [("view", v) for v in views[1:]] + \
        [("view", base)]
    found: list[Found] = []
    for index, (kind, item) in enumerate(plans):
        share_end = budget.share(1.0 / (len(plans) - index))
        if kind == "view" and item is not base:
            found += explore(run, item, target, share_end, depth + 1, factoring)
        elif kind == "view":
            found += search_view(run, item, target, share_end, run.seed + index + 10 * depth)
        else:
            found += _search_split(run, base, target, item, share_end, depth, factoring)
        if exact_on_all_rows(run, found, target):
            break
    return found


def _pair_views(run: Run, base: View, target: np.ndarray, budget: Budget) -> list[View]:
    """Views with the pairs the target is invariant under taken out (:mod:`.invariance`),
    while ``budget`` lasts."""
    return invariant_views(run, base, target, MAX_PAIR_INPUTS, budget.over)


def _split(run: Run, base: View, target: np.ndarray, budget: Budget
           ) -> dec.Separation | None:
    d = base.columns.shape[1]
    if d < 2:
        return None
    groups = [(i,) for i in range(d)]
    for kind, test in (("multiplicative", dec.multiplicative_separable),
                       ("additive", dec.additive_separable)):
        for first in groups:
            if budget.over():
                return None
            if test(base.columns, target, list(first)):
                second = tuple(k for k in range(d) if k not in first)
                run.notes.append(f"{kind}ly separable: "
                                 f"{[to_str(base.inputs[k]) for k in first]} | rest")
                return dec.Separation(kind, first, second)
    return None


def _sub_view(base: View, indices: Sequence[int]) -> View:
    return View("subset", [base.inputs[k] for k in indices], base.columns[:, list(indices)])


def _search_split(run: Run, base: View, target: np.ndarray, split: dec.Separation,
                  budget: Budget, depth: int, factoring: bool) -> list[Found]:
    """Search the first group on the surrogate's part, then the rest on the real remainder."""
    multiplicative = split.kind == "multiplicative"
    t = np.log(np.abs(target)) if multiplicative else target
    part, _ = dec.separable_parts(base.columns, t, split.first, logged=multiplicative)
    first_target = np.exp(part) if multiplicative else part
    first_view = _sub_view(base, split.first)
    found = search_view(run, first_view, first_target, budget.share(0.3),
                        run.seed + 101 + depth, transforms=False, evolve=False, combine=False)
    # (no sums there: the surrogate's part is approximate, and a sum of lookalikes fits its
    # errors better than the simple form the split needs)
    best = _simplest(found)
    second_view = _sub_view(base, split.second)
    results = []
    for rank, item in enumerate(best):
        factor = _fitted_linear(item, first_target)
        if factor is None:
            continue
        expression, values = factor
        with np.errstate(all="ignore"):
            rest = target / values if multiplicative else target - values
        if not np.all(np.isfinite(rest)):
            continue
        share = budget.share(1.0 / (len(best) - rank))
        wrap = ("mul" if multiplicative else "add", expression)
        for sub in explore(run, second_view, rest, share, depth + 1, factoring):
            sub.wraps = (wrap, *sub.wraps)
            results.append(sub)
    return results


def _simplest(found: list[Found], count: int = 2) -> list[Found]:
    """The smallest forms that fit a surrogate's part about as well as the best one."""
    floor = min((f.nmse for f in found), default=1.0)
    close = [f for f in found if f.nmse <= 10.0 * floor + SURROGATE_NMSE]
    return sorted(close, key=lambda f: (size(f.tree), f.nmse))[:count]


def _fitted_linear(item: Found, target: np.ndarray) -> tuple[Expression, np.ndarray] | None:
    expression = to_expression(item.tree, item.view.inputs)
    values = column_values(item.tree, item.view)
    if values is None:
        return None
    design = np.column_stack([np.ones_like(values), values])
    (a, b), *_ = np.linalg.lstsq(design, target, rcond=None)
    return Binary("*", Number(float(b)), expression), b * values


def _factored(run: Run, base: View, target: np.ndarray, factors: dict[int, float],
              budget: Budget, depth: int) -> list[Found]:
    """Divide out ``x_i**a_i`` and search the remainder over the other inputs."""
    product: Expression | None = None
    values = np.ones_like(target)
    for index, exponent in sorted(factors.items()):
        power = base.inputs[index] if exponent == 1 else \
            Binary("**", base.inputs[index], Number(_exponent_number(exponent)))
        product = power if product is None else Binary("*", product, power)
        values = values * base.columns[:, index] ** exponent
    run.notes.append("power factors divided out: " + to_str(product))
    rest = [k for k in range(base.columns.shape[1]) if k not in factors]
    remainder = target / values
    if not rest:  # the factors are the whole formula up to a constant
        leaf = View("constant", [Number(1)], np.ones((target.size, 1)))
        found = [Found(0.0, ("v", 0), leaf, "identity")]
    else:
        found = explore(run, _sub_view(base, rest), remainder, budget, depth + 1)
    for item in found:
        item.wraps = (("power", product), *item.wraps)
    return found


def _exponent_number(exponent: float) -> float | int:
    return int(exponent) if float(exponent).is_integer() else float(exponent)
