"""Moves for targets one power law cannot hold: sums of power laws and exponentials of one.

When ``|T| = c * prod x_i ** a_i`` fits poorly (or the target changes sign, so
only its magnitude could be fitted), a physicist's next guesses are:

- a sum (or difference) of two power laws of different scaling,
  ``c1 * prod x_i ** a_i + c2 * prod x_i ** b_i``, with small rational
  exponents: the terms of an energy, a force balance, a dispersion relation;
- a power law times the exponential of another power law,
  ``C * prod x_i ** b_i * exp(c * prod x_i ** a_i)`` (Boltzmann factors,
  attenuation, Arrhenius): ``log(T)`` is then a constant plus logarithms of the
  variables plus one monomial;
- a power law times a logarithm of a ratio or of a power law,
  ``prod x_i ** a_i * log(prod x_j ** b_j)`` (entropies, Nernst, Coulomb logarithms):
  the monomial times a constant plus ``c_j * log(x_j)``;
- a power law times a low harmonic of an angle, ``prod x_i ** a_i * sin(theta)**2``
  (intensities, projections, torques): the monomial times a constant plus
  ``sin``, ``cos``, ``sin**2`` and ``sin*cos`` of the angle.

Both are ``monomial_sum_fit`` calls over the positive, non-angle variables.
"""

from __future__ import annotations

from srh_core.api.offline.factors import power_law_report
from srh_core.api.offline.moves import STRONG_ANGLE, Move, angle_likeness, positive_features
from srh_core.api.offline.reader import ConversationView

SUM_TIER = 1.7
"""Tier of the two-term fit: after the first reduced shapes (which solve most targets
cheaply), before the long shots."""

EXPONENTIAL_TIER = 1.8
"""Tier of the log-target fit (power law times the exponential of a power law)."""

LOGARITHM_TIER = 1.6
"""Tier of the power law times a sum of logarithms."""

ANGLE_TIER = 1.5
"""Tier of the power law times a harmonic of a variable that looks like an angle."""

WEAK_ANGLE_DELAY = 0.7
"""A variable that only may be an angle (non-monotonic target) waits this much more."""

BRANCH_DELAY = 0.6
"""Branches after the first make these fits this many tiers later: the fits do not depend
on the branch's hypothesis, so one branch runs them early and the others explore first."""

MIN_SUM_VARIABLES = 2
"""Fewest positive variables for a sum of two different power laws."""


def power_inputs(view: ConversationView) -> list[str]:
    """The positive variables that do not look like angles (power-law inputs)."""
    return [name for name in positive_features(view)
            if angle_likeness(view, view.feature(name)) < STRONG_ANGLE]


def power_law_failed(view: ConversationView) -> bool:
    """Whether the target's own power law was fitted and nothing is exact yet (its printed
    R2 is rounded: a sum dominated by one term shows R2 = 1 without being exact)."""
    return power_law_report(view) is not None and not view.exact(view.best)


def sum_moves(view: ConversationView) -> list[Move]:
    """The two-term, log-target and log-factor fits, once the power law of the target has
    failed."""
    if view.target is None or not power_law_failed(view):
        return []
    inputs = power_inputs(view)
    delay = BRANCH_DELAY if view.branch > 1 else 0.0
    x = {} if len(inputs) == len(view.features) else {"x": inputs}
    moves = []
    if len(inputs) >= MIN_SUM_VARIABLES:
        moves.append(Move("monomial_sum_fit", x | {"terms": 2}, SUM_TIER + delay,
                          "the target may be a sum of two power laws of different scaling"))
    if inputs:
        moves.append(Move("monomial_sum_fit", x | {"terms": 1, "log_factor": True},
                          LOGARITHM_TIER + delay,
                          "the target may be a power law times the log of a power law"))
    if inputs and (view.target.positive or view.target.negative):
        name = view.target.name
        y = f"log({name})" if view.target.positive else f"log(-{name})"
        moves.append(Move("monomial_sum_fit", x | {"y": y, "terms": 1, "log_terms": True},
                          EXPONENTIAL_TIER + delay,
                          "the target may be a power law times exp(power law)"))
    return moves + angle_moves(view, inputs, delay)


def harmonics(angle: str) -> list[str]:
    """The waves a monomial multiplies: every harmonic up to second order (``cos**2`` is
    ``1 - sin**2`` and ``cos(2*angle)`` a mix of the constant and ``sin**2``)."""
    return [f"sin({angle})", f"cos({angle})", f"sin({angle})**2",
            f"sin({angle})*cos({angle})"]


def angle_moves(view: ConversationView, inputs: list[str], delay: float) -> list[Move]:
    """A power law of the other positive variables times a harmonic of each angle-like one."""
    moves = []
    for feature in view.features:
        likeness = angle_likeness(view, feature)
        if not likeness or not [n for n in inputs if n != feature.name]:
            continue
        tier = ANGLE_TIER + delay + (0.0 if likeness == STRONG_ANGLE else WEAK_ANGLE_DELAY)
        x = [n for n in inputs if n != feature.name]
        moves.append(Move("monomial_sum_fit", {"x": x, "terms": 1,
                                               "factors": harmonics(feature.name)}, tier,
                          f"the target may be a power law times a harmonic of {feature.name}"))
    return moves
