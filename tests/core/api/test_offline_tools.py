"""Tool behaviour the offline policy relies on: back-transforms, unit factors, pi snapping."""

from __future__ import annotations

import math

import numpy as np
import pytest

import srh_engine as engine
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.tools.constants import nearby_choices
from srh_core.tools.formula import formula_text
from srh_core.tools.inversion import invert_target


def context(target: str, truth, size: int = 400, **ranges: tuple[float, float]
            ) -> AgentContext:
    rng = np.random.default_rng(0)
    data = {name: rng.uniform(lo, hi, size) for name, (lo, hi) in ranges.items()}
    data[target] = np.asarray(truth(data), dtype=float)
    return AgentContext(args={"validation_fraction": 0.25}, data=data, target=target)


def candidates(result) -> list[dict]:
    entries = [result.result, *result.result.get("all_formulas", [])]
    return [entry for entry in entries if entry.get("is_candidate")]


@pytest.mark.parametrize(("lhs", "data", "expected"), [
    ("sin(T)", {"T": np.linspace(-1.5, 1.5, 9)}, "arcsin(f)"),
    ("cos(T/x)", {"T": np.linspace(0.1, 3.0, 9), "x": np.ones(9)}, "arccos(f)*x"),
    ("T**2", {"T": -np.linspace(0.5, 2.0, 9)}, "-sqrt(f)"),
    ("(T/x)**-2", {"T": np.linspace(0.5, 2.0, 9), "x": np.ones(9)}, "f**(-1/2)*x"),
    ("abs(T)", {"T": -np.linspace(0.5, 2.0, 9)}, "-f"),
], ids=["arcsin", "arccos", "negative-root", "inverse-square", "abs-negative"])
def test_inversions_that_depend_on_the_data(lhs, data, expected):
    solved = invert_target(engine.parse(lhs), "T", engine.Symbol("f"), data)
    point = {"f": 0.4, "x": 1.7}
    assert solved is not None
    assert engine.evaluate(solved, point) == pytest.approx(engine.evaluate(
        engine.parse(expected), point))


@pytest.mark.parametrize(("lhs", "data"), [
    ("sin(T)", {"T": np.linspace(0.0, 2.0, 9)}),       # beyond pi/2: not the principal branch
    ("cos(T)", {"T": np.linspace(-1.0, 1.0, 9)}),      # below 0
    ("sin(T)", None),                                  # no data: never assumed
    ("abs(T)", {"T": np.linspace(-1.0, 1.0, 9)}),      # mixed signs
], ids=["sin-out-of-range", "cos-out-of-range", "sin-without-data", "abs-mixed"])
def test_inversions_refused_outside_the_principal_range(lhs, data):
    assert invert_target(engine.parse(lhs), "T", engine.Symbol("f"), data) is None


def test_square_of_a_negative_target_back_transforms_with_its_sign():
    found = context("T", lambda d: -np.sqrt(d["a"] + d["b"] ** 2), a=(1, 3), b=(1, 3))
    result = BaseTool.create("polynomial_fit", found)(y="T**2", max_degree=2)
    assert result.ok, result.result_str
    assert any(c["metrics"]["train"]["mse"] < 1e-20 for c in candidates(result))


def test_power_law_of_the_sine_of_an_angle_target_gives_the_angle():
    found = context("theta", lambda d: np.arcsin(d["lam"] / (d["n"] * d["d"])),
                    lam=(1, 2), n=(1, 5), d=(2, 5))
    result = BaseTool.create("power_law_fit", found)(y="sin(theta)", snap_exponents=True)
    assert result.ok, result.result_str
    (candidate,) = candidates(result)
    assert candidate["formula"].startswith("arcsin(")
    assert candidate["metrics"]["train"]["mse"] < 1e-20


@pytest.mark.parametrize(("text", "expected"), [
    ("1*x1*y1 + 1*x2*y2", "x1*y1 + x2*y2"), ("exp(-1*m*x/T)*n", "exp(-m*x/T)*n"),
    ("2*sin(1*theta)/1", "2*sin(theta)"), ("x**1*(-1)", "-x"), ("a - -1*b", "a - (-b)"),
], ids=["ones", "minus-one", "inner-and-divisor", "power-and-negation", "double-negation"])
def test_formula_text_drops_unit_factors_and_keeps_the_value(text, expected):
    original = engine.parse(text)
    tidy = formula_text(original)
    assert tidy == expected
    point = {name: 1.3 + i for i, name in enumerate(engine.symbols(original))}
    assert engine.evaluate(engine.parse(tidy), point) == engine.evaluate(original, point)
    assert engine.complexity(engine.parse(tidy)) < engine.complexity(original)


@pytest.mark.parametrize(("value", "label"), [
    (1 / (4 * math.pi), "1/(4*pi)"), (3 / (20 * math.pi), "3/(20*pi)"),
    (3 / (8 * math.pi), "3/(8*pi)"), (4 * math.pi, "4*pi"), (2 * math.pi ** 2, "2*pi**2"),
    (1 / math.sqrt(2 * math.pi), "1/sqrt(2*pi)"), (-math.pi / 2, "-pi/2"),
], ids=["1/4pi", "3/20pi", "3/8pi", "4pi", "2pi2", "gaussian", "minus-half-pi"])
def test_constant_choices_include_rational_multiples_of_pi_powers(value, label):
    choices = nearby_choices(value * (1 + 3e-9))
    assert choices[0].label == label
    assert engine.evaluate(choices[0].expression, {}) == pytest.approx(value, rel=1e-15)


def test_constant_fit_snaps_a_pi_multiple_and_writes_no_unit_factor():
    found = context("E", lambda d: d["q"] ** 2 / (4 * math.pi * d["eps"] * d["r"]),
                    q=(1, 5), eps=(1, 5), r=(1, 5))
    eq = f"{1 / (4 * math.pi) * (1 + 1e-10)!r}*q**2/eps/r*1.0000000003"
    result = BaseTool.create("constant_fit", found)(eq=eq)
    assert result.ok, result.result_str
    assert result.result["formula"] == "q**2/(4*pi*eps*r)"
    assert result.result["metrics"]["train"]["mse"] < 1e-25


def test_formula_text_writes_exactly_integral_numbers_as_ints():
    tree = engine.parse('param("a", 1.0) - x*param("b", 2.0) + 1.5*sin(3.0*x) + 0.9999999')
    assert formula_text(tree) == "1 - x*2 + 1.5*sin(3*x) + 0.9999999"
    unit = engine.parse('param("a", 1.0)*x/param("b", 1.0)')
    assert formula_text(unit) == "x"
