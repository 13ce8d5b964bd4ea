"""Structural constants: recognised when the data agree, refused when they do not."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from srh_engine import evaluate, param, parse, recognise_constants, structural_constants, to_str
from srh_engine.nodes import Symbol

RNG = np.random.default_rng(0)
DATA = {name: RNG.uniform(1.0, 5.0, 800) for name in ("q1", "epsilon", "r", "x")}


def evaluate_on_data(expression):
    return evaluate(expression, DATA)


def recognised(text: str, y) -> str:
    return to_str(recognise_constants(parse(text), y, evaluate_on_data))


def noisy(y, ratio: float, seed: int = 1):
    return y + np.random.default_rng(seed).normal(0.0, ratio * np.std(y), y.shape)


@pytest.mark.parametrize(("value", "ratio", "base", "power"), [
    (0.07957747154594767, Fraction(1, 4), "pi", -1),
    (0.3333333333333333, Fraction(1, 3), None, 0),
    (-0.7071067811865475, Fraction(-1), "sqrt(2)", -1),
    (0.3989422804014327, Fraction(1), "sqrt(2*pi)", -1),
    (19.739208802178716, Fraction(2), "pi", 2),
    (0.36787944117144233, Fraction(1), "e", -1),
], ids=["1/(4pi)", "1/3", "-1/sqrt(2)", "1/sqrt(2pi)", "2pi^2", "1/e"])
def test_the_nearest_structural_value_is_found(value, ratio, base, power):
    nearest = structural_constants(value)[0]
    assert (nearest.ratio, nearest.base, nearest.power) == (ratio, base, power)
    assert nearest.relative_error < 1e-12
    assert evaluate(nearest.expression(), {}) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("sign", [1, -1], ids=["positive", "negative"])
def test_every_structural_value_is_written_with_its_value(sign):
    """Each base and power of the set, both signs: the written expression has the value
    (a negative power of a named base was written ``(-pi)**2``, +pi**2, so ``-pi**2 + g*g``
    fitted as ``-9.8696 + g*g`` was never recognised)."""
    for value in (3 * np.pi**2 / 2, np.pi**2, 1 / np.pi**2, np.e**2, 1 / np.e**2, np.pi / 4,
                  np.sqrt(2), 1 / np.sqrt(2 * np.pi), 2 / 3):
        constant = structural_constants(sign * value)[0]
        assert evaluate(constant.expression(), {}) == pytest.approx(sign * value, rel=1e-15), (
            to_str(constant.expression()))


def test_a_negative_squared_constant_in_a_sum_is_recognised():
    g = DATA["x"] + 3.5
    truth = np.sqrt(g * g - np.pi**2)
    tree = parse("sqrt(-9.86960440108936 + x35*x35)")
    found = recognise_constants(tree, truth, lambda e: evaluate(e, {"x35": g}))
    assert to_str(found) == "sqrt(-pi**2 + x35*x35)"


def test_a_noise_fitted_number_has_no_structural_value():
    assert structural_constants(0.123457) == []
    assert structural_constants(0.6180339887) == []  # the golden ratio is not in the set
    assert structural_constants(0.5772156649) == []  # nor is Euler's gamma
    # 3/(20*pi) is not a plain ratio: a number 1e-4 from it is not near enough
    assert structural_constants(0.0477465)[0].ratio == Fraction(3, 20)
    assert structural_constants(0.04775) == []


@pytest.mark.parametrize(("fitted", "truth", "expected"), [
    ("0.07957747154594767*q1/epsilon/r**2", "q1/(4*pi*epsilon*r**2)", "q1/(4*pi*epsilon*r**2)"),
    ("-0.15915494309189535*x/r", "-x/(2*pi*r)", "-x/(2*pi*r)"),
    ("0.9999999999999998*x**0.6666666666666666 + 0.5000000000000002*r",
     "x**(2/3) + r/2", "x**(2/3) + r/2"),
    ("sin(0.7853981633974483*x)*1.5707963267948966", "sin(pi*x/4)*pi/2",
     "pi*sin(pi*x/4)/2"),
], ids=["coulomb", "negative", "exponent-and-sum", "inside-a-function"])
def test_exact_data_accept_structural_constants(fitted, truth, expected):
    assert recognised(fitted, evaluate_on_data(parse(truth))) == expected


def test_bound_parameters_count_as_numbers():
    y = evaluate_on_data(parse("x/3"))
    fitted = param("a", 0.33333333333333326) * Symbol("x")
    assert to_str(recognise_constants(fitted, y, evaluate_on_data)) == "x/3"


def test_noisy_data_accept_a_constant_within_the_noise():
    y = noisy(evaluate_on_data(parse("q1/(4*pi*epsilon*r**2)")), 0.01)
    assert recognised("0.0795703*q1/epsilon/r**2", y) == "q1/(4*pi*epsilon*r**2)"


def test_a_non_structural_constant_stays_numeric():
    y = noisy(evaluate_on_data(parse("0.123457*x + r")), 0.01)
    assert recognised("0.1234571*x + r", y) == "0.1234571*x + r"


def test_a_substitution_that_worsens_the_fit_is_refused():
    # 0.07958 is 3e-5 from 1/(4*pi): within reach, but exact data tell them apart
    y = evaluate_on_data(parse("0.07958*x"))
    assert recognised("0.079580001*x", y) == "0.079580001*x"
    # and so does 0.1% noise on 800 rows for 1/3 against 0.3343
    y = noisy(evaluate_on_data(parse("0.3343*x")), 0.001)
    assert recognised("0.33430002*x", y) == "0.33430002*x"


def test_typed_numbers_integers_and_named_constants_are_left_alone():
    y = evaluate_on_data(parse("0.0796*x + pi*r + 2*q1"))
    tree = parse("0.0796*x + pi*r + 2*q1")
    assert recognise_constants(tree, y, evaluate_on_data) is tree


def test_a_column_named_like_a_constant_blocks_that_base():
    data = {"e": DATA["x"], "x": DATA["r"]}
    tree = parse("0.36787944117144233*x + e", symbols={"e": Symbol("e")})
    y = evaluate(tree, data)
    result = recognise_constants(tree, y, lambda expression: evaluate(expression, data))
    assert result == tree  # 1/e would read back as 1/column e


def test_long_expansions_and_overflowing_formulas_are_left_alone():
    terms = " + ".join(f"0.3333333333333333*x**{k}" for k in range(1, 10))  # 9 numbers
    tree = parse(terms)
    assert recognise_constants(tree, evaluate_on_data(tree), evaluate_on_data) is tree
    huge = parse("0.3333333333333333*exp(x*200)")
    with np.errstate(over="ignore"):
        y = evaluate_on_data(huge)
    assert recognise_constants(huge, y, evaluate_on_data) is huge


def test_an_unevaluable_formula_is_returned_unchanged():
    tree = parse("0.3333333333333333*unknown")
    assert recognise_constants(tree, DATA["x"], evaluate_on_data) is tree
