"""The offline proposer's policy: which tool calls to make next.

A deterministic, rule-based stand-in for a language model. It builds a
portfolio of moves from what the conversation shows (variable signs and
ranges, relationship facts, the branch's Pareto front, its own earlier
calls), orders them by tier with a seeded shuffle inside each tier, and
hands each of the K samples a different slice, so K samples (and C branches,
whose seeds differ) explore different moves.

Tiers, in order:

0. open with ``statistics_analysis`` and ``relationship_analysis`` (step 1);
1. direct fits: a snapped power law when signs allow it, polynomials;
2. transformed targets (squares, logarithms, reciprocals, log-ratios) whose
   fits the tools back-transform into candidates, and rational fits;
3. trigonometric structure: polynomial fits over sin/cos features of
   angle-like variables, harmonic fits, SINDy with trig terms;
4. multiplicative corrections: polynomial fits of the target times or over
   one variable;

plus refinement of the best formula (``constant_fit`` to snap constants,
``evaluate`` with ``fit=True``) and, once a formula fits exactly or at the
last step, ``submit_formula``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from srh_core.api.offline.reader import ConversationView, FrontRow, Variable, call_signature

MOVES_PER_SAMPLE = 3
TIER_JITTER = 0.75
_LONG_NUMBER = re.compile(r"\d+\.\d{4,}")
ANGLE_MIN_WIDTH = 1.5


@dataclass(frozen=True, slots=True)
class Move:
    tool: str
    params: dict[str, Any] = field(hash=False)
    tier: float
    why: str

    @property
    def signature(self) -> str:
        return call_signature(self.tool, self.params)


@dataclass(frozen=True, slots=True)
class Proposal:
    """One sample's response: a short explanation and its calls."""

    text: str
    moves: tuple[Move, ...]


def propose(view: ConversationView, sample: int, rng: np.random.Generator) -> Proposal:
    """The response of sample ``sample`` (one-based) for this conversation."""
    finishing = closing_moves(view)
    if finishing:
        chosen = tuple(finishing[:MOVES_PER_SAMPLE])
        return Proposal(_explain(view, chosen, "the best formula fits exactly"), chosen)
    ordered = _ordered(_fresh(view, portfolio(view)), rng)
    start = (sample - 1) * MOVES_PER_SAMPLE
    chosen = tuple(ordered[start:start + MOVES_PER_SAMPLE] or ordered[:MOVES_PER_SAMPLE])
    if view.final_step:
        chosen = tuple(submit_best(view)) or chosen
    return Proposal(_explain(view, chosen, "exploring"), chosen)


def _fresh(view: ConversationView, moves: Iterable[Move]) -> list[Move]:
    seen, fresh = set(view.tried), []
    for move in moves:
        if move.signature not in seen:
            seen.add(move.signature)
            fresh.append(move)
    return fresh


def _ordered(moves: list[Move], rng: np.random.Generator) -> list[Move]:
    keys = [move.tier + TIER_JITTER * rng.random() for move in moves]
    return [move for _, move in sorted(zip(keys, moves, strict=True), key=lambda kv: kv[0])]


def _explain(view: ConversationView, moves: tuple[Move, ...], mode: str) -> str:
    lines = [f"[offline policy] Rule-based proposer, no language model (step {view.step} of "
             f"{view.max_steps}, {mode})."]
    lines += [f"- {move.tool}: {move.why}" for move in moves]
    if not moves:
        lines.append("- nothing new to try; keeping the current best formula.")
    return "\n".join(lines)


# ------------------------------------------------------------------ closing
def closing_moves(view: ConversationView) -> list[Move]:
    """Snap constants of an exact formula, then submit it."""
    exact = [row for row in view.front if view.exact(row)]
    if not exact:
        return []
    row = min(exact, key=lambda r: (r.complexity, r.train_mse or 0.0))
    moves = []
    if _LONG_NUMBER.search(row.formula):
        moves.append(Move("constant_fit", {"eq": row.formula}, 0,
                          "snap the fitted constants of the exact formula"))
    if row.formula not in view.submitted:
        moves.append(Move("submit_formula", {"f": row.formula}, 0,
                          "submit the simplest exact formula"))
    return _fresh(view, moves)


def submit_best(view: ConversationView) -> list[Move]:
    best = view.best
    if best is None or best.formula in view.submitted:
        return []
    return _fresh(view, [Move("submit_formula", {"f": best.formula}, 0,
                              "final step: submit the best formula so far")])


# ---------------------------------------------------------------- portfolio
def portfolio(view: ConversationView) -> list[Move]:
    """Every move worth trying for this conversation, with its tier."""
    if view.target is None:
        return [Move("statistics_analysis", {}, 0, "learn the variables first")]
    moves = opening(view) + direct_fits(view) + transformed_fits(view)
    moves += trig_fits(view) + multiplicative_fits(view) + refinements(view)
    return moves


def opening(view: ConversationView) -> list[Move]:
    if view.step > 1:
        return []
    return [Move("statistics_analysis", {}, 0, "signs, ranges and scales of every variable"),
            Move("relationship_analysis", {}, 0, "which variables drive the target, and how")]


def _signed(variable: Variable) -> bool:
    return variable.positive or variable.negative


def direct_fits(view: ConversationView) -> list[Move]:
    target = view.target
    moves = []
    if _signed(target) and all(f.positive for f in view.features):
        moves.append(Move("power_law_fit", {"snap_exponents": True}, 1,
                          "all variables are single-signed: try a product of powers"))
    moves.append(Move("polynomial_fit", {"max_degree": 2}, 1.2, "additive structure, degree 2"))
    moves.append(Move("polynomial_fit", {"max_degree": 3}, 1.6, "additive structure, degree 3"))
    return moves


def transformed_fits(view: ConversationView) -> list[Move]:
    name, target = view.target.name, view.target
    moves = [Move("polynomial_fit", {"y": f"{name}**2", "max_degree": 2}, 2,
                  "the square of the target may be polynomial (square roots)")]
    if target.positive:
        moves.append(Move("polynomial_fit", {"y": f"log({name})", "max_degree": 2}, 2,
                          "the logarithm may be polynomial (exponentials)"))
    if _signed(target):
        moves.append(Move("polynomial_fit", {"y": f"1/{name}", "max_degree": 2}, 2.2,
                          "the reciprocal may be polynomial (sums in a denominator)"))
        moves.append(Move("polynomial_fit", {"y": f"{name}**(-2)", "max_degree": 2}, 2.5,
                          "the inverse square may be polynomial"))
    if target.positive and all(f.positive for f in view.features):
        for feature in view.features:
            moves.append(Move("power_law_fit", {"y": f"log({name}/{feature.name})",
                                                "snap_exponents": True}, 2.6,
                              f"{name} may be {feature.name} times an exponential"))
    moves.append(Move("rational_fit", {}, 2.4, "a ratio of polynomials"))
    return moves


def angle_like(view: ConversationView) -> list[Variable]:
    """Variables that may sit inside sin/cos: non-monotonic, or wide in radians."""
    chosen = []
    for feature in view.features:
        relation = view.relations.get(feature.name)
        wide = feature.high - feature.low >= ANGLE_MIN_WIDTH
        if (relation is not None and relation.trend == "non_monotonic") or wide:
            chosen.append(feature)
    return chosen


def trig_fits(view: ConversationView) -> list[Move]:
    moves = []
    for angle in angle_like(view):
        others = [f.name for f in view.features if f.name != angle.name]
        for trig in ("sin", "cos"):
            moves.append(Move("polynomial_fit",
                              {"x": [*others, f"{trig}({angle.name})"], "max_degree": 3}, 3,
                              f"{angle.name} may enter through {trig}"))
        if others:
            moves.append(Move("harmonic_interaction_fit",
                              {"carrier": _carrier(view, others), "oscillator": angle.name}, 3.3,
                              f"an oscillation in {angle.name} scaled by the other variables"))
    moves.append(Move("sindy", {"include_trig": True}, 3.6, "sparse terms incl. sin/cos"))
    moves.append(Move("sindy", {"poly_degree": 3}, 3.4, "sparse polynomial terms"))
    return moves


def _carrier(view: ConversationView, names: list[str]) -> str:
    """A product of the other variables, each raised to the sign of its log-log slope."""
    numerator, denominator = [], []
    for name in names:
        relation = view.relations.get(name)
        slope = relation.loglog_slope if relation is not None else None
        (denominator if slope is not None and slope < 0 else numerator).append(name)
    text = "*".join(numerator) or "1"
    return text + (f"/({'*'.join(denominator)})" if denominator else "")


def multiplicative_fits(view: ConversationView) -> list[Move]:
    name = view.target.name
    moves = []
    for feature in view.features:
        if not feature.positive:
            continue
        relation = view.relations.get(feature.name)
        falling = relation is not None and (relation.pearson or 0.0) < 0
        tier = 4 if falling else 4.4
        moves.append(Move("polynomial_fit", {"y": f"{name}*{feature.name}", "max_degree": 3},
                          tier, f"{name} may be a polynomial divided by {feature.name}"))
    return moves


def refinements(view: ConversationView) -> list[Move]:
    best: FrontRow | None = view.best
    if best is None or view.exact(best):
        return []
    return [Move("constant_fit", {"eq": best.formula}, 1.5, "snap the best formula's constants"),
            Move("evaluate", {"f": best.formula, "fit": True}, 2.8,
                 "refit every constant of the best formula jointly")]
