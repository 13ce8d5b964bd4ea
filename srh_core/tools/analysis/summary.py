"""Distribution summary of one array: the numbers behind ``statistics_analysis``.

:func:`describe` returns plain JSON-ready values (see the key list in
:mod:`srh_core.tools.analysis.statistics`). Statistics are computed on the
finite values only; counts say how many there were. Overflow in moments of
huge values gives ``None`` (not finite), never a warning.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

EXTRA_NEAR_ZERO_THRESHOLDS = (1e-6, 1e-4)
CATEGORICAL_MAX_DISTINCT = 10
LOG_HINT_MIN_DECADES = 2.0
LOG_HINT_MIN_SKEW = 1.0
NEAR_CONSTANT_EPS = 32 * float(np.finfo(float).eps)
EXACT_INTEGER_LIMIT = 2.0**53
QUANTILES = {"q05": 0.05, "q25": 0.25, "median": 0.5, "q75": 0.75, "q95": 0.95}


def near_zero_thresholds(first: float) -> list[float]:
    """The thresholds reported: ``first``, then 1e-6 and 1e-4, without duplicates."""
    return list(dict.fromkeys((float(first), *EXTRA_NEAR_ZERO_THRESHOLDS)))


def describe(values: np.ndarray, n_bins: int, thresholds: Sequence[float]) -> dict[str, Any]:
    """Summarise an array of any shape (flattened).

    Args:
        values: The array.
        n_bins: Equal-width histogram bins.
        thresholds: Absolute-value thresholds of the near-zero counts.

    Returns:
        Counts, moments, quantiles, sign, near-zero counts, integrality,
        skewness, log-scale hint and histogram.
    """
    flat = np.asarray(values, dtype=float).reshape(-1)
    finite = flat[np.isfinite(flat)]
    summary: dict[str, Any] = {
        "size": int(flat.size), "n_finite": int(finite.size),
        "n_nan": int(np.isnan(flat).sum()), "n_inf": int(np.isinf(flat).sum()),
        "finite_fraction": float(finite.size / flat.size) if flat.size else 0.0,
    }
    with np.errstate(all="ignore"):
        summary.update(_moments(finite))
        summary.update(_sign(finite))
        summary["near_zero"] = _near_zero(finite, thresholds)
        summary.update(_integrality(finite))
        summary.update(_shape(finite, summary["sign"]))
        summary["histogram"] = histogram(finite, n_bins)
    return summary


def _finite_or_none(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _moments(finite: np.ndarray) -> dict[str, Any]:
    keys = ("min", "max", "mean", "std", *QUANTILES)
    if finite.size == 0:
        return dict.fromkeys(keys)
    quantiles = np.quantile(finite, list(QUANTILES.values()))
    moments = {"min": finite.min(), "max": finite.max(), "mean": finite.mean(),
               "std": finite.std(), **dict(zip(QUANTILES, quantiles, strict=True))}
    return {key: _finite_or_none(moments[key]) for key in keys}


def _sign(finite: np.ndarray) -> dict[str, Any]:
    counts = {"n_positive": int((finite > 0).sum()), "n_negative": int((finite < 0).sum()),
              "n_zero": int((finite == 0).sum())}
    pos, neg, zero = counts["n_positive"], counts["n_negative"], counts["n_zero"]
    if finite.size == 0:
        sign = "none"
    elif pos and neg:
        sign = "mixed"
    elif pos:
        sign = "non_negative" if zero else "positive"
    elif neg:
        sign = "non_positive" if zero else "negative"
    else:
        sign = "zero"
    return {"sign": sign, "positive": sign == "positive", **counts}


def _near_zero(finite: np.ndarray, thresholds: Sequence[float]) -> list[dict[str, Any]]:
    magnitude = np.abs(finite)
    rows = []
    for threshold in thresholds:
        count = int((magnitude <= threshold).sum())
        rows.append({"threshold": float(threshold), "count": count,
                     "fraction": count / finite.size if finite.size else 0.0})
    return rows


def _integrality(finite: np.ndarray) -> dict[str, Any]:
    distinct = np.unique(finite)
    integer = bool(finite.size) and bool(
        np.all((np.abs(finite) < EXACT_INTEGER_LIMIT) & (finite == np.round(finite))))
    few = distinct.size <= CATEGORICAL_MAX_DISTINCT
    return {"integer": integer, "n_distinct": int(distinct.size),
            "categorical": bool(few and finite.size >= 2 * distinct.size and distinct.size > 1),
            "distinct_values": [float(v) for v in distinct] if few else None}


def skewness(finite: np.ndarray) -> float | None:
    """Sample skewness (biased, as ``scipy.stats.skew``); None for constant data."""
    if finite.size < 3:
        return None
    scale = float(np.abs(finite).max())
    scaled = finite / scale if scale > 0 else finite
    centred = scaled - scaled.mean()
    variance = float(np.mean(centred**2))
    if not variance > 0:
        return None
    return _finite_or_none(np.mean(centred**3) / variance**1.5)


def _shape(finite: np.ndarray, sign: str) -> dict[str, Any]:
    skew = skewness(finite)
    result: dict[str, Any] = {"skewness": skew, "log_skewness": None, "decades": None,
                              "log_scale_hint": False}
    if sign not in ("positive", "negative"):
        return result
    logs = np.log10(np.abs(finite))
    result["decades"] = _finite_or_none(logs.max() - logs.min())
    result["log_skewness"] = log_skew = skewness(logs)
    wide = (result["decades"] or 0.0) >= LOG_HINT_MIN_DECADES
    skewed = skew is not None and abs(skew) >= LOG_HINT_MIN_SKEW and (
        log_skew is None or abs(log_skew) < abs(skew) / 2)
    result["log_scale_hint"] = bool(wide or skewed)
    return result


def histogram(finite: np.ndarray, n_bins: int) -> dict[str, list[Any]]:
    """Equal-width histogram ``{"edges", "counts"}``; one bin for (near-)constant data."""
    if finite.size == 0:
        return {"edges": [], "counts": []}
    low, high = float(finite.min()), float(finite.max())
    if high - low <= NEAR_CONSTANT_EPS * max(abs(low), abs(high), 1.0):
        return {"edges": [low, high], "counts": [int(finite.size)]}
    scale = max(abs(low), abs(high))  # scaling keeps huge ranges finite
    counts, edges = np.histogram(finite / scale, bins=n_bins)
    return {"edges": [float(edge) * scale for edge in edges],
            "counts": [int(count) for count in counts]}
