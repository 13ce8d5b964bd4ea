"""srh_engine.search.inner_scales: enumerated forms with a number inside their functions,
and their place in the search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from srh_engine.evaluation import evaluate
from srh_engine.search import search
from srh_engine.search.budget import Budget, Counter
from srh_engine.search.enumeration import Enumeration
from srh_engine.search.inner_scales import SCAN_ROWS, _scaled_tree, scaled_forms
from srh_engine.search.operators import resolve_operators, tree_text
from srh_engine.search.views import EXACT_NMSE, View, target_transforms

pytestmark = pytest.mark.usefixtures("blas_one_thread")

BINARY, UNARY = resolve_operators(None)
TWO_PI = 2 * math.pi


def _bose(x: np.ndarray) -> np.ndarray:
    u = x[:, 0] / TWO_PI
    return u / np.expm1(u)


def _scan(columns: np.ndarray, y: np.ndarray, largest: int = 6):
    from srh_engine.nodes import Symbol

    candidates = target_transforms(y)
    names = list(candidates)
    rng = np.random.default_rng(0)
    few = np.sort(rng.choice(y.size, 32, replace=False))
    enumeration = Enumeration(columns[few], np.stack([candidates[n][few] for n in names]),
                              BINARY, UNARY, seed=0)
    for level in range(2, largest + 1):
        enumeration.grow(level, lambda evaluated: False)
    view = View("inputs", [Symbol(f"x{i + 1}") for i in range(columns.shape[1])], columns)
    fitness = np.sort(rng.choice(y.size, 256, replace=False))
    rows = np.sort(rng.choice(fitness, SCAN_ROWS, replace=False))
    budget = Budget(math.inf, Counter())
    return scaled_forms(enumeration, view, candidates, rows, fitness, budget,
                        largest=largest)


def test_scaled_tree_multiplies_only_the_chosen_inputs():
    tree = ("/", ("v", 0), ("-", ("exp", ("*", ("v", 0), ("v", 1))), ("k", 1.0)))
    assert tree_text(_scaled_tree(tree, {1}, 0.5), ["x", "t"]) == \
        "x/(exp(x*(0.5*t)) - 1.0)"


@pytest.mark.parametrize(("count", "law"), [
    (1, _bose),
    (2, lambda x: x[:, 1] * np.cos(x[:, 0] / 3)),
    (1, lambda x: np.sin(x[:, 0] * math.pi / 2) / x[:, 0]),
], ids=["bose-over-2pi", "cosine-of-a-third", "sine-of-half-pi"])
def test_the_scan_finds_a_form_whose_inner_number_is_simple(count, law):
    columns = np.random.default_rng(3).uniform(1.0, 5.0, (300, count))
    found, evaluated = _scan(columns, law(columns))
    assert evaluated > 0
    assert min(item.nmse for item in found) <= EXACT_NMSE


def test_the_scan_adds_nothing_where_unscaled_forms_fit_exactly():
    # ``a*b`` and each transform of it (its square, root, log, inverse) are small forms
    # without numbers: no scaled form fits much better than they do
    columns = np.random.default_rng(3).uniform(1.0, 5.0, (300, 2))
    found, _ = _scan(columns, columns[:, 0] * columns[:, 1], largest=5)
    assert found == []


def test_search_finds_an_exponential_with_a_number_inside():
    """``x/(2*pi)/(exp(x/(2*pi)) - 1)``: before the scan, the front ended in long ratios
    of polynomial-like sums (the truth at the wrong inner scale fits worse than hundreds
    of lookalikes, so it never reached the refit)."""
    x = np.random.default_rng(0).uniform(1.0, 5.0, (300, 1))
    # a count of evaluations, not the clock, ends every phase: the same search under load
    result = search(x, _bose(x), ["x"], time_budget=120, seed=0, workers=1,
                    max_evaluations=60_000)
    # fresh points beyond the data too: a polynomial lookalike (1.5e-9 within [1, 5] on
    # the start commit) is far off there
    fresh = np.random.default_rng(1).uniform(0.5, 10.0, (500, 1))
    values = np.asarray(evaluate(result.best.expression, {"x": fresh[:, 0]}), dtype=float)
    assert np.max(np.abs(values - _bose(fresh)) / _bose(fresh)) < 1e-6, result.best.formula
