"""The task names of a distributed run, defined once, and the actions that name them.

A flow function never sends a task itself: it returns :class:`Action`\\ s
(a registered task name and its JSON arguments) and the task wrapper sends
them. Names start with ``srh.branch.`` (queue ``branches``) or ``srh.tool.``
(queue ``tools``); the app routes by that prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RESTART = "srh.branch.restart"
STEP = "srh.branch.step"
ADVANCE = "srh.branch.advance"
FINALIZE = "srh.branch.finalize"
SAMPLE = "srh.tool.calls"
WHOLE_RUN = "srh.tool.run"
PROBE = "srh.tool.probe"
FLOW_TASKS = (RESTART, STEP, ADVANCE, FINALIZE, SAMPLE, WHOLE_RUN)


@dataclass(frozen=True, slots=True)
class Action:
    """A task to enqueue: its registered name and its JSON arguments (run id first)."""

    task: str
    args: tuple[Any, ...]


def restart_action(run_id: str, R: int) -> Action:
    return Action(RESTART, (run_id, R))


def step_action(run_id: str, R: int, C: int, L: int) -> Action:
    return Action(STEP, (run_id, R, C, L))


def sample_action(run_id: str, R: int, C: int, L: int, K: int) -> Action:
    return Action(SAMPLE, (run_id, R, C, L, K))


def advance_action(run_id: str, R: int, C: int, L: int) -> Action:
    return Action(ADVANCE, (run_id, R, C, L))


def finalize_action(run_id: str) -> Action:
    return Action(FINALIZE, (run_id,))


def whole_run_action(run_id: str) -> Action:
    return Action(WHOLE_RUN, (run_id,))
