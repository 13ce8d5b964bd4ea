"""The numbers ``relationship_analysis`` reports for one variable against y.

Every function here takes the finite pairs ``(x, y)`` of one variable (or,
for the residual and pairwise parts, aligned arrays with nan for missing
values) and returns JSON-ready values; ``nan`` becomes ``None`` when the
tool result is serialised.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from srh_core.tools.analysis.collapse import (
    Binning,
    CollapseModel,
    bin_edges,
    bin_index,
    cross_validated_r2,
)
from srh_core.tools.analysis.correlation import correlations, finite_ranks, pearson

SLOPE_MAX_DENOMINATOR = 4
SLOPE_SNAP_TOLERANCE = 0.05
TREND_RELATIVE_TOLERANCE = 1e-9


def sign_of(values: np.ndarray) -> str:
    """"positive", "negative", "non_negative", "non_positive", "zero", "mixed" or "none"."""
    if values.size == 0:
        return "none"
    positive, negative, zero = (values > 0).any(), (values < 0).any(), (values == 0).any()
    if positive and negative:
        return "mixed"
    if positive:
        return "non_negative" if zero else "positive"
    if negative:
        return "non_positive" if zero else "negative"
    return "zero"


def conditional_bins(x: np.ndarray, y: np.ndarray, n_bins: int,
                     binning: Binning) -> list[dict[str, Any]]:
    """Summary of y in each non-empty bin of x: range of x, count, mean/std/min/max of y."""
    edges = bin_edges(x, n_bins, binning)
    ids = bin_index(x, edges)
    rows = []
    for index in range(max(len(edges) - 1, 1)):
        inside = ids == index
        if not inside.any():
            continue
        yb = y[inside]
        rows.append({"x_lo": float(edges[index]), "x_hi": float(edges[index + 1]),
                     "n": int(inside.sum()), "y_mean": float(yb.mean()),
                     "y_std": float(yb.std()), "y_min": float(yb.min()),
                     "y_max": float(yb.max())})
    return rows


def trend(bins: list[dict[str, Any]]) -> str:
    """Shape of the bin means: "increasing", "decreasing", "flat" or "non_monotonic"."""
    means = np.array([row["y_mean"] for row in bins])
    if means.size < 2:
        return "flat"
    steps = np.diff(means)
    tolerance = TREND_RELATIVE_TOLERANCE * max(float(np.abs(means).max()), 1e-300)
    rising, falling = (steps > tolerance).any(), (steps < -tolerance).any()
    if rising and falling:
        return "non_monotonic"
    return "increasing" if rising else "decreasing" if falling else "flat"


def simple_fraction(value: float) -> str | None:
    """``"3/2"`` when ``value`` is within the snap tolerance of a simple fraction."""
    if not math.isfinite(value):
        return None
    fraction = Fraction(value).limit_denominator(SLOPE_MAX_DENOMINATOR)
    return str(fraction) if abs(float(fraction) - value) <= SLOPE_SNAP_TOLERANCE else None


def loglog(x: np.ndarray, y: np.ndarray, model: CollapseModel, n_folds: int, n_bins: int,
           binning: Binning) -> dict[str, Any]:
    """Power-law view: log|y| against log|x| (callers ensure both are sign-definite).

    Returns:
        ``loglog_slope``, ``loglog_intercept`` (least squares), ``loglog_r2``
        (its R2; 1 for an exact power law), ``loglog_collapse_r2`` (the
        cross-validated collapse score in log space) and ``loglog_slope_fraction``.
    """
    lx, ly = np.log(np.abs(x)), np.log(np.abs(y))
    centred = lx - lx.mean()
    spread = float(np.sum(centred**2))
    if not spread > 0:
        return empty_loglog()
    slope = float(np.sum(centred * (ly - ly.mean())) / spread)
    fit = pearson(lx, ly)
    score = cross_validated_r2(lx, ly, model, n_folds, n_bins, binning)
    return {"loglog_slope": slope, "loglog_intercept": float(ly.mean() - slope * lx.mean()),
            "loglog_r2": fit**2 if math.isfinite(fit) else float("nan"),
            "loglog_collapse_r2": score.r2, "loglog_slope_fraction": simple_fraction(slope)}


def empty_loglog() -> dict[str, Any]:
    """The log-log fields when they do not apply (x or y not sign-definite)."""
    return {"loglog_slope": None, "loglog_intercept": None, "loglog_r2": None,
            "loglog_collapse_r2": None, "loglog_slope_fraction": None}


def strongest_partner(residual: np.ndarray, others: dict[str, np.ndarray],
                      ranks: dict[str, np.ndarray | None]) -> dict[str, Any] | None:
    """The other variable most associated (max of |pearson|, |spearman|) with a residual."""
    best: dict[str, Any] | None = None
    residual_ranks = finite_ranks(residual)
    for name, values in others.items():
        pearson, spearman = correlations(values, residual, ranks.get(name), residual_ranks)
        strength = max(abs(pearson), abs(spearman))
        if math.isfinite(strength) and (best is None or strength > best["strength"]):
            best = {"name": name, "pearson": pearson, "spearman": spearman,
                    "strength": strength}
    return best


def correlation_matrices(columns: dict[str, np.ndarray]) -> dict[str, Any]:
    """Pairwise Pearson and Spearman matrices (finite pairs of each pair of columns)."""
    names = list(columns)
    ranks = {name: finite_ranks(values) for name, values in columns.items()}
    pearsons, spearmans = np.eye(len(names)), np.eye(len(names))
    for i, left in enumerate(names):
        for j in range(i + 1, len(names)):
            right = names[j]
            p, s = correlations(columns[left], columns[right], ranks[left], ranks[right])
            pearsons[i, j] = pearsons[j, i] = p
            spearmans[i, j] = spearmans[j, i] = s
    return {"names": names, "pearson": pearsons.tolist(), "spearman": spearmans.tolist()}
