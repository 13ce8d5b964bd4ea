"""Tools on structured data: sindy on derivative and graph targets, evaluate and analysis."""

from __future__ import annotations

import numpy as np
import pytest

import srh_core.tools.catalogue  # noqa: F401 - registers the tools
from srh_core.agent.settings import SearchSettings
from srh_core.context import AgentContext
from srh_core.context.structured import commit_run_data
from srh_core.problems import load_suite
from srh_core.tools.base import BaseTool
from srh_core.tools.derivatives import time_derivative


def problem_context(name: str, n: int = 600) -> AgentContext:
    problem = load_suite().get(name)
    X, y = problem.sample(n, seed=0)
    context = AgentContext(args=SearchSettings.build())
    commit_run_data(context, X, {problem.output: y})
    return context


def call(context: AgentContext, tool: str, **params: object) -> object:
    result = BaseTool.create(tool, context=context)(**params)
    assert result.ok, result.result_str
    return result


@pytest.mark.parametrize(("problem", "params", "expected"), [
    ("network-kuramoto", {"poly_degree": 1, "coupling_degree": 1, "include_trig": True},
     {"omega[i]": 1.0, "sum[j](A[i, j], sin(x[j] - x[i]))": 0.4}),
    ("network-sis", {"poly_degree": 2, "coupling_degree": 2},
     {"x[i]": -0.5, "sum[j](A[i, j], x[j])": 0.3, "sum[j](A[i, j], x[i]*x[j])": -0.3}),
], ids=["kuramoto", "sis"])
def test_sindy_graph_library_recovers_network_dynamics(problem: str, params: dict,
                                                       expected: dict) -> None:
    result = call(problem_context(problem), "sindy", **params)
    assert result.result["is_candidate"]
    assert result.result["metrics"]["validation"]["mse"] < 1e-25
    assert result.result["parameters"]["coefficients"] == pytest.approx(expected)


def test_sindy_differentiates_trajectories_when_no_derivative_is_given() -> None:
    context = problem_context("strogatz-lv1", 2000)
    result = call(context, "sindy", x=["x", "y"], poly_degree=2, derivative_of="x")
    coefficients = result.result["parameters"]["coefficients"]
    assert set(coefficients) == {"x", "x**2", "x*y"}
    assert coefficients["x"] == pytest.approx(3.0, rel=1e-2)
    assert not result.result["is_candidate"]
    assert result.result["metrics"]["train"]["rollout_rmse"] < 0.05


def test_numerical_derivatives_per_trajectory() -> None:
    t = np.concatenate([np.linspace(0, 1, 11), np.linspace(0, 2, 7) ** 1.5])
    x = 3 * t**2 - t
    np.testing.assert_allclose(time_derivative(x, t), 6 * t - 1, atol=1e-9)
    assert np.isnan(time_derivative(np.ones(2), np.arange(2.0))).all()
    grid = np.linspace(0, 6, 300)
    noisy = np.sin(grid) + np.random.default_rng(0).normal(0, 0.01, grid.size)
    errors = {method: np.sqrt(np.mean((time_derivative(noisy, grid, method) - np.cos(grid))
                                      ** 2)) for method in ("finite_difference",
                                                            "smoothing_spline")}
    assert errors["smoothing_spline"] < errors["finite_difference"] / 3


def test_evaluate_and_relationship_analysis_read_indexed_formulas() -> None:
    context = problem_context("network-diffusion")
    result = call(context, "evaluate", f='param("k")*sum[j](A[i, j], x[j] - x[i])', fit=True)
    assert result.result["is_candidate"] and "0.3*sum[j]" in result.result["formula"]
    analysis = call(context, "relationship_analysis",
                    variables=["x", "sum[j](A[i, j], x[j] - x[i])"])
    assert analysis.result["variables"][0]["name"] == "sum[j](A[i, j], x[j] - x[i])"


def test_bad_graph_arguments_are_reported_to_the_model() -> None:
    context = problem_context("network-sis")
    result = BaseTool.create("sindy", context=context)(relation="B")
    assert not result.ok and "relation" in result.result_str
    result = BaseTool.create("sindy", context=context)(x=["t"])
    assert not result.ok and "node fields" in result.result_str
