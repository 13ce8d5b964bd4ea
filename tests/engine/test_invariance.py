"""Invariance tests (both answers, the reduced problem mapped back) and dimensional
consistency inside the enumeration and evolution."""

from __future__ import annotations

import numpy as np
import pytest

from srh_engine import check_dimensions, evaluate
from srh_engine.nodes import Binary, Function, Number, Symbol
from srh_engine.search import decomposition as dec
from srh_engine.search import search
from srh_engine.search.consistency import FormDimensions, input_dimensions, tree_consistent
from srh_engine.search.decomposition import homogeneous_pairs
from srh_engine.search.enumeration import Enumeration
from srh_engine.search.evolution import Evolution
from srh_engine.search.invariance import candidate_pairs, invariant_views
from srh_engine.search.operators import resolve_operators, to_expression
from srh_engine.search.views import Run, View
from srh_engine.units import parse_units

NAMES = ["a", "b", "c", "e"]
X = np.random.default_rng(0).uniform(1.0, 3.0, (2000, 4))
A, B, C, E = X.T
SYMBOLS = [Symbol(n) for n in NAMES]


pytestmark = pytest.mark.usefixtures("blas_one_thread")


def views_of(y: np.ndarray, units: dict | None = None, columns: np.ndarray = X,
             names: list[str] = NAMES) -> tuple[Run, list[View]]:
    binary, unary = resolve_operators(None)
    run = Run(y, binary, unary, 30, 0)
    run.units = {k: parse_units(v) for k, v in (units or {}).items()}
    base = View("inputs", [Symbol(n) for n in names], columns)
    return run, invariant_views(run, base, y, 6)


def in_view(view: View, truth) -> np.ndarray:
    """``truth`` (a function of the view's input expressions) mapped back to the originals."""
    return np.asarray(evaluate(truth(*view.inputs), dict(zip(NAMES, X.T, strict=True))))


@pytest.mark.parametrize(("y", "expected", "truth"), [
    # translational: a Gaussian of a difference (the free surrogate fits it only roughly)
    (np.exp(-3 * (A - B) ** 2) * C + E, "a - b",
     lambda u, c, e: Binary("+", Binary("*", Function("exp", (Binary(
         "*", Number(-3), Binary("**", u, Number(2))),)), c), e)),
    # scaling
    (np.log(A / B) * C + E ** 2, "a/b",
     lambda u, c, e: Binary("+", Binary("*", Function("log", (u,)), c),
                            Binary("**", e, Number(2)))),
    # rotational
    (C / (1 + A**2 + B**2) + E, "sqrt(a**2 + b**2)",
     lambda r, c, e: Binary("+", Binary("/", c, Binary("+", Number(1), Binary(
         "**", r, Number(2)))), e)),
])
def test_a_symmetry_is_found_and_the_reduced_answer_maps_back(y, expected, truth):
    from srh_engine.rendering import to_str

    run, views = views_of(y)
    assert views, run.notes
    view = views[0]
    assert to_str(view.inputs[0]) == expected
    # the view's columns are its input expressions on the original rows
    for k, expression in enumerate(view.inputs):
        got = evaluate(expression, dict(zip(NAMES, X.T, strict=True)))
        assert np.allclose(view.columns[:, k], got, rtol=1e-12)
    # the truth written in the reduced problem's inputs is the target
    assert np.allclose(in_view(view, truth), y, rtol=1e-10)
    assert any("symmetry" in note for note in run.notes)


@pytest.mark.parametrize("y", [
    A * B + B * C + np.sin(A * C) + E,  # every input enters on its own
    (A - B) ** 2 + A * C + E,  # a difference, and one of its inputs again
    np.exp(-(A**2 + 2 * B**2)) * C + E,  # an ellipse, not a circle
])
def test_no_symmetry_where_there_is_none(y):
    run, views = views_of(y)
    assert views == [], run.notes


def test_several_pairs_come_out_of_one_view_and_the_search_maps_back():
    y = np.exp(-((A - B) ** 2 + (C - E) ** 2))
    run, views = views_of(y)
    shown = [[str(x) for x in view.inputs] for view in views]
    assert len(views) == 2, shown
    assert sorted(map(str, views[1].inputs)) == sorted(["a - b", "c - e"]) or \
        len(views[1].inputs) == 2, shown
    result = search(X, y, NAMES, time_budget=60, workers=1, max_evaluations=400_000)
    fresh = np.random.default_rng(1).uniform(1.0, 3.0, (500, 4))
    truth = np.exp(-((fresh[:, 0] - fresh[:, 1]) ** 2 + (fresh[:, 2] - fresh[:, 3]) ** 2))
    got = evaluate(result.best.expression, dict(zip(NAMES, fresh.T, strict=True)))
    assert np.max(np.abs(got - truth) / np.abs(truth)) < 1e-6, result.best.formula


def test_units_propose_like_pairs_only():
    m, v = parse_units("kg"), parse_units("m/s")
    dims = input_dimensions([Symbol("m1"), Symbol("m2"), Symbol("v")],
                            {"m1": m, "m2": m, "v": v})
    pairs = candidate_pairs(dims, 3, 6)
    assert {op for i, j, op in pairs if (i, j) == (0, 1)} == {"-", "/", "+", "hypot"}
    assert {op for i, j, op in pairs if (i, j) == (0, 2)} == {"*", "/"}
    # without units every operator on every pair, and none past the input limit
    assert len(candidate_pairs(None, 3, 6)) == 3 * 5
    assert candidate_pairs(None, 8, 6) == []


def test_with_units_a_wide_problem_gets_its_like_pair_tested():
    rng = np.random.default_rng(2)
    wide = rng.uniform(1.0, 3.0, (2000, 8))
    names = [f"x{k}" for k in range(8)]
    y = (wide[:, 0] - wide[:, 1]) ** 2
    for k in range(2, 8):
        y = y + 0.3 * wide[:, k]
    units = {"x0": "m", "x1": "m", **{f"x{k}": ["s", "kg", "A", "K", "mol", "cd"][k - 2]
                                     for k in range(2, 8)}}
    _, untyped = views_of(y, None, wide, names)
    assert untyped == []  # 8 inputs: too many pairs to test on the data alone
    run, typed = views_of(y, units, wide, names)
    assert typed and str(typed[0].inputs[0]) == "x0 - x1", run.notes


# ----------------------------------------------------------------- consistency
UNITS = {"m": parse_units("kg"), "v": parse_units("m/s"), "F": parse_units("N"),
         "x": parse_units("m")}
PHYSICS = np.random.default_rng(3).uniform(1.0, 3.0, (32, 4))
P_NAMES = ["m", "v", "F", "x"]


def test_enumerated_forms_agree_with_check_dimensions():
    """The vectorised rules say of every form what check_dimensions says of its expression."""
    binary, unary = resolve_operators(None)
    dims = input_dimensions([Symbol(n) for n in P_NAMES], UNITS)
    free = Enumeration(PHYSICS, PHYSICS[:, :1].T, binary, unary)
    for level in range(2, 5):
        free.grow(level, lambda n: False)
    forms = FormDimensions([*dims, *(None for _ in free.constants)], [*binary, *unary])
    inconsistent = 0
    for size in range(2, 5):
        recipes = free.levels[size].recipes
        verdict = np.zeros(recipes.shape[0], bool)
        for code in np.unique(recipes[:, 0]):
            pick = np.flatnonzero(recipes[:, 0] == code)
            verdict[pick] = forms.of(recipes[pick])[0]
        for recipe, ok in zip(recipes, verdict, strict=True):
            tree = free.tree(recipe)
            check = check_dimensions(to_expression(tree, [Symbol(n) for n in P_NAMES]), UNITS)
            assert ok == check.consistent == tree_consistent(tree, dims), tree
            inconsistent += not ok
        forms.add(recipes)
    assert inconsistent > 100  # both answers were exercised


def test_the_enumeration_keeps_only_consistent_forms_and_finds_a_consistent_truth():
    binary, unary = resolve_operators(None)
    m, v, F, x = PHYSICS.T
    y = m * v**2 + F * x
    dims = input_dimensions([Symbol(n) for n in P_NAMES], UNITS)
    kept = Enumeration(PHYSICS, y[None], binary, unary, dimensions=dims)
    plain = Enumeration(PHYSICS, y[None], binary, unary)
    for level in range(2, 10):
        kept.grow(level, lambda n: False)
        if level <= 6:
            plain.grow(level, lambda n: False)
    sizes = {s: lv.values.shape[0] for s, lv in kept.levels.items()}
    assert all(sizes[s] < plain.levels[s].values.shape[0] for s in range(3, 7))
    for size in range(2, 7):
        for form in kept.forms_of_size(size):
            assert tree_consistent(kept.tree(form), dims)
    assert kept.best_nmse() < 1e-12  # m*v**2 + F*x (size 9) is enumerated
    assert kept._forms.dropped > 0


def test_evolution_gives_an_inconsistent_tree_an_infinite_error():
    dims = input_dimensions([Symbol(n) for n in P_NAMES], UNITS)
    columns = list(PHYSICS.T)
    binary, unary = resolve_operators(None)
    evolution = Evolution(columns, PHYSICS[:, 0], binary, unary, 20, dimensions=dims)
    assert evolution.fitness(("+", ("v", 0), ("v", 3))) == np.inf  # kg + m
    assert evolution.fitness(("exp", ("v", 3))) == np.inf  # exp of a length
    assert evolution.fitness(("+", ("v", 0), ("k", 2.0))) < np.inf  # a constant is free
    assert evolution.fitness(("*", ("v", 0), ("square", ("v", 1)))) < np.inf
    assert evolution.evaluated == 2  # the inconsistent ones were never evaluated


def test_no_filter_without_units_or_with_only_dimensionless_inputs():
    assert input_dimensions(SYMBOLS, None) is None
    assert input_dimensions(SYMBOLS, {"a": parse_units("1")}) is None
    assert input_dimensions([Binary("/", Symbol("x"), Symbol("x"))], UNITS) is None


@pytest.mark.parametrize(("y", "expected"), [
    (A**3 / (np.exp(A / B) - 1), (0, 1, 3.0)),  # a Bose law: A**3 times a function of A/B
    (np.exp(-(A / B) ** 2 / 2) / B * C, (1, 0, -1.0)),  # a Gaussian density (times C)
    (A / (1 + A / B) * np.exp(C), (0, 1, 1.0)),
], ids=["bose", "gaussian", "saturation"])
def test_a_weighted_scaling_symmetry_is_found_with_its_degree(y, expected):
    found = homogeneous_pairs(X, y)
    assert found, "no pair found"
    i, j, k = found[0]
    assert {i, j} == set(expected[:2]) and k == expected[2]  # read from either input
    # what is left is a function of the ratio and the other inputs
    ratio = X[:, i] / X[:, j]
    rest = [m for m in range(X.shape[1]) if m not in (i, j)]
    assert dec.surrogate_error(np.column_stack([ratio, X[:, rest]]),
                               np.log(np.abs(y / X[:, i] ** k))) < 1e-3


def test_a_weighted_scaling_symmetry_with_a_partner_of_both_signs():
    # a Gaussian of a difference: y*s is a function of d/s, d crosses 0, so the quotient
    # is d/s (s/d has a pole among the rows)
    d = X[:, 0] - X[:, 1]
    columns = np.column_stack([d, X[:, 2]])
    y = np.exp(-(d / X[:, 2]) ** 2 / 2) / X[:, 2]
    assert np.any(d < 0) and np.any(d > 0)
    assert homogeneous_pairs(columns, y) == [(1, 0, -1.0)]
    assert dec.homogeneous_quotient(columns, 1, 0) == (0, 1)
    assert dec.homogeneous_quotient(X, 1, 0) == (1, 0)


@pytest.mark.parametrize("y", [A**2 + B + C, A / (1 + B) + C**2, np.cos(A) * B],
                         ids=["sum", "no-ratio", "both-signs"])
def test_no_weighted_scaling_symmetry_where_there_is_none(y):
    assert homogeneous_pairs(X[:, :3], y) == []


def test_the_search_finds_a_bose_law_through_its_weighted_scaling_symmetry():
    y = C * A**3 / (np.exp(A / B) - 1)
    # a count of evaluations, not the clock, ends every phase: the same search under load
    result = search(X, y, NAMES, time_budget=300, seed=0, workers=1, max_evaluations=40_000)
    best = min(result.front, key=lambda entry: entry.mse)
    assert best.mse <= 1e-20 * float(np.mean(y**2)), best.formula
