"""Moves of the offline policy and the helpers that write their arguments.

A move is one tool call with a tier (lower is tried first) and the reason a
scientist would give for it. Helpers here write the inputs of a fit: which
variables, in which orientation (``v`` or ``1/v``), up to which degree, so
that every library stays small enough to fit, score and show quickly.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from srh_core.api.offline.reader import ConversationView, Variable, call_signature

LIBRARY_BUDGET = 70
"""Most monomials of a polynomial fit: bigger inexact fits give long formulas that are slow
to key, rank and show and never are the answer."""

MAX_POLY_DEGREE = 5
"""Highest degree the policy asks a polynomial fit for."""

AMBIGUOUS_SLOPE = 0.5
"""A variable whose (transformed) log-log slope is smaller than this enters both as v and 1/v."""

ZERO_START_FRACTION = 0.02
"""A range whose low end is below this share of its width starts at zero (the prompt shows
the sampled minimum, a hair above a true zero)."""

STRONG_ANGLE = 2
"""Angle-likeness of a variable named like an angle or spanning radians from zero."""

MIN_ANGLE_SPAN = 1.5
"""Fewest radians a zero-based range must span to look like an angle."""

ANGLE_NAME_HINTS = ("theta", "phi", "psi", "angle")
"""Names that say a variable is an angle (whole names, up to an index suffix)."""

_INDEX_SUFFIX = re.compile(r"_?[0-9]*$")

MAX_ANGLE = 2 * math.pi + 0.5
"""Largest upper bound of a variable that may be an angle in radians."""


@dataclass(frozen=True, slots=True)
class Move:
    """One tool call the policy may make."""

    tool: str
    params: dict[str, Any] = field(hash=False)
    tier: float
    why: str

    @property
    def signature(self) -> str:
        return call_signature(self.tool, self.params)


def library_size(n_inputs: int, degree: int) -> int:
    """Monomials of ``n_inputs`` variables up to ``degree`` (constant included)."""
    return math.comb(n_inputs + degree, degree)


def library_degree(n_inputs: int, budget: int = LIBRARY_BUDGET, floor: int = 1) -> int:
    """The highest degree (<= MAX_POLY_DEGREE) whose library fits the budget; at least ``floor``."""
    degree = floor
    while degree < MAX_POLY_DEGREE and library_size(n_inputs, degree + 1) <= budget:
        degree += 1
    return degree


def oriented(view: ConversationView, names: list[str] | tuple[str, ...], slopes: dict[str, float],
             power: float) -> list[str]:
    """Inputs for a fit of ``Z**power``: ``v`` when it grows it, ``1/v`` when it shrinks it.

    A positive variable whose slope is unknown or small enters both ways.
    """
    inputs: list[str] = []
    for name in names:
        feature = view.feature(name)
        slope = slopes.get(name)
        if feature is None or not feature.positive:
            inputs.append(name)
            continue
        effective = None if slope is None else slope * power
        if effective is None or abs(effective) < AMBIGUOUS_SLOPE:
            inputs += [name, f"1/{name}"]
        else:
            inputs.append(name if effective > 0 else f"1/{name}")
    return inputs


def angle_likeness(view: ConversationView, variable: Variable) -> int:
    """How much ``variable`` looks like an angle in radians: 2 when it is named like one or
    its range starts at zero, 1 when the target is not monotonic in it, else 0."""
    if variable.high > MAX_ANGLE or variable.low < -MAX_ANGLE:
        return 0
    stem = _INDEX_SUFFIX.sub("", variable.name.lower())  # theta1, phi_0 -> theta, phi
    if stem in ANGLE_NAME_HINTS or spans_radians(variable):
        return STRONG_ANGLE
    relation = view.relations.get(variable.name)
    return 1 if relation is not None and relation.trend == "non_monotonic" else 0


def starts_at_zero(variable: Variable) -> bool:
    """Whether the range starts at (or within a hair of) zero: sampled from [0, high]."""
    return 0 <= variable.low <= ZERO_START_FRACTION * (variable.high - variable.low)


def spans_radians(variable: Variable) -> bool:
    """A range from zero over at least MIN_ANGLE_SPAN radians: a full-cycle-like angle."""
    return starts_at_zero(variable) and variable.high - variable.low >= MIN_ANGLE_SPAN


def single_signed(variable: Variable) -> bool:
    return variable.positive or variable.negative


def positive_features(view: ConversationView) -> list[str]:
    return [f.name for f in view.features if f.positive]
