"""One-dimensional "collapse" models: how much of y one variable explains alone.

A collapse score is the cross-validated R2 of a one-dimensional predictor
``y ~ g(x)`` fitted on the training folds and scored on the held-out fold:
near 1 means y is (almost) a function of x alone, near 0 means x alone says
little. Folds are deterministic (a seeded permutation), so the same data
always gives the same scores. Predictors:

- ``bins``: mean of y per bin of x (quantile or uniform bins);
- ``spline``: a cubic smoothing spline of the per-x means of y (at most
  ``MAX_SPLINE_POINTS`` equal-count groups; smoothing from a difference-based
  noise estimate), clamped to the training range;
- ``isotonic``: monotone (pool-adjacent-violators) regression, increasing or
  decreasing by the sign of the training Spearman correlation (on at most
  ``MAX_ISOTONIC_POINTS`` equal-count groups of x), interpolated linearly.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from srh_core.tools.analysis.correlation import average_ranks, pearson

Binning = Literal["quantile", "uniform"]
CollapseModel = Literal["bins", "spline", "isotonic"]

FOLD_SEED = 0
MIN_TRAIN_SAMPLES = 4
MIN_TEST_SAMPLES = 2
MAX_SPLINE_POINTS = 400
MIN_SPLINE_POINTS = 5
MAX_ISOTONIC_POINTS = 2_000


@dataclass(frozen=True, slots=True)
class CollapseScore:
    """Cross-validated R2 of a one-dimensional predictor.

    Attributes:
        r2: Mean held-out R2 over the folds that could be scored (nan if none).
        r2_std: Standard deviation of the fold R2 values (nan if none).
        n_folds: Folds that could be scored.
        out_of_fold: Held-out prediction of every sample (nan where none).
    """

    r2: float
    r2_std: float
    n_folds: int
    out_of_fold: np.ndarray


def bin_edges(x: np.ndarray, n_bins: int, binning: Binning) -> np.ndarray:
    """Bin edges over ``x``: quantiles (duplicates merged) or equal widths."""
    low, high = float(x.min()), float(x.max())
    if low == high:
        return np.array([low, high])
    if binning == "quantile":
        return np.unique(np.quantile(x, np.linspace(0.0, 1.0, n_bins + 1)))
    return np.linspace(low, high, n_bins + 1)


def bin_index(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each value; values beyond the edges go to the first or last bin."""
    return np.clip(np.searchsorted(edges[1:-1], x, side="right"), 0, max(len(edges) - 2, 0))


def fold_indices(n: int, n_folds: int) -> list[np.ndarray]:
    """Deterministic disjoint folds of ``range(n)``."""
    return np.array_split(np.random.default_rng(FOLD_SEED).permutation(n), n_folds)


def cross_validated_r2(
    x: np.ndarray, y: np.ndarray, model: CollapseModel, n_folds: int, n_bins: int,
    binning: Binning,
) -> CollapseScore:
    """Score ``y ~ g(x)`` by ``n_folds``-fold cross-validation (finite x and y only)."""
    out_of_fold = np.full(len(x), np.nan)
    scores: list[float] = []
    if len(x) < n_folds * MIN_TEST_SAMPLES or not np.var(y) > 0:
        return CollapseScore(float("nan"), float("nan"), 0, out_of_fold)
    predictor = PREDICTORS[model]
    for test in fold_indices(len(x), n_folds):
        train = np.setdiff1d(np.arange(len(x)), test, assume_unique=True)
        if len(train) < MIN_TRAIN_SAMPLES or len(test) < MIN_TEST_SAMPLES:
            continue
        predicted = predictor(x[train], y[train], x[test], n_bins, binning)
        baseline = float(np.sum((y[test] - y[train].mean()) ** 2))
        if baseline > 0 and np.all(np.isfinite(predicted)):
            out_of_fold[test] = predicted
            scores.append(1.0 - float(np.sum((y[test] - predicted) ** 2)) / baseline)
    if not scores:
        return CollapseScore(float("nan"), float("nan"), 0, out_of_fold)
    return CollapseScore(float(np.mean(scores)), float(np.std(scores)), len(scores), out_of_fold)


def predict_bins(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, n_bins: int,
                 binning: Binning) -> np.ndarray:
    """Predict the training mean of y in the bin of each test value."""
    edges = bin_edges(train_x, n_bins, binning)
    ids = bin_index(train_x, edges)
    n = max(len(edges) - 1, 1)
    counts = np.bincount(ids, minlength=n)
    sums = np.bincount(ids, weights=train_y, minlength=n)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), train_y.mean())
    return means[bin_index(test_x, edges)]


def _grouped_means(x: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, ...]:
    """Mean y per distinct x (per equal-count group of sorted x beyond ``max_points``)."""
    unique_x, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    if len(unique_x) <= max_points:
        return unique_x, means, counts.astype(float)
    groups = np.array_split(np.arange(len(unique_x)), max_points)
    weight = np.array([counts[g].sum() for g in groups], dtype=float)
    gx = np.array([np.average(unique_x[g], weights=counts[g]) for g in groups])
    gy = np.array([np.average(means[g], weights=counts[g]) for g in groups])
    return gx, gy, weight


def predict_spline(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, n_bins: int,
                   binning: Binning) -> np.ndarray:
    """Cubic smoothing spline of the per-x means; bins when x has too few distinct values.

    The smoothing target is ``s = m * noise``, with the noise variance estimated
    from successive differences of the means (a classical FITPACK choice that
    needs no inner search, so it stays fast).
    """
    from scipy.interpolate import UnivariateSpline

    gx, gy, _ = _grouped_means(train_x, train_y, MAX_SPLINE_POINTS)
    if len(gx) < MIN_SPLINE_POINTS:
        return predict_bins(train_x, train_y, test_x, n_bins, binning)
    noise = float(np.mean(np.diff(gy) ** 2)) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FITPACK's "s too small" notes; the fit stays usable
        spline = UnivariateSpline(gx, gy, k=3, s=len(gx) * noise, ext=3)
        predicted = np.asarray(spline(np.clip(test_x, gx[0], gx[-1])), dtype=float)
    if not np.all(np.isfinite(predicted)):
        return predict_bins(train_x, train_y, test_x, n_bins, binning)
    return predicted


def isotonic_fit(y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted non-decreasing least-squares fit of ``y`` (pool adjacent violators)."""
    values: list[float] = []
    weights: list[float] = []
    sizes: list[int] = []
    for value, w in zip(y.tolist(), weight.tolist(), strict=True):
        values.append(value)
        weights.append(w)
        sizes.append(1)
        while len(values) > 1 and values[-2] > values[-1]:
            total = weights[-2] + weights[-1]
            merged = (values[-2] * weights[-2] + values[-1] * weights[-1]) / total
            size = sizes[-2] + sizes[-1]
            del values[-1], weights[-1], sizes[-1]
            values[-1], weights[-1], sizes[-1] = merged, total, size
    return np.repeat(values, sizes)


def predict_isotonic(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, n_bins: int,
                     binning: Binning) -> np.ndarray:
    """Monotone regression in the direction of the training rank correlation."""
    gx, gy, weight = _grouped_means(train_x, train_y, MAX_ISOTONIC_POINTS)
    if len(gx) < 2:
        return np.full(len(test_x), float(train_y.mean()))
    rho = pearson(average_ranks(train_x), average_ranks(train_y))
    sign = -1.0 if rho < 0 else 1.0
    fitted = sign * isotonic_fit(sign * gy, weight)
    return np.interp(test_x, gx, fitted)


Predictor = Callable[[np.ndarray, np.ndarray, np.ndarray, int, Binning], np.ndarray]
PREDICTORS: dict[str, Predictor] = {
    "bins": predict_bins, "spline": predict_spline, "isotonic": predict_isotonic,
}
