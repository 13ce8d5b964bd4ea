from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import srh_engine as engine
from srh_core.context import AgentContext
from srh_core.errors import DataError
from srh_core.evaluator import DefaultEvaluator, regression_metrics
from srh_core.types import json_value

METRIC_KEYS = {"mse", "rmse", "mae", "mape", "r2", "aic", "bic", "pearson", "spearman",
               "complexity", "n_params", "n_samples", "n_finite"}
QUADRATIC = 'param("a")*x**2 + param("b")'


@pytest.fixture(autouse=True)
def _warnings_are_errors() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def make_context(**settings: object) -> AgentContext:
    x = np.linspace(-2.0, 2.0, 60)
    data = {"x": x, "w": np.cos(x), "y": 3.0 * x**2 + 0.5}
    return AgentContext(data=data, target="y", args={"validation_fraction": 0.25, **settings})


def test_fit_candidate_recovers_parameters_on_the_training_split() -> None:
    context = make_context()
    fitted = DefaultEvaluator.fit_candidate(engine.parse(QUADRATIC), context.train_split)
    values = engine.parameter_values(fitted)
    assert values["a"] == pytest.approx(3.0) and values["b"] == pytest.approx(0.5)


def test_evaluate_candidate_on_both_splits() -> None:
    context = make_context()
    evaluator = context.evaluator
    fitted = evaluator.fit_candidate(engine.parse(QUADRATIC), context.train_split)
    train = evaluator.evaluate_candidate(fitted, context.train_split)
    validation = evaluator.evaluate_candidate(fitted, context.validation_split)
    assert set(train) == set(validation) == METRIC_KEYS
    assert train["n_samples"] == 45 and validation["n_samples"] == 15
    assert train["mse"] < 1e-20 and validation["r2"] == pytest.approx(1.0)
    assert train["complexity"] == engine.complexity(fitted) == 7
    assert train["n_params"] == 2
    assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in train.values())
    json.dumps(json_value(train), allow_nan=False)


def test_fit_general_equality_with_a_target_expression() -> None:
    context = make_context()
    y = engine.parse("log(y)")
    fitted = DefaultEvaluator.fit(engine.parse('param("k")*log(3*x**2 + 0.5)'), y, context)
    assert engine.parameter_values(fitted)["k"] == pytest.approx(1.0)
    assert DefaultEvaluator.evaluate(fitted, y, context)["mse"] < 1e-20


def test_fit_without_parameters_returns_the_formula_unchanged() -> None:
    formula = engine.parse("2.9*x**2 + 0.4")
    assert DefaultEvaluator.fit_candidate(formula, make_context()) is formula


def test_fit_constants_from_argument_or_setting() -> None:
    formula = engine.parse("2.9*x**2 + 0.4")
    by_argument = DefaultEvaluator.fit(formula, engine.Symbol("y"), make_context(),
                                       fit_constants=True)
    by_setting = DefaultEvaluator.fit_candidate(formula, make_context(fit_constants=True))
    for fitted in (by_argument, by_setting):
        assert DefaultEvaluator.evaluate_candidate(fitted, make_context())["mse"] < 1e-20


def test_unknown_symbol_is_a_data_error_with_suggestion() -> None:
    with pytest.raises(DataError, match="Did you mean 'x'") as info:
        DefaultEvaluator.evaluate_candidate(engine.parse("xx + 1"), make_context())
    assert info.value.variable == "xx"


def test_candidate_needs_a_target() -> None:
    context = AgentContext(data={"x": np.ones(3)})
    with pytest.raises(DataError, match="no target"):
        DefaultEvaluator.fit_candidate(engine.parse('param("a")*x'), context)


def test_rows_with_missing_values_are_left_out_of_fit_and_score() -> None:
    x = np.linspace(1.0, 2.0, 10)
    w = np.where(np.arange(10) < 3, np.nan, 1.0)
    y = np.where(np.arange(10) == 9, np.nan, 2.0 * x)
    context = AgentContext(data={"x": x, "w": w, "y": y}, target="y")
    fitted = DefaultEvaluator.fit_candidate(engine.parse('param("a")*x*w'), context)
    assert engine.parameter_values(fitted)["a"] == pytest.approx(2.0)
    metrics = DefaultEvaluator.evaluate_candidate(fitted, context)
    assert metrics["n_samples"] == 6 and metrics["mse"] < 1e-20
    assert DefaultEvaluator.evaluate_candidate(engine.parse("2*x"), context)["n_samples"] == 9


def test_no_complete_row_to_fit_on() -> None:
    context = AgentContext(data={"x": np.array([np.nan, np.nan, 1.0]),
                                 "y": np.array([1.0, 2.0, np.nan])}, target="y")
    with pytest.raises(DataError, match="No complete sample"):
        DefaultEvaluator.fit_candidate(engine.parse('param("a")*x'), context)


def test_non_finite_prediction_makes_error_metrics_nan() -> None:
    metrics = DefaultEvaluator.evaluate_candidate(engine.parse("sqrt(x)"), make_context())
    assert math.isnan(metrics["mse"]) and math.isnan(metrics["r2"])
    assert metrics["n_finite"] < metrics["n_samples"] == 60
    assert metrics["complexity"] == 2


def test_constant_target_expression_broadcasts() -> None:
    metrics = DefaultEvaluator.evaluate(engine.parse("x - x + 1"), engine.parse("1"),
                                        make_context())
    assert metrics["n_samples"] == 60 and metrics["mse"] == 0.0 and metrics["r2"] == 1.0


def test_regression_metrics_counts_parameters_of_the_expression() -> None:
    fitted = engine.parse('param("a", 2.0)*x')
    metrics = regression_metrics(fitted, [2.0, 4.0, 6.1], [2.0, 4.0, 6.0])
    assert metrics["n_params"] == 1 and metrics["complexity"] == 3


def test_unknown_symbol_without_close_match_suggests_a_parameter() -> None:
    with pytest.raises(DataError, match=r"write param\('k'\)"):
        DefaultEvaluator.fit_candidate(engine.parse("k*x"), make_context())
