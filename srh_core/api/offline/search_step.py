"""The offline policy's search step: ``expression_search`` when the closed forms did not fit.

From the second step on, while no formula of the branch's front fits
exactly, the first sample of a step also calls ``expression_search`` once
per branch (seeded by the branch, so the C branches search differently),
with ``BUDGET_SHARE`` of the run time left as the progress message states
it, or ``DEFAULT_SECONDS`` when the run has no time limit (the setting
``SRH_OFFLINE_SEARCH_SECONDS`` changes that default and caps the share; 0
turns the step off). The call is added
to the step's plan, so the branch never repeats it whichever sample continues.

This module only adds a move to the proposals the policy made
(:func:`with_search`); it reads the conversation through the reader's view
and one number, the seconds left, through :func:`seconds_left`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from srh_core import formats
from srh_core.api.offline.moves import Move
from srh_core.api.offline.policy import Proposal
from srh_core.api.offline.reader import PLAN_HEADER, ConversationView
from srh_core.errors import ConfigurationError
from srh_core.operators import BINARY_OPERATORS, search_operators

SEARCH_TOOL = "expression_search"
DEFAULT_SECONDS = 10.0
"""Search budget when the run has no time limit and ``SECONDS_SETTING`` is unset."""

SECONDS_SETTING = "SRH_OFFLINE_SEARCH_SECONDS"
"""Setting (session environment, then ``os.environ``): the search budget without a time limit,
and the most one search may take with one; ``0`` turns the search step off."""

BUDGET_SHARE = 0.85
"""Share of the run time left that one search may use (the tool keeps its own reserve to
score its front). Most of it: on Feynman at 10 s (stop 45), no run whose search missed
found an exact formula in the steps after it, and a longer search solved more."""

MIN_SECONDS = 1.0
"""No search when less than this would be left for it."""

FIRST_STEP = 2
"""The closed-form fitters have the first step to themselves."""

def seconds_left(messages: Sequence[Mapping[str, Any]]) -> float | None:
    """The run time left according to the latest progress message (None: no time limit)."""
    for message in reversed(messages):
        if message.get("role") == "user" and formats.PROGRESS_MARK in str(
                message.get("content") or ""):
            match = formats.SECONDS_LEFT.search(str(message["content"]))
            return float(match.group(1)) if match else None
    return None


def configured_seconds(text: str | None) -> float | None:
    """The ``SECONDS_SETTING`` value: None when unset; ConfigurationError when malformed."""
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ConfigurationError(f"{SECONDS_SETTING} must be a number of seconds >= 0 "
                                 f"(0 turns the offline search step off). Got {text!r} "
                                 "instead.", setting=SECONDS_SETTING)
    return value


def search_move(view: ConversationView, messages: Sequence[Mapping[str, Any]],
                configured: float | None = None) -> Move | None:
    """The search call this step should make, or None (``configured``: the setting)."""
    if configured == 0:
        return None
    if view.target is None or view.step < FIRST_STEP or any(view.exact(r) for r in view.front):
        return None
    if any(signature.startswith(SEARCH_TOOL + "{") for signature in view.tried):
        return None
    left = seconds_left(messages)
    cap = DEFAULT_SECONDS if configured is None else configured
    budget = cap if left is None else min(BUDGET_SHARE * left,
                                          float("inf") if configured is None else configured)
    if budget < MIN_SECONDS:
        return None
    params: dict[str, Any] = {"time_budget": round(budget, 1), "seed": view.branch - 1}
    if view.operators is not None:
        params["operators"] = search_operators(
            [o for o in view.operators if o in BINARY_OPERATORS],
            [o for o in view.operators if o not in BINARY_OPERATORS])
    if view.maxsize is not None:
        params["max_complexity"] = view.maxsize
    return Move(SEARCH_TOOL, params, 0, "no closed form fits exactly: search formulas of "
                                        "any shape (decomposition, enumeration, evolution)")


def with_search(proposals: Sequence[Proposal], view: ConversationView,
                messages: Sequence[Mapping[str, Any]], available: set[str],
                configured: float | None = None) -> tuple[Proposal, ...]:
    """The proposals with the search call added to the first sample's, when it is due."""
    move = search_move(view, messages, configured) if SEARCH_TOOL in available else None
    if move is None or not proposals:
        return tuple(proposals)
    line = f"  sample 1: {move.tool} {json.dumps(move.params, sort_keys=True)}"
    updated = []
    for index, proposal in enumerate(proposals):
        text = proposal.text
        if index == 0:
            text = text.replace("\n", f"\n- {move.tool}: {move.why}\n", 1) if "\n" in text \
                else f"{text}\n- {move.tool}: {move.why}"
        if len(proposals) > 1:
            text += ("" if PLAN_HEADER in text else "\n" + PLAN_HEADER) + "\n" + line
        moves = (*proposal.moves, move) if index == 0 else proposal.moves
        updated.append(Proposal(text, moves))
    return tuple(updated)
