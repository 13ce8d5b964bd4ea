"""Screening many features down to the few the offline policy fits.

The fitting tools take at most ``MAX_INPUTS`` (16) inputs, and every move of
the policy is written for a handful of variables, so with more features than
that every call failed. Before the policy plans, this module screens them the
way an analyst would, with the analysis tools and from the conversation only:

1. while some feature has no screening result, the step's calls are
   ``relationship_analysis`` over groups of at most ``MAX_VARIABLES`` (40)
   features, dealt over the K samples (the harness merges the analysis output
   of the samples it does not continue, so every group's result is read);
2. then each feature's score is its cross-validated collapse R2 against the
   target (y explained by a function of that feature alone); a feature is
   kept when its score stands out of the bulk: above the median by
   ``NOISE_MADS`` scaled median absolute deviations (and above 0). At most
   ``MAX_INPUTS`` are kept, the best first; when none stands out, the
   ``MAX_INPUTS`` best are;
3. the policy plans on a view that lists the kept features only, and every
   planned call of a tool with an ``x`` or ``variables`` argument that leaves
   it out gets the kept features, so no tool falls back to all of them.

Screening happens once per branch; a feature whose group failed counts as not
standing out. With at most ``MAX_INPUTS`` features nothing changes. What it
cannot see: a feature that matters only jointly with others (no effect alone,
e.g. a symmetric factor) scores like noise and is dropped.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from srh_core.api.offline.moves import Move
from srh_core.api.offline.policy import Proposal, plan_step
from srh_core.api.offline.reader import ConversationView, Variable
from srh_core.tools.analysis.variables import MAX_VARIABLES
from srh_core.tools.formula import MAX_INPUTS

SCREENING_TOOL = "relationship_analysis"
SCREENING_MARK = "[offline screening]"
NOISE_MADS = 6.0
MAD_SCALE = 1.4826
FEATURE_ARGUMENTS = ("x", "variables")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_MORE_NAMES_RE = re.compile(r"^  - \.\.\. and \d+ more: (.+)$", re.M)
_RANKED_RE = re.compile(rf"^\d+\. (\w+)(?: \(reads the target!\))?: collapse R2 (\S+?)(?:±\S*)? "
                        rf"\|.*?\| x in \[({_NUMBER}), ({_NUMBER})\]", re.M)
_FURTHER_RE = re.compile(r"^  further variables \(collapse R2\): (.+)$", re.M)
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
    done = any(SCREENING_MARK in str(m.get("content") or "") for m in messages
               if m.get("role") == "assistant")
    pending = [name for name in names if name not in scores]
    if pending and not done and not view.final_step and SCREENING_TOOL in parameters:
        return _screening_proposals(view, pending, len(names), n)
    kept = select_features(names, scores)
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
        for match in _MORE_NAMES_RE.finditer(str(message.get("content") or "")):
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
        if message.get("role") not in ("tool", "user") or "(the target) on the" not in text:
            continue
        for match in _RANKED_RE.finditer(text):
            scores[match.group(1)] = _score(match.group(2))
            ranges[match.group(1)] = (float(match.group(3)), float(match.group(4)))
        for line in _FURTHER_RE.finditer(text):
            for item in line.group(1).split(", "):
                name, _, value = item.partition(" ")
                scores[name] = _score(value)
    return scores, ranges


def select_features(names: Sequence[str], scores: Mapping[str, float]) -> list[str]:
    """The features whose score stands out of the bulk (at most MAX_INPUTS, best first)."""
    known = [scores[name] for name in names if name in scores and scores[name] > -np.inf]
    ranked = sorted(names, key=lambda name: -scores.get(name, -np.inf))
    if len(known) < 2:
        return ranked[:MAX_INPUTS]
    median = statistics.median(known)
    spread = MAD_SCALE * statistics.median(abs(value - median) for value in known)
    threshold = max(median + NOISE_MADS * spread, 0.0)
    standing_out = [name for name in ranked if scores.get(name, -np.inf) > threshold]
    return (standing_out or ranked)[:MAX_INPUTS]


def _screening_proposals(view: ConversationView, pending: list[str], total: int,
                         n: int) -> tuple[Proposal, ...]:
    groups = [pending[i:i + MAX_VARIABLES] for i in range(0, len(pending), MAX_VARIABLES)]
    dealt: list[list[Move]] = [[] for _ in range(n)]
    for index, group in enumerate(groups):
        dealt[index % n].append(Move(SCREENING_TOOL, {"variables": group}, 0,
                                     f"screen features {index + 1} of {len(groups)} groups: "
                                     "which explain the target alone"))
    proposals = []
    for k, moves in enumerate(dealt):
        lines = [f"{SCREENING_MARK} Rule-based proposer, no language model (step {view.step} of "
                 f"{view.max_steps}): {total} features, more than the {MAX_INPUTS} a fit takes; "
                 f"screening them first (sample {k + 1} of {n})."]
        lines += [f"- {move.tool}: {move.why}" for move in moves] or ["- nothing to screen here."]
        proposals.append(Proposal("\n".join(lines), tuple(moves)))
    return tuple(proposals)


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
