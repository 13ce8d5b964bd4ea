"""The offline policy's portfolio: every move worth trying for a conversation, with its tier.

Tiers (lower is tried first; a seeded jitter mixes moves of nearby tiers):

- 0: the factor analysis, a power law of the target (of ``|T|`` when its sign
  changes) over the positive variables; every sample carries it until its
  result is in the conversation, because the rest of the plan reads its exponents;
- 0.4-0.5: snapping and refitting a nearly exact best formula;
- 1-1.3: blind fits that need no analysis (a quadratic, a quadratic of ``T**2``)
  and the one-variable relationships; after a poor power law, a sum of two power
  laws and a power law times exp(power law) (:mod:`srh_core.api.offline.sums`);
- 1.1-2.4: the shapes of the reduced target of each factorization hypothesis
  (:mod:`srh_core.api.offline.reduced`), later hypotheses delayed, and the
  refinements of almost-fitting power laws (:mod:`srh_core.api.offline.refine`);
- 2.3-3: long shots: ``sin(T)``/``cos(T)`` of a target inside a principal range,
  a ratio of polynomials of everything, refitting a poor best formula.
"""

from __future__ import annotations

import math
import re

from srh_core.api.offline.factors import hypotheses
from srh_core.api.offline.moves import (
    LIBRARY_BUDGET,
    STRONG_ANGLE,
    Move,
    angle_likeness,
    library_size,
    positive_features,
    single_signed,
)
from srh_core.api.offline.reader import ConversationView, FrontRow
from srh_core.api.offline.reduced import reduced_moves
from srh_core.api.offline.refine import offset_moves, prefactor_moves
from srh_core.api.offline.sums import sum_moves

NEAR_EXACT_RELATIVE_MSE = 1e-8
"""A best formula this close to the target is refined before anything else is explored."""

HYPOTHESIS_DELAY = 0.4
"""Shapes of each further factorization hypothesis wait this many tiers more."""

PRINCIPAL_SLACK = 1e-3
"""The prompt shows ranges to 4 digits: allow that much beyond pi/2 or pi."""

LONG_NUMBER = re.compile(r"\d+\.\d{4,}")
"""A fitted constant worth snapping."""


def factor_analysis(view: ConversationView) -> Move | None:
    """The power-law fit whose exponents the plan reads (None when no variable is positive).

    Variables that look like angles are left out: ``log|sin(theta)|`` has tails that only
    blur the other exponents, and an angle rarely enters as a power.
    """
    positive = [n for n in positive_features(view)
                if angle_likeness(view, view.feature(n)) < STRONG_ANGLE]
    if view.target is None or not positive:
        return None
    x = None if len(positive) == len(view.features) else positive
    if single_signed(view.target):
        params = {"snap_exponents": True} | ({"x": x} if x else {})
        return Move("power_law_fit", params, 0,
                    "a product of powers of the positive variables (read the exponents)")
    return Move("power_law_fit", {"y": f"abs({view.target.name})", "x": positive}, 0,
                "|target| as a product of powers: which variables enter as clean powers")


GUESS_TIER = -1
"""The user's guesses come before every other move."""


def guess_moves(view: ConversationView) -> list[Move]:
    """Evaluate each formula the user gave to start from, its constants fitted."""
    return [Move("evaluate_formula", {"f": guess, "fit": True}, GUESS_TIER,
                 "a formula given to start from, its constants fitted") for guess in view.guesses]


def pinned_moves(view: ConversationView) -> list[Move]:
    """Moves every sample carries: the factor analysis until its result is visible."""
    move = factor_analysis(view)
    return [move] if move is not None else []


def analysed(view: ConversationView) -> bool:
    """Whether the factor analysis is done (or impossible)."""
    move = factor_analysis(view)
    return move is None or move.signature in view.tried


def portfolio(view: ConversationView) -> list[Move]:
    """Every move worth trying for this conversation, with its tier."""
    if view.target is None:
        return [Move("statistics_analysis", {}, 0, "learn the variables first")]
    moves = (guess_moves(view) + opening(view) + blind_fits(view) + angle_target_fits(view)
             + refinements(view))
    if analysed(view):
        moves += hypothesis_moves(view) + sum_moves(view)
    return moves


def hypothesis_moves(view: ConversationView) -> list[Move]:
    """Reduced-target moves of every factorization hypothesis, later ones delayed.

    Branches split the hypotheses: branch b starts with hypothesis b (in the order of
    :func:`hypotheses`) and comes back to the others after it.
    """
    found = hypotheses(view)
    first = (view.branch - 1) % len(found)
    order = found[first:] + found[:first]
    moves = []
    for rank, factorization in enumerate(order):
        found = reduced_moves(view, factorization) + prefactor_moves(view, factorization)
        moves += _delayed(found, HYPOTHESIS_DELAY * rank)
    return moves + offset_moves(view)


def _delayed(moves: list[Move], delay: float) -> list[Move]:
    return [Move(m.tool, m.params, m.tier + delay, m.why) for m in moves]


def opening(view: ConversationView) -> list[Move]:
    if view.step > 1:
        return []
    return [Move("relationship_analysis", {}, 1.1, "which variables drive the target, and how")]


def blind_fits(view: ConversationView) -> list[Move]:
    """Fits that need no analysis: a quadratic, a quadratic of T**2, a ratio of polynomials."""
    name, n = view.target.name, len(view.features)
    moves = [Move("rational_fit", {}, 2.5, "a ratio of polynomials")]
    if library_size(n, 2) <= LIBRARY_BUDGET:
        moves.append(Move("polynomial_fit", {"max_degree": 2}, 1.0,
                          "additive structure, degree 2"))
        moves.append(Move("polynomial_fit", {"y": f"{name}**2", "max_degree": 2}, 1.3,
                          "the square of the target may be polynomial (square roots)"))
    return moves


def angle_target_fits(view: ConversationView) -> list[Move]:
    """A target inside a principal range may be an angle: fit its sine or cosine."""
    target, positive = view.target, positive_features(view)
    moves = []
    inverses = (("sin", -math.pi / 2, math.pi / 2), ("cos", 0.0, math.pi))
    for function, low, high in inverses:
        if target.low >= low - PRINCIPAL_SLACK and target.high <= high + PRINCIPAL_SLACK:
            y = f"{function}({target.name})"
            if positive:
                moves.append(Move("power_law_fit", {"y": y, "x": positive,
                                                    "snap_exponents": True}, 2.3,
                                  f"the target may be an angle: {y} a product of powers"))
            moves.append(Move("polynomial_fit", {"y": y, "max_degree": 2}, 2.8,
                              f"the target may be an angle: {y} a polynomial"))
    return moves


def refinements(view: ConversationView) -> list[Move]:
    """Snap and refit the constants of the best formula (first when it is nearly exact)."""
    best: FrontRow | None = view.best
    if best is None or best.truncated or view.exact(best):
        return []
    error = view.relative_error(best)
    near = error is not None and error <= NEAR_EXACT_RELATIVE_MSE
    moves = [Move("evaluate_formula", {"f": best.formula, "fit": True}, 0.5 if near else 3.0,
                  "refit every constant of the best formula jointly")]
    if LONG_NUMBER.search(best.formula):
        moves.append(Move("constant_fit", {"eq": best.formula}, 0.4 if near else 2.9,
                          "snap the best formula's constants"))
    return moves
