"""The offline proposer's policy: which tool calls each of the K samples makes next.

A deterministic, rule-based stand-in for a language model. The portfolio
(:mod:`srh_core.api.offline.portfolio`) lists every move worth trying for the
conversation; the step orders them by tier with a seeded jitter (the step's
seed, so C branches, whose seeds differ, order differently) and deals
``MOVES_PER_SAMPLE`` consecutive moves to each sample: the K samples of a
step never repeat each other. Every response states the whole plan of its
step, so the branch remembers what the other samples ran even when only one
sample continues the conversation: the policy never repeats a move it has
planned (their candidates show up in the branch's Pareto front anyway).

The plan a scientist would follow:

0. fit ``|T|`` as a product of powers of the positive variables (every
   sample carries this call until its result is in the conversation: the
   rest of the plan reads its exponents); meanwhile try a quadratic
   polynomial and a polynomial of ``T**2``;
1. divide out the variables whose exponents are clean numbers and fit what
   is left (the reduced target, :mod:`srh_core.api.offline.reduced`) with
   polynomials of ``Z``, ``1/Z``, ``Z**2``, ``Z**-2``, with sin/cos of
   angle-like variables, and exponentials or logarithms of power laws; the
   branches start from different factorization hypotheses;
2. refine power laws that almost fit (an offset, a constant in front of an
   exponential); when the power law fails, fit sums of two power laws and a
   power law times exp or log of another, or times a harmonic of an angle
   (:mod:`srh_core.api.offline.sums`); then long shots: ``sin(T)`` of an angle-like target, ratios
   of polynomials, sparse fits over large libraries;
3. snap and refit the constants of the best formula.

Once the best formula is exact its constants are snapped and it is
submitted; after that the policy makes no more calls. At the final step the
best formula is submitted alongside the last explorations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from srh_core.api.offline.moves import Move
from srh_core.api.offline.portfolio import LONG_NUMBER, pinned_moves, portfolio
from srh_core.api.offline.reader import PLAN_HEADER, ConversationView

MOVES_PER_SAMPLE = 3
TIER_JITTER = 0.5


@dataclass(frozen=True, slots=True)
class Proposal:
    """One sample's response: a short explanation (with the step's plan) and its calls."""

    text: str
    moves: tuple[Move, ...]


def plan_step(view: ConversationView, n: int, rng: np.random.Generator) -> tuple[Proposal, ...]:
    """The K = ``n`` responses of this step, sample 1 first."""
    if any(view.exact(row) for row in view.front):
        closing = tuple(closing_moves(view)[:MOVES_PER_SAMPLE])
        dealt = [closing] + [()] * (n - 1)
        mode = "the best formula fits exactly"
    else:
        dealt = _deal(view, n, rng)
        mode = "exploring"
    return tuple(Proposal(explain(view, dealt, k, mode), dealt[k]) for k in range(n))


def _deal(view: ConversationView, n: int, rng: np.random.Generator) -> list[tuple[Move, ...]]:
    """Pinned moves for every sample, then consecutive slices of the ordered portfolio."""
    pinned = _fresh(view, pinned_moves(view))
    keys = {move.signature for move in pinned}
    ordered = _ordered([m for m in _fresh(view, portfolio(view)) if m.signature not in keys],
                       rng)
    free = MOVES_PER_SAMPLE - len(pinned)
    dealt = []
    for k in range(n):
        own = ordered[k * free:(k + 1) * free]
        if view.final_step and k == 0:
            own = submit_best(view) + own[:free - 1]
        dealt.append(tuple(pinned + own) if own or k == 0 else ())
    return dealt


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


def explain(view: ConversationView, dealt: list[tuple[Move, ...]], k: int, mode: str,
            limits: str = "") -> str:
    """Sample ``k``'s text: what it calls and why, ``limits`` (what the tools cannot find)
    when given, and the whole step's plan when there are several samples."""
    lines = [f"[offline policy] Rule-based proposer, no language model (step {view.step} of "
             f"{view.max_steps}, {mode}; sample {k + 1} of {len(dealt)})."]
    lines += [f"- {move.tool}: {move.why}" for move in dealt[k]]
    if not dealt[k]:
        lines.append("- nothing new to try with these tools; keeping the current best formula.")
    if limits:
        lines.append(f"Limits: {limits}.")
    if len(dealt) > 1 and any(dealt):
        lines.append(PLAN_HEADER)
        lines += [f"  sample {i + 1}: " + "; ".join(
            f"{m.tool} {json.dumps(m.params, sort_keys=True)}" for m in moves)
            for i, moves in enumerate(dealt) if moves]
    return "\n".join(lines)


# ------------------------------------------------------------------ closing
def closing_moves(view: ConversationView) -> list[Move]:
    """Snap constants of the simplest exact formula, then submit it."""
    exact = [row for row in view.front if view.exact(row) and not row.truncated]
    if not exact:
        return []
    row = min(exact, key=lambda r: (r.complexity, r.train_mse or 0.0))
    moves = []
    if LONG_NUMBER.search(row.formula):
        moves.append(Move("constant_fit", {"eq": row.formula}, 0,
                          "snap the fitted constants of the exact formula"))
    if row.formula not in view.submitted:
        moves.append(Move("submit_formula", {"f": row.formula}, 0,
                          "submit the simplest exact formula"))
    return _fresh(view, moves)


def submit_best(view: ConversationView) -> list[Move]:
    best = view.best
    if best is None or best.truncated or best.formula in view.submitted:
        return []
    return _fresh(view, [Move("submit_formula", {"f": best.formula}, 0,
                              "final step: submit the best formula so far")])
