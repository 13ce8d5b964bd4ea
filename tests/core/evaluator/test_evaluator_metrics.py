from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from srh_core.errors import DataError
from srh_core.evaluator.metrics import (
    calc_AIC,
    calc_BIC,
    calc_MAE,
    calc_MAPE,
    calc_MSE,
    calc_PearsonR,
    calc_R2,
    calc_RMSE,
    calc_SpearmanR,
    prediction_metrics,
)

NAN, INF = math.nan, math.inf
Y = np.array([1.0, 2.0, 3.0, 4.0])
P = np.array([1.5, 2.0, 2.0, 5.0])


def aic(t: Any, p: Any) -> float:
    return calc_AIC(t, p, 2)


def bic(t: Any, p: Any) -> float:
    return calc_BIC(t, p, 2)


def gaussian_ic(t: np.ndarray, p: np.ndarray, penalty: float) -> float:
    n, ss = len(t), float(np.sum((p - t) ** 2))
    return penalty - 2 * (-n / 2 * (math.log(2 * math.pi) + math.log(ss / n) + 1))


CASES = [
    # ordinary values
    pytest.param(calc_MSE, Y, P, 0.5625, id="mse"),
    pytest.param(calc_RMSE, Y, P, 0.75, id="rmse"),
    pytest.param(calc_MAE, Y, P, 0.625, id="mae"),
    pytest.param(calc_MAPE, Y, P, (0.5 + 0 + 1 / 3 + 0.25) / 4, id="mape"),
    pytest.param(calc_R2, Y, P, 1 - 2.25 / 5.0, id="r2"),
    pytest.param(aic, Y, P, gaussian_ic(Y, P, 4), id="aic"),
    pytest.param(bic, Y, P, gaussian_ic(Y, P, 2 * math.log(4)), id="bic"),
    pytest.param(calc_PearsonR, Y, P, float(np.corrcoef(Y, P)[0, 1]), id="pearson"),
    pytest.param(calc_SpearmanR, Y, P, float(stats.spearmanr(Y, P).statistic), id="spearman"),
    # only finite pairs count
    pytest.param(calc_MSE, [1.0, np.nan, 3.0], [1.0, 5.0, np.inf], 0.0, id="mse-finite-pairs"),
    pytest.param(calc_MAE, [1.0, 2.0, 3.0], [2.0, np.nan, 3.0], 0.5, id="mae-finite-pairs"),
    pytest.param(calc_MSE, [np.nan, 1.0], [1.0, np.nan], NAN, id="mse-no-pairs"),
    pytest.param(calc_RMSE, [], [], NAN, id="rmse-empty"),
    pytest.param(calc_MSE, [1e300, -1e300], [-1e300, 1e300], INF, id="mse-overflow"),
    pytest.param(calc_MSE, [1.0, 2.0], 1.0, 0.5, id="mse-broadcast-scalar"),
    # MAPE skips zero targets, NaN when all are zero
    pytest.param(calc_MAPE, [0.0, 2.0], [5.0, 3.0], 0.5, id="mape-skips-zero"),
    pytest.param(calc_MAPE, [0.0, 0.0], [1.0, 0.0], NAN, id="mape-all-zero"),
    # R2 of a constant target
    pytest.param(calc_R2, [2.0, 2.0], [2.0, 2.0], 1.0, id="r2-constant-exact"),
    pytest.param(calc_R2, [2.0, 2.0], [2.0, 3.0], -INF, id="r2-constant-inexact"),
    pytest.param(calc_R2, [0.1] * 3, [0.1] * 3, 1.0, id="r2-constant-rounding"),
    pytest.param(calc_R2, [np.nan], [1.0], NAN, id="r2-no-pairs"),
    # R2 does not depend on the scale: no underflow of tiny squares, no overflow of huge ones
    pytest.param(calc_R2, Y * 1e-300, P * 1e-300, 1 - 2.25 / 5.0, id="r2-tiny-scale"),
    pytest.param(calc_R2, Y * 1e200, P * 1e200, 1 - 2.25 / 5.0, id="r2-huge-scale"),
    # AIC/BIC -inf for an exact fit, NaN without pairs or with an infinite residual
    pytest.param(aic, Y, Y, -INF, id="aic-exact"),
    pytest.param(bic, Y, Y, -INF, id="bic-exact"),
    pytest.param(aic, [np.nan], [1.0], NAN, id="aic-no-pairs"),
    pytest.param(bic, [1e300, -1e300], [-1e300, 1e300], NAN, id="bic-overflow"),
    pytest.param(aic, [0.0, 0.0], [1e-170, 0.0], -INF, id="aic-underflow-is-exact"),
    # correlations need two finite pairs and variance on both sides
    pytest.param(calc_PearsonR, [1.0], [2.0], NAN, id="pearson-one-pair"),
    pytest.param(calc_PearsonR, [1.0, 2.0, np.nan], [1.0, np.inf, 3.0], NAN,
                 id="pearson-one-finite-pair"),
    pytest.param(calc_PearsonR, [1.0, 2.0, 3.0], [5.0, 5.0, 5.0], NAN, id="pearson-constant"),
    pytest.param(calc_SpearmanR, [1.0, 1.0], [1.0, 2.0], NAN, id="spearman-constant"),
    pytest.param(calc_PearsonR, [1.0, 2.0, 3.0], [3.0, 2.0, 1.0], -1.0, id="pearson-negative"),
    pytest.param(calc_SpearmanR, [1.0, 2.0, 3.0, 4.0], [1.0, 8.0, 27.0, 1e9], 1.0,
                 id="spearman-monotone"),
    pytest.param(calc_SpearmanR, [1.0, 2.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0],
                 float(stats.spearmanr([1, 2, 2, 3], [1, 2, 3, 4]).statistic),
                 id="spearman-ties"),
]


@pytest.mark.parametrize(("metric", "y_true", "y_pred", "expected"), CASES)
def test_metric_edge_cases(
    metric: Callable[[Any, Any], float], y_true: Any, y_pred: Any, expected: float
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = metric(y_true, y_pred)
    assert isinstance(value, float)
    if math.isnan(expected):
        assert math.isnan(value)
    else:
        assert value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1e-300, 1e200])
def test_weighted_r2_does_not_depend_on_the_scale(scale: float) -> None:
    result = prediction_metrics(Y * scale, P * scale, 0, weights=[1.0, 2.0, 1.0, 1.0])
    mean = (1 + 4 + 3 + 4) / 5
    spread = (1 - mean) ** 2 + 2 * (2 - mean) ** 2 + (3 - mean) ** 2 + (4 - mean) ** 2
    assert result["r2"] == pytest.approx(1 - (0.25 + 0 + 1 + 1) / spread, rel=1e-12)


def test_shapes_that_do_not_broadcast_raise_data_error() -> None:
    with pytest.raises(DataError, match="cannot be broadcast"):
        calc_MSE(np.ones(3), np.ones(2))


def test_prediction_metrics_keys_and_counts() -> None:
    result = prediction_metrics([1.0, np.nan, 3.0], [1.0, 2.0, 3.5], 1)
    assert set(result) == {"mse", "rmse", "mae", "mape", "r2", "aic", "bic", "pearson",
                           "spearman", "n_samples", "n_finite"}
    assert result["n_samples"] == 2 and result["n_finite"] == 2
    assert result["mse"] == pytest.approx(0.125)


def test_prediction_failing_on_an_observed_target_makes_error_metrics_nan() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = prediction_metrics([1.0, 2.0, 3.0], [1.0, np.nan, 3.0], 0)
    assert result["n_samples"] == 3 and result["n_finite"] == 2
    assert all(math.isnan(result[k]) for k in ("mse", "r2", "aic", "pearson", "spearman"))


@given(st.lists(st.integers(-3, 3) | st.floats(-1e6, 1e6, allow_nan=False), min_size=1,
                max_size=60))
def test_average_ranks_are_scipys_rankdata(values):
    from srh_core.evaluator.metrics import average_ranks

    array = np.asarray(values, dtype=float)
    assert np.array_equal(average_ranks(array), stats.rankdata(array))
