"""Screening many features down to the few the offline policy fits.

The fitting tools take at most ``MAX_INPUTS`` (16) inputs, and every move of
the policy is written for a handful of variables, so with more features than
that every call failed. Before the policy plans, this module screens them the
way an analyst would, with the analysis tools and from the conversation only:

1. marginal screen: ``relationship_analysis`` over groups of at most
   ``MAX_VARIABLES`` (40) features, dealt over the K samples (the harness
   merges the analysis output of the samples it does not continue, so every
   group's result is read). Each feature's score is its cross-validated
   collapse R2 against the target (y explained by a function of it alone); a
   feature stands out when its score is above the median by ``NOISE_MADS``
   scaled median absolute deviations (and above 0);
2. partial screen (when ``power_law_fit`` is available and the target and
   the features are sign-definite): a feature can matter although it
   explains little alone, next to a dominant one. So the ``ANCHORS`` best
   features of step 1 are fitted together with each chunk of the others in
   a log-linear ``power_law_fit``, all in sample 1 (fits are candidates, and
   the harness merges only analysis output from the samples it does not
   continue; the others held fixed, as in a multiple
   regression; exponents are snapped, so an exact fit gives a clean
   candidate); a feature whose free exponent (the centre of its 95% interval,
   whatever it was snapped to) lies more than ``MIN_EXPONENT_Z`` half-widths
   of that interval away from 0 in any of these fits matters;
3. the kept features are those of 1 and 2 (at most ``MAX_INPUTS``, best
   first; the ``MAX_INPUTS`` best of 1 when none is found). The policy plans
   on a view that lists them only, and every planned call of a tool with an
   ``x`` or ``variables`` argument that leaves it out gets them, so no tool
   falls back to all the features.

Each stage runs once per branch (a group whose call failed counts as finding
nothing); with at most ``MAX_INPUTS`` features nothing changes. What it
cannot see: a feature whose effect is neither visible alone nor monotone next
to the anchors (e.g. a symmetric factor, or a term of a sum dwarfed by another)
is dropped.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from srh_core import formats
from srh_core.api.offline.moves import Move
from srh_core.api.offline.policy import Proposal, plan_step
from srh_core.api.offline.reader import ConversationView, Variable
from srh_core.tools.analysis.variables import MAX_VARIABLES
from srh_core.tools.formula import MAX_INPUTS

SCREENING_TOOL = "relationship_analysis"
PARTIAL_TOOL = "power_law_fit"
SCREENING_MARK = "[offline screening]"
PARTIAL_MARK = "[offline screening: partial]"
NOISE_MADS = 6.0
ANCHORS = 4
MIN_EXPONENT_Z = 3.0
MAD_SCALE = 1.4826
FEATURE_ARGUMENTS = ("x", "variables")
Planner = Callable[[ConversationView, int, np.random.Generator], tuple[Proposal, ...]]


def screened_plan(messages: Sequence[Mapping[str, Any]], view: ConversationView, n: int,
                  rng: np.random.Generator, tools: Sequence[Any],
                  plan: Planner = plan_step) -> tuple[Proposal, ...]:
    """The K = ``n`` responses of this step, screening the features first when there are many.

    Args:
        messages: The conversation (what a model sees), earliest first.
        view: The policy's reading of it.
        n: Samples to answer.
        rng: The step's random stream (passed to the policy).
        tools: Metadata of the tools the proposer may call.
        plan: The policy's planner.
    """
    names = all_feature_names(messages, view)
    if len(names) <= MAX_INPUTS:
        return plan(view, n, rng)
    parameters = _tool_parameters(tools)
    scores, ranges = read_screening(messages)
    pending = [name for name in names if name not in scores]
    if pending and not _ran(messages, SCREENING_MARK) and not view.final_step \
            and SCREENING_TOOL in parameters:
        return _screening_proposals(view, pending, len(names), n)
    partial = read_partial_screen(messages)
    if not _ran(messages, PARTIAL_MARK) and not view.final_step and PARTIAL_TOOL in parameters:
        moves = _partial_moves(view, names, scores, ranges)
        if moves:  # all in sample 1: fits are candidates, never merged from other samples
            return _deal(view, moves, len(names), n, PARTIAL_MARK, "fitting the best features "
                         "with each chunk of the others, to find those that matter next to them",
                         spread=False)
    kept = select_features(names, scores, partial)
    narrowed = replace(view, features=[_variable(view, name, ranges) for name in kept])
    note = (f"{SCREENING_MARK} {len(names)} features; fitting the {len(kept)} that explain the "
            "target alone: " + ", ".join(f"{name} {_shown(scores.get(name))}" for name in kept))
    proposals = plan(narrowed, n, rng)
    return tuple(Proposal(f"{p.text}\n{note}" if k == 0 else p.text,
                          tuple(_with_features(move, kept, parameters) for move in p.moves))
                 for k, p in enumerate(proposals))


def all_feature_names(messages: Sequence[Mapping[str, Any]], view: ConversationView) -> list[str]:
    """Every feature the task prompt names: those listed with ranges, then the rest."""
    names = list(view.feature_names)
    for message in messages:
        if message.get("role") != "user":
            continue
        for match in formats.MORE_FEATURES_LINE.finditer(str(message.get("content") or "")):
            names += [name.strip() for name in match.group(1).split(",")
                      if name.strip().isidentifier()]
        if names:
            break
    return list(dict.fromkeys(names))


def read_screening(messages: Sequence[Mapping[str, Any]]
                   ) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Collapse R2 of each feature against the target, and the x range where shown."""
    scores: dict[str, float] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for message in messages:
        text = str(message.get("content") or "")
        if message.get("role") not in ("tool", "user") or formats.RELATIONSHIP_HEAD not in text:
            continue
        for match in formats.RANKED_LINE.finditer(text):
            scores[match.group(1)] = _score(match.group(2))
            ranges[match.group(1)] = (float(match.group(3)), float(match.group(4)))
        for line in formats.FURTHER_VARIABLES_LINE.finditer(text):
            for item in line.group(1).split(", "):
                name, _, value = item.partition(" ")
                scores[name] = _score(value)
    return scores, ranges


def read_partial_screen(messages: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Largest |free exponent| / interval half-width of each feature in the partial screen."""
    found: dict[str, float] = {}
    inside = False
    for message in messages:
        text = str(message.get("content") or "")
        if message.get("role") == "assistant":
            inside = PARTIAL_MARK in text
            continue
        if not inside:
            continue
        for line in formats.EXPONENTS_LINE.finditer(text):
            for match in formats.EXPONENT_ITEM.finditer(line.group(1)):
                low, high = float(match.group(3)), float(match.group(4))
                centre, half = (low + high) / 2, (high - low) / 2
                z = abs(centre) / half if half > 0 else (np.inf if centre else 0.0)
                found[match.group(1)] = max(found.get(match.group(1), 0.0), z)
    return found


def select_features(names: Sequence[str], scores: Mapping[str, float],
                    partial: Mapping[str, float] | None = None) -> list[str]:
    """Features that stand out alone or matter next to the best (at most MAX_INPUTS)."""
    known = [scores[name] for name in names if name in scores and scores[name] > -np.inf]
    ranked = sorted(names, key=lambda name: -scores.get(name, -np.inf))
    standing_out = []
    if len(known) >= 2:
        median = statistics.median(known)
        spread = MAD_SCALE * statistics.median(abs(value - median) for value in known)
        threshold = max(median + NOISE_MADS * spread, 0.0)
        standing_out = [name for name in ranked if scores.get(name, -np.inf) > threshold]
    mattering = {name for name, z in (partial or {}).items() if z > MIN_EXPONENT_Z}
    kept = [name for name in ranked if name in mattering or name in standing_out]
    return (kept or ranked)[:MAX_INPUTS]


def _screening_proposals(view: ConversationView, pending: list[str], total: int,
                         n: int) -> tuple[Proposal, ...]:
    groups = [pending[i:i + MAX_VARIABLES] for i in range(0, len(pending), MAX_VARIABLES)]
    moves = [Move(SCREENING_TOOL, {"variables": group}, 0,
                  f"screen features {index + 1} of {len(groups)} groups: which explain the "
                  "target alone") for index, group in enumerate(groups)]
    return _deal(view, moves, total, n, SCREENING_MARK, "screening them first")


def _partial_moves(view: ConversationView, names: list[str], scores: Mapping[str, float],
                   ranges: Mapping[str, tuple[float, float]]) -> list[Move]:
    target = view.target
    if target is None or not (target.low > 0 or target.high < 0):
        return []  # a log-linear fit needs a target of one sign
    ranked = sorted(names, key=lambda name: -scores.get(name, -np.inf))
    lows = {name: _variable(view, name, ranges).low for name in ranked}
    positive = [name for name in ranked if lows[name] > 0]
    # a feature whose range the conversation never showed goes in chunks of its own:
    # if one of them is not positive, only their fit fails
    unknown = [name for name in ranked if lows[name] != lows[name]]
    anchors = positive[:ANCHORS]
    width = MAX_INPUTS - len(anchors)
    chunks = [group[i:i + width] for group in (positive[ANCHORS:], unknown)
              for i in range(0, len(group), width)]
    return [Move(PARTIAL_TOOL, {"x": anchors + chunk, "snap_exponents": True,
                                "show_diagnostics": False}, 0,
                 f"partial screen {index + 1} of {len(chunks)}: does any of these matter next "
                 f"to {', '.join(anchors)}?") for index, chunk in enumerate(chunks)]


def _deal(view: ConversationView, moves: list[Move], total: int, n: int, mark: str,
          what: str, *, spread: bool = True) -> tuple[Proposal, ...]:
    """Deal ``moves`` over the ``n`` samples (or all to sample 1), each saying what it does."""
    dealt = [moves[k::n] if spread else (moves if k == 0 else []) for k in range(n)]
    proposals = []
    for k, own in enumerate(dealt):
        lines = [f"{mark} Rule-based proposer, no language model (step {view.step} of "
                 f"{view.max_steps}): {total} features, more than the {MAX_INPUTS} a fit takes; "
                 f"{what} (sample {k + 1} of {n})."]
        lines += [f"- {move.tool}: {move.why}" for move in own] or ["- nothing to do here."]
        proposals.append(Proposal("\n".join(lines), tuple(own)))
    return tuple(proposals)


def _ran(messages: Sequence[Mapping[str, Any]], mark: str) -> bool:
    return any(str(m.get("content") or "").startswith(mark) for m in messages
               if m.get("role") == "assistant")


def _tool_parameters(tools: Sequence[Any]) -> dict[str, set[str]]:
    found = {}
    for tool in tools:
        schema = getattr(tool, "parameters", None) or {}
        found[str(getattr(tool, "name", ""))] = set(schema.get("properties", {}))
    return found


def _with_features(move: Move, kept: list[str], parameters: Mapping[str, set[str]]) -> Move:
    accepted = parameters.get(move.tool, set())
    missing = {name: list(kept) for name in FEATURE_ARGUMENTS
               if name in accepted and name not in move.params}
    return replace(move, params={**move.params, **missing}) if missing else move


def _variable(view: ConversationView, name: str, ranges: Mapping[str, tuple[float, float]]
              ) -> Variable:
    known = view.feature(name)
    if known is not None:
        return known
    low, high = ranges.get(name, (float("nan"), float("nan")))
    return Variable(name, low, high)


def _score(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return -np.inf
    return value if value == value else -np.inf


def _shown(score: float | None) -> str:
    return "n/a" if score is None or score == -np.inf else f"{score:.3g}"
