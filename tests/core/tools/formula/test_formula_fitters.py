"""Each fitting tool recovers its textbook formula exactly, with and without validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import srh_engine as engine


def uniform(**ranges: tuple[float, float]):
    def sample(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        return {name: rng.uniform(low, high, n) for name, (low, high) in ranges.items()}

    return sample


def approx(value: float) -> object:
    return pytest.approx(value, abs=1e-9)


def exponents_of(formula: str) -> dict[str, float]:
    """Exponent of each symbol in a monomial-like formula, by numeric differentiation in log."""
    expression = engine.parse(formula)
    names = engine.symbols(expression)
    point = {name: 1.7 for name in names}
    base = math.log(abs(engine.evaluate(expression, point)))
    found = {}
    for name in names:
        moved = dict(point, **{name: 1.7 * math.e})
        found[name] = math.log(abs(engine.evaluate(expression, moved))) - base
    return found


def test_polynomial_fit_recovers_interaction_polynomial(make_context, run, shape, assert_exact):
    sample = uniform(x1=(-2, 2), x2=(-2, 2))

    def truth(d):
        return 1 + 2 * d["x1"] * d["x2"] - 0.5 * d["x2"] ** 2

    context = make_context(sample, "y", truth)
    result = run("polynomial_fit", context)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["is_candidate"]
    assert result.result["parameters"]["n_terms_kept"] == 3  # x1, x2, x1**2 pruned
    assert_exact(result.result, sample, truth)


def test_power_law_fit_recovers_gravity_with_snapped_exponents(make_context, run, shape,
                                                                assert_exact):
    sample = uniform(m1=(1, 5), m2=(1, 5), r=(0.5, 3))

    def truth(d):
        return 6.674 * d["m1"] * d["m2"] / d["r"] ** 2

    context = make_context(sample, "F", truth)
    result = run("power_law_fit", context, x=["m1", "m2", "r"], snap_exponents=True)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["parameters"]["exponents"] == {"m1": 1.0, "m2": 1.0, "r": -2.0}
    assert exponents_of(result.result["formula"]) == {
        "m1": approx(1), "m2": approx(1), "r": approx(-2)}
    assert_exact(result.result, sample, truth)


def test_power_law_fit_negative_target_is_negated(make_context, run, shape, assert_exact):
    sample = uniform(a=(1, 3), b=(1, 3))

    def truth(d):
        return -2.5 * d["a"] ** 0.5 / d["b"]

    context = make_context(sample, "y", truth)
    result = run("power_law_fit", context, snap_exponents=True)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["parameters"]["scale"] < 0
    assert_exact(result.result, sample, truth)


def test_rational_fit_recovers_resonance(make_context, run, shape, assert_exact):
    sample = uniform(x=(-3, 3))

    def truth(d):
        return d["x"] / (1 + d["x"] ** 2)

    context = make_context(sample, "y", truth)
    result = run("rational_fit", context, numerator_degree=1, denominator_degree=2, top_k=3)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["parameters"]["degrees"] == [1, 2]
    assert len(result.result["all_formulas"]) == 2
    assert_exact(result.result, sample, truth)


def test_sindy_recovers_sparse_cubic(make_context, run, shape, assert_exact):
    sample = uniform(x1=(-2, 2), x2=(-2, 2), x3=(-2, 2))

    def truth(d):
        return 1.5 * d["x1"] ** 3 - 2 * d["x1"] * d["x2"] + 0.8 * d["x3"] + 1

    context = make_context(sample, "y", truth)
    result = run("call_sindy", context, poly_degree=3)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert len(result.result["parameters"]["coefficients"]) == 4
    assert_exact(result.result, sample, truth)


def test_sindy_with_trig_library(make_context, run, shape, assert_exact):
    sample = uniform(x1=(-2, 2), x2=(-2, 2))

    def truth(d):
        return 2 * np.sin(d["x1"]) + d["x2"] ** 2

    context = make_context(sample, "y", truth)
    result = run("call_sindy", context, include_trig=True, poly_degree=2)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert_exact(result.result, sample, truth)


def test_harmonic_fit_recovers_modulated_sine(make_context, run, shape, assert_exact):
    sample = uniform(x=(-2, 2), t=(0, 10))

    def truth(d):
        return d["x"] * np.sin(3.1 * d["t"])

    context = make_context(sample, "y", truth)
    result = run("harmonic_interaction_fit", context, carrier="x", oscillator="t")
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["parameters"]["frequency"] == approx(3.1)
    assert_exact(result.result, sample, truth)


def test_harmonic_fit_recovers_phase_and_bias(make_context, run, shape, assert_exact):
    sample = uniform(x=(-2, 2), t=(0, 10))

    def truth(d):
        return d["x"] ** 2 * np.cos(1.7 * d["t"] + 0.4) + 0.3

    context = make_context(sample, "y", truth)
    result = run("harmonic_interaction_fit", context, carrier="x", oscillator="t",
                 include_bias=True)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert_exact(result.result, sample, truth, rtol=1e-9)


def test_transformed_target_is_back_transformed_to_a_candidate(make_context, run, shape,
                                                                assert_exact):
    sample = uniform(a=(1, 3), b=(1, 3))

    def truth(d):
        return np.exp(0.5 * d["a"] - 1.5 * d["b"] + 0.25)

    context = make_context(sample, "T", truth)
    result = run("polynomial_fit", context, y="log(T)", max_degree=1)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert not result.result["is_candidate"] and result.result["target"] == "log(T)"
    (back,) = result.result["all_formulas"]
    assert back["is_candidate"] and back["target"] == "T"
    assert engine.parse(back["formula"]).name == "exp"
    assert_exact(back, sample, truth)


def test_power_law_snapping_is_rejected_when_it_degrades_the_fit(make_context, run, shape):
    sample = uniform(a=(1, 10))

    def truth(d):
        return 3.0 * d["a"] ** 0.56

    context = make_context(sample, "y", truth)
    result = run("power_law_fit", context, snap_exponents=True, snap_tolerance=0.1,
                 max_snap_rmse_degradation=0.001)
    assert result.ok, result.result_str
    shape(result.result, context)
    snapping = result.result["parameters"]["snapping"]
    assert not snapping["accepted"] and snapping["snapped"] == {}
    assert result.result["parameters"]["exponents"]["a"] == approx(0.56)
    assert "rejected" in result.result_str


def test_power_law_reports_exponent_intervals(make_context, run):
    sample = uniform(a=(1, 3), b=(1, 3))

    def truth(d):
        return d["a"] ** 1.5 * d["b"] * (1 + 0.01 * np.sin(40 * d["a"]))

    context = make_context(sample, "y", truth)
    result = run("power_law_fit", context, n_stability_folds=4)
    assert result.ok, result.result_str
    low, high = result.result["parameters"]["exponent_intervals"]["a"]
    assert low < result.result["parameters"]["exponents"]["a"] < high
    assert "95% interval" in result.result_str


@pytest.mark.parametrize(("arguments", "absent"), [
    ({"interaction_blacklist": [["x1", "x2"]]}, {"x1*x2"}),
    ({"interaction_whitelist": [["x1", "x3"]]}, {"x1*x2", "x2*x3"}),
    ({"include_interactions": False}, {"x1*x2", "x1*x3", "x2*x3"}),
], ids=["blacklist", "whitelist", "no-interactions"])
def test_polynomial_interaction_lists(arguments, absent, make_context, run, shape):
    sample = uniform(x1=(-2, 2), x2=(-2, 2), x3=(-2, 2))

    def truth(d):
        return d["x1"] * d["x2"] + d["x1"] * d["x3"] + d["x2"] ** 2

    context = make_context(sample, "y", truth)
    result = run("polynomial_fit", context, **arguments)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert not absent & set(result.result["parameters"]["coefficients"])


def test_polynomial_fit_of_an_expression_input(make_context, run, shape, assert_exact):
    sample = uniform(x1=(-2, 2), x2=(-2, 2))

    def truth(d):
        return 3 * np.sin(d["x1"] * d["x2"]) - 1

    context = make_context(sample, "y", truth)
    result = run("polynomial_fit", context, x=["sin(x1*x2)"], max_degree=1)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["is_candidate"]
    assert_exact(result.result, sample, truth)
