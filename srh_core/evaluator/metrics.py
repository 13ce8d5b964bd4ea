"""Regression metrics with explicit edge cases and no numpy warnings.

Every ``calc_*`` function broadcasts ``y_pred`` against ``y_true``, flattens
both, and counts only the pairs where **both** values are finite. Edge cases:

| metric | no finite pair | other edge cases |
| --- | --- | --- |
| mse, rmse, mae | nan | overflow gives inf |
| mape | nan | pairs with a zero target are skipped; nan when every target is zero |
| r2 | nan | constant target: 1.0 for an exact fit, else -inf |
| aic, bic | nan | -inf for an exact fit (zero residual); nan for an infinite residual |
| pearson, spearman | nan | nan with fewer than two pairs or a constant side |

:func:`regression_metrics` adds one rule on top, so a formula cannot look good
by failing where it is inconvenient: if the prediction is non-finite on any
sample whose target is finite, every error and correlation metric is nan
(an unrankable candidate); ``n_samples`` (finite targets) and ``n_finite``
(finite pairs) tell how far it got.

Weights (PySR's ``weights``, scikit-learn's ``sample_weight``): with ``weights``,
:func:`prediction_metrics` gives the weighted metrics, ``mse = sum w r^2 / sum w``,
``r2 = 1 - sum w r^2 / sum w (y - ybar_w)^2`` (``ybar_w`` the weighted mean), mae
and mape weighted the same way, the Gaussian AIC/BIC of the weighted MSE over the
rows of positive weight, and the weighted Pearson correlation (Spearman: of the
ranks); rows of weight 0 do not count at all.
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import numpy as np

import srh_engine as engine
from srh_core.errors import DataError

MetricValue: TypeAlias = float | int
MetricDict: TypeAlias = dict[str, MetricValue]

NAN = float("nan")
ERROR_METRICS = ("mse", "rmse", "mae", "mape", "r2", "aic", "bic", "pearson", "spearman")


def flat_arrays(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """Broadcast ``y_pred`` to ``y_true`` and flatten both as float arrays.

    Raises:
        DataError: The shapes cannot be broadcast together.
    """
    true, pred = np.asarray(y_true), np.asarray(y_pred)
    try:
        pred, true = np.broadcast_arrays(pred, true)
    except ValueError as exc:
        raise DataError(f"Prediction shape {pred.shape} cannot be broadcast to target shape "
                        f"{true.shape}.") from exc
    return true.astype(float).reshape(-1), pred.astype(float).reshape(-1)


def finite_pairs(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return the flattened pairs where both target and prediction are finite."""
    true, pred = flat_arrays(y_true, y_pred)
    keep = np.isfinite(true) & np.isfinite(pred)
    return true[keep], pred[keep]


def calc_MSE(y_true: Any, y_pred: Any) -> float:
    """Mean squared error over finite pairs (nan without any)."""
    true, pred = finite_pairs(y_true, y_pred)
    with np.errstate(over="ignore"):
        return _mean(np.square(_diff(pred, true)))


def calc_RMSE(y_true: Any, y_pred: Any) -> float:
    """Root mean squared error over finite pairs (nan without any)."""
    mse = calc_MSE(y_true, y_pred)
    return math.sqrt(mse) if mse >= 0 else NAN


def calc_MAE(y_true: Any, y_pred: Any) -> float:
    """Mean absolute error over finite pairs (nan without any)."""
    true, pred = finite_pairs(y_true, y_pred)
    return _mean(np.abs(_diff(pred, true)))


def calc_MAPE(y_true: Any, y_pred: Any) -> float:
    """Mean absolute percentage error (a fraction, not %) over finite pairs with a nonzero target.

    Returns:
        The error, or nan when no finite pair has a nonzero target.
    """
    true, pred = finite_pairs(y_true, y_pred)
    nonzero = true != 0
    with np.errstate(over="ignore"):
        return _mean(np.abs(_diff(pred[nonzero], true[nonzero])) / np.abs(true[nonzero]))


def calc_R2(y_true: Any, y_pred: Any) -> float:
    """Coefficient of determination over finite pairs.

    Returns:
        ``1 - SS_res / SS_tot``; for a constant target 1.0 when the fit is
        exact and -inf otherwise; nan without a finite pair.
    """
    true, pred = finite_pairs(y_true, y_pred)
    if true.size == 0:
        return NAN
    if _constant(true):
        return 1.0 if _sum_squares(_diff(pred, true)) == 0 else -math.inf
    true, pred = _unit_scaled(true, pred)
    residual, total = _sum_squares(_diff(pred, true)), _sum_squares(true - true.mean())
    return float(1.0 - residual / total) if total > 0 else NAN


def calc_AIC(y_true: Any, y_pred: Any, num_parameters: int) -> float:
    """Gaussian Akaike information criterion ``2k - 2 log L`` over finite pairs.

    Returns:
        AIC; -inf for an exact fit; nan without a finite pair or for an infinite residual.
    """
    log_likelihood, n = _gaussian_log_likelihood(y_true, y_pred)
    if n == 0 or math.isnan(log_likelihood) or math.isinf(log_likelihood):
        return -math.inf if log_likelihood == math.inf else NAN
    return float(2 * num_parameters - 2 * log_likelihood)


def calc_BIC(y_true: Any, y_pred: Any, num_parameters: int) -> float:
    """Gaussian Bayesian information criterion ``k log n - 2 log L`` over finite pairs.

    Returns:
        BIC; -inf for an exact fit; nan without a finite pair or for an infinite residual.
    """
    log_likelihood, n = _gaussian_log_likelihood(y_true, y_pred)
    if n == 0 or math.isnan(log_likelihood) or math.isinf(log_likelihood):
        return -math.inf if log_likelihood == math.inf else NAN
    return float(num_parameters * math.log(n) - 2 * log_likelihood)


def calc_PearsonR(y_true: Any, y_pred: Any) -> float:
    """Pearson correlation over finite pairs (nan under two pairs or a constant side)."""
    true, pred = finite_pairs(y_true, y_pred)
    return _correlation(true, pred)


def calc_SpearmanR(y_true: Any, y_pred: Any) -> float:
    """Spearman rank correlation over finite pairs (nan under two pairs or a constant side).

    Ties get average ranks; computed as the Pearson correlation of the ranks.
    """
    true, pred = finite_pairs(y_true, y_pred)
    if true.size < 2:
        return NAN
    return _correlation(average_ranks(true), average_ranks(pred))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """One-based ranks with ties given their average rank (``scipy.stats.rankdata``'s default).

    Written out because scipy's version costs ~50x more per call on the small
    arrays the tools score (its array-API dispatch), and every evaluation
    computes several.
    """
    order = np.argsort(values, kind="mergesort")
    inverse = np.empty(order.size, dtype=np.intp)
    inverse[order] = np.arange(order.size)
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    dense = np.cumsum(starts)[inverse]
    bounds = np.r_[np.nonzero(starts)[0], starts.size]
    return 0.5 * (bounds[dense] + bounds[dense - 1] + 1)


def calc_complexity(expression: Any) -> int:
    """Node count of an engine expression (the harness's complexity measure)."""
    return int(engine.complexity(expression))


def prediction_metrics(y_true: Any, y_pred: Any, num_parameters: int,
                       weights: Any = None) -> MetricDict:
    """Every error and correlation metric plus ``n_samples`` and ``n_finite``.

    Applies the invalid-prediction rule of this module: a non-finite prediction
    on a finite target makes every error and correlation metric nan.

    Args:
        y_true: Target values.
        y_pred: Predicted values broadcastable to ``y_true``.
        num_parameters: Number of fitted parameters (for AIC and BIC).
        weights: One weight >= 0 per row of ``y_true`` (None: unweighted); rows of
            weight 0 are left out and the metrics are weighted (module docstring).

    Returns:
        ``mse, rmse, mae, mape, r2, aic, bic, pearson, spearman, n_samples, n_finite``.
    """
    true, pred = flat_arrays(y_true, y_pred)
    observed = np.isfinite(true)
    row_weights = None if weights is None else _flat_weights(weights, np.shape(y_true))
    if row_weights is not None:
        observed &= row_weights > 0
    finite = observed & np.isfinite(pred)
    counts = {"n_samples": int(observed.sum()), "n_finite": int(finite.sum())}
    unweighable = row_weights is not None and counts["n_finite"] == 0
    if counts["n_finite"] < counts["n_samples"] or unweighable:
        return {**dict.fromkeys(ERROR_METRICS, NAN), **counts}
    true, pred = true[finite], pred[finite]
    if row_weights is not None:
        return {**weighted_metrics(true, pred, row_weights[finite], num_parameters), **counts}
    return {
        "mse": calc_MSE(true, pred), "rmse": calc_RMSE(true, pred),
        "mae": calc_MAE(true, pred), "mape": calc_MAPE(true, pred),
        "r2": calc_R2(true, pred),
        "aic": calc_AIC(true, pred, num_parameters), "bic": calc_BIC(true, pred, num_parameters),
        "pearson": calc_PearsonR(true, pred), "spearman": calc_SpearmanR(true, pred),
        **counts,
    }


def weighted_metrics(true: np.ndarray, pred: np.ndarray, weights: np.ndarray,
                     num_parameters: int) -> dict[str, float]:
    """The error and correlation metrics weighted by ``weights`` (finite pairs, weights > 0)."""
    total = float(weights.sum())
    error = _diff(pred, true)
    with np.errstate(over="ignore", invalid="ignore"):
        mse = float(weights @ np.square(error)) / total
        mae = float(weights @ np.abs(error)) / total
        nonzero = true != 0
        mape = float(weights[nonzero] @ (np.abs(error[nonzero]) / np.abs(true[nonzero]))) / \
            float(weights[nonzero].sum()) if nonzero.any() else NAN
    if _constant(true):
        r2 = 1.0 if mse == 0 else -math.inf
    else:
        unit_true, unit_pred = _unit_scaled(true, pred)
        with np.errstate(over="ignore", invalid="ignore"):
            residual = float(weights @ np.square(_diff(unit_pred, unit_true)))
            spread = float(weights @ np.square(unit_true - float(weights @ unit_true) / total))
        r2 = 1.0 - residual / spread if spread > 0 else NAN
    n = int(true.size)
    if mse == 0 or not math.isfinite(mse):
        aic = bic = -math.inf if mse == 0 else NAN
    else:
        log_likelihood = -n / 2 * (math.log(2 * math.pi) + math.log(mse) + 1)
        aic = float(2 * num_parameters - 2 * log_likelihood)
        bic = float(num_parameters * math.log(n) - 2 * log_likelihood)
    return {"mse": mse, "rmse": math.sqrt(mse) if mse >= 0 else NAN, "mae": mae,
            "mape": mape, "r2": float(r2), "aic": aic, "bic": bic,
            "pearson": _weighted_correlation(true, pred, weights),
            "spearman": _weighted_correlation(average_ranks(true), average_ranks(pred),
                                              weights) if true.size >= 2 else NAN}


def _flat_weights(weights: Any, shape: tuple[int, ...]) -> np.ndarray:
    """One weight per row of a target of ``shape``, repeated along its other axes.

    Raises:
        DataError: Not one weight per row.
    """
    array = np.asarray(weights, dtype=float)
    rows = shape[0] if shape else 1
    if array.ndim != 1 or array.size != rows:
        raise DataError(f"Weights must be one number per row ({rows}); got shape "
                        f"{array.shape}.")
    return np.broadcast_to(array.reshape((rows,) + (1,) * (len(shape) - 1)),
                           shape or (1,)).reshape(-1)


def _weighted_correlation(a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> float:
    if a.size < 2 or _constant(a) or _constant(b):
        return NAN
    total = float(weights.sum())
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        da, db = a - float(weights @ a) / total, b - float(weights @ b) / total
        numerator = float(weights @ (da * db))
        denominator = math.sqrt(float(weights @ (da * da))) * \
            math.sqrt(float(weights @ (db * db)))
    if denominator == 0 or not math.isfinite(denominator) or not math.isfinite(numerator):
        return NAN
    return max(-1.0, min(1.0, numerator / denominator))


def regression_metrics(expression: Any, y_true: Any, y_pred: Any) -> MetricDict:
    """The standard metric bundle of a fitted expression.

    Args:
        expression: Fitted engine expression (for ``complexity`` and ``n_params``).
        y_true: Target values.
        y_pred: Predicted values broadcastable to ``y_true``.

    Returns:
        ``mse, rmse, mae, mape, r2, aic, bic, pearson, spearman, complexity,
        n_params, n_samples, n_finite``; see the module docstring for edge cases.
    """
    return weighted_regression_metrics(expression, y_true, y_pred, None)


def weighted_regression_metrics(expression: Any, y_true: Any, y_pred: Any,
                                weights: Any) -> MetricDict:
    """:func:`regression_metrics` with one weight per row of ``y_true`` (None: unweighted;
    see :func:`prediction_metrics`)."""
    n_params = int(engine.count_parameters(expression))
    metrics = prediction_metrics(y_true, y_pred, n_params, weights)
    return {**metrics, "complexity": calc_complexity(expression), "n_params": n_params}


def _constant(values: np.ndarray) -> bool:
    return bool(values.min() == values.max())  # not np.ptp: it can overflow


def _unit_scaled(true: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both divided by the target's largest magnitude, which R^2 does not depend on: the
    squares of a target near 1e-300 underflow to 0 and of one near 1e200 overflow."""
    scale = float(np.max(np.abs(true)))
    if not 0 < scale < math.inf:
        return true, pred
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        return true / scale, pred / scale


def _diff(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return pred - true


def _mean(values: np.ndarray) -> float:
    if values.size == 0:
        return NAN
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.mean(values))


def _sum_squares(values: np.ndarray) -> float:
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sum(np.square(values)))


def _gaussian_log_likelihood(y_true: Any, y_pred: Any) -> tuple[float, int]:
    """Maximised Gaussian log-likelihood (+inf for an exact fit) and the pair count."""
    true, pred = finite_pairs(y_true, y_pred)
    n = int(true.size)
    residual = _sum_squares(_diff(pred, true))
    if n == 0 or not math.isfinite(residual):
        return NAN, n
    if residual == 0:
        return math.inf, n
    variance = residual / n
    if variance == 0:  # underflow of a tiny residual: as exact as floats can tell
        return math.inf, n
    return -n / 2 * (math.log(2 * math.pi) + math.log(variance) + 1), n


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or _constant(a) or _constant(b):
        return NAN
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        da, db = a - a.mean(), b - b.mean()
        numerator = float(np.sum(da * db))
        denominator = math.sqrt(_sum_squares(da)) * math.sqrt(_sum_squares(db))
    if denominator == 0 or not math.isfinite(denominator) or not math.isfinite(numerator):
        return NAN
    return max(-1.0, min(1.0, numerator / denominator))
