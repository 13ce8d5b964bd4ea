"""The dimension algebra, unit text, and dimensional consistency of expressions."""

from __future__ import annotations

from fractions import Fraction

import pytest

from srh_engine import DIMENSIONLESS, Dimension, UnitError, check_dimensions, parse, parse_units

ENERGY = Dimension.of(kg=1, m=2, s=-2)


@pytest.mark.parametrize(("text", "expected"), [
    ("kg*m^2/s^2", ENERGY),
    ("kg^1 * m^2 * s^(-2)", ENERGY),
    ("J", ENERGY),
    ("N m", ENERGY),
    ("N*m", ENERGY),
    ("eV", ENERGY),
    ("kg m**2 s**-2", ENERGY),
    ("m^1 * s^(-1)", Dimension.of(m=1, s=-1)),
    ("km/h", Dimension.of(m=1, s=-1)),
    ("s^-1", Dimension.of(s=-1)),
    ("Hz", Dimension.of(s=-1)),
    ("1/s", Dimension.of(s=-1)),
    ("m^(1/2)", Dimension.of(m=Fraction(1, 2))),
    ("(m/s)^(-3/2)", Dimension.of(m=Fraction(-3, 2), s=Fraction(3, 2))),
    ("1", DIMENSIONLESS),
    ("rad", DIMENSIONLESS),
    ("V/A", parse_units("Ohm")),
    ("ohm", parse_units("Ω")),
    ("C", Dimension.of(A=1, s=1)),
    ("F*V", parse_units("C")),
    ("Wb/m^2", parse_units("T")),
    ("H*A", parse_units("Wb")),
    ("W*s", ENERGY),
    ("Pa*m^3", ENERGY),
    ("mV", parse_units("V")),
    ("µs", Dimension.of(s=1)),
    ("mol*K*cd", Dimension.of(mol=1, K=1, cd=1)),
    ("((kg))", Dimension.of(kg=1)),
], ids=lambda value: value if isinstance(value, str) else None)
def test_parse_units(text: str, expected: Dimension) -> None:
    assert parse_units(text) == expected


def test_algebra() -> None:
    length, time = Dimension.of(m=1), Dimension.of(s=1)
    velocity = length / time
    assert velocity * time == length
    assert (velocity ** 2) * Dimension.of(kg=1) == ENERGY
    assert (length ** Fraction(1, 2)) ** 2 == length
    assert (velocity / velocity).dimensionless
    assert str(ENERGY) == "kg*m^2*s^-2" and str(DIMENSIONLESS) == "1"
    assert str(Dimension.of(m=Fraction(1, 2))) == "m^(1/2)"
    assert parse_units(str(Dimension.of(m=Fraction(-1, 3), A=2))) == \
        Dimension.of(m=Fraction(-1, 3), A=2)
    assert hash(parse_units("J")) == hash(ENERGY)
    with pytest.raises(ValueError, match="unknown base dimension"):
        Dimension.of(meter=1)


def test_symbols_read_a_name_differently() -> None:
    """AI Feynman's tables write temperature as T; SI reads T as a tesla."""
    assert parse_units("T") == Dimension.of(kg=1, s=-2, A=-1)
    assert parse_units("m^2 * T^(-1)", {"T": "K"}) == Dimension.of(m=2, K=-1)


@pytest.mark.parametrize(("text", "token"), [
    ("kg*foo", "foo"), ("m^", ""), ("m^(1/0)", "0"), ("2*m", "2"), ("m//s", "/"),
    ("(m", ""), ("m)", ")"), ("", ""), ("m^x", "x"), ("m$", "$"), ("m^999", "999"),
    ("__import__", "__import__"),
], ids=["unknown", "no-exponent", "zero-denominator", "number", "double-slash",
        "unclosed", "unopened", "empty", "name-exponent", "character", "huge", "dunder"])
def test_bad_units_name_the_token(text: str, token: str) -> None:
    with pytest.raises(UnitError) as raised:
        parse_units(text)
    assert raised.value.token == token
    assert "\n" not in str(raised.value) and repr(text) in str(raised.value)


def test_units_text_must_be_text() -> None:
    with pytest.raises(UnitError, match="must be text"):
        parse_units(3)  # type: ignore[arg-type]


def test_every_feynman_unit_parses() -> None:
    from srh_core.problems import load_suite

    suite = load_suite("feynman")
    count = 0
    for problem in suite.problems:
        units = problem.si_units()
        assert set(units) == {*problem.feature_names, problem.output}, problem.name
        count += len(units)
    assert count > 500
    # the Boltzmann constant over a temperature is an energy
    boltzmann = next(p for p in suite.problems if p.id == "I.39.22").si_units()
    assert parse_units(boltzmann["kb"]) * parse_units(boltzmann["T"]) == ENERGY


UNITS = {"x": "m", "y": "s", "v": "m/s", "t": "s", "q": "C"}


@pytest.mark.parametrize(("formula", "target", "consistent", "dimension"), [
    ("x/t + v", "m/s", True, "m*s^-1"),
    ("x + y", None, False, None),
    ("x - v*t", "m", True, "m"),
    ("2*x + y", None, True, "s"),  # 2 may carry s/m: constants are free
    ("c*x + y", "s", True, "s"),
    ("exp(x)", None, False, None),
    ("exp(x/(v*t))", "1", True, "1"),
    ("exp(-c*x)", "1", True, "1"),
    ("sin(x/(v*t))*x", "m", True, "m"),
    ("log(x)", None, False, None),
    ("x**2.37", None, False, None),
    ("x**c", None, False, None),
    ("x**0.5", "m^(1/2)", True, "m^(1/2)"),
    ("sqrt(x)*x**(1/2)", "m", True, "m"),
    ("x**(-1/3)", None, True, "m^(-1/3)"),
    ("(x/v)**2.37", None, False, None),
    ("(x/(v*t))**2.37", "1", True, "1"),
    ("x*x", "m", False, "m^2"),
    ("hypot(x, v*t)", "m", True, "m"),
    ("hypot(x, t)", None, False, None),
    ("abs(-x)/t", "m/s", True, "m*s^-1"),
    ("inv(t)", "Hz", True, "s^-1"),
    ("w + x", "m", True, "m"),  # w has no units: a wildcard
    ("3", "m", True, "1"),
    ("x*v/2", "m^2/s", True, "m^2*s^-1"),
    ("(c*x)**2.37", "1", True, "1"),
], ids=lambda value: value if isinstance(value, str) else None)
def test_consistency(formula: str, target: str | None, consistent: bool,
                     dimension: str | None) -> None:
    check = check_dimensions(parse(formula), UNITS, target)
    assert check.consistent is consistent, check.reason
    assert (str(check.dimension) if check.dimension is not None else None) == dimension
    assert bool(check.reason) is not consistent


def test_reasons_name_the_subformula() -> None:
    assert check_dimensions(parse("x + y"), UNITS).reason == "x + y combines x in m with y in s"
    assert "exp() needs a dimensionless argument; x is in m" in \
        check_dimensions(parse("1 + exp(x)"), UNITS).reason
    wrong = check_dimensions(parse("x*x"), UNITS, "m")
    assert wrong.reason == "the formula is in m^2, the target in m"
    assert wrong.to_dict(parse_units("m")) == {
        "consistent": False, "dimension": "m^2", "target_dimension": "m",
        "reason": "the formula is in m^2, the target in m", "constant_units": None}


def test_a_free_constant_carries_what_the_target_needs() -> None:
    scaled = check_dimensions(parse("8.99e9*q*q/x**2"), UNITS, "N")
    assert scaled.consistent and scaled.free
    assert str(scaled.dimension) == "m^-2*s^2*A^2"
    assert scaled.constant_units == parse_units("N*m^2/C^2")
    exact = check_dimensions(parse("x/t"), UNITS, "m/s")
    assert exact.consistent and not exact.free and exact.constant_units is None


def test_bad_units_in_a_check_raise() -> None:
    with pytest.raises(UnitError, match="furlong"):
        check_dimensions(parse("x"), {"x": "furlong"})
