"""The controls in the distributed flow: where step tasks park, and what a release re-sends.

A run is interactive when its agent class is an
:class:`~srh_core.interactive.SRAgentInteractive`; for any other run every
function here is a no-op that costs nothing. For an interactive run:

- a step task asks :func:`park_step` before it opens a step (granularity
  "step"): while a pause is asked, the step is parked in the run's held set
  and the task returns without enqueueing anything, so a paused branch holds
  no worker; the whole-run task asks :func:`park_run` before each step
  (granularity "run", through its ``RunControl.paused()``): the chunk ends
  and no continuation is sent;
- whoever releases the pause (a controller's resume, message, next_c or
  next_r, see :mod:`srh_workers.control.channel`, or a boundary that finds
  input queued) takes the parked steps in the same transaction and re-sends
  each once (:func:`parked_actions`);
- a stop (``srh cancel``, a failed branch) reaches a paused run at once:
  :func:`release_stopped` takes the parked steps and the caller re-sends
  them; each sees the stop flag and ends its branch instead of parking again,
  and a step that parks while the stop is sent takes them itself;
- :func:`agent_options` gives the agent its Redis controls and pause options;
- :func:`finish_controls` ends the controls when the run has its result.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from srh_core.interactive import SRAgentInteractive
from srh_workers.control.agent import RedisAgentControls
from srh_workers.control.state import finished, is_running, parked, stopping
from srh_workers.flow.names import Action, step_action, whole_run_action

if TYPE_CHECKING:
    from srh_core.types import SearchResult
    from srh_workers.flow.run_view import WorkerRunView
    from srh_workers.store import RedisRunStore

RUN_MEMBER = "run"
_CONTROLS: weakref.WeakKeyDictionary[Any, RedisAgentControls] = weakref.WeakKeyDictionary()
_CONTROLS_LOCK = threading.Lock()


def is_interactive(rt: WorkerRunView) -> bool:
    return issubclass(rt.agent_class, SRAgentInteractive)


def step_member(R: int, C: int, L: int) -> str:
    return f"step:{R}:{C}:{L}"


def parked_actions(run_id: str, members: Iterable[str]) -> list[Action]:
    """The actions that continue parked steps (``step:R:C:L`` or ``run``)."""
    actions = []
    for member in members:
        if member == RUN_MEMBER:
            actions.append(whole_run_action(run_id))
            continue
        kind, *coordinate = member.split(":")
        if kind == "step" and len(coordinate) == 3:
            R, C, L = (int(part) for part in coordinate)
            actions.append(step_action(run_id, R, C, L))
    return actions


def run_controls(rt: WorkerRunView) -> RedisAgentControls:
    """The run's controls in this process (one per run, shared by its agents)."""
    with _CONTROLS_LOCK:
        controls = _CONTROLS.get(rt)
        if controls is None:
            stored = rt.store.controls.control_state() or {}
            controls = RedisAgentControls(rt.store, stored.get("options"))
            _CONTROLS[rt] = controls
        return controls


def agent_options(rt: WorkerRunView) -> dict[str, Any]:
    """Constructor arguments of the run's agent beyond the run's parts (none unless interactive)."""
    if not is_interactive(rt):
        return {}
    controls = run_controls(rt)
    return {"controls": controls, **controls.options}


def park_step(rt: WorkerRunView, R: int, C: int, L: int) -> tuple[bool, list[Action]]:
    """Before step (R, C, L) opens: park it while a pause is asked?

    Returns:
        Whether the step is parked (the task returns), and the parked steps a
        release at this boundary (input queued) or a stop lets go.
    """
    if not is_interactive(rt) or is_running(rt.store.controls.control_state()):
        return False, []
    update = rt.store.controls.update_control(parked(step_member(R, C, L), R))
    released = parked_actions(rt.run_id, update.released)
    if update.outcome:
        released += _released_by_stop(rt)
    return bool(update.outcome), released


def park_run(rt: WorkerRunView, owner: str) -> tuple[bool, list[Action]]:
    """Before the whole-run task opens a step: park the run (and give up its lock)?

    Returns:
        Whether the run is parked (the chunk ends), and what a stop lets go.
    """
    if not is_interactive(rt) or is_running(rt.store.controls.control_state()):
        return False, []
    update = rt.store.controls.update_control(parked(RUN_MEMBER, None, unlock=True),
                                              lock_owner=owner)
    if not update.outcome:
        return False, []
    return True, _released_by_stop(rt)


def release_stopped(store: RedisRunStore) -> list[Action]:
    """The run was asked to stop: take its parked steps, to be re-sent (they end at once).

    Whoever takes a parked step re-sends it, once; nothing for a run without controls.
    """
    return parked_actions(store.run_id, store.controls.update_control(stopping()).released)


def _released_by_stop(rt: WorkerRunView) -> list[Action]:
    # A stop that came while this step parked may have taken the held set before the step
    # joined it: read the flag after parking, so one of the two re-sends the step.
    return release_stopped(rt.store) if rt.store.flow.stop_reason() is not None else []


def finish_controls(rt: WorkerRunView, result: SearchResult) -> None:
    """The run has its result: the controls go idle and say how it ended (idempotent)."""
    if is_interactive(rt):
        rt.store.controls.update_control(finished(result.status, result.stop_reason))


__all__ = ["RUN_MEMBER", "agent_options", "finish_controls", "is_interactive", "park_run",
           "park_step", "parked_actions", "release_stopped", "run_controls", "step_member"]
