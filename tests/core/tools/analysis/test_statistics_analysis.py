"""statistics_analysis: numbers, hints, argument checks and hostile input."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import srh_core.tools.analysis.statistics  # noqa: F401  (registers the tool)
from srh_core.context import AgentContext
from srh_core.tools.analysis import summary
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCallResult

VARIABLE_KEYS = {
    "name", "role", "uses_target", "size", "n_finite", "n_nan", "n_inf", "finite_fraction",
    "min", "max", "mean", "std", "q05", "q25", "median", "q75", "q95", "sign", "positive",
    "n_positive", "n_negative", "n_zero", "near_zero", "integer", "n_distinct", "categorical",
    "distinct_values", "skewness", "log_skewness", "decades", "log_scale_hint", "histogram",
}


def make_context(**args: Any) -> AgentContext:
    rng = np.random.default_rng(1)
    n = 200
    x1 = rng.uniform(0.5, 500.0, n)
    x2 = rng.normal(size=n)
    k = rng.integers(0, 3, n)
    x3 = x2.copy()
    x3[:5] = np.nan
    return AgentContext(data={"x1": x1, "x2": x2, "k": k, "x3": x3, "y": 2.0 * x1 + x2},
                        target="y", args=args or None)


def run(context: AgentContext, **params: Any) -> ToolCallResult:
    return BaseTool.create("statistics_analysis", context)(**params)


def by_name(result: ToolCallResult) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in result.result["variables"]}


def test_default_describes_target_then_features_with_exact_numbers() -> None:
    context = make_context()
    result = run(context)
    assert result.ok, result.result_str
    assert [v["name"] for v in result.result["variables"]] == ["y", "x1", "x2", "k", "x3"]
    x1 = by_name(result)["x1"]
    values = context.data["x1"]
    assert set(x1) == VARIABLE_KEYS
    assert x1["min"] == values.min() and x1["max"] == values.max()
    assert x1["mean"] == pytest.approx(values.mean()) and x1["std"] == pytest.approx(values.std())
    assert x1["median"] == pytest.approx(np.median(values))
    assert x1["sign"] == "positive" and x1["positive"] is True
    assert x1["histogram"]["counts"] == np.histogram(values, bins=10)[0].tolist()
    assert sum(x1["histogram"]["counts"]) == x1["n_finite"] == 200
    assert by_name(result)["y"]["role"] == "target"
    assert result.result["settings"] == {"n_bins": 10, "near_zero_thresholds": [1e-8, 1e-6, 1e-4]}
    json.dumps(result.to_dict(), allow_nan=False)


def test_hints_for_skew_integers_categories_and_missing_values() -> None:
    items = by_name(run(make_context()))
    assert items["x1"]["decades"] > 2 and items["x1"]["log_scale_hint"] is True
    assert items["x2"]["sign"] == "mixed" and items["x2"]["log_scale_hint"] is False
    k = items["k"]
    assert k["integer"] and k["categorical"] and k["distinct_values"] == [0.0, 1.0, 2.0]
    assert k["sign"] == "non_negative" and k["n_zero"] > 0
    x3 = items["x3"]
    assert (x3["n_nan"], x3["n_finite"], x3["finite_fraction"]) == (5, 195, 195 / 200)


def test_only_the_training_split_is_described() -> None:
    context = make_context(validation_fraction=0.25)
    result = run(context, variables=["x1"])
    assert result.result["split"] == "train" and result.result["n_rows"] == 150
    assert by_name(result)["x1"]["size"] == 150
    assert by_name(result)["x1"]["max"] == context.train_split.data["x1"].max()


@pytest.mark.parametrize(("values", "sign"), [
    ([1.0, 2.0], "positive"), ([-1.0, -2.0], "negative"), ([0.0, 2.0], "non_negative"),
    ([0.0, -2.0], "non_positive"), ([0.0, 0.0], "zero"), ([-1.0, 1.0], "mixed"),
    ([np.nan, np.nan], "none"),
], ids=["positive", "negative", "non_negative", "non_positive", "zero", "mixed", "none"])
def test_sign_categories(values: list[float], sign: str) -> None:
    described = summary.describe(np.array(values), 5, [1e-8])
    assert described["sign"] == sign
    assert described["positive"] is (sign == "positive")


def test_near_zero_counts_use_all_thresholds() -> None:
    values = np.array([0.0, 5e-9, 5e-7, 5e-5, 1.0])
    rows = summary.describe(values, 3, summary.near_zero_thresholds(1e-8))["near_zero"]
    assert [(r["threshold"], r["count"]) for r in rows] == [(1e-8, 2), (1e-6, 3), (1e-4, 4)]
    assert summary.near_zero_thresholds(1e-6) == [1e-6, 1e-4]


def test_constant_and_huge_values_do_not_warn_or_fail() -> None:
    constant = summary.describe(np.full(10, 3.0), 10, [1e-8])
    assert constant["histogram"] == {"edges": [3.0, 3.0], "counts": [10]}
    assert constant["skewness"] is None and constant["std"] == 0.0
    huge = summary.describe(np.array([-1e308, 1e308, 0.0]), 4, [1e-8])
    assert sum(huge["histogram"]["counts"]) == 3 and huge["std"] is None


def test_expressions_are_evaluated_by_the_engine() -> None:
    context = make_context()
    result = run(context, variables=["log(x1)", "x1*x2", "y - 2*x1"])
    assert result.ok
    items = by_name(result)
    assert items["log(x1)"]["max"] == pytest.approx(np.log(context.data["x1"]).max())
    assert items["log(x1)"]["role"] == "expression"
    assert items["y - 2*x1"]["uses_target"] is True
    assert items["y - 2*x1"]["mean"] == pytest.approx(context.data["x2"].mean())


def test_a_data_column_named_e_is_the_data_not_eulers_number() -> None:
    context = AgentContext(data={"e": np.array([1.0, 2.0, 3.0]), "y": np.array([1.0, 1, 1])},
                           target="y")
    item = run(context, variables=["e*2"]).result["variables"][0]
    assert item["max"] == 6.0


HOSTILE_VARIABLES = {
    "dunder_import": "__import__('os')",
    "attribute": "x1.__class__",
    "subscript": "x1[0]",
    "lambda": "lambda: 1",
    "nan_text": "nan",
    "NaN_text": "NaN",
    "unknown": "x11",
    "constant": "2*pi",
    "huge_power": "10**400",
    "semicolon": "x1; x2",
    "empty_call": "f()",
}


@pytest.mark.parametrize("item", HOSTILE_VARIABLES.values(), ids=HOSTILE_VARIABLES.keys())
def test_hostile_variables_are_reported_next_to_good_ones(item: str) -> None:
    result = run(make_context(), variables=["x1", item])
    assert result.ok, result.result_str
    assert [v["name"] for v in result.result["variables"]] == ["x1"]
    (error,) = result.result["errors"]
    assert error["variable"] == item and error["message"]
    assert item in result.result_str


def test_unknown_variable_gets_did_you_mean_and_all_bad_is_an_error() -> None:
    result = run(make_context(), variables=["x11"])
    assert not result.ok
    assert "Did you mean 'x1'?" in result.result_str


@pytest.mark.parametrize(("params", "needle"), [
    ({"n_bins": 0}, "'n_bins'"),
    ({"n_bins": 101}, "[1, 100]"),
    ({"n_bins": 10**9}, "[1, 100]"),
    ({"n_bins": "NaN"}, "n_bins"),
    ({"n_bins": 2.5}, "n_bins"),
    ({"near_zero_threshold": 0}, "(0, 1e+06]"),
    ({"near_zero_threshold": -1}, "near_zero_threshold"),
    ({"near_zero_threshold": "nan"}, "near_zero_threshold"),
    ({"near_zero_threshold": "inf"}, "near_zero_threshold"),
    ({"variables": [f"x{i}" for i in range(41)]}, "at most 40"),
    ({"variables": [1, 2]}, "variables"),
    ({"variables": [""]}, "variables"),
    ({"bogus": 1}, "Unknown argument"),
], ids=["bins_zero", "bins_high", "bins_huge", "bins_nan_text", "bins_fraction", "threshold_zero",
        "threshold_negative", "threshold_nan", "threshold_inf", "too_many_variables",
        "non_text_variables", "empty_variable", "unknown_argument"])
def test_invalid_arguments_are_rejected(params: dict[str, Any], needle: str) -> None:
    result = run(make_context(), **params)
    assert not result.ok
    assert needle in result.result_str


def test_text_is_bounded_and_leads_with_key_numbers() -> None:
    data = {f"x{i}": np.linspace(1, 2, 50) * i for i in range(1, 40)}
    context = AgentContext(data={**data, "y": np.linspace(0, 1, 50)}, target="y")
    result = run(context)
    assert result.ok and len(result.result_str) <= BaseTool.result_str_limit
    first = result.result_str.splitlines()[1]
    assert first.startswith("- y [target] n=50") and "min 0" in first


def test_infinite_values_of_an_expression_are_counted_not_fatal() -> None:
    context = make_context()
    result = run(context, variables=["1/k"])
    assert result.ok
    item = result.result["variables"][0]
    zeros = int((context.data["k"] == 0).sum())
    assert zeros > 0 and item["n_inf"] == zeros and item["n_finite"] == item["size"] - zeros
    json.dumps(result.to_dict(), allow_nan=False)
