"""Units behind relationship_analysis: ranks, correlations, PAVA, bins, folds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from srh_core.tools.analysis import collapse, pairs
from srh_core.tools.analysis.correlation import average_ranks, correlations, pearson


def test_average_ranks_match_scipy_with_ties() -> None:
    values = np.array([3.0, 1.0, 3.0, 2.0, 3.0, -1.0, 1.0])
    assert average_ranks(values).tolist() == stats.rankdata(values).tolist()


@pytest.mark.parametrize(("x", "y"), [
    ([1.0, 2.0, 3.0], [1.0, 4.0, 9.0]),
    ([1e300, -1e300, 5e299], [1.0, 2.0, 3.0]),
], ids=["ordinary", "huge"])
def test_pearson_matches_numpy_without_overflow(x: list[float], y: list[float]) -> None:
    xs, ys = np.array(x), np.array(y)
    expected = np.corrcoef(xs / np.abs(xs).max(), ys)[0, 1]  # scaled as the code does
    assert pearson(xs, ys) == pytest.approx(expected)


@pytest.mark.parametrize(("x", "y"), [([1.0], [2.0]), ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])],
                         ids=["single_pair", "constant_side"])
def test_undefined_correlations_are_nan(x: list[float], y: list[float]) -> None:
    assert all(math.isnan(v) for v in correlations(np.array(x), np.array(y)))


def test_correlations_skip_non_finite_pairs() -> None:
    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    y = np.array([2.0, 4.0, 6.0, np.inf, 10.0])
    assert correlations(x, y) == pytest.approx((1.0, 1.0))


def test_isotonic_fit_is_the_least_squares_monotone_fit() -> None:
    fitted = collapse.isotonic_fit(np.array([1.0, 3.0, 2.0, 4.0, 0.0]), np.ones(5))
    assert fitted.tolist() == pytest.approx([1.0, 2.25, 2.25, 2.25, 2.25])
    weighted = collapse.isotonic_fit(np.array([2.0, 1.0]), np.array([3.0, 1.0]))
    assert weighted.tolist() == pytest.approx([1.75, 1.75])


def test_decreasing_isotonic_prediction_follows_the_data() -> None:
    x = np.linspace(0, 1, 50)
    predicted = collapse.predict_isotonic(x, -x, np.array([0.0, 0.5, 1.0]), 5, "quantile")
    assert predicted.tolist() == pytest.approx([0.0, -0.5, -1.0], abs=0.02)


def test_bin_index_sends_out_of_range_values_to_the_end_bins() -> None:
    edges = collapse.bin_edges(np.arange(10.0), 3, "uniform")
    assert edges.tolist() == [0.0, 3.0, 6.0, 9.0]
    assert collapse.bin_index(np.array([-5.0, 0.0, 3.0, 8.9, 9.0, 50.0]), edges).tolist() == \
        [0, 0, 1, 2, 2, 2]
    assert collapse.bin_edges(np.full(4, 2.0), 5, "quantile").tolist() == [2.0, 2.0]


def test_folds_are_deterministic_and_disjoint() -> None:
    first, second = collapse.fold_indices(23, 4), collapse.fold_indices(23, 4)
    assert [f.tolist() for f in first] == [f.tolist() for f in second]
    assert sorted(np.concatenate(first).tolist()) == list(range(23))


@pytest.mark.parametrize(("x", "y"), [
    (np.arange(20.0), np.ones(20)),
    (np.arange(5.0), np.arange(5.0)),
], ids=["constant_target", "too_few_samples"])
def test_collapse_without_a_score_is_nan(x: np.ndarray, y: np.ndarray) -> None:
    score = collapse.cross_validated_r2(x, y, "bins", 5, 5, "quantile")
    assert math.isnan(score.r2) and score.n_folds == 0


def test_spline_falls_back_to_bins_with_few_distinct_values() -> None:
    x = np.repeat([0.0, 1.0, 2.0], 10)
    predicted = collapse.predict_spline(x, x * 2, np.array([0.0, 2.0]), 3, "quantile")
    assert predicted.tolist() == [0.0, 4.0]


@pytest.mark.parametrize(("value", "expected"), [
    (1.5, "3/2"), (-2.01, "-2"), (0.333, "1/3"), (0.41, None), (float("nan"), None)],
    ids=["three_halves", "minus_two", "third", "not_simple", "nan"])
def test_simple_fraction(value: float, expected: str | None) -> None:
    assert pairs.simple_fraction(value) == expected


@pytest.mark.parametrize(("means", "shape"), [
    ([1.0, 2.0, 3.0], "increasing"), ([3.0, 2.0, 2.0], "decreasing"),
    ([1.0, 1.0], "flat"), ([1.0, 3.0, 2.0], "non_monotonic")],
    ids=["increasing", "decreasing", "flat", "non_monotonic"])
def test_trend_of_bin_means(means: list[float], shape: str) -> None:
    assert pairs.trend([{"y_mean": m} for m in means]) == shape
