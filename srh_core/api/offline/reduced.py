"""Moves on the reduced target: the target divided by its clean power-law factor.

With ``T = M * Z`` (see :mod:`srh_core.api.offline.factors`), every fit below
is of a simple function of ``Z`` over the variables ``Z`` depends on; the
formula tools solve the fitted equation for ``T`` again, so each exact fit
is an exact candidate for ``T``. The shapes are the ones physics keeps
producing:

- ``Z`` a polynomial of the rest (sums, differences, products);
- ``1/Z`` a polynomial (sums in a denominator, harmonic sums);
- ``Z**2`` or ``Z**-2`` a polynomial (square roots of sums of squares,
  ``1/sqrt(1 - v**2/c**2)``);
- ``log(Z)``, ``log(1 + Z)`` or ``log(1 + 1/Z)`` a power law (exponentials,
  ``exp(u) - 1``, ``1/(exp(u) - 1)``), ``exp(Z)`` a power law (logarithms);
- ``Z`` a polynomial of ``sin``/``cos`` of an angle-like variable (or of the
  difference of two angles) and the other variables;
- ``Z`` a ratio of polynomials, or a sparse sum of many monomials.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from srh_core.api.offline.factors import Factorization, power_text
from srh_core.api.offline.moves import (
    LIBRARY_BUDGET,
    STRONG_ANGLE,
    Move,
    angle_likeness,
    library_degree,
    oriented,
    single_signed,
)
from srh_core.api.offline.reader import ConversationView

SPARSE_BUDGET = 260
"""Most library terms of a sparse (sindy) fit of the reduced target."""

SPARSE_THRESHOLD = 0.02
"""Smallest share of the target a sparse fit keeps a term for."""

MAX_PHASE_REST = 3
"""Phases (products of two variables inside sin/cos) are tried when the rest is this small."""

SIGNED_SLOPE = 0.15
"""Orientation of the sparse fit: below this slope a variable enters both ways."""


@dataclass(frozen=True, slots=True)
class Reduced:
    """The texts of ``Z = T / M`` and ``1/Z = M / T`` for one factorization."""

    target: str
    numerator: tuple[str, ...]
    denominator: tuple[str, ...]

    @classmethod
    def of(cls, target: str, factorization: Factorization) -> Reduced:
        powers: tuple[tuple[str, Fraction], ...] = factorization.powers
        return cls(target, tuple(power_text(n, e) for n, e in powers if e > 0),
                   tuple(power_text(n, -e) for n, e in powers if e < 0))

    @property
    def trivial(self) -> bool:
        return not self.numerator and not self.denominator

    @property
    def z(self) -> str:
        return ratio_text((self.target, *self.denominator), self.numerator)

    @property
    def z_inverse(self) -> str:
        return ratio_text(self.numerator or ("1",), (self.target, *self.denominator))

    def power(self, exponent: int) -> str:
        """``Z**exponent`` as text (exponent in -2, -1, 1, 2)."""
        base = self.z if exponent > 0 else self.z_inverse
        if abs(exponent) == 1:
            return base
        simple = base.replace("_", "").isalnum()
        return f"{base}**{abs(exponent)}" if simple else f"({base})**{abs(exponent)}"


def ratio_text(top: tuple[str, ...], bottom: tuple[str, ...]) -> str:
    """``a*b/(c*d)`` (``a`` alone when ``bottom`` is empty)."""
    numerator = "*".join(top)
    if not bottom:
        return numerator
    denominator = bottom[0] if len(bottom) == 1 else f"({'*'.join(bottom)})"
    return f"{numerator}/{denominator}"


def reduced_moves(view: ConversationView, factorization: Factorization) -> list[Move]:
    """Every reduced-target move for this factorization (none when nothing is left)."""
    if not factorization.rest or view.target is None:
        return []
    reduced = Reduced.of(view.target.name, factorization)
    moves = polynomial_shapes(view, factorization, reduced)
    moves += exponential_shapes(view, factorization, reduced)
    moves += trig_shapes(view, factorization, reduced)
    moves += other_shapes(view, factorization, reduced)
    return moves


def _shift(reduced: Reduced) -> float:
    """Reduced moves rank a little higher when a factor was actually divided out."""
    return 0.0 if reduced.trivial else -0.3


def polynomial_shapes(view: ConversationView, factorization: Factorization,
                      reduced: Reduced) -> list[Move]:
    """Polynomials of Z, 1/Z, Z**2 and Z**-2 over the rest, each oriented for its power."""
    slopes = dict(factorization.slopes)
    what = "the rest" if reduced.trivial else f"what {reduced.z} leaves"
    shapes = ((1, 1.4, "a polynomial (sums, differences, products)"),
              (-1, 1.5, "a polynomial in a denominator (sums of inverses)"),
              (2, 1.5, "the square root of a polynomial (norms)"),
              (-2, 1.6, "one over the square root of a polynomial (relativistic)"))
    moves = []
    for power, tier, reason in shapes:
        inputs = oriented(view, factorization.rest, slopes, power)
        degree = library_degree(len(inputs), floor=2 if len(inputs) < 8 else 1)
        moves.append(Move("polynomial_fit", {"y": reduced.power(power), "x": inputs,
                                             "max_degree": degree},
                          tier + _shift(reduced), f"{what} may be {reason}"))
    return moves


def exponential_shapes(view: ConversationView, factorization: Factorization,
                       reduced: Reduced) -> list[Move]:
    """Power laws of log(Z), log(1 + Z), log(1 + 1/Z) and exp(Z) over the positive rest,
    and a polynomial of log(Z)."""
    positive = [n for n in factorization.rest if (f := view.feature(n)) is not None
                and f.positive]
    if not positive:
        return []
    z, z_inverse = reduced.z, reduced.z_inverse
    shapes = [(f"exp({z})", 1.9, "the logarithm of a product of powers")]
    moves = []
    if single_signed(view.target):
        shapes += [(f"log({z})", 1.6, "an exponential of a product of powers"),
                   (f"log(1 + {z})", 1.9, "exp(product of powers) - 1"),
                   (f"log(1 + {z_inverse})", 2.1, "1/(exp(product of powers) - 1)")]
        inputs = oriented(view, factorization.rest, {}, 1)  # both ways: exp(-x**2), exp(-1/x)
        moves.append(Move("polynomial_fit", {"y": f"log({z})", "x": inputs,
                                             "max_degree": min(2, library_degree(len(inputs)))},
                          2.0 + _shift(reduced), f"{z} may be the exponential of a polynomial"))
    return moves + [Move("power_law_fit", {"y": y, "x": positive, "snap_exponents": True},
                         tier + _shift(reduced), f"{z} may be {reason}")
                    for y, tier, reason in shapes]


def trig_shapes(view: ConversationView, factorization: Factorization,
                reduced: Reduced) -> list[Move]:
    """Polynomials in sin or cos of each angle-like rest variable (or of a phase, the
    product of an angle-like variable and another rest variable), and of angle differences."""
    slopes = dict(factorization.slopes)
    rest = list(factorization.rest)
    likeness = {n: angle_likeness(view, f) for n in rest if (f := view.feature(n)) is not None}
    angles = [n for n in rest if likeness.get(n)]
    moves = []
    for angle in angles:
        others = oriented(view, [n for n in rest if n != angle], slopes, 1)
        tier = 1.5 if likeness[angle] == STRONG_ANGLE else 2.3
        moves += _wave_moves(reduced, angle, others, tier, f"{angle} may enter through")
        if likeness[angle] == STRONG_ANGLE and len(rest) <= MAX_PHASE_REST:
            for partner in (n for n in rest if n != angle):
                left = oriented(view, [n for n in rest if n not in (angle, partner)], slopes, 1)
                moves += _wave_moves(reduced, f"{partner}*{angle}", left, 1.9,
                                     f"the phase {partner}*{angle} may enter through")
    for first, second in same_range_pairs(view, angles):
        difference = f"{first} - {second}"
        others = [n for n in rest if n not in (first, second)]
        moves.append(Move("rational_fit", {"y": reduced.z, "x": [f"cos({difference})", *others]},
                          2.2 + _shift(reduced),
                          f"two angles of one range may enter through cos({difference})"))
    return moves


def _wave_moves(reduced: Reduced, phase: str, others: list[str], tier: float,
                reason: str) -> list[Move]:
    """One polynomial fit with sin(phase), one with cos(phase): never both (sin**2 + cos**2
    = 1 would make the library degenerate and the exact fit needlessly long)."""
    moves = []
    for wave in ("sin", "cos"):
        inputs = [f"{wave}({phase})", *others]
        moves.append(Move("polynomial_fit", {"y": reduced.z, "x": inputs,
                                             "max_degree": library_degree(len(inputs))},
                          tier + _shift(reduced), f"{reason} {wave}"))
    return moves


def same_range_pairs(view: ConversationView, names: list[str]) -> list[tuple[str, str]]:
    """Pairs of the named variables that share their range (likely the same quantity)."""
    found = []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            a, b = view.feature(first), view.feature(second)
            if a is not None and b is not None and (a.low, a.high) == (b.low, b.high):
                found.append((first, second))
    return found


def other_shapes(view: ConversationView, factorization: Factorization,
                 reduced: Reduced) -> list[Move]:
    """A ratio of polynomials, and a sparse sum over a large monomial library."""
    rest = list(factorization.rest)
    moves = [Move("rational_fit", {"y": reduced.z, "x": rest}, 2.0 + _shift(reduced),
                  f"{reduced.z} may be a ratio of polynomials")]
    inputs = sparse_inputs(view, factorization)
    degree = library_degree(len(inputs), budget=SPARSE_BUDGET)
    if degree > library_degree(len(inputs), budget=LIBRARY_BUDGET):
        moves.append(Move("call_sindy", {"y": reduced.z, "x": inputs, "poly_degree": degree,
                                    "threshold": SPARSE_THRESHOLD}, 2.1 + _shift(reduced),
                          f"{reduced.z} may be a short sum of higher-degree monomials"))
    return moves


def sparse_inputs(view: ConversationView, factorization: Factorization) -> list[str]:
    """Rest variables oriented by the sign of their slope (both ways only when flat)."""
    inputs: list[str] = []
    for name in factorization.rest:
        feature, slope = view.feature(name), factorization.slope(name)
        if feature is None or not feature.positive or slope is None:
            inputs.append(name)
        elif abs(slope) < SIGNED_SLOPE:
            inputs += [name, f"1/{name}"]
        else:
            inputs.append(name if slope > 0 else f"1/{name}")
    return inputs
