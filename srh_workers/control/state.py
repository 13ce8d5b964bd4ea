"""An interactive cluster run's control state, and the changes each control makes to it.

The state is what the embedded runtime keeps in process memory, as JSON in
the run's ``control`` key: the :class:`~srh_core.interactive.SRInteractionManager`
snapshot (state, queued messages and settings, pending transition), the
:class:`~srh_core.interactive.ControlLedger` (messages carried to the next
branch, restarts a ``next_r`` ended, the runtime settings taken so far), the
agent's pause options and the force-pause flag. Each function below is a ``decide`` for
:meth:`~srh_workers.store.RedisRunStore.update_control`: it loads the manager
in its live state, applies one operation with the manager's own rules,
collects the events the manager published and returns the
:class:`~srh_workers.store.control.ControlChange` that writes it all back.

A release (a paused run going on: resume, a message, next_c, next_r) takes
the parked steps in the same transaction, so the caller re-sends each
exactly once; so does a stop (:func:`stopping`): a cancelled run's parked
steps must run to end their branches, or the run would wait for a resume.
The force-pause flag is set by an accepted force-pause and cleared by the
release: while it is set, tools and model requests of the
run are cut (see :class:`~srh_workers.control.agent.RedisCancelSignal`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from srh_core.interactive import (
    BoundaryDecision,
    ControlCommand,
    ControlLedger,
    InteractionError,
    InteractionSnapshotError,
    SRInteractionManager,
    take_boundary,
)
from srh_core.interactive.channel import command_fields
from srh_workers.store.control import ControlChange

STATE_VERSION = 1
DEFAULT_OPTIONS: dict[str, bool] = {"pause_on_tool_free": True, "pause_on_truncated": True}
HELD_STATES = frozenset({"pausing", "interrupting", "paused"})
Stored = Mapping[str, Any] | None


@dataclass
class ControlState:
    """The loaded state: a live manager, the ledger, options, the force-pause flag."""

    manager: SRInteractionManager
    ledger: ControlLedger
    options: dict[str, bool]
    forced: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, stored: Stored, options: Mapping[str, bool] | None = None) -> ControlState:
        """The stored state; a new, started one (state ``running``) when there is none.

        Raises:
            InteractionSnapshotError: The stored state does not match the schema.
        """
        manager = SRInteractionManager()
        events: list[dict[str, Any]] = []
        if stored is None:
            manager.add_listener(events.append)
            carried = manager.start_agent_execution()
            return cls(manager, ControlLedger(carried), {**DEFAULT_OPTIONS, **(options or {})},
                       events=events)
        if stored.get("version") != STATE_VERSION:
            raise InteractionSnapshotError(f"Unsupported control state version "
                                           f"{stored.get('version')!r}; expected "
                                           f"{STATE_VERSION}.")
        manager.restore_state(stored["manager"], live=True)
        manager.add_listener(events.append)
        return cls(manager, ControlLedger.from_dict(stored.get("ledger") or {}),
                   {**DEFAULT_OPTIONS, **(stored.get("options") or {})},
                   bool(stored.get("forced")), events)

    @property
    def state(self) -> str:
        return self.manager.state

    def to_dict(self) -> dict[str, Any]:
        snapshot = self.manager.export_state()
        snapshot.update(events=[], discarded_through=snapshot["next_sequence"] - 1)
        return {"version": STATE_VERSION, "manager": snapshot, "ledger": self.ledger.to_dict(),
                "options": dict(self.options), "forced": self.forced,
                "updated_at": time.time()}

    def change(self, **fields: Any) -> ControlChange:
        """The change that stores this state and publishes the events collected."""
        events = [{key: value for key, value in event.items() if key != "seq"}
                  for event in self.events]
        return ControlChange(state=self.to_dict(), events=events, **fields)

    def released_since(self, before: str) -> bool:
        """True when the run went on (from a held state to running) since ``before``."""
        released = before in HELD_STATES and self.state == "running"
        if released or self.state == "idle":
            self.forced = False
        return released


def opened(options: Mapping[str, bool] | None = None) -> Any:
    """``decide``: create the state of a run about to start (nothing when it exists)."""
    def decide(stored: Stored, taken: Stored) -> ControlChange | None:
        if stored is not None:
            return None
        return ControlState.load(None, options).change()
    return decide


def commanded(command: ControlCommand) -> Any:
    """``decide``: apply a researcher's command; the outcome is the status or the refusal."""
    def decide(stored: Stored, taken: Stored) -> ControlChange:
        loaded = ControlState.load(stored)
        before = loaded.state
        outcome: Any
        try:
            outcome = loaded.manager.command(command.action, command.message,
                                             command_id=command.id, **command_fields(command))
        except InteractionError as error:
            loaded.manager.publish_event("command_received", {
                "action": command.action, "id": command.id, "accepted": False,
                "error": str(error)})
            outcome = error
        if command.action == "force_pause" and loaded.state == "interrupting":
            loaded.forced = True
        released = loaded.released_since(before)
        return loaded.change(command=command.to_dict(), release=released, outcome=outcome)
    return decide


def parked(member: str, R: int | None, *, unlock: bool = False) -> Any:
    """``decide``: a step boundary of a runtime that parks branches; outcome True to park.

    Args:
        member: What to re-send on release (``step:R:C:L`` or ``run``).
        R: The branch's restart (a restart that ``next_r`` ended never parks).
        unlock: Give up the whole-run lock with the parking.
    """
    def decide(stored: Stored, taken: Stored) -> ControlChange | None:
        loaded = ControlState.load(stored)
        if R is not None and loaded.ledger.skips(R):
            return ControlChange(outcome=False)
        if loaded.state == "running":
            return loaded.change(outcome=False) if stored is None else None
        before = loaded.state
        if loaded.manager.hold():
            return loaded.change(hold=member, unlock=unlock, outcome=True)
        return loaded.change(release=loaded.released_since(before), outcome=False)
    return decide


def boundary_taken(R: int) -> Any:
    """``decide``: what a branch of restart R takes at its boundary (kept per step)."""
    def decide(stored: Stored, taken: Stored) -> ControlChange:
        if taken is not None:
            return ControlChange(outcome=BoundaryDecision.from_dict(taken))
        loaded = ControlState.load(stored)
        before = loaded.state
        decision = take_boundary(loaded.manager, loaded.ledger, R)
        loaded.released_since(before)
        return loaded.change(taken=None if decision.empty else decision.to_dict(),
                             outcome=decision)
    return decide


def pause_requested() -> Any:
    """``decide``: the agent asks for a pause (after a tool-free reply, say)."""
    def decide(stored: Stored, taken: Stored) -> ControlChange | None:
        loaded = ControlState.load(stored)
        if loaded.state != "running":
            return None
        loaded.manager.request_pause()
        return loaded.change()
    return decide


def finished(status: str, reason: str | None) -> Any:
    """``decide``: the run has its result; the controls go idle (once)."""
    def decide(stored: Stored, taken: Stored) -> ControlChange | None:
        if stored is None:
            return None
        loaded = ControlState.load(stored)
        if loaded.state == "idle":
            return None
        loaded.manager.finish_agent_execution()
        kind = "execution_failed" if status == "failed" else "execution_completed"
        loaded.manager.publish_event(kind, {"status": status, "reason": reason})
        loaded.released_since("running")
        return loaded.change(release=True)
    return decide


def stopping() -> Any:
    """``decide``: the run was asked to stop (``srh cancel``, a failed branch): its parked
    steps go on, to end (a step sees the stop flag before it would park again).

    The state is left as it is: the task that writes the result ends the controls.
    """
    def decide(stored: Stored, taken: Stored) -> ControlChange | None:
        return None if stored is None else ControlChange(release=True)
    return decide


def status_view(stored: Stored, held: tuple[str, ...], last_seq: int, finished_run: bool,
                moving: int | None) -> dict[str, Any] | None:
    """The run's control status, shaped like ``SRInteractionManager.status()``.

    Args:
        stored: The control state (None: the run takes no commands).
        held: The parked steps.
        last_seq: The last event seq published.
        finished_run: The run has its result.
        moving: Branches with a step in flight or queued (None when unknown).
    """
    if stored is None:
        return None
    loaded = ControlState.load(stored)
    status = loaded.manager.status()
    state = status["interaction_state"]
    settled = held == ("run",) or moving == 0  # nothing else of the run is in flight
    status.update(
        backend="celery", held=list(held), waiting_branches=len(held),
        waiting_at_boundary=state == "paused" and bool(held) and settled,
        force_pause_requested=loaded.forced, last_event_seq=last_seq,
        carried_messages=len(loaded.ledger.to_dict()["carried"]),
        active=not finished_run and state != "idle", options=dict(loaded.options))
    status["alive"] = status["active"]
    if moving is not None:
        status["steps_moving"] = moving
    return status


def runs_freely(stored: Stored, R: int) -> bool:
    """True when a boundary needs no transaction: running, no pause asked, nothing to take."""
    if stored is None:
        return False
    manager = stored.get("manager") or {}
    ledger = stored.get("ledger") or {}
    return (manager.get("state") == "running" and not manager.get("messages")
            and not manager.get("search_transitions") and not manager.get("queued_settings")
            and not ledger.get("carried")
            and R not in (ledger.get("skipped_restarts") or []))


def is_running(stored: Stored) -> bool:
    """True when the stored state says no pause is asked (a boundary goes on)."""
    return stored is not None and (stored.get("manager") or {}).get("state") == "running"
