"""relationship_analysis: ranking, collapse scores, power laws, contract of the result."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from scipy import stats

import srh_core.tools.analysis.relationship as relationship
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCallResult

RESULT_KEYS = {"split", "n_rows", "n_used", "subsampled", "y", "settings", "variables",
               "pairwise", "errors"}
Y_KEYS = {"name", "role", "is_target", "n_finite", "sign", "positive", "min", "max", "std"}
VARIABLE_KEYS = {
    "rank", "name", "role", "uses_target", "n_pairs", "x_min", "x_max", "sign", "positive",
    "pearson", "spearman", "collapse_r2", "collapse_r2_std", "collapse_folds", "trend", "bins",
    "loglog_slope", "loglog_intercept", "loglog_r2", "loglog_collapse_r2",
    "loglog_slope_fraction", "residual_partner",
}
BIN_KEYS = {"x_lo", "x_hi", "n", "y_mean", "y_std", "y_min", "y_max"}


def make_context(n: int = 400, **args: Any) -> AgentContext:
    rng = np.random.default_rng(7)
    x1 = rng.uniform(0.5, 4.0, n)
    x2 = rng.uniform(-1.0, 1.0, n)
    x3 = rng.normal(size=n)
    y = 3.0 * x1**1.5 + 0.5 * x2
    return AgentContext(data={"x1": x1, "x2": x2, "x3": x3, "y": y}, target="y",
                        args=args or None)


def run(context: AgentContext, **params: Any) -> ToolCallResult:
    return BaseTool.create("relationship_analysis", context)(**params)


def rows(result: ToolCallResult) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in result.result["variables"]}


def test_result_contract_for_the_offline_proposer() -> None:
    result = run(make_context(), pairwise=True)
    assert result.ok, result.result_str
    payload = result.result
    assert set(payload) == RESULT_KEYS and set(payload["y"]) == Y_KEYS
    for row in payload["variables"]:
        assert set(row) == VARIABLE_KEYS
        assert all(set(b) == BIN_KEYS for b in row["bins"])
    assert payload["settings"] == {"n_bins": 5, "binning": "quantile", "n_folds": 5,
                                   "collapse_model": "bins"}
    json.dumps(result.to_dict(), allow_nan=False)


def test_variables_are_ranked_by_collapse_and_the_power_law_is_found() -> None:
    result = run(make_context())
    ranked = result.result["variables"]
    assert [row["name"] for row in ranked][0] == "x1"
    assert [row["rank"] for row in ranked] == [1, 2, 3]
    x1 = ranked[0]
    assert x1["collapse_r2"] > 0.9 and x1["trend"] == "increasing" and x1["positive"]
    assert x1["loglog_slope"] == pytest.approx(1.5, abs=0.05)
    assert x1["loglog_slope_fraction"] == "3/2" and x1["loglog_r2"] > 0.99
    assert x1["residual_partner"]["name"] == "x2"
    assert rows(result)["x2"]["loglog_slope"] is None  # x2 changes sign
    assert "power-law hint" in result.result_str


def test_exact_power_law_has_unit_log_log_r2() -> None:
    x = np.linspace(1.0, 10.0, 60)
    context = AgentContext(data={"x": x, "y": 2.0 / x**2}, target="y")
    row = run(context).result["variables"][0]
    assert row["loglog_slope"] == pytest.approx(-2.0)
    assert row["loglog_intercept"] == pytest.approx(np.log(2.0))
    assert row["loglog_r2"] == pytest.approx(1.0) and row["loglog_slope_fraction"] == "-2"
    assert row["trend"] == "decreasing"


def test_correlations_match_scipy_on_finite_pairs() -> None:
    context = make_context()
    x3 = context.data["x3"].copy()
    x3[:10] = np.nan
    data = {**context.data, "x3": x3}
    context = AgentContext(data=data, target="y")
    row = rows(run(context))["x3"]
    keep = np.isfinite(x3)
    assert row["n_pairs"] == 390
    assert row["pearson"] == pytest.approx(stats.pearsonr(x3[keep], data["y"][keep])[0])
    assert row["spearman"] == pytest.approx(stats.spearmanr(x3[keep], data["y"][keep])[0])


@pytest.mark.parametrize("model", ["bins", "spline", "isotonic"])
def test_every_collapse_model_sees_a_one_variable_law(model: str) -> None:
    x = np.linspace(-2.0, 2.0, 300)
    noise = np.random.default_rng(0).uniform(-1.0, 1.0, 300)
    context = AgentContext(data={"x": x, "z": noise, "y": x**3}, target="y")
    result = run(context, collapse_model=model, n_bins=20)
    assert result.ok
    assert rows(result)["x"]["collapse_r2"] > 0.95
    assert rows(result)["z"]["collapse_r2"] < 0.2


def test_scores_are_deterministic_and_use_the_training_split() -> None:
    context = make_context(validation_fraction=0.25)
    first, second = run(context), run(context)
    assert first.result == second.result
    assert first.result["n_rows"] == 300 and first.result["variables"][0]["n_pairs"] == 300


def test_large_data_is_subsampled_deterministically(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relationship, "MAX_ANALYSIS_SAMPLES", 100)
    context = make_context()
    first, second = run(context), run(context)
    assert first.result["subsampled"] and first.result["n_used"] == 100
    assert first.result == second.result
    assert "subsample of 100" in first.result_str


def test_y_expression_and_uniform_binning_and_pairwise() -> None:
    context = make_context()
    result = run(context, y="log(y)", variables=["log(x1)", "x2"], binning="equal_width",
                 pairwise=True)
    assert result.ok
    assert result.result["y"]["role"] == "expression" and not result.result["y"]["is_target"]
    assert result.result["settings"]["binning"] == "uniform"
    log_x1 = rows(result)["log(x1)"]
    widths = {round(b["x_hi"] - b["x_lo"], 9) for b in log_x1["bins"]}
    assert len(widths) == 1
    matrix = result.result["pairwise"]
    assert matrix["names"] == ["log(x1)", "x2", "log(y)"]
    pearson = np.array(matrix["pearson"])
    assert np.allclose(pearson, pearson.T) and pearson[0, 2] > 0.95


def test_items_reading_the_target_are_flagged() -> None:
    result = run(make_context(), variables=["y*2", "x1"])
    assert rows(result)["y*2"]["uses_target"] is True
    assert "reads the target" in result.result_str


def test_constant_variable_gives_undefined_correlations_not_an_error() -> None:
    context = AgentContext(data={"c": np.ones(50), "x": np.arange(50.0), "y": np.arange(50.0)},
                           target="y")
    result = run(context)
    assert result.ok
    constant = rows(result)["c"]
    assert np.isnan(constant["pearson"]) and constant["trend"] == "flat"
    assert result.to_dict()["result"]["variables"][-1]["pearson"] is None


def test_shape_mismatch_is_reported() -> None:
    n = 30
    context = AgentContext(data={"v": np.ones((n, 2)), "x": np.arange(n, dtype=float),
                                 "y": np.arange(n, dtype=float)}, target="y")
    result = run(context)
    assert result.ok
    assert [e["variable"] for e in result.result["errors"]] == ["v"]


@pytest.mark.parametrize(("params", "needle"), [
    ({"n_bins": 1}, "[2, 100]"),
    ({"n_bins": 10**6}, "[2, 100]"),
    ({"n_folds": 1}, "[2, 20]"),
    ({"n_folds": 21}, "[2, 20]"),
    ({"binning": "log"}, "binning"),
    ({"collapse_model": "mlp"}, "collapse_model"),
    ({"y": "__import__('os')"}, "'y'"),
    ({"y": "yy"}, "Did you mean 'y'?"),
    ({"y": "NaN"}, "'y'"),
    ({"variables": ["__import__('os').system('id')"]}, "No variable could be analysed"),
    ({"variables": ["x11"]}, "Did you mean 'x1'?"),
    ({"pairwise": "maybe"}, "pairwise"),
], ids=["bins_low", "bins_huge", "folds_low", "folds_high", "binning", "model", "y_dunder",
        "y_unknown", "y_nan_text", "variables_dunder", "variables_unknown", "pairwise_text"])
def test_invalid_arguments_are_rejected(params: dict[str, Any], needle: str) -> None:
    result = run(make_context(), **params)
    assert not result.ok
    assert needle in result.result_str


def test_no_target_and_no_y_is_a_clear_error() -> None:
    context = AgentContext(data={"x": np.arange(5.0), "z": np.arange(5.0)})
    result = run(context)
    assert not result.ok and "pass y" in result.result_str


def test_text_is_bounded_with_many_variables() -> None:
    rng = np.random.default_rng(3)
    data = {f"x{i}": rng.uniform(1, 2, 100) for i in range(40)}
    context = AgentContext(data={**data, "y": data["x0"] * 2}, target="y")
    result = run(context, pairwise=True)
    assert result.ok and len(result.result_str) <= BaseTool.result_str_limit
    assert result.result_str.splitlines()[2].startswith("1. x0:")
    assert "further variables" in result.result_str


def test_infinite_and_huge_values_are_skipped_or_bounded() -> None:
    x = np.linspace(-1.0, 1.0, 101)  # contains 0, so 1/x is infinite once
    huge = np.linspace(1e300, 1.7e308, 101)
    context = AgentContext(data={"x": x, "h": huge, "y": x * 2.0}, target="y")
    result = run(context, variables=["1/x", "h", "h*h"])
    assert result.ok, result.result_str
    found = rows(result)
    assert found["1/x"]["n_pairs"] == 100
    assert found["h"]["pearson"] == pytest.approx(1.0)
    assert found["h*h"]["n_pairs"] < 101
    json.dumps(result.to_dict(), allow_nan=False)
