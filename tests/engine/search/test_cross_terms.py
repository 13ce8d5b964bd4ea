"""srh_engine.search.cross_terms: sums of monomials with cross terms, and their place in
the search."""

from __future__ import annotations

import numpy as np
import pytest

from srh_engine.evaluation import evaluate
from srh_engine.nodes import Symbol
from srh_engine.search import search
from srh_engine.search.combination import eliminate, normalised_rows, unit_centred
from srh_engine.search.cross_terms import cross_sums, monomials, ratio_sums, root_ratios
from srh_engine.search.explore import _cross_sums
from srh_engine.search.operators import resolve_operators, tree_text
from srh_engine.search.views import Run, View

pytestmark = pytest.mark.usefixtures("blas_one_thread")

BINARY, UNARY = resolve_operators(None)
NAMES = ["a", "b", "c", "d", "e", "f"]


def _columns(count: int, rows: int = 900, seed: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).uniform(1.0, 5.0, (rows, count))


CASES = [
    (3, lambda a, b, t: np.sqrt(a**2 + b**2 - 2 * a * b * np.cos(t)), "square"),
    (6, lambda a, b, c, d, e, f: a * b + c * d + e * f, "identity"),
    (3, lambda a, b, k: a**2 + 2 * a * b * k + b**2, "identity"),
    (4, lambda a, b, c, d: np.sqrt((a - b) ** 2 + (c - d) ** 2), "square"),
    (2, lambda a, b: 1 / (1 / a + 1 / b), "inv"),
    (3, lambda a, b, t: 1 / np.sqrt(a**2 + b**2 + a * b * np.cos(t)), "inv"),
    (4, lambda e, b, v, t: e + b * v * np.sin(t), "identity"),
    (3, lambda a, b, c: 1 / (a**2 + b**2 + c**2) ** 1.5, "inv"),
    (3, lambda a, b, t: (a**2 + b**2 - a * b * np.cos(t)) ** 1.5, "identity"),
    # five inputs: more monomials than the full fit takes, the true ones found by screening
    (5, lambda a, b, c, x, y: a * x**2 + b * x * y + c * y**2, "identity"),
    # a product of four powers on few inputs, beside terms no common factor turns into a
    # ratio of smaller sums
    (3, lambda a, b, c: a**2 * b**2 + c**2 / b + a / c, "identity"),
]
IDS = ["law-of-cosines", "dot-product", "square-with-cross-term", "distance",
       "parallel", "inverse-root", "force-with-a-sine", "field-of-a-distance",
       "root-cubed", "quadratic-form", "square-of-a-product"]


@pytest.mark.parametrize(("count", "formula", "transform"), CASES, ids=IDS)
def test_cross_sums_fit_sums_with_cross_terms_exactly_on_fresh_rows(count, formula,
                                                                     transform):
    columns = _columns(count)
    found = cross_sums(columns, formula(*columns.T), BINARY, UNARY, lambda: False)
    name, nmse, tree = found[0]
    assert (name, nmse <= 1e-20) == (transform, True), tree_text(tree, NAMES)
    fresh = _columns(count, seed=11)
    values = evaluate_on(tree, fresh)
    y = formula(*fresh.T)
    wanted = {"identity": y, "square": y * y, "inv": 1 / y}[name]
    design = np.column_stack([np.ones_like(values), values])
    coefficients, *_ = np.linalg.lstsq(design, wanted, rcond=None)
    assert np.max(np.abs(design @ coefficients - wanted) / np.abs(wanted)) < 1e-9


def evaluate_on(tree, columns: np.ndarray) -> np.ndarray:
    from srh_engine.search.operators import to_expression

    names = NAMES[:columns.shape[1]]
    expression = to_expression(tree, [Symbol(n) for n in names])
    return np.asarray(evaluate(expression, {n: columns[:, i] for i, n in enumerate(names)}),
                      dtype=float)


def test_monomials_hold_products_of_two_powers_and_a_function_once_each():
    columns = _columns(3)
    dictionary = monomials(columns, BINARY, UNARY)
    texts = [tree_text(tree, NAMES) for tree in dictionary.trees]
    assert {"a*b*cos(c)", "a**2", "a/b", "a*b*c", "a*b**2", "sin(b)*cos(a)",
            "a**2*b**2", "a**2*b*c"} <= set(texts)
    assert len(texts) == len(set(texts)) == dictionary.values.shape[0]
    # distinct by value up to scale and offset: b*a is a*b, and a/a is no monomial; the
    # products of powers first
    assert texts.index("a*b*c") < texts.index("sin(a)")
    unit, good = normalised_rows(dictionary.values)
    assert good.size == len(texts)
    gram = np.abs(unit @ unit.T) - np.eye(len(texts))
    assert gram.max() < 1 - 1e-9


def test_monomials_use_only_the_searched_operators():
    dictionary = monomials(_columns(2), ("+", "*"), ("sin",))
    texts = {tree_text(tree, NAMES) for tree in dictionary.trees}
    assert "a*sin(b)" in texts
    assert not any("/" in text or "cos" in text for text in texts)
    assert monomials(_columns(2), ("+", "-"), ("sin",)) is None


def test_elimination_keeps_the_true_terms_of_an_exact_sum():
    rng = np.random.default_rng(2)
    forms = rng.normal(size=(120, 600))
    target = 3 * forms[7] - forms[40] + 0.5 * forms[99]
    unit, good = normalised_rows(forms)
    found = eliminate(unit, unit_centred(target), 6, batch=2)
    support, nmse = found[-1]
    assert (set(good[list(support)]), nmse <= 1e-20) == ({7, 40, 99}, True)


def test_a_probe_takes_a_cross_term_sum_the_enumeration_misses():
    columns = _columns(3, rows=2000, seed=7)
    a, b, t = columns.T
    y = np.sqrt(a**2 + b**2 - 2 * a * b * np.cos(t))
    run = Run(y, BINARY, UNARY, 30, 0)
    run.columns_by_name = {n: columns[:, i] for i, n in enumerate(NAMES[:3])}
    view = View("inputs", [Symbol(n) for n in NAMES[:3]], columns)
    from srh_engine.search.budget import Budget

    found, _ = _cross_sums(run, view, y, Budget(float("inf"), run.counter), 1e-3)
    best = min(found, key=lambda item: item.nmse)
    assert (best.transform, best.nmse <= 1e-13) == ("square", True)


def test_sums_no_better_than_the_probe_are_not_kept():
    # on noisy data a sum of six monomials fits the noise a little better than the probe's
    # forms; such sums are left out
    columns = _columns(3, rows=2000, seed=7)
    a, b, t = columns.T
    y = np.exp(a / b) + np.random.default_rng(1).normal(0.0, 0.1, a.size)
    run = Run(y, BINARY, UNARY, 30, 0)
    view = View("inputs", [Symbol(n) for n in NAMES[:3]], columns)
    from srh_engine.search.budget import Budget

    budget = Budget(float("inf"), run.counter)
    assert _cross_sums(run, view, y, budget, 1.0)[0] != []
    assert _cross_sums(run, view, y, budget, 1e-6) == ([], [])


def _law_of_cosines(x: np.ndarray) -> np.ndarray:
    return np.sqrt(x[:, 0]**2 + x[:, 1]**2 - 2 * x[:, 0] * x[:, 1] * np.cos(x[:, 2]))


def _velocity_addition(x: np.ndarray) -> np.ndarray:
    return (x[:, 0] + x[:, 1]) / (1 + x[:, 0] * x[:, 1] / x[:, 2] ** 2)


@pytest.mark.parametrize("law", [_law_of_cosines, _velocity_addition],
                         ids=["law-of-cosines", "ratio-of-sums"])
def test_search_finds_the_law_exactly(law):
    columns = _columns(3, rows=1000, seed=9)
    # a count of evaluations, not the clock, ends every phase: the same search under load
    result = search(columns, law(columns), NAMES[:3], time_budget=120, seed=0, workers=1,
                    max_evaluations=20_000)
    fresh = _columns(3, rows=500, seed=10)
    values = np.asarray(evaluate(result.best.expression,
                                 {n: fresh[:, i] for i, n in enumerate(NAMES[:3])}),
                        dtype=float)
    assert np.max(np.abs(values - law(fresh)) / law(fresh)) < 1e-6, result.best.formula


RATIOS = [
    (3, lambda u, v, c: (u + v) / (1 + u * v / c**2)),
    (2, lambda a, b: (a + b) / (1 + a * b)),
    (4, lambda m, n, r, s: (m * r + n * s) / (m + n)),
    (2, lambda a, t: (1 - a**2) / (1 + a * np.cos(t))),
    (3, lambda a, b, c: (a - b) / (a * b + c)),
]
RATIO_IDS = ["velocity-addition", "in-groups", "weighted-mean", "orbit", "difference-over-sum"]


@pytest.mark.parametrize(("count", "formula"), RATIOS, ids=RATIO_IDS)
def test_ratios_of_sums_are_fitted_exactly_on_fresh_rows(count, formula):
    columns = _columns(count, rows=360)
    if formula is RATIOS[3][1]:
        columns[:, 0] /= 6.0  # a below 1: the denominator has no pole
    y = formula(*columns.T)
    found = ratio_sums(monomials(columns, BINARY, UNARY), y, 120, lambda: False)
    nmse, tree = found[0]
    assert nmse <= 1e-20, tree_text(tree, NAMES)
    fresh = _columns(count, seed=11)
    if formula is RATIOS[3][1]:
        fresh[:, 0] /= 6.0
    values, wanted = evaluate_on(tree, fresh), formula(*fresh.T)
    scale = float(values @ wanted / (values @ values))
    assert np.max(np.abs(scale * values - wanted) / np.abs(wanted)) < 1e-9


def test_a_root_of_a_ratio_is_a_ratio_of_the_square():
    columns = _columns(2, rows=360)
    columns[:, 1] /= 6.0
    a, b = columns.T
    found = root_ratios(columns, np.sqrt((a + b) / (a - b)), BINARY, UNARY, lambda: False)
    name, nmse, tree = found[0]
    assert (name, nmse <= 1e-20) == ("square", True), tree_text(tree, NAMES)
    # not among the sums: a root ratio is held back (exact for (a - b)/sqrt(Q) too)
    assert all(nmse > 1e-20 for _, nmse, _ in
               cross_sums(columns, np.sqrt((a + b) / (a - b)), BINARY, UNARY, lambda: False))


def test_a_ratio_is_never_a_denominator_near_zero_or_with_a_pole():
    # smooth functions of one input sum to a constant within 1e-13 on a short range; with
    # the denominator's constant term fixed, y*Q = 0 (Q near 0 everywhere) would fit any y.
    # An exponential is no ratio of these monomials: what is found fits it only roughly,
    # and no denominator found changes sign among the rows.
    columns = _columns(2, rows=360)
    a, b = columns.T
    y = np.exp(a / b)
    dictionary = monomials(columns, BINARY, UNARY)
    found = ratio_sums(dictionary, y, 120, lambda: False)
    assert found and min(nmse for nmse, _ in found) > 1e-12
    for _, tree in found:
        divisor = evaluate_on(tree[2], columns)
        assert np.all(divisor > 0) or np.all(divisor < 0)
