"""srh_core.evaluator.utils: the reference's functions, signatures and split options."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from scipy import stats

import srh_engine as engine
from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError
from srh_core.evaluator import utils

# name -> parameters of the reference's signature (sr_harness.evaluator.utils)
REFERENCE_SIGNATURES = {
    "calc_MSE": ["y_true", "y_pred"], "calc_RMSE": ["y_true", "y_pred"],
    "calc_MAE": ["y_true", "y_pred"], "calc_MAPE": ["y_true", "y_pred"],
    "calc_R2": ["y_true", "y_pred"], "calc_AIC": ["y_true", "y_pred", "num_parameters"],
    "calc_BIC": ["y_true", "y_pred", "num_parameters"], "calc_PearsonR": ["y_true", "y_pred"],
    "calc_SpearmanR": ["y_true", "y_pred"], "calc_complexity": ["expression"],
    "regression_metrics": ["expression", "y_true", "y_pred"],
    "select_random_indices": ["seed", "n_samples", "n_train"],
    "select_OOD_indices": ["seed", "n_samples", "n_train", "value"],
    "split_indices": ["context", "chronological"],
    "split_aligned_context": ["context", "chronological"],
}
KEYWORD_ONLY = {"select_random_indices": 3, "select_OOD_indices": 4, "split_indices": 1,
                "split_aligned_context": 1}


@pytest.mark.parametrize("name", REFERENCE_SIGNATURES, ids=list(REFERENCE_SIGNATURES))
def test_signature_matches_the_reference(name):
    parameters = inspect.signature(getattr(utils, name)).parameters
    assert list(parameters) == REFERENCE_SIGNATURES[name]
    keyword_only = [p for p in parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert len(keyword_only) == KEYWORD_ONLY.get(name, 0)
    assert name in utils.__all__


def test_metrics_agree_with_numpy_and_scipy():
    rng = np.random.default_rng(3)
    y_true = rng.normal(size=200)
    y_pred = y_true + rng.normal(scale=0.1, size=200)
    mse = float(np.mean((y_pred - y_true) ** 2))
    assert utils.calc_MSE(y_true, y_pred) == pytest.approx(mse)
    assert utils.calc_RMSE(y_true, y_pred) == pytest.approx(np.sqrt(mse))
    assert utils.calc_MAE(y_true, y_pred) == pytest.approx(np.mean(np.abs(y_pred - y_true)))
    assert utils.calc_R2(y_true, y_pred) == pytest.approx(
        1 - np.sum((y_pred - y_true) ** 2) / np.sum((y_true - y_true.mean()) ** 2))
    assert utils.calc_PearsonR(y_true, y_pred) == pytest.approx(
        stats.pearsonr(y_true, y_pred).statistic)
    assert utils.calc_SpearmanR(y_true, y_pred) == pytest.approx(
        stats.spearmanr(y_true, y_pred).statistic)
    assert utils.calc_AIC(y_true, y_pred, 2) < utils.calc_BIC(y_true, y_pred, 2)
    assert np.isnan(utils.calc_MAPE(np.zeros(3), np.ones(3)))
    formula = engine.parse('param("a", 2.0)*x + 1')
    bundle = utils.regression_metrics(formula, y_true, y_pred)
    assert bundle["n_params"] == 1 and bundle["complexity"] == utils.calc_complexity(formula)


def context_of(n: int, **settings: object) -> AgentContext:
    t = np.arange(n, dtype=float)
    return AgentContext(args={"validation_fraction": 0.25, **settings},
                        data={"t": t, "x": t[::-1].copy(), "y": 2 * t}, target="y")


def test_chronological_split_keeps_the_input_order_whatever_split_by_says():
    context = context_of(20, split_by="ood", split_ood_variable="x")
    train, validation = utils.split_indices(context, chronological=True)
    assert train.tolist() == list(range(15)) and validation.tolist() == list(range(15, 20))
    ood_train, _ = utils.split_indices(context)
    assert ood_train.tolist() == list(range(5, 20))  # the low values of x are the late rows
    views = utils.split_aligned_context(context, chronological=True)
    assert views["train"].data["t"].tolist() == list(range(15))
    assert views["validation"].data["y"].tolist() == [2.0 * i for i in range(15, 20)]


def test_default_split_is_the_configured_one_and_none_when_disabled():
    context = context_of(40)
    random_train, random_validation = utils.split_indices(context)
    assert len(random_train) == 30 and len(random_validation) == 10
    assert random_train.tolist() != list(range(30))
    assert utils.split_aligned_context(context)["train"].n_samples == 30
    disabled = context_of(40, validation_fraction=0.0)
    assert utils.split_indices(disabled, chronological=True) is None
    views = utils.split_aligned_context(disabled, chronological=True)
    assert views["validation"] is None and views["train"].n_samples == 40


def test_ood_and_random_selection_under_the_reference_names():
    train, validation = utils.select_OOD_indices(seed=0, n_samples=6, n_train=4,
                                                 value=np.array([5, 0, 4, 1, 3, 2.0]))
    assert train.tolist() == [1, 3, 4, 5] and validation.tolist() == [0, 2]
    train, validation = utils.select_random_indices(seed=1, n_samples=10, n_train=7)
    assert sorted([*train, *validation]) == list(range(10))
    with pytest.raises(ConfigurationError, match="split_ood_variable"):
        utils.split_indices(context_of(20, split_by="ood"))


def test_agent_context_is_reexported():
    assert utils.AgentContext is AgentContext
    with pytest.raises(AttributeError):
        _ = utils.missing_name
