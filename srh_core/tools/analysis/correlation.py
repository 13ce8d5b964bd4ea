"""Pearson and Spearman correlations over finite pairs, fast and warning-free.

Same definitions and edge cases as :mod:`srh_core.evaluator.metrics` (nan with
fewer than two pairs or a constant side; ties share their average rank), but
ranks are computed with NumPy and may be reused across pairs, because the
analysis tools compute hundreds of correlations per call.
"""

from __future__ import annotations

import math

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties sharing their average rank (as ``scipy.stats.rankdata``)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.r_[0, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1]
    ends = np.r_[starts[1:], values.size]
    ranks = np.empty(values.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation of finite arrays; nan under two values or for a constant side."""
    if x.size < 2:
        return float("nan")
    with np.errstate(all="ignore"):
        xc = x / max(float(np.abs(x).max()), 1e-300)  # scaled: huge values cannot overflow
        yc = y / max(float(np.abs(y).max()), 1e-300)
        xc, yc = xc - xc.mean(), yc - yc.mean()
        scale = float(np.sqrt(np.sum(xc * xc) * np.sum(yc * yc)))
        if not (scale > 0 and math.isfinite(scale)):
            return float("nan")
        return float(np.clip(np.sum(xc * yc) / scale, -1.0, 1.0))


def finite_ranks(values: np.ndarray) -> np.ndarray | None:
    """Ranks of a column without missing values (reused across pairs), else None."""
    return average_ranks(values) if np.isfinite(values).all() else None


def correlations(x: np.ndarray, y: np.ndarray, x_ranks: np.ndarray | None = None,
                 y_ranks: np.ndarray | None = None) -> tuple[float, float]:
    """Pearson and Spearman over the finite pairs (nan when undefined).

    Precomputed ranks (:func:`finite_ranks`) are used when both sides are complete.
    """
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.all() and x_ranks is not None and y_ranks is not None:
        return pearson(x, y), pearson(x_ranks, y_ranks)
    xk, yk = x[keep], y[keep]
    return pearson(xk, yk), pearson(average_ranks(xk), average_ranks(yk))
