"""Separating a power-law factor from the rest of the target.

A scientist who fits ``|T| = c * prod x_i ** a_i`` and sees some exponents
land on clean numbers (1, -2, 1/2...) with tight intervals concludes that
those variables enter only through that monomial; the others (exponents
like 2.39 or 0.35, or variables that are not positive) enter some other way.
Dividing the target by the clean monomial leaves a *reduced target* that
depends on the rest only, which the policy then fits with few inputs.

Everything here reads a :class:`PowerLawReport` (text the power-law tool
wrote); nothing looks at data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from srh_core.api.offline.reader import ConversationView, Exponent, PowerLawReport

CLEAN_DENOMINATORS = (1, 2)
"""Denominators of the exponents taken as clean (x, x**2, sqrt(x), x**1.5)."""

MAX_CLEAN_WIDTH = 0.25
"""Widest 95% interval of an exponent still read as clean."""

MAX_THIRD_NUMERATOR = 2
"""Thirds taken as clean: +-1/3 and +-2/3 (cube roots and Kepler-like laws)."""

INTERVAL_SLACK = 0.002
"""A clean value this far outside the interval still counts (the interval is printed to
4 digits)."""

CLOSE_DISTANCE = 0.01
"""An estimate this close to a clean value is clean even outside its interval (jackknife
intervals of tight fits can be too narrow)."""

LOOSE_DISTANCE = 0.1
"""The loose reading takes an integer or half this close to a poorly fitted exponent."""

LOOSE_THIRD_DISTANCE = 0.04
"""... or a third this close."""


@dataclass(frozen=True, slots=True)
class Factorization:
    """``T = monomial * Z(rest)``: the clean monomial and the variables left in Z.

    Attributes:
        powers: Clean exponent of each factored variable (in feature order).
        rest: Variables left for the reduced target, in feature order.
        slopes: Fitted exponent of each rest variable (orientation hints), when known.
    """

    powers: tuple[tuple[str, Fraction], ...]
    rest: tuple[str, ...]
    slopes: tuple[tuple[str, float], ...]

    @property
    def monomial(self) -> str:
        """The monomial as formula text (``"1"`` when nothing is factored)."""
        return monomial_text(self.powers)

    def slope(self, name: str) -> float | None:
        return dict(self.slopes).get(name)


def clean_fraction(exponent: Exponent) -> Fraction | None:
    """The integer or half the interval holds (or the estimate nearly equals), or None.

    Thirds are left to the loose reading: a variable inside a sum or an exponential
    shows a tight interval around some p/3 too often to trust one.
    """
    if exponent.width > MAX_CLEAN_WIDTH or not math.isfinite(exponent.centre):
        return None
    for denominator in CLEAN_DENOMINATORS:
        fraction = Fraction(round(exponent.centre * denominator), denominator)
        inside = exponent.low - INTERVAL_SLACK <= fraction <= exponent.high + INTERVAL_SLACK
        if fraction != 0 and (inside or abs(float(fraction) - exponent.centre)
                              <= CLOSE_DISTANCE):
            return fraction
    return None


def near_fraction(exponent: Exponent) -> Fraction | None:
    """A looser reading for poorly fitted power laws: any interval width, but the fraction
    must lie in the interval and near its centre: an integer or half within
    LOOSE_DISTANCE, else a third (+-1/3, +-2/3) within LOOSE_THIRD_DISTANCE."""
    centre = exponent.centre
    if not math.isfinite(centre):
        return None
    half = Fraction(round(centre * 2), 2)
    third = Fraction(round(centre * 3), 3)
    for fraction, distance in ((half, LOOSE_DISTANCE), (third, LOOSE_THIRD_DISTANCE)):
        inside = exponent.low - INTERVAL_SLACK <= fraction <= exponent.high + INTERVAL_SLACK
        if fraction != 0 and inside and abs(float(fraction) - centre) <= distance \
                and (fraction.denominator != 3 or abs(fraction.numerator) <= MAX_THIRD_NUMERATOR):
            return fraction
    return None


def power_law_report(view: ConversationView) -> PowerLawReport | None:
    """The report of a power-law fit of the target (or of its magnitude), if seen."""
    if view.target is None:
        return None
    name = view.target.name
    for key in (name, f"abs({name})", f"-{name}"):
        if key in view.power_laws:
            return view.power_laws[key]
    return None


def factorize(view: ConversationView, loose: bool = False) -> Factorization | None:
    """Split the features into a clean monomial and the rest (None before any power law).

    Args:
        view: The conversation.
        loose: Read exponents with :func:`near_fraction` (a second hypothesis for
            targets whose power-law fit is poor, so every interval is wide).
    """
    report = power_law_report(view)
    if report is None:
        return None
    reading = near_fraction if loose else clean_fraction
    powers, rest, slopes = [], [], []
    for name in view.feature_names:
        exponent = report.exponents.get(name)
        fraction = reading(exponent) if exponent is not None else None
        if fraction is None:
            rest.append(name)
            if exponent is not None:
                slopes.append((name, exponent.value))
        else:
            powers.append((name, fraction))
    return Factorization(tuple(powers), tuple(rest), tuple(slopes))


def without_weakest(view: ConversationView, factorization: Factorization) -> Factorization | None:
    """The factorization minus its least certain clean variable (None with fewer than two).

    Certainty is how close the interval's centre (the free estimate) sits to the clean
    value, in half-widths: a variable inside a sum or a logarithm can land near a clean
    exponent by chance, but rarely right on it.
    """
    report = power_law_report(view)
    if report is None or len(factorization.powers) < 2:
        return None
    def offset(item: tuple[str, Fraction]) -> float:
        exponent = report.exponents[item[0]]
        return abs(exponent.centre - float(item[1])) / max(exponent.width / 2, 1e-12)
    weakest = max(factorization.powers, key=offset)[0]
    exponent = report.exponents[weakest]
    powers = tuple(item for item in factorization.powers if item[0] != weakest)
    rest = tuple(n for n in view.feature_names if n in factorization.rest or n == weakest)
    slopes = tuple(sorted((*factorization.slopes, (weakest, exponent.value)),
                          key=lambda item: view.feature_names.index(item[0])))
    return Factorization(powers, rest, slopes)


def hypotheses(view: ConversationView) -> list[Factorization]:
    """Distinct factorizations, most plausible first: strict, strict minus its weakest
    variable, loose, loose minus its weakest, and the whole target (nothing divided out)."""
    strict, loose = factorize(view), factorize(view, loose=True)
    found = [strict, without_weakest(view, strict) if strict else None, loose,
             without_weakest(view, loose) if loose else None, whole_target(view)]
    distinct: list[Factorization] = []
    for factorization in found:
        if factorization is not None and all(factorization.powers != other.powers
                                             for other in distinct):
            distinct.append(factorization)
    return distinct


def whole_target(view: ConversationView) -> Factorization:
    """The trivial factorization: nothing divided out, every fitted exponent a slope hint."""
    report = power_law_report(view)
    slopes = tuple((name, exponent.value) for name, exponent in report.exponents.items()) \
        if report is not None else ()
    return Factorization((), tuple(view.feature_names), slopes)


def power_text(name: str, exponent: Fraction) -> str:
    """``name`` raised to a positive fraction, written compactly."""
    if exponent == 1:
        return name
    if exponent == Fraction(1, 2):
        return f"sqrt({name})"
    if exponent.denominator == 1:
        return f"{name}**{exponent.numerator}"
    if exponent.denominator == 2:
        return f"{name}**{float(exponent)}"
    return f"{name}**({exponent.numerator}/{exponent.denominator})"


def monomial_text(powers: tuple[tuple[str, Fraction], ...]) -> str:
    """``a*b**2/(c*sqrt(d))``-style text of a product of powers (``"1"`` when empty)."""
    numerator = [power_text(n, e) for n, e in powers if e > 0]
    denominator = [power_text(n, -e) for n, e in powers if e < 0]
    top = "*".join(numerator) or "1"
    if not denominator:
        return top
    bottom = denominator[0] if len(denominator) == 1 else f"({'*'.join(denominator)})"
    return f"{top}/{bottom}"
