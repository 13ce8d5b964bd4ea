"""What runs next: the scheduler both runtimes drain, and the one gate before a step opens.

The functions here take what they decide from as arguments (the branch
states, the run's stop reason, whether a pause holds) and return actions;
they do no I/O of their own. The embedded runtime
(:class:`srh_core.embedded.runner.LocalBranchRunner`) drains the actions on
its threads; the Celery flow (:mod:`srh_workers.flow.steps`) turns each
into a task or a store write. So what happens between steps is written
once, like the step itself (:mod:`srh_core.agent.steps`).

Events and the actions they give::

    restart R started   next_steps(branches)       -> OpenStep | StopBranch | Hold, per branch
    step L closed       on_step_closed(branch)     -> EndBranch | OpenStep | LevelDone
    level L done        on_level_done(branches, L) -> next_steps(branches at step L+1)
    all of R ended      on_restart_ended(branches) -> StartRestart(R+1) | FinishRun

The gate (:func:`gate`) decides, in this order, whether a branch opens its
next step: the run's stop flag ends it (a stopped run never parks), the
early-stop rule ends it or makes it wait for its siblings
(:func:`srh_core.agent.outcome.step_gate`), a pause holds it, else it opens.
A hold is carried out by the runtime: the embedded runner waits for the
release on its thread (its ``RunControl.wait_release``) and asks again; a
step task parks the step and a whole-run task ends its chunk, and the
release re-sends them. No hook decides a pause (``prepare_iteration`` only
takes what waits at the boundary).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from srh_core.agent.branch import BranchState
from srh_core.agent.outcome import STOP_EARLY, restart_is_last, step_gate

Verdict = Literal["open", "wait", "hold", "stop"]


@dataclass(frozen=True, slots=True)
class Gate:
    """The gate's answer for one branch: its verdict, and the stop reason when it stops."""

    verdict: Verdict
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class OpenStep:
    """Open step ``branch.L`` of the branch."""

    branch: BranchState


@dataclass(frozen=True, slots=True)
class StopBranch:
    """End the branch with ``reason`` before it opens another step (stop flag or early stop)."""

    branch: BranchState
    reason: str


@dataclass(frozen=True, slots=True)
class Hold:
    """A pause holds the branch before step ``branch.L``; a release sends it on."""

    branch: BranchState


@dataclass(frozen=True, slots=True)
class EndBranch:
    """The branch ended (its final state is stored); count it against its restart."""

    branch: BranchState


@dataclass(frozen=True, slots=True)
class LevelDone:
    """Branch C finished step L of restart R; the last branch to do so moves the level on."""

    R: int
    L: int
    C: int


@dataclass(frozen=True, slots=True)
class StartRestart:
    """Start restart R from the pool's top-k."""

    R: int


@dataclass(frozen=True, slots=True)
class FinishRun:
    """No further restart: the run ends (its outcome from :func:`outcome.run_outcome`)."""


SchedulerAction = OpenStep | StopBranch | Hold | EndBranch | LevelDone | StartRestart | FinishRun


def gate(branch: BranchState, siblings: Sequence[BranchState] | None, *, early_stop: bool,
         stop_reason: str | None = None, paused: Callable[[], bool] | None = None) -> Gate:
    """May ``branch`` open step ``branch.L`` now? The one place stop, early stop and pause meet.

    A runtime passes what it knows at its boundary: the embedded runtime
    everything at once; the Celery flow the early-stop part where a branch
    moves on (``stop_reason`` unread) and the rest in the step task (with
    ``siblings=None``: the early-stop rule was applied before it was sent).

    Args:
        branch: The running branch about to open step ``branch.L``.
        siblings: Every branch of its restart (latest states), or None to skip early stop.
        early_stop: The run's ``early_stop`` setting.
        stop_reason: The run's stop flag (a cancel, a failure, Ctrl-C), if set.
        paused: Asked last, only when the step would open: True while a pause
            holds the run (a cluster parks the branch as it answers; the
            embedded runner holds it on a Hold).
    """
    if stop_reason is not None:
        return Gate("stop", stop_reason)
    if siblings is not None:
        early = step_gate(branch, siblings, early_stop)
        if early == "stop":
            return Gate("stop", STOP_EARLY)
        if early == "wait":
            return Gate("wait")
    if paused is not None and paused():
        return Gate("hold")
    return Gate("open")


def next_steps(branches: Sequence[BranchState], *, early_stop: bool,
               stop_reason: str | None = None, paused: Callable[[], bool] | None = None,
               busy: Collection[int] = (), siblings: Sequence[BranchState] | None = None,
               ) -> list[SchedulerAction]:
    """What moves each of ``branches`` on, in branch order (a branch ended already: EndBranch).

    A branch the gate stops counts as ended for the branches after it (early
    stop lets a branch that waited for it go on). Once a pause holds one
    branch, no further step opens (one Hold, for the first).

    Args:
        branches: The branches to move on (running or ended).
        early_stop, stop_reason, paused: As for :func:`gate`.
        busy: Branch indices with a step in flight (skipped).
        siblings: Every branch of the restart, when ``branches`` is a part of them.
    """
    latest = {b.C: b for b in (siblings if siblings is not None else branches)}
    paused = _asked_once(paused)
    actions: list[SchedulerAction] = []
    for branch in sorted(branches, key=lambda b: b.C):
        if branch.C in busy:
            continue
        if branch.finished:
            actions.append(EndBranch(branch))
            continue
        verdict = gate(branch, list(latest.values()), early_stop=early_stop,
                       stop_reason=stop_reason, paused=paused)
        if verdict.verdict == "stop":
            actions.append(StopBranch(branch, verdict.reason or STOP_EARLY))
            latest[branch.C] = branch.copy().stop(verdict.reason or STOP_EARLY)
        elif verdict.verdict == "hold":
            return [*actions, Hold(branch)]
        elif verdict.verdict == "open":
            actions.append(OpenStep(branch))
    return actions


def on_step_closed(branch: BranchState, *, early_stop: bool) -> list[SchedulerAction]:
    """Branch ``branch`` (its state after a step) just closed step ``branch.L - 1``."""
    if branch.finished:
        return [EndBranch(branch)]
    if not early_stop:
        return [OpenStep(branch)]
    return [LevelDone(branch.R, branch.L - 1, branch.C)]


def on_level_done(branches: Sequence[BranchState], L: int, *, early_stop: bool
                  ) -> list[SchedulerAction]:
    """Every branch of the restart finished step L (or ended): the branches at L+1 go on."""
    waiting = [b for b in branches if not b.finished and b.L == L + 1]
    return next_steps(waiting, early_stop=early_stop, siblings=branches)


def on_branch_ended(branch: BranchState, *, early_stop: bool) -> list[SchedulerAction]:
    """A branch ended: with early stop on, the levels it may have held back are done for it."""
    if not early_stop:
        return []
    return [LevelDone(branch.R, level, branch.C)
            for level in sorted({max(1, branch.L - 1), branch.L})]


def on_restart_ended(branches: Sequence[BranchState], R: int, *, max_restart: int,
                     early_stop: bool) -> SchedulerAction:
    """Every branch of restart R ended: the next restart, or the end of the run."""
    if restart_is_last(branches, R, max_restart, early_stop):
        return FinishRun()
    return StartRestart(R + 1)


def _asked_once(paused: Callable[[], bool] | None) -> Callable[[], bool] | None:
    """``paused`` asked at most once per pass (asking may cost a store round trip)."""
    if paused is None:
        return None
    answers: list[bool] = []

    def ask() -> bool:
        if not answers:
            answers.append(bool(paused()))
        return answers[0]

    return ask
