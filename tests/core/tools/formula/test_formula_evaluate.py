"""evaluate, submit_formula, constant_fit, eic and call_pysr: results and the common shape."""

from __future__ import annotations

import importlib.machinery
import math
import sys
import types

import numpy as np
import pytest

import srh_engine as engine
from srh_core.tools.diagnostics import residual_diagnostics
from srh_core.tools.inversion import invert_target
from srh_core.tools.pysr import pysr_expression


def decay(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {"x": rng.uniform(0, 4, n)}


def decay_truth(d):
    return 2.5 * np.exp(-1.3 * d["x"]) + 0.7


@pytest.mark.parametrize("formula", [
    'param("a")*exp(-param("b")*x) + param("c")',
    "2.1*exp(-0.9*x) + 0.4",
], ids=["params", "numeric-guesses"])
def test_evaluate_fit_recovers_exponential_decay(formula, make_context, run, shape, assert_exact):
    context = make_context(decay, "T", decay_truth)
    result = run("evaluate_formula", context, f=formula, fit=True)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["is_candidate"] and "param" not in result.result["formula"]
    assert_exact(result.result, decay, decay_truth)


def test_evaluate_without_fit_scores_as_written(make_context, run, shape):
    context = make_context(decay, "T", decay_truth)
    result = run("evaluate_formula", context, f="2.5*exp(-1.3*x) + 0.7")
    assert result.ok and result.result["metrics"]["train"]["mse"] == 0
    shape(result.result, context)
    text = result.result_str.splitlines()
    assert text[1].strip() == "T = 2.5*exp(-1.3*x) + 0.7"  # formula first
    assert text[2].strip().startswith("train: mse=0")


def test_equation_text_sets_the_target_and_is_back_transformed(make_context, run, shape):
    context = make_context(decay, "T", decay_truth)
    result = run("evaluate_formula", context, f="T - 0.7 = 2.5*exp(-1.3*x)")
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["target"] == "T - 0.7" and not result.result["is_candidate"]
    (back,) = result.result["all_formulas"]
    assert back["is_candidate"] and back["metrics"]["train"]["mse"] == pytest.approx(0, abs=1e-28)


def test_formula_using_the_target_is_not_a_candidate(make_context, run, shape):
    context = make_context(decay, "T", decay_truth)
    result = run("evaluate_formula", context, f="T*1")
    assert result.ok and not result.result["is_candidate"]
    shape(result.result, context)


def test_non_finite_predictions_do_not_crash(make_context, run, shape):
    context = make_context(decay, "T", decay_truth)
    result = run("evaluate_formula", context, f="log(x - 2)/(x - x)")
    assert result.ok, result.result_str
    shape(result.result, context)
    assert math.isnan(result.result["metrics"]["train"]["mse"])
    assert any("not finite" in text for text in result.result["warnings"])


def test_submit_formula_marks_submission(make_context, run, shape):
    context = make_context(decay, "T", decay_truth)
    result = run("submit_formula", context, f="2.5*exp(-1.3*x) + 0.7")
    assert result.ok and result.result["submitted"] is True and result.result["is_candidate"]
    shape(result.result, context)


@pytest.mark.parametrize(("eq", "target", "expected"), [
    ("3.1416*x**2", "A", "pi*x**2"),
    ("0.49999*m*v**2", "E", "m*v**2/2"),
    ("3.1416*x**2 + 0.7071*v", "B", "pi*x**2 + sqrt(2)/2*v"),
], ids=["pi", "one-half", "pi-and-sqrt2"])
def test_constant_fit_snaps_to_simple_constants(eq, target, expected, make_context, run, shape):
    def sample(rng, n):
        return {"x": rng.uniform(-2, 2, n), "m": rng.uniform(1, 3, n), "v": rng.uniform(-2, 2, n)}

    def truth(d):
        return engine.evaluate(engine.parse(expected), d)

    context = make_context(sample, target, truth)
    result = run("constant_fit", context, eq=eq)
    assert result.ok, result.result_str
    shape(result.result, context)
    found = engine.parse(result.result["formula"])
    assert engine.canonical_key(found) == engine.canonical_key(engine.parse(expected))
    assert result.result["metrics"]["train"]["mse"] < 1e-20
    assert result.result["is_candidate"]


def test_constant_fit_refits_constants_it_keeps(make_context, run, shape):
    def sample(rng, n):
        return {"x": rng.uniform(-2, 2, n)}

    def truth(d):
        return math.pi * d["x"] ** 2 + 1.2345 * d["x"]

    context = make_context(sample, "y", truth)
    result = run("constant_fit", context, eq="3.1415*x**2 + 1.19*x")
    assert result.ok, result.result_str
    assert result.result["parameters"]["replacements"] == {"3.1415": "pi"}
    assert result.result["metrics"]["train"]["mse"] < 1e-20
    front = result.result["parameters"]["pareto_front"]
    assert [item["n_unchanged"] for item in front] == sorted(item["n_unchanged"] for item in front)


def test_eic_flags_cancellation(make_context, run, shape):
    def sample(rng, n):
        return {"x": rng.uniform(1, 2, n)}

    def truth(d):
        return d["x"] + d["x"] ** 2

    context = make_context(sample, "y", truth)
    stable = run("evaluate_eic", context, f="x + x**2")
    fragile = run("evaluate_eic", context, f="(x + 1e6) - 1e6 + x**2")
    assert stable.ok and fragile.ok, fragile.result_str
    shape(stable.result, context)
    assert stable.result["diagnostics"]["eic"]["eic"] < 0.5
    assert fragile.result["diagnostics"]["eic"]["eic"] > 4
    assert fragile.result["eic"]["worst_subtree"]["path"] == "root/0"
    assert "Worst subtree root/0" in fragile.result_str


def test_pysr_unavailable_is_a_one_line_failure(make_context, run, monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    context = make_context(decay, "T", decay_truth)
    result = run("call_pysr", context, binary_operators=["+", "*"], unary_operators=["exp"])
    assert not result.ok and "PySR is not installed" in result.result_str
    assert "\n" not in result.result_str


def test_pysr_results_are_parsed_by_the_engine(make_context, run, shape, monkeypatch):
    equations = types.SimpleNamespace(sort_values=lambda column: {"sympy_format": [
        "2.5*exp(-1.3*srhfeature0) + 0.7", "Abs(srhfeature0)*E", "zoo*srhfeature0"]})

    class FakeRegressor:
        def __init__(self, **settings):
            self.equations_ = equations

        def fit(self, X, y, variable_names):
            assert variable_names == ["srhfeature0"] and X.shape[1] == 1

    module = types.ModuleType("pysr")
    module.__spec__ = importlib.machinery.ModuleSpec("pysr", None)
    module.PySRRegressor = FakeRegressor
    monkeypatch.setitem(sys.modules, "pysr", module)
    context = make_context(decay, "T", decay_truth)
    result = run("call_pysr", context, binary_operators=["+", "*"], unary_operators=["exp"])
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["metrics"]["train"]["mse"] < 1e-20
    assert result.result["all_formulas"][0]["formula"] == "abs(x)*e"
    assert any("could not be parsed" in text for text in result.result["warnings"])


@pytest.mark.parametrize(("lhs", "expected"), [
    ("log(T)", "exp(f)"), ("T/x", "f*x"), ("sqrt(T) - 1", "(f + 1)**2"),
    ("T**3", "f**(1/3)"), ("-T", "-f"), ("2**T", "log(f)/log(2)"), ("1/T", "1/f"),
], ids=["log", "quotient", "sqrt-shift", "cube", "negation", "exponential", "reciprocal"])
def test_invert_target(lhs, expected):
    solved = invert_target(engine.parse(lhs), "T", engine.Symbol("f"))
    assert solved is not None
    point = {"f": 2.3, "x": 1.7}
    assert engine.evaluate(solved, point) == pytest.approx(engine.evaluate(
        engine.parse(expected), point))


@pytest.mark.parametrize("lhs", ["sin(T)", "T*T", "abs(T)", "T**x"],
                         ids=["sin", "twice", "abs", "variable-power"])
def test_invert_target_refuses_non_invertible(lhs):
    assert invert_target(engine.parse(lhs), "T", engine.Symbol("f")) is None


def test_residual_diagnostics_bounded_and_warning_free():
    y_true = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    y_pred = np.array([1.0, np.inf, 3.0, 3.0, 5.5])
    found = residual_diagnostics(y_true, y_pred, {"x": np.arange(5.0), "label": np.array(
        list("abcde"))}, max_samples=2, max_correlations=1)
    assert found["worst_samples"][0]["index"] == 1  # the failed prediction first
    assert len(found["worst_samples"]) == 2 and len(found["strongest_residual_correlations"]) <= 1
    assert set(found["worst_samples"][0]["row"]) == {"x"}


def test_pysr_expression_maps_feature_names():
    from srh_core.tools.formula import DataTerm

    inputs = [DataTerm("x1*x2", engine.parse("x1*x2"))]
    assert engine.to_str(pysr_expression("srhfeature0**2", inputs)) == "(x1*x2)**2"


def test_constant_fit_can_compare_with_the_formula_itself(make_context, run, shape):
    def sample(rng, n):
        return {"x": rng.uniform(-2, 2, n)}

    def truth(d):
        return d["x"] ** 3  # unrelated: the comparison is with eq itself

    context = make_context(sample, "y", truth)
    result = run("constant_fit", context, eq="3.14159*x**2", use_eq_as_y=True)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["parameters"]["compared_with"] == "3.14159*x**2"
    assert result.result["formula"] == "pi*x**2" and result.result["target"] == "y"


def test_tools_without_data_or_target_fail_clearly(run):
    from srh_core.context import AgentContext

    empty = AgentContext()
    assert "needs data" in run("evaluate_formula", empty, f="x").result_str
    no_target = AgentContext(data={"x": np.arange(5.0)})
    result = run("polynomial_fit", no_target)
    assert not result.ok and "No target is configured" in result.result_str


def test_the_scored_formula_is_written_for_reading():
    from srh_core import AgentContext, BaseTool

    rng = np.random.default_rng(0)
    n0, m, x, temperature = rng.uniform(1, 3, (4, 60))
    y = n0 * np.exp(-m * x / temperature)
    context = AgentContext(args={"validation_fraction": 0.0}, target="y", data={
        "n0": n0, "m": m, "x": x, "T": temperature, "y": y, "s": x - 2})
    run = BaseTool.create("evaluate_formula", context)
    result = run(f="exp(log(n0) - m*x*T**-1)")
    assert result.result["formula"] == "n0*exp(-m*x/T)"
    assert result.result["metrics"]["train"]["r2"] == 1.0
    assert run(f="exp(log(s) + x)").result["formula"] == "exp(log(s) + x)"  # s < 0 somewhere
