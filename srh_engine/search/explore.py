"""Decomposing a problem and searching its pieces, recursively.

At every level (the problem, then each sub-problem) a quick probe searches the
undivided piece for small forms and their sums and products, and sums of monomials
with cross terms are fitted to it (:mod:`.cross_terms`); then power factors
are divided out, an additive or multiplicative split (one or two inputs against
the rest) searches its two groups in turn, and pairs of inputs the target depends
on only through their combination become views of their own (tests in
:mod:`.decomposition`); every piece is searched by :func:`.view_search.search_view`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ..nodes import Binary, Expression, Number
from ..rendering import to_str
from . import decomposition as dec
from .budget import Budget
from .cross_terms import cross_sums, monomials, root_ratios
from .invariance import combined_view, invariant_views
from .operators import size, to_expression
from .refit import exact_on_all_rows
from .view_search import search_view
from .views import (
    EXACT_NMSE,
    INVERSES,
    Found,
    Run,
    View,
    all_rows_nmse,
    column_values,
    inverse_transform,
    sample_rows,
    target_transforms,
)

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
SUB_PROBE_SHARE = 0.3
"""A sub-problem's probe: it has fewer inputs (its probe gets further), and once decomposed
it is more often a short sum of small forms than the whole problem is."""
PART_CANDIDATES = 40
"""Forms of a split's first group whose remainders are compared (:func:`_first_parts`)."""
PART_CLOSENESS = 1000.0
"""They fit the surrogate's part within this many times the best form's error: the
surrogate's own error bounds how well the true part can fit it."""
FIRST_PARTS = 2
"""The first group's forms whose remainders are searched."""
PART_KEY_ROWS = 64
"""Rows of a fitted part's values that tell two parts apart."""
MIN_PAIR_SPLIT = 4
"""Inputs from which splits of two inputs against the rest are tested too."""
PART_NMSE = 1e-8
"""An additive split's remainder is known to the surrogate's coefficient of the first part
(``1 - 8e-6`` of it), so the true form of the rest scores about 1e-10 there, not exact; the
whole is checked, its coefficient refitted, from this error."""
CROSS_SHARE = 0.25
"""Of what the probe leaves: sums with cross terms (:mod:`.cross_terms`)."""
CROSS_ROWS = 360
"""Rows the cross-term sums are fitted on (one monomial per three rows)."""
CROSS_KEPT = 6
"""The best sums kept as candidates (the best of each size, per transform)."""
CROSS_GAIN = 10.0
"""A sum is kept when its error is this many times below the probe's best."""
MAX_CROSS_INPUTS = 8
"""Inputs beyond which no cross-term sums are tried (the dictionary grows as inputs**3)."""
FACTORED_SHARE = 0.7
"""Time for the remainder once power factors are divided out (the rest: the whole problem)."""
PRODUCT_SHARE = 0.5
"""Of the analysis share left, what the product test of a target of both signs may use."""
LEFTOVER_AWAY = 0.1
"""A remainder of a target of both signs is judged where the divided part is at least this
share of its largest magnitude."""


def explore(run: Run, base: View, target: np.ndarray, budget: Budget, depth: int = 0,
            factoring: bool = True, factors_tested: bool = False) -> list[Found]:
    """Decompose (pairs, then a split), then search every view and sub-problem.

    A quick probe first, at every depth: forms up to ``PROBE_SIZE`` and their sums and
    products, with no decomposition (a wrong one, say an input taken for a power factor,
    would otherwise cost most of the time before the undivided problem is searched). Below
    the top, a sub-problem (a split's remainder, what power factors leave, a view) is
    often such a sum once decomposed (``M*P + 1/(A*P)``); the full search of a view
    combines its forms only once they are enumerated up to ``MAX_FORM_SIZE``, with what
    that leaves of its share, which on a sub-problem's share is too little.
    ``factoring=False`` divides out no power factors here or below; ``factors_tested``:
    this problem is what is left once they were divided out, so its inputs are not tested
    again (each input's test is independent of the others' factors: the answer would be
    the same, at the cost of one more test).
    """
    share = PROBE_SHARE if depth == 0 else SUB_PROBE_SHARE
    probe = search_view(run, base, target, budget.share(share), run.seed + 7 + depth,
                        evolve=False, largest=PROBE_SIZE)
    if exact_on_all_rows(run, probe, target):
        return probe
    sums, held = _cross_sums(run, base, target, budget.share(CROSS_SHARE),
                             min((item.nmse for item in probe), default=1.0))
    probe += sums
    if exact_on_all_rows(run, probe, target):
        return probe
    found = probe + _decomposed(run, base, target, budget, depth, factoring, factors_tested)
    # a root of a ratio, exact or not, only when nothing else is exact (see root_ratios)
    return found if exact_on_all_rows(run, found, target) else found + held


def _cross_sums(run: Run, base: View, target: np.ndarray, budget: Budget, probed: float
                ) -> tuple[list[Found], list[Found]]:
    """Sums of monomials with cross terms, and ratios of them, fitted to the target and its
    powers (:mod:`.cross_terms`), on a sample of the rows, each scored on every row; kept
    when ``CROSS_GAIN`` times closer than the probe's best form (``probed``): on noisy data
    a sum of six monomials fits the noise a little better than the probe's forms, and such
    sums crowded the refit and took the front's pick. Second, the roots of ratios
    (:func:`.cross_terms.root_ratios`), held back by the caller."""
    if budget.over() or base.columns.shape[1] > MAX_CROSS_INPUTS:
        return [], []
    rng = np.random.default_rng([run.seed, 31])
    rows = sample_rows(target.size, CROSS_ROWS, rng, run.weights)
    columns = base.columns[rows]
    dictionary = monomials(columns, run.binary, run.unary)  # one for the sums and the roots
    sums = cross_sums(columns, target[rows], run.binary, run.unary, budget.over, dictionary)
    roots = root_ratios(columns, target[rows], run.binary, run.unary, budget.over, dictionary)
    candidates = target_transforms(target)
    run.counter.value += len(sums) + len(roots)
    kept = []
    for found in (sums[:CROSS_KEPT], roots[:CROSS_KEPT]):
        scored = [Found(all_rows_nmse(tree, base, candidates[name]), tree, base, name)
                  for name, _, tree in found if name in candidates]
        kept.append([item for item in scored if item.nmse * CROSS_GAIN <= probed])
    return kept[0], kept[1]


def _decomposed(run: Run, base: View, target: np.ndarray, budget: Budget, depth: int,
                factoring: bool, factors_tested: bool = False) -> list[Found]:
    views, split, factors, homogeneous = [base], None, {}, None
    if base.columns.shape[1] >= 2 and depth < MAX_DEPTH:
        unused = dec.unused_inputs(base.columns, target)
        if unused:  # searched without them: every phase below gets further on fewer inputs
            run.notes.append("the target does not depend on "
                             f"{[to_str(base.inputs[k]) for k in unused]}: searched without")
            kept = [k for k in range(base.columns.shape[1]) if k not in unused]
            return _decomposed(run, _sub_view(base, kept), target, budget, depth, factoring,
                               factors_tested)
        factors = _power_factors(run, base.columns, target, budget) \
            if factoring and not factors_tested else {}
        # the split and pair tests' share starts after the factor test (which takes up to
        # seconds on many rows): were it counted against them, they would rarely run
        analysis = budget.share(ANALYSIS_SHARE)
        if not factors and not analysis.over():
            split = _split(run, base, target, analysis)
        if not factors and split is None and not analysis.over():
            views += _pair_views(run, base, target, budget)
        if not factors and split is None and len(views) == 1 and not analysis.over():
            homogeneous = _homogeneous(run, base, target, analysis)
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
        ([("homogeneous", homogeneous)] if homogeneous else []) + [("view", base)]
    found: list[Found] = []
    for index, (kind, item) in enumerate(plans):
        share_end = budget.share(1.0 / (len(plans) - index))
        if kind == "view" and item is not base:
            found += explore(run, item, target, share_end, depth + 1, factoring)
        elif kind == "view":
            found += search_view(run, item, target, share_end, run.seed + index + 10 * depth)
        elif kind == "homogeneous":
            found += _homogeneous_search(run, base, target, item, share_end, depth, factoring)
        else:
            found += _search_split(run, base, target, item, share_end, depth, factoring)
        if exact_on_all_rows(run, found, target, gate=PART_NMSE if kind == "split" else
                             EXACT_NMSE):
            break
    return found


def _pair_views(run: Run, base: View, target: np.ndarray, budget: Budget) -> list[View]:
    """Views with the pairs the target is invariant under taken out (:mod:`.invariance`),
    while ``budget`` lasts."""
    return invariant_views(run, base, target, MAX_PAIR_INPUTS, budget.over)


def _homogeneous(run: Run, base: View, target: np.ndarray, budget: Budget
                 ) -> tuple[int, int, float] | None:
    """A pair the target is homogeneous in (:func:`.decomposition.homogeneous_pairs`):
    ``x_i**k`` times a function of ``x_i/x_j`` and the rest; None when there is none."""
    found = dec.homogeneous_pairs(base.columns, target, limit=1, over=budget.over)
    if not found:
        return None
    i, j, k = found[0]
    top, bottom = dec.homogeneous_quotient(base.columns, i, j)
    run.notes.append(f"weighted scaling symmetry: the target is "
                     f"{to_str(_power_of(base.inputs[i], k))} times a function of "
                     f"{to_str(Binary('/', base.inputs[top], base.inputs[bottom]))}")
    return found[0]


def _homogeneous_search(run: Run, base: View, target: np.ndarray,
                        pair: tuple[int, int, float], budget: Budget, depth: int,
                        factoring: bool) -> list[Found]:
    """Search ``y / x_i**k`` over ``x_i/x_j`` (or ``x_j/x_i``:
    :func:`.decomposition.homogeneous_quotient`) and the other inputs; each found item
    wrapped in the power ``x_i**k``."""
    i, j, k = pair
    view = combined_view(base, *dec.homogeneous_quotient(base.columns, i, j), "/")
    if view is None:
        return []
    power = _power_of(base.inputs[i], k)
    found = explore(run, view, target / base.columns[:, i] ** k, budget, depth + 1, factoring)
    for item in found:
        item.wraps = (("power", power), *item.wraps)
    return found


def _power_of(base: Expression, exponent: float) -> Expression:
    return base if exponent == 1 else Binary("**", base, Number(_exponent_number(exponent)))


def _split(run: Run, base: View, target: np.ndarray, budget: Budget
           ) -> dec.Separation | None:
    """A multiplicative, else an additive split of the inputs: one input against the rest,
    then (on ``MIN_PAIR_SPLIT`` inputs or more) two against the rest
    (``f(tau, M) * g(d, A)``)."""
    d = base.columns.shape[1]
    if d < 2:
        return None
    groups = [(i,) for i in range(d)]
    if d >= MIN_PAIR_SPLIT:
        pairs = itertools.combinations(range(d), 2)
        groups += [p for p in pairs if d > 4 or 0 in p]  # on four, {0, 1} | {2, 3} is one
    both_signs = not (np.all(target > 0) or np.all(target < 0))
    # a product of a target of both signs is tested on the target itself (its logarithm is
    # undefined at the zeros), after the cheaper additive test and on half of what is left:
    # the pair tests after the split's need their share
    kinds = ("additive", "multiplicative") if both_signs else ("multiplicative", "additive")
    logged_by_tested: dict[bool, bool] = {}  # both signs: both tests are of the target itself
    for kind in kinds:
        signed = kind == "multiplicative" and both_signs
        of_log = kind == "multiplicative" and not signed
        tested = np.log(np.abs(target)) if of_log else target
        if of_log not in logged_by_tested:
            logged_by_tested[of_log] = dec.logged_fits_better(base.columns, tested)
        logged = logged_by_tested[of_log]
        test = dec.product_group if signed else dec.separable_group
        over = budget.share(PRODUCT_SHARE).over if signed else budget.over
        first = test(base.columns, tested, groups, logged, over)
        if first is not None:
            second = tuple(k for k in range(d) if k not in first)
            run.notes.append(f"{kind}ly separable: "
                             f"{[to_str(base.inputs[k]) for k in first]} | rest")
            return dec.Separation(kind, first, second, logged, signed=signed)
    return None


def _sub_view(base: View, indices: Sequence[int]) -> View:
    return View("subset", [base.inputs[k] for k in indices], base.columns[:, list(indices)])


def _search_split(run: Run, base: View, target: np.ndarray, split: dec.Separation,
                  budget: Budget, depth: int, factoring: bool) -> list[Found]:
    """Search the first group on the surrogate's part, then the rest on the real remainder.

    The surrogate's part is approximate, so several small forms fit it about as well (the
    truth and lookalikes that fit the surrogate's errors too); of those, the ones whose
    remainder depends least on the first group's inputs go on (:func:`_first_parts`).
    """
    multiplicative = split.kind == "multiplicative"
    if split.signed:
        first_target, _ = dec.product_parts(base.columns, target, split.first,
                                            logged=split.logged)
    else:
        t = np.log(np.abs(target)) if multiplicative else target
        part, _ = dec.separable_parts(base.columns, t, split.first, logged=split.logged)
        first_target = np.exp(part) if multiplicative else part
    first_view = _sub_view(base, split.first)
    found = search_view(run, first_view, first_target, budget.share(0.3),
                        run.seed + 101 + depth, transforms=multiplicative, evolve=False,
                        combine=False)
    # (no sums there: the surrogate's part is approximate, and a sum of lookalikes fits its
    # errors better than the simple form the split needs; transforms only of a factor,
    # known up to a scale that its square, inverse, root or logarithm keep, not of a term,
    # known up to an added constant that they do not)
    second_view = _sub_view(base, split.second)
    parts = _first_parts(found, first_target, target, second_view, split)
    results = []
    for rank, (expression, rest) in enumerate(parts):
        share = budget.share(1.0 / (len(parts) - rank))
        wrap = ("mul" if multiplicative else "add", expression)
        found_rest = explore(run, second_view, rest, share, depth + 1, factoring)
        for sub in found_rest:
            sub.wraps = (wrap, *sub.wraps)
        exact = exact_on_all_rows(run, found_rest, target, gate=PART_NMSE)
        results += found_rest
        if exact:
            break  # the other first part's remainder need not be searched
    return results


def _first_parts(found: list[Found], first_target: np.ndarray, target: np.ndarray,
                 second_view: View, split: dec.Separation
                 ) -> list[tuple[Expression, np.ndarray]]:
    """The first group's fitted forms and what each leaves of ``target``, best first.

    A form that is the true part leaves a remainder of the second group's inputs alone; a
    lookalike leaves some dependence on the first group's, which a polynomial surrogate of
    the second group's inputs cannot fit. So the smallest forms close to the best on the
    surrogate's part are ranked by that surrogate's error on their remainder, and the
    best ``FIRST_PARTS`` go on.
    """
    multiplicative = split.kind == "multiplicative"
    ranked, seen = [], set()
    for item in _simplest(found, PART_CANDIDATES):
        # a factor of both signs is also tried without an offset: the surrogate's part puts
        # a small one there, which moves the factor's zeros and leaves poles in the remainder
        offsets = (True, False) if split.signed and item.transform == "identity" else \
            (multiplicative,)
        for offset in offsets:
            fitted = _fitted_part(item, first_target, offset=offset)
            if fitted is None:
                continue
            expression, values = fitted
            key = _value_key(values, centred=not multiplicative)
            if key in seen:  # ``B``, ``B + 2``, ``B/pi``: one fitted part
                continue
            seen.add(key)
            if multiplicative:
                with np.errstate(all="ignore"):
                    rest = target / values
                leftover = _leftover(second_view, rest, split, values)
            else:  # the coefficient of the real target, fitted beside a surrogate of the rest
                form = column_values(item.tree, item.view)
                coefficient, leftover = dec.part_with_surrogate(second_view.columns, form,
                                                                target, split.logged)
                expression = Binary("*", Number(coefficient), to_expression(item.tree,
                                                                           item.view.inputs))
                rest = target - coefficient * form
            if not np.all(np.isfinite(rest)):
                continue
            ranked.append((leftover, size(item.tree), expression, rest))
    ranked.sort(key=lambda entry: entry[:2])
    return [(expression, rest) for _, _, expression, rest in ranked[:FIRST_PARTS]]


def _value_key(values: np.ndarray, centred: bool = False) -> bytes:
    """Values rounded to 9 significant digits, as a key; ``centred``: less their mean
    first (an additive part is known up to a constant, and its remainder's search fits
    one, so ``pi + B/2`` and ``B`` leave the same remainder to search)."""
    if centred:
        values = values - np.mean(values)
    scale = float(np.max(np.abs(values))) or 1.0
    return np.round(values[:PART_KEY_ROWS] / scale, 9).tobytes()


def _leftover(view: View, rest: np.ndarray, split: dec.Separation, part: np.ndarray
              ) -> float:
    """How badly a surrogate of ``view``'s inputs alone fits ``rest`` (its log for a
    multiplicative split; 1.0: not of one sign). A split of a target of both signs is
    judged on ``rest`` itself, on the rows where the first group's ``part`` (the divisor)
    is not near one of its zeros (where a lookalike's ratio has poles)."""
    if split.signed:
        away = np.abs(part) >= LEFTOVER_AWAY * float(np.max(np.abs(part)))
        if np.count_nonzero(away) < view.columns.shape[0] // 2:
            return 1.0
        if np.std(rest[away]) <= 0:
            return 0.0
        with np.errstate(all="ignore"):
            error = dec.surrogate_error(view.columns[away], rest[away], logged=split.logged)
        return error if np.isfinite(error) else 1.0
    if split.kind == "multiplicative":
        if not (np.all(rest > 0) or np.all(rest < 0)):
            return 1.0
        rest = np.log(np.abs(rest))
    if np.std(rest) <= 0:
        return 0.0
    with np.errstate(all="ignore"):
        error = dec.surrogate_error(view.columns, rest, logged=split.logged)
    return error if np.isfinite(error) else 1.0


def _simplest(found: list[Found], count: int) -> list[Found]:
    """The smallest forms that fit a surrogate's part about as well as the best one."""
    floor = min((f.nmse for f in found), default=1.0)
    close = [f for f in found if f.nmse <= PART_CLOSENESS * floor + SURROGATE_NMSE]
    return sorted(close, key=lambda f: (size(f.tree), f.nmse))[:count]


def _fitted_part(item: Found, target: np.ndarray, offset: bool
                 ) -> tuple[Expression, np.ndarray] | None:
    """``b*f`` (``a + b*f`` with ``offset``) fitted to ``target`` by least squares.

    An additive part is known up to a constant, so its fitted constant is left to the
    remainder; a multiplicative one is known up to a factor, and its offset is part of
    its form (``B + 1`` is ``1 + 1*B``). A form of a transform of a (positive) factor is
    fitted to that transform and the transform inverted.
    """
    expression = to_expression(item.tree, item.view.inputs)
    values = column_values(item.tree, item.view)
    transformed = target_transforms(target).get(item.transform) if offset else target
    if values is None or transformed is None:
        return None
    design = np.column_stack([np.ones_like(values), values])
    (a, b), *_ = np.linalg.lstsq(design, transformed, rcond=None)
    scaled = Binary("*", Number(float(b)), expression)
    if not offset:
        return scaled, b * values
    scaled = Binary("+", Number(float(a)), scaled)
    with np.errstate(all="ignore"):
        part = INVERSES[item.transform](a + b * values)
    return inverse_transform(item.transform, scaled, float(np.sign(target[0]))), part




def _power_factors(run: Run, columns: np.ndarray, target: np.ndarray, budget: Budget
                   ) -> dict[int, float]:
    """:func:`.decomposition.power_factors`, or what ``run.known_factors`` holds for these
    very arrays."""
    known = run.known_factors
    if known is not None and known[0] is columns and known[1] is target:
        return dict(known[2])
    return dec.power_factors(columns, target, budget.over)


def _factored(run: Run, base: View, target: np.ndarray, factors: dict[int, float],
              budget: Budget, depth: int) -> list[Found]:
    """Divide out ``x_i**a_i`` and search the remainder over the other inputs."""
    product: Expression | None = None
    values = np.ones_like(target)
    for index, exponent in sorted(factors.items()):
        power = _power_of(base.inputs[index], exponent)
        product = power if product is None else Binary("*", product, power)
        values = values * base.columns[:, index] ** exponent
    run.notes.append("power factors divided out: " + to_str(product))
    rest = [k for k in range(base.columns.shape[1]) if k not in factors]
    remainder = target / values
    if not rest:  # the factors are the whole formula up to a constant
        leaf = View("constant", [Number(1)], np.ones((target.size, 1)))
        found = [Found(0.0, ("v", 0), leaf, "identity")]
    else:
        found = explore(run, _sub_view(base, rest), remainder, budget, depth + 1,
                        factors_tested=True)
    for item in found:
        item.wraps = (("power", product), *item.wraps)
    return found


def _exponent_number(exponent: float) -> float | int:
    return int(exponent) if float(exponent).is_integer() else float(exponent)
