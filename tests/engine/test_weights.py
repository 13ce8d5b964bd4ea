"""Row weights in the engine: the weighted least squares of fit and of the native search."""

from __future__ import annotations

import numpy as np
import pytest

import srh_engine as engine
from srh_engine.search import search

RNG = np.random.default_rng(7)
X1 = RNG.uniform(0.5, 4.0, 400)
X2 = RNG.uniform(0.5, 2.0, 400)
FIRST = X1 < 2.0  # two regimes: the weighted truth holds on the first only
Y = np.where(FIRST, X1 * X2**2, np.sin(X1) + X2 + 5.0)
LINE = engine.parse('param("a")*x + param("b")')


def test_a_zero_weighted_regime_takes_no_part_in_a_fit():
    y = np.where(FIRST, 3.0 * X1, -5.0 * X1 + 1.0)
    result = engine.fit(LINE, {"x": X1}, y, weights=FIRST.astype(float))
    assert result.parameters["a"] == pytest.approx(3.0, abs=1e-9)
    assert result.parameters["b"] == pytest.approx(0.0, abs=1e-9)
    assert result.loss < 1e-20 and result.n_excluded == 0
    unweighted = engine.fit(LINE, {"x": X1}, y)
    assert unweighted.parameters["a"] < 0  # the weights change the answer


def test_a_weighted_fit_is_the_weighted_least_squares_solution():
    y = np.where(FIRST, 3.0 * X1, -5.0 * X1 + 1.0)
    weights = np.where(FIRST, 1.0, 2.5)
    result = engine.fit(LINE, {"x": X1}, y, weights=weights)
    root = np.sqrt(weights)
    design = np.column_stack([X1, np.ones_like(X1)]) * root[:, None]
    expected = np.linalg.lstsq(design, y * root, rcond=None)[0]
    np.testing.assert_allclose([result.parameters["a"], result.parameters["b"]], expected,
                               rtol=1e-8)
    residual = expected[0] * X1 + expected[1] - y
    assert result.loss == pytest.approx(float(weights @ residual**2) / weights.sum(), rel=1e-8)


@pytest.mark.parametrize(("weights", "message"), [
    (np.ones(3), "one number per row"), (-np.ones(400), ">= 0"), (np.zeros(400), "not all 0"),
    (np.full(400, np.nan), "finite")], ids=["short", "negative", "zero", "nan"])
def test_bad_fit_weights_are_a_fit_error(weights, message):
    with pytest.raises(engine.FitError, match=message):
        engine.fit(LINE, {"x": X1}, X1, weights=weights)


def test_the_search_finds_the_weighted_truth():
    X = np.column_stack([X1, X2])
    weighted = search(X, Y, ["a", "b"], time_budget=60, seed=0, workers=1,
                      weights=FIRST.astype(float))
    best = weighted.front[-1]
    assert best.mse < 1e-20 and engine.complexity(best.expression) <= 5, best.formula
    values = engine.evaluate(best.expression, {"a": X1, "b": X2})
    np.testing.assert_allclose(values[FIRST], Y[FIRST], rtol=1e-9)
    plain = search(X, Y, ["a", "b"], time_budget=3, seed=0, workers=1)
    assert plain.front[-1].mse > 1e-6  # no formula this small explains both regimes


def test_equal_weights_are_no_weights():
    X = np.column_stack([X1, X2])[:200]
    y = (X1 * X2)[:200]
    options = {"time_budget": 20, "seed": 0, "workers": 1, "max_evaluations": 2000}
    assert [e.formula for e in search(X, y, ["a", "b"], weights=np.full(200, 3.0),
                                      **options).front] == \
        [e.formula for e in search(X, y, ["a", "b"], **options).front]


def test_bad_search_weights_are_a_value_error():
    X = np.column_stack([X1, X2])
    with pytest.raises(ValueError, match="finite numbers >= 0"):
        search(X, Y, weights=-np.ones(400), time_budget=1, workers=1)
    with pytest.raises(ValueError, match="at least 3 rows of positive weight"):
        search(X, Y, weights=np.r_[1.0, np.zeros(399)], time_budget=1, workers=1)

