"""Fitting: recovery of known constants, robustness to nan/inf, options and errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srh_engine import FitError, FitResult, Number, fit, parse
from srh_engine.fitting import METHODS

X = np.linspace(0.0, 4.0, 200)


@pytest.fixture(autouse=True)
def _no_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _assert_recovered(result: FitResult, truth: dict[str, float]) -> None:
    assert result.success, result.message
    for name, value in truth.items():
        assert result.parameters[name] == pytest.approx(value, rel=1e-6), name


RECOVERY = [
    ("exp-decay", 'param("a")*exp(-param("b")*x) + param("c")', X,
     lambda x: 2.5 * np.exp(-1.3 * x) + 0.7, {"a": 2.5, "b": 1.3, "c": 0.7}),
    ("sine", 'param("a")*sin(param("b")*x + param("c"))', np.linspace(0.0, 6.0, 300),
     lambda x: 1.8 * np.sin(2.3 * x + 0.6), {"a": 1.8, "b": 2.3, "c": 0.6}),
    ("power-law", 'param("a")*x**param("b")', np.linspace(0.5, 5.0, 100),
     lambda x: 3.2 * x**-1.7, {"a": 3.2, "b": -1.7}),
    ("rational", '(param("a")*x + param("b"))/(x + param("c"))', X,
     lambda x: (2.0 * x - 1.0) / (x + 0.5), {"a": 2.0, "b": -1.0, "c": 0.5}),
    ("gaussian", 'param("a")*exp(-(x - param("m"))**2/param("s"))', X,
     lambda x: 1.5 * np.exp(-((x - 2.2) ** 2) / 0.8), {"a": 1.5, "m": 2.2, "s": 0.8}),
]


@pytest.mark.parametrize(("source", "x", "truth_function", "truth"),
                         [r[1:] for r in RECOVERY], ids=[r[0] for r in RECOVERY])
def test_recovers_constants_from_noise_free_data(source, x, truth_function, truth) -> None:
    result = fit(parse(source), {"x": x}, truth_function(x))
    _assert_recovered(result, truth)
    assert result.loss < 1e-20


def test_fit_constants_recovers_formula_constants() -> None:
    result = fit(parse("2.1*x**2 + 0.9"), {"x": X}, 3 * X**2 + 1, fit_constants=True)
    numbers = [n.value for n in result.expression.iter_preorder() if isinstance(n, Number)]
    assert numbers == [pytest.approx(3.0, rel=1e-9), 2, pytest.approx(1.0, rel=1e-9)]
    assert result.parameters == {}
    assert "param" not in result.expression.to_str()
    assert parse(result.expression.to_str()) == result.expression


def test_fit_constants_keeps_structural_numbers() -> None:
    expression = parse("x**2/2 + 2*pi*x + 1.5")
    result = fit(expression, {"x": X}, X**2 / 2 + 2 * math.pi * X + 4.0, fit_constants=True)
    assert result.expression.to_str().startswith("x**2/2 + 2*pi*x + ")
    assert result.expression.operands[1].value == pytest.approx(4.0)


def test_fit_constants_together_with_parameters() -> None:
    result = fit(parse('param("a")*x + 0.5'), {"x": X}, 2 * X + 3, fit_constants=True)
    _assert_recovered(result, {"a": 2.0})
    assert result.expression.operands[1].value == pytest.approx(3.0)


def test_log_with_nonpositive_inputs_fits_the_finite_rows() -> None:
    x = np.linspace(-1.0, 3.0, 81)
    y = 2.0 * np.log(np.where(x > 0, x, 1.0))
    result = fit(parse('param("a")*log(x)'), {"x": x}, y)
    assert math.isfinite(result.loss) and result.loss < 1e-20
    assert result.parameters["a"] == pytest.approx(2.0)
    assert result.n_excluded == int(np.sum(x <= 0))
    assert "excluded" in result.message


def test_sqrt_with_region_nan_at_the_start() -> None:
    x = np.linspace(0.0, 5.0, 101)
    result = fit(parse('sqrt(x - param("a"))'), {"x": x}, np.sqrt(np.maximum(x - 0.5, 0.0)))
    assert result.parameters["a"] == pytest.approx(0.5, rel=1e-6)
    assert math.isfinite(result.loss)


def test_nothing_finite_returns_unsuccessful_result() -> None:
    result = fit(parse('param("a")*log(x)'), {"x": -np.ones(10)}, np.ones(10))
    assert not result.success
    assert "nothing to fit" in result.message
    assert math.isnan(result.loss)


def test_overflowing_trial_points_do_not_crash() -> None:
    x = np.linspace(0.0, 10.0, 50)
    result = fit(parse('exp(param("a")*x)*100'), {"x": x}, 100 * np.exp(0.3 * x))
    _assert_recovered(result, {"a": 0.3})


def test_no_parameters_returns_the_loss_immediately() -> None:
    result = fit(parse("x**2"), {"x": X}, X**2 + 1)
    assert result.success and result.n_iter == 0
    assert result.loss == pytest.approx(1.0)


def test_grouped_parameter_gets_one_value_per_category() -> None:
    labels = np.array(["a", "b", "c"] * 30)
    x = np.linspace(0.0, 3.0, 90)
    truth = {"a": 1.0, "b": -2.0, "c": 3.5}
    y = np.array([truth[k] for k in labels]) * x + 0.5
    expression = parse('grouped_param(g, name="k")*x + param("b0")')
    assert expression.count_parameters({"g": labels, "x": x}) == 4
    result = fit(expression, {"g": labels, "x": x}, y)
    assert result.parameters["k"] == pytest.approx(truth)
    assert result.parameters["b0"] == pytest.approx(0.5)
    np.testing.assert_allclose(result.evaluate({"g": labels, "x": x}), y, atol=1e-9)


@pytest.mark.parametrize("method", [m for m in METHODS if m != "auto"])
def test_every_method_fits_a_line(method: str) -> None:
    x = np.linspace(-1.0, 1.0, 30)
    options = {"restarts": 0} if method not in ("Nelder-Mead", "Powell") else {
        "restarts": 0, "xatol": 1e-10, "fatol": 1e-14} if method == "Nelder-Mead" else {
        "restarts": 0, "xtol": 1e-10, "ftol": 1e-14}
    result = fit(parse('param("a")*x + param("b")'), {"x": x}, 2 * x - 1, method=method,
                 options=options)
    assert result.parameters["a"] == pytest.approx(2.0, rel=1e-4)
    assert result.parameters["b"] == pytest.approx(-1.0, rel=1e-4)


def test_method_names_are_case_insensitive() -> None:
    result = fit(parse('param("a")*x'), {"x": X}, 2 * X, method="bfgs")
    assert result.parameters["a"] == pytest.approx(2.0)


def test_unknown_method_lists_allowed_ones() -> None:
    with pytest.raises(FitError, match="allowed: auto, lm, trf") as caught:
        fit(parse('param("a")*x'), {"x": X}, X, method="BFGSS")
    assert "did you mean 'BFGS'" in str(caught.value)
    assert caught.value.field == "method"


def test_lm_with_too_few_rows_is_an_error_but_auto_works() -> None:
    expression = parse('param("a")*x + param("b")*x**2 + param("c")')
    with pytest.raises(FitError, match="'lm' needs"):
        fit(expression, {"x": np.array([1.0, 2.0])}, np.array([1.0, 2.0]), method="lm")
    result = fit(expression, {"x": np.array([1.0, 2.0])}, np.array([1.0, 2.0]))
    assert result.loss < 1e-20


def test_invalid_options_and_initial_values() -> None:
    expression = parse('param("a")*x')
    with pytest.raises(FitError, match="'restarts' option"):
        fit(expression, {"x": X}, X, options={"restarts": -1})
    with pytest.raises(FitError, match="did you mean 'a'"):
        fit(expression, {"x": X}, X, initial={"aa": 1.0})
    with pytest.raises(FitError, match="empty"):
        fit(expression, {"x": X}, [])
    with pytest.raises(FitError, match="do not match the target shape"):
        fit(expression, {"x": X}, np.ones(7))


def test_initial_values_and_target_by_name() -> None:
    result = parse('param("a")*x').fit({"x": X, "y": 5 * X}, "y", initial={"a": 4.0})
    _assert_recovered(result, {"a": 5.0})


def test_bound_value_is_the_start_and_result_is_bound() -> None:
    result = fit(parse('param("a", 3.0)*x'), {"x": X}, 3 * X, options={"restarts": 0})
    assert result.expression == parse('param("a", 3.0)*x')
    assert result.n_iter <= 3


def test_fit_is_deterministic() -> None:
    expression = parse('param("a")*sin(param("b")*x)')
    x = np.linspace(0, 10, 100)
    y = np.sin(3.7 * x) + 0.1 * np.cos(17 * x)
    first, second = fit(expression, {"x": x}, y), fit(expression, {"x": x}, y)
    assert first.parameters == second.parameters and first.loss == second.loss


@settings(max_examples=25, deadline=None)
@given(st.floats(-5, 5).filter(lambda v: abs(v) > 0.1), st.floats(0.2, 3.0),
       st.floats(-3, 3))
def test_property_exponential_recovery(a: float, b: float, c: float) -> None:
    y = a * np.exp(-b * X) + c
    result = fit(parse('param("a")*exp(-param("b")*x) + param("c")'), {"x": X}, y)
    _assert_recovered(result, {"a": a, "b": b, "c": c})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=3, max_size=3))
def test_property_linear_in_parameters_recovery(truth: list[float]) -> None:
    a, b, c = truth
    y = a * np.sin(X) + b * X**2 + c
    result = fit(parse('param("a")*sin(x) + param("b")*x**2 + param("c")'), {"x": X}, y,
                 initial={"a": -3.0, "b": 7.0, "c": 0.0})
    for name, value in zip("abc", truth, strict=True):
        assert result.parameters[name] == pytest.approx(value, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(("source", "x", "truth_function", "truth"),
                         [(r[1], np.linspace(r[2][0], r[2][-1], 20_000), r[3], r[4])
                          for r in RECOVERY],
                         ids=[r[0] for r in RECOVERY])
def test_large_fits_search_a_subset_then_polish_on_every_row(source, x, truth_function,
                                                             truth) -> None:
    result = fit(parse(source), {"x": x}, truth_function(x))
    _assert_recovered(result, truth)
    assert result.loss < 1e-20


def test_subset_search_reaches_the_full_data_optimum_on_noisy_data(monkeypatch) -> None:
    import srh_engine.fitting as fitting

    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 4.0, 30_000)
    y = 2.5 * np.exp(-1.3 * x) + 0.7 + rng.normal(0.0, 0.05, x.size)
    expression = parse('param("a")*exp(-param("b")*x) + param("c")')
    polished = fit(expression, {"x": x}, y)
    monkeypatch.setattr(fitting, "SUBSAMPLE_ROWS", 10**9)  # no subset: every run on all rows
    direct = fit(expression, {"x": x}, y)
    assert polished.loss == pytest.approx(direct.loss, rel=1e-9)
    assert polished.parameters == pytest.approx(direct.parameters, rel=1e-6)


def test_values_that_are_not_one_per_row_fit_without_a_subset() -> None:
    x = np.linspace(0.5, 3.0, 4_000)
    scale = np.array([2.0])  # broadcast, not one value per row
    result = fit(parse('param("a")*x**param("b")*s'), {"x": x, "s": scale}, 6.0 * x**1.5)
    _assert_recovered(result, {"a": 3.0, "b": 1.5})


def test_gauss_newton_polish_converges_near_the_optimum_and_declines_otherwise() -> None:
    from srh_engine.optimizers import polish, run_optimizer
    from srh_engine.problem import LeastSquaresProblem

    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 4.0, 5_000)
    y = 2.5 * np.exp(-1.3 * x) + 0.7 + rng.normal(0.0, 0.05, x.size)
    problem = LeastSquaresProblem(parse('param("a")*exp(-param("b")*x) + param("c")'),
                                  {"x": x}, y, {})
    near = np.array([2.4, 1.25, 0.72])
    polished = polish(problem, near)
    reference = run_optimizer(problem, near, "lm", {})
    assert polished is not None and polished.success
    assert polished.loss == pytest.approx(reference.loss, rel=1e-9)
    np.testing.assert_allclose(polished.theta, reference.theta, rtol=1e-6)
    twins = LeastSquaresProblem(parse('param("a")*x + param("b")*x'), {"x": x}, 3 * x, {})
    assert polish(twins, np.array([1.0, 1.0])) is None  # singular normal equations
