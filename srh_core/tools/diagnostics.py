"""Residual diagnostics and the metric text formula tools show the model.

:func:`residual_diagnostics` summarises where a formula misses (error profile,
worst samples, residual correlations) in a bounded, JSON-ready dict; the
``*_line(s)`` helpers turn metrics and diagnostics into the short lines of a
tool result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from srh_core.evaluator.metrics import calc_PearsonR, calc_SpearmanR

EXACT_RESIDUAL_RTOL = 1e-9
"""Residuals below this times rms(target) are rounding: no worst rows or correlations."""

VALIDATION_GAP_FACTOR = 2.0
"""Validation RMSE above this multiple of train RMSE earns a warning."""


def residual_diagnostics(y_true: Any, y_pred: Any, data: Mapping[str, Any] | None = None,
                         max_samples: int = 3, max_correlations: int = 5) -> dict[str, Any]:
    """Error profile, worst samples and strongest residual correlations (bounded, no warnings).

    Args:
        y_true: Target values.
        y_pred: Predictions, broadcastable to ``y_true``.
        data: Variables (same sample count) to show in rows and correlate with residuals.
        max_samples: Worst samples to list.
        max_correlations: Residual correlations to list.

    Returns:
        ``error_profile`` (n, n_finite, median residual, p95 / max absolute error),
        ``worst_samples`` and ``strongest_residual_correlations``.
    """
    true, pred = (a.reshape(-1) for a in np.broadcast_arrays(
        np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)))
    with np.errstate(all="ignore"):
        residual = pred - true
    finite = np.isfinite(residual)
    columns = {name: np.asarray(values, dtype=float).reshape(-1)
               for name, values in (data or {}).items()
               if np.asarray(values).dtype.kind in "fiu" and np.asarray(values).size == true.size}
    profile = _error_profile(residual[finite], true.size)
    observed = true[np.isfinite(true)]
    scale = float(np.sqrt(np.mean(observed * observed))) if observed.size else 0.0
    failed = np.isfinite(true) & ~np.isfinite(pred)
    if not failed.any() and profile.get("max_abs_error", math.inf) <= EXACT_RESIDUAL_RTOL * scale:
        return {"error_profile": profile, "exact": True, "worst_samples": [],
                "strongest_residual_correlations": []}
    return {"error_profile": profile, "exact": False,
            "worst_samples": _worst_samples(true, pred, residual, columns, max_samples),
            "strongest_residual_correlations": _correlations(residual, columns,
                                                             max_correlations)}


def _error_profile(residual: np.ndarray, n: int) -> dict[str, Any]:
    if residual.size == 0:
        return {"n": n, "n_finite": 0}
    absolute = np.abs(residual)
    return {"n": n, "n_finite": int(residual.size),
            "median_residual": float(np.median(residual)),
            "p95_abs_error": float(np.quantile(absolute, 0.95)),
            "max_abs_error": float(absolute.max())}


def _worst_samples(true: np.ndarray, pred: np.ndarray, residual: np.ndarray,
                   columns: Mapping[str, np.ndarray], limit: int) -> list[dict[str, Any]]:
    score = np.where(np.isfinite(residual), np.abs(residual), -np.inf)
    score = np.where(np.isfinite(true) & ~np.isfinite(pred), np.inf, score)  # failures first
    order = np.argsort(-score, kind="stable")[:max(0, limit)]
    return [{"index": int(i), "y_true": float(true[i]), "y_pred": float(pred[i]),
             "row": {name: float(values[i]) for name, values in columns.items()}}
            for i in order if score[i] > -np.inf]


def _correlations(residual: np.ndarray, columns: Mapping[str, np.ndarray],
                  limit: int) -> list[dict[str, Any]]:
    found = []
    for name, values in columns.items():
        pearson, spearman = calc_PearsonR(values, residual), calc_SpearmanR(values, residual)
        strength = max(abs(pearson), abs(spearman)) if finite_number(pearson) and \
            finite_number(spearman) else math.nan
        if finite_number(strength):
            found.append({"variable": name, "pearson": pearson, "spearman": spearman,
                          "strength": strength})
    return sorted(found, key=lambda item: -item["strength"])[:max(0, limit)]


def finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def metric_warnings(metrics: Mapping[str, Mapping[str, Any]]) -> list[str]:
    warnings = []
    for split, values in metrics.items():
        n, n_finite = values.get("n_samples"), values.get("n_finite")
        if isinstance(n, int) and isinstance(n_finite, int) and n_finite < n:
            warnings.append(f"the formula is not finite on {n - n_finite} of {n} {split} rows, "
                            "so its error metrics are nan")
    train, validation = metrics.get("train", {}), metrics.get("validation", {})
    train_rmse, validation_rmse = train.get("rmse"), validation.get("rmse")
    if finite_number(train_rmse) and finite_number(validation_rmse) and \
            validation_rmse > max(VALIDATION_GAP_FACTOR * train_rmse, train_rmse + 1e-12):
        warnings.append("validation error is much larger than training error (overfitting, or "
                        "the validation domain differs)")
    return warnings


def number_text(value: Any, digits: int = 3) -> str:
    """A number for a model reader: ``digits`` significant digits, or its text when not finite."""
    return format(value, f".{digits}g") if finite_number(value) else str(value)


def metric_line(metrics: Mapping[str, Any]) -> str:
    shown = [f"{name}={number_text(metrics[name])}" for name in ("mse", "r2", "rmse", "mae")
             if name in metrics]
    if "n_samples" in metrics:
        shown.append(f"n={metrics['n_samples']}")
    return ", ".join(shown) or "no metrics"


def diagnostic_lines(diagnostics: Any) -> list[str]:
    if not isinstance(diagnostics, Mapping) or "error_profile" not in diagnostics:
        return []
    profile = diagnostics["error_profile"]
    if not profile.get("n_finite"):
        return ["  residuals: the prediction is not finite on any row"]
    if diagnostics.get("exact"):
        return [f"  residuals ({diagnostics.get('split', 'train')}): exact up to rounding "
                f"(max|err|={number_text(profile.get('max_abs_error'))})"]
    lines = [f"  residuals ({diagnostics.get('split', 'train')}): max|err|="
             f"{number_text(profile.get('max_abs_error'))}, p95|err|="
             f"{number_text(profile.get('p95_abs_error'))}, median="
             f"{number_text(profile.get('median_residual'))}"]
    for sample in diagnostics.get("worst_samples", [])[:3]:
        row = ", ".join(f"{k}={number_text(v)}" for k, v in list(sample["row"].items())[:6])
        lines.append(f"    worst: y={number_text(sample['y_true'])} "
                     f"pred={number_text(sample['y_pred'])} at {row}")
    for item in diagnostics.get("strongest_residual_correlations", [])[:2]:
        lines.append(f"    residual correlates with {item['variable']}: pearson="
                     f"{number_text(item['pearson'])}, spearman={number_text(item['spearman'])}")
    return lines
