"""The controls of one live run: a state machine, a message queue and an event timeline.

States (the reference's): ``idle`` (no execution), ``running``, ``pausing``
(a pause was asked; the run stops at its next safe boundary), ``interrupting``
(a force-pause: the model request and tools in flight are cancelled, then the
run stops at the boundary), ``paused`` (held at a boundary, no step in flight).

What each command does in each state ("refused" raises
:class:`InteractionStateError`; "-" changes nothing)::

    action        idle     running       pausing       interrupting  paused
    message       queued   queued        queued        queued        queued, released
    pause         refused  pausing       -             -             -
    force_pause   refused  interrupting  interrupting  -             -
    resume        refused  refused       running       running       running, released
    next_c/next_r refused  queued        queued        queued        queued, released

Queued messages are handed to the agent at its next boundary, to be
inserted before its next model request. As in the reference, a queued
message (or, for :class:`SRInteractionManager`, a branch transition) also
releases a pause: the researcher's hint is the reason to go on. ``resume``
(our addition) goes on without one.

Whether a step may open is the scheduler's gate's question
(:func:`srh_core.agent.scheduler.gate`), asked by the runtime, never by a hook.
The embedded runtime asks :meth:`InteractionManager.pause_asked` and, on a
hold, waits in :meth:`InteractionManager.wait_release` once no step is in
flight (a release wakes every waiter); a runtime whose paused branches must
hold no thread (the cluster) asks :meth:`InteractionManager.hold`, which parks
at once. Either way the step's boundary then takes the messages with
:meth:`InteractionManager.pass_boundary` (the first branch to cross takes
them); the cluster keeps the manager's state between tasks with
``export_state`` and ``restore_state(..., live=True)``. ``wait()`` (the
reference's blocking boundary, hold and take in one) stays for a caller that
drives the manager itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from srh_core.errors import did_you_mean
from srh_core.interactive.errors import (
    InteractionSnapshotError,
    InteractionStateError,
    InvalidCommandError,
)
from srh_core.interactive.events import (
    DEFAULT_EVENT_CAPACITY,
    Event,
    EventTimeline,
    InteractionEventKind,
    check_event_kind,
)

logger = logging.getLogger("srh.runtime")

InteractionState: TypeAlias = Literal["idle", "running", "pausing", "interrupting", "paused"]
InteractionAction: TypeAlias = Literal["message", "pause", "force_pause", "resume"]
SRInteractionAction: TypeAlias = Literal["message", "pause", "force_pause", "resume",
                                         "next_c", "next_r", "settings"]
SearchTransition: TypeAlias = Literal["next_c", "next_r"]
STATES: tuple[str, ...] = get_args(InteractionState)
SEARCH_TRANSITIONS: tuple[str, ...] = get_args(SearchTransition)
SNAPSHOT_VERSION = 1
MAX_MESSAGE_CHARS = 20_000
MAX_SETTINGS_CHARS = 4_000  # a settings command's JSON at most
Listener = Callable[[Event], None]
_WAIT_SLICE_SECONDS = 0.25  # condition waits are sliced so Ctrl-C reaches a paused run


@dataclass(frozen=True, slots=True)
class PendingMessage:
    """A researcher's message waiting to be inserted at an agent boundary."""

    content: str
    created_at: float


class CancellationSignal:
    """A read-only, Event-like view of "a force-pause is interrupting work" for tools."""

    def __init__(self, manager: InteractionManager) -> None:
        self._manager = manager

    def is_set(self) -> bool:
        return self._manager.is_interrupting


class InteractionManager:
    """Own the controls and the observable event timeline of one agent run.

    Thread-safe: commands arrive from a controller thread while the agent's
    branches publish events and wait at boundaries.

    Args:
        event_capacity: Maximum number of retained timeline events.
    """

    ACTIONS: tuple[str, ...] = get_args(InteractionAction)
    _SNAPSHOT_FIELDS = frozenset({"version", "state", "messages", "events", "next_sequence",
                                  "discarded_through", "event_capacity"})

    def __init__(self, *, event_capacity: int = DEFAULT_EVENT_CAPACITY) -> None:
        self._condition = threading.Condition(threading.RLock())
        self._timeline = EventTimeline(event_capacity)
        self._state: InteractionState = "idle"
        self._messages: deque[PendingMessage] = deque()
        self._cancellers: dict[int, Callable[[], None]] = {}
        self._release_generation = 0
        self._waiting = 0
        self._listeners: list[Listener] = []
        self.cancellation_signal = CancellationSignal(self)

    # ------------------------------------------------------------ reading
    @property
    def state(self) -> InteractionState:
        """The authoritative execution state."""
        with self._condition:
            return self._state

    @property
    def is_interrupting(self) -> bool:
        """Whether a force-pause is interrupting the active operations."""
        return self.state == "interrupting"

    def status(self) -> dict[str, Any]:
        """A JSON snapshot: state, pending input, waiting branches, event cursor, time."""
        with self._condition:
            return {
                "interaction_state": self._state,
                "paused": self._state in ("pausing", "interrupting", "paused"),
                "waiting_at_boundary": self._state == "paused" and self._waiting > 0,
                "waiting_branches": self._waiting,
                "force_pause_requested": self._state == "interrupting",
                "pending_messages": len(self._messages),
                "last_event_seq": self._timeline.last_sequence,
                "server_time": time.time(),
            }

    # ----------------------------------------------------------- commands
    def command(self, action: str, message: str | None = None, *,
                command_id: str | None = None,
                settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Apply a researcher's command (see the module's table).

        Args:
            action: "message", "pause", "force_pause" or "resume".
            message: The text of a "message" command.
            command_id: The id of a command that came through a channel
                (echoed in the ``command_received`` event).
            settings: Only :class:`~srh_core.interactive.SRInteractionManager`'s
                "settings" command carries them (refused here).

        Returns:
            :meth:`status` after the command.

        Raises:
            InvalidCommandError: Unknown action, or a message without text.
            InteractionStateError: The action makes no sense in this state.
        """
        self._check_action(action)
        if settings is not None:
            raise InvalidCommandError(f"Only a settings command carries settings; {action!r} "
                                      f"got {settings!r:.80}.", action=action)
        cancellers: list[Callable[[], None]] = []
        with self._condition:
            if action == "message":
                self._queue_message(message)
            else:
                cancellers = self._apply_locked(action)
            payload: dict[str, Any] = {"action": action, "accepted": True}
            if command_id is not None:
                payload["id"] = command_id
            if action == "message":
                payload["message"] = message.strip() if isinstance(message, str) else None
            self._publish_locked("command_received", payload)
            self._condition.notify_all()
            result = self.status()
        for cancel in cancellers:
            _call_quietly(cancel)
        return result

    def _check_action(self, action: str) -> None:
        if action not in self.ACTIONS:
            raise InvalidCommandError(
                f"Unknown interaction action {action!r}; expected one of "
                f"{', '.join(self.ACTIONS)}.{did_you_mean(str(action), self.ACTIONS)}",
                action=action)

    def _queue_message(self, message: str | None) -> None:
        content = message.strip() if isinstance(message, str) else ""
        if not content:
            raise InvalidCommandError("A message command needs non-empty text. Got "
                                      f"{message!r} instead.", action="message")
        if len(content) > MAX_MESSAGE_CHARS:
            raise InvalidCommandError(f"A message has at most {MAX_MESSAGE_CHARS} characters. "
                                      f"Got {len(content)} instead.", action="message")
        self._messages.append(PendingMessage(content, time.time()))
        if self._state == "paused":
            self._release_locked()

    def _apply_locked(self, action: str) -> list[Callable[[], None]]:
        state = self._state
        if state == "idle":
            self._refuse(action, "no execution is running (state idle)")
        if action == "pause":
            if state == "running":
                self._set_state_locked("pausing")
        elif action == "force_pause":
            if state in ("running", "pausing"):
                self._set_state_locked("interrupting")
                return list(self._cancellers.values())
        elif action == "resume":
            if state == "running":
                self._refuse(action, "the run is not paused (state running)")
            self._release_locked()
        return []

    def _refuse(self, action: str, why: str) -> None:
        raise InteractionStateError(f"Cannot {action.replace('_', '-')}: {why}.",
                                    action=action, state=self._state)

    def _release_locked(self) -> None:
        self._release_generation += 1
        self._set_state_locked("running")

    def request_pause(self) -> None:
        """Ask for a quiet pause at the next boundary (after a tool-free response, say)."""
        with self._condition:
            if self._state == "running":
                self._set_state_locked("pausing")
                self._condition.notify_all()

    # ---------------------------------------------------------- lifecycle
    def start_agent_execution(self) -> list[PendingMessage]:
        """Enter ``running``; return the messages queued before the start.

        Raises:
            InteractionStateError: The manager is not idle.
        """
        with self._condition:
            if self._state != "idle":
                raise InteractionStateError(
                    f"Cannot start an agent execution while {self._state}; finish the "
                    "current one first.", action="start", state=self._state)
            messages = self._consume_messages_locked()
            self._set_state_locked("running")
            return messages

    def finish_agent_execution(self) -> None:
        """Mark a naturally completed execution as ``idle``.

        Raises:
            InteractionStateError: A branch is still held at a boundary.
        """
        with self._condition:
            if self._state == "paused" and self._waiting:
                raise InteractionStateError(
                    "Cannot finish an execution while a branch is paused at a boundary.",
                    action="finish", state=self._state)
            self._cancellers.clear()
            self._set_state_locked("idle")
            self._condition.notify_all()

    @contextmanager
    def wait(self) -> Iterator[list[PendingMessage]]:
        """Stop at a safe boundary while a pause is asked; yield the queued messages.

        Returns at once while running; while pausing or interrupting, enters
        ``paused`` and blocks until a release (resume, a message, a branch
        transition). Input queued before the boundary releases it at once.

        Raises:
            InteractionStateError: No execution is active.
        """
        with self._condition:
            self._check_active("wait at")
            self._hold_while_asked_locked()
            messages = self._consume_messages_locked()
        yield messages

    def pause_asked(self) -> bool:
        """A boundary of a runtime that holds branches on its threads (embedded): hold here?

        The question the scheduler's gate asks (:func:`srh_core.agent.scheduler.gate`):
        True while a pause or a force-pause is asked and no input is queued; input
        queued releases the pause (False). Nothing waits and nothing is consumed:
        the runtime holds the branch with :meth:`wait_release` once no step is in
        flight, and the branch takes its messages with :meth:`pass_boundary`.

        Raises:
            InteractionStateError: No execution is active.
        """
        with self._condition:
            self._check_active("hold at")
            return self._pause_asked_locked()

    def wait_release(self) -> None:
        """Hold the run (``paused``) until a release: resume, a message, a branch transition.

        Returns at once when the pause was released since :meth:`pause_asked`
        answered; the run's end releases it too.

        Raises:
            InteractionStateError: No execution is active.
        """
        with self._condition:
            self._check_active("wait at")
            self._hold_while_asked_locked()

    def hold(self) -> bool:
        """A boundary of a runtime that holds branches itself (the cluster): stop here?

        The non-blocking counterpart of :meth:`wait` for a runtime whose held
        branches must hold no thread: while a pause is asked and no input is
        queued, enter ``paused`` and return True (the caller parks the branch
        and resumes it later); input queued releases the pause (False). Nothing
        is consumed: the branch takes its messages with :meth:`pass_boundary`.

        Raises:
            InteractionStateError: No execution is active.
        """
        with self._condition:
            self._check_active("hold at")
            if not self._pause_asked_locked():
                return False
            self._set_state_locked("paused")
            return True

    def pass_boundary(self) -> list[PendingMessage]:
        """Cross a boundary without waiting: the queued messages (input releases a pause).

        For a runtime that already decided, with :meth:`hold`, that the branch
        goes on; a pause asked since then takes effect at the next boundary.

        Raises:
            InteractionStateError: No execution is active.
        """
        with self._condition:
            self._check_active("pass")
            if self._state != "running" and self._has_boundary_input_locked():
                self._release_locked()
            return self._consume_messages_locked()

    def _check_active(self, verb: str) -> None:
        if self._state == "idle":
            raise InteractionStateError(f"Cannot {verb} an agent boundary: no execution is "
                                        "running (state idle).", action="wait", state="idle")

    def _pause_asked_locked(self) -> bool:
        if self._state == "running":
            return False
        if self._has_boundary_input_locked():
            self._release_locked()
            return False
        return True

    def _hold_while_asked_locked(self) -> None:
        if self._state != "running" and not self._has_boundary_input_locked():
            self._hold_locked()
        elif self._state != "running":
            self._release_locked()

    def _hold_locked(self) -> None:
        generation = self._release_generation
        self._waiting += 1  # before the state change, so its event says a branch is held
        try:
            self._set_state_locked("paused")
            while self._release_generation == generation and self._state != "idle":
                self._condition.wait(_WAIT_SLICE_SECONDS)
        finally:
            self._waiting -= 1

    @contextmanager
    def cancellable(self, cancel: Callable[[], None]) -> Iterator[None]:
        """Register ``cancel`` for the blocking operation inside the block.

        A force-pause calls every registered callback; one registered while a
        force-pause is already interrupting is called at once. Several may be
        registered at a time (one per concurrent branch).
        """
        with self._condition:
            key = id(cancel)
            while key in self._cancellers:
                key += 1
            self._cancellers[key] = cancel
            interrupting = self._state == "interrupting"
        if interrupting:
            _call_quietly(cancel)
        try:
            yield
        finally:
            with self._condition:
                self._cancellers.pop(key, None)

    # ------------------------------------------------------------ events
    def publish_event(self, kind: InteractionEventKind, payload: Mapping[str, Any]) -> Event:
        """Append one event to the timeline; return the stored event.

        Raises:
            ValueError: ``kind`` is not a supported event kind.
        """
        check_event_kind(kind)
        with self._condition:
            return self._publish_locked(kind, payload)

    def get_recent_events(self, after_sequence: int = 0) -> dict[str, Any]:
        """Retained events newer than a consumer's cursor, with truncation metadata."""
        with self._condition:
            return self._timeline.after(after_sequence)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` with every event as it is published (in order, under the lock)."""
        with self._condition:
            self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with self._condition:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _publish_locked(self, kind: InteractionEventKind, payload: Mapping[str, Any]) -> Event:
        event = self._timeline.append(kind, payload)
        for listener in list(self._listeners):
            try:
                listener(dict(event))
            except Exception:  # an observer must not break the run it observes
                logger.exception("An interaction event listener failed on %s", kind)
        return event

    def _set_state_locked(self, state: InteractionState) -> None:
        previous, self._state = self._state, state
        if previous != state:
            self._publish_locked("state_changed", {"previous": previous, "current": state})

    def _consume_messages_locked(self) -> list[PendingMessage]:
        messages = list(self._messages)
        self._messages.clear()
        return messages

    def _has_boundary_input_locked(self) -> bool:
        return bool(self._messages)

    # ------------------------------------------------------- persistence
    def export_state(self) -> dict[str, Any]:
        """The durable part of the manager: state, queued messages, timeline (no locks)."""
        with self._condition:
            return {"version": SNAPSHOT_VERSION, "state": self._state,
                    "messages": [{"content": m.content, "created_at": m.created_at}
                                 for m in self._messages],
                    **self._timeline.export()}

    def restore_state(self, snapshot: Mapping[str, Any], *, live: bool = False) -> bool:
        """Restore a snapshot; work that was in flight when it was taken becomes an interruption.

        The state always comes back ``idle`` (the process that was running is
        gone); queued messages and the timeline come back, and the sequence
        continues where it stopped. Callbacks and locks are never restored.

        Args:
            snapshot: An :meth:`export_state` snapshot.
            live: The execution is still active elsewhere (the cluster keeps a
                run's state in Redis and each task loads it to apply one
                change): the state comes back as it was, with no interruption.

        Returns:
            Whether the snapshot was taken while an execution was active (and
            ``live`` is False).

        Raises:
            InteractionSnapshotError: The snapshot does not match the schema.
        """
        fields = set(snapshot) if isinstance(snapshot, Mapping) else set()
        if fields != self._SNAPSHOT_FIELDS:
            raise InteractionSnapshotError(
                f"An interaction snapshot must have the fields {sorted(self._SNAPSHOT_FIELDS)}; "
                f"missing {sorted(self._SNAPSHOT_FIELDS - fields)}, unexpected "
                f"{sorted(fields - self._SNAPSHOT_FIELDS)}.")
        if snapshot["version"] != SNAPSHOT_VERSION:
            raise InteractionSnapshotError(f"Unsupported interaction snapshot version "
                                           f"{snapshot['version']!r}; expected "
                                           f"{SNAPSHOT_VERSION}.")
        previous = snapshot["state"]
        if previous not in STATES:
            raise InteractionSnapshotError(f"Unknown persisted interaction state {previous!r}; "
                                           f"expected one of {', '.join(STATES)}.")
        timeline = EventTimeline.restore(snapshot)
        messages = _checked_messages(snapshot["messages"])
        with self._condition:
            self._timeline, self._messages = timeline, deque(messages)
            self._state, self._waiting = "idle", 0
            self._cancellers.clear()
            if live:
                self._state = previous
                return False
            interrupted = previous != "idle"
            if interrupted:
                self._publish_locked("command_received", {
                    "action": "force_pause", "accepted": True, "restored_after_restart": True})
                self._publish_locked("state_changed", {"previous": previous, "current": "idle",
                                                       "interrupted": True})
            return interrupted


def _checked_messages(messages: Any) -> list[PendingMessage]:
    if not isinstance(messages, list):
        raise InteractionSnapshotError(
            f"Persisted messages must be a list. Got {type(messages).__name__} instead.")
    checked = []
    for item in messages:
        if (not isinstance(item, Mapping) or set(item) != {"content", "created_at"}
                or not isinstance(item["content"], str) or not item["content"]
                or not isinstance(item["created_at"], (int, float))
                or isinstance(item["created_at"], bool)):
            raise InteractionSnapshotError(
                "A persisted message must be {'content': non-empty str, 'created_at': number}. "
                f"Got {item!r:.200} instead.")
        checked.append(PendingMessage(item["content"], float(item["created_at"])))
    return checked


def _call_quietly(cancel: Callable[[], None]) -> None:
    try:
        cancel()
    except Exception:  # a cancel callback must not break the command that fired it
        logger.exception("A cancellation callback failed")
