"""The controls as an agent's hooks see them, and the one rule of a step boundary.

:class:`~srh_core.interactive.SRAgentInteractive` reaches the researcher's
controls only through an :class:`AgentControls`: take what waits at the
step boundary, ask for a pause, publish an event, make a blocking call
cancellable. Where the interaction state lives decides the implementation:

- :class:`LocalControls`: an :class:`~srh_core.interactive.SRInteractionManager`
  in this process (the embedded runtime), and a :class:`~srh_core.interactive.ControlBridge`
  that pumps commands from a channel (the run directory by default); it is
  also the run's :class:`~srh_core.seams.PauseGate`: the embedded runner asks
  it through the scheduler's gate before a step opens and holds the branch
  on its thread until a release;
- ``srh_workers.control.RedisAgentControls``: the run's Redis keys (the
  cluster); the step task asks the same gate and parks a paused branch before
  it opens the step (a paused branch holds no worker).

So a boundary never waits: the pause was decided before the step opened.
Both decide a boundary with :func:`take_boundary`: a branch of a restart that
``next_r`` ended ends too; otherwise it takes the queued messages (inserted
before its next model request) or the pending ``next_c`` / ``next_r``, whose
messages are carried to the next branch's first request. Every boundary also
takes the queued runtime settings: the ledger logs them, and the decision
carries the whole log (an agent rebuilt for each task, on a cluster, replays
it onto the run's settings) and which entries are new (the taker publishes
``settings_applied`` / ``settings_failed`` for those).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from srh_core.interactive.bridge import ControlBridge
from srh_core.interactive.channel import ControlChannel, InProcessChannel
from srh_core.interactive.errors import InteractionSnapshotError
from srh_core.interactive.events import InteractionEventKind
from srh_core.interactive.manager import SEARCH_TRANSITIONS, PendingMessage, SearchTransition
from srh_core.interactive.run_dir_channel import RunDirectoryChannel
from srh_core.interactive.sr_manager import SRInteractionManager


@dataclass(frozen=True, slots=True)
class BoundaryDecision:
    """What a branch takes at its step boundary.

    Attributes:
        messages: The researcher's messages to insert before the next model request.
        transition: "next_c" or "next_r" when the branch ends here (as done).
    """

    messages: tuple[PendingMessage, ...] = ()
    transition: SearchTransition | None = None
    settings_log: tuple[dict[str, Any], ...] = ()
    new_settings: int = 0

    @property
    def empty(self) -> bool:
        """Nothing taken here (the settings log in force is not something taken)."""
        return not self.messages and self.transition is None and not self.new_settings

    @property
    def taken_settings(self) -> tuple[dict[str, Any], ...]:
        """The settings commands this boundary took (the log's last ``new_settings``)."""
        return self.settings_log[len(self.settings_log) - self.new_settings:]

    def to_dict(self) -> dict[str, Any]:
        return {"messages": message_dicts(self.messages), "transition": self.transition,
                "settings_log": [dict(c) for c in self.settings_log],
                "new_settings": self.new_settings}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BoundaryDecision:
        transition = data.get("transition")
        if transition is not None and transition not in SEARCH_TRANSITIONS:
            raise InteractionSnapshotError(f"Unknown branch transition {transition!r}.")
        log = settings_log_from(data.get("settings_log") or [])
        new = data.get("new_settings", 0)
        if isinstance(new, bool) or not isinstance(new, int) or not 0 <= new <= len(log):
            raise InteractionSnapshotError(f"new_settings must be an int in 0..{len(log)}. "
                                           f"Got {new!r}.")
        return cls(tuple(messages_from(data.get("messages") or [])), transition, log, new)


def settings_log_from(records: Any) -> tuple[dict[str, Any], ...]:
    """A persisted settings log: a list of non-empty objects.

    Raises:
        InteractionSnapshotError: Anything else.
    """
    if not isinstance(records, list) or not all(isinstance(r, Mapping) and r for r in records):
        raise InteractionSnapshotError(f"A settings log must be a list of non-empty objects. "
                                       f"Got {records!r:.120} instead.")
    return tuple(dict(r) for r in records)


def message_dicts(messages: Iterable[PendingMessage]) -> list[dict[str, Any]]:
    return [{"content": m.content, "created_at": m.created_at} for m in messages]


def messages_from(records: Iterable[Mapping[str, Any]]) -> list[PendingMessage]:
    """Messages from :func:`message_dicts` records.

    Raises:
        InteractionSnapshotError: A record is not ``{content: str, created_at: number}``.
    """
    try:
        return [PendingMessage(str(r["content"]), float(r["created_at"])) for r in records]
    except (KeyError, TypeError, ValueError) as error:
        raise InteractionSnapshotError(f"A persisted message is malformed: {error!r}.") \
            from error


class ControlLedger:
    """What the controls keep besides the manager: carried messages and skipped restarts.

    Thread-safe (branches of the embedded runtime take boundaries on threads).

    Args:
        carried: Messages waiting for the next branch's first request (taken
            with a ``next_c`` / ``next_r``, or queued before the run started).
        skipped: Restarts that a ``next_r`` ended.
        settings_log: The runtime settings commands taken so far, in order.
    """

    def __init__(self, carried: Iterable[PendingMessage] = (), skipped: Iterable[int] = (),
                 settings_log: Iterable[Mapping[str, Any]] = ()) -> None:
        self._lock = threading.Lock()
        self._carried = list(carried)
        self._skipped = set(skipped)
        self._settings_log = [dict(c) for c in settings_log]

    def log_settings(self, taken: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
        """Append the settings commands a boundary took; the whole log after them."""
        with self._lock:
            self._settings_log += [dict(c) for c in taken]
            return tuple(dict(c) for c in self._settings_log)

    @property
    def settings_log(self) -> tuple[dict[str, Any], ...]:
        with self._lock:
            return tuple(dict(c) for c in self._settings_log)

    def skips(self, R: int) -> bool:
        with self._lock:
            return R in self._skipped

    def carry(self, messages: Iterable[PendingMessage]) -> None:
        with self._lock:
            self._carried = list(messages) + self._carried

    def settle(self, messages: Iterable[PendingMessage], transition: SearchTransition | None,
               R: int) -> BoundaryDecision:
        """The decision of a branch of restart R that took ``messages`` and ``transition``."""
        with self._lock:
            pending, self._carried = self._carried + list(messages), []
            if transition is None:
                return BoundaryDecision(tuple(pending))
            self._carried = pending  # they belong to the next branch's first request
            if transition == "next_r":
                self._skipped.add(R)
            return BoundaryDecision(transition=transition)

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"carried": message_dicts(self._carried),
                    "skipped_restarts": sorted(self._skipped),
                    "settings_log": [dict(c) for c in self._settings_log]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ControlLedger:
        skipped = data.get("skipped_restarts") or []
        if not all(isinstance(R, int) and not isinstance(R, bool) for R in skipped):
            raise InteractionSnapshotError(f"skipped_restarts must be ints. Got {skipped!r}.")
        return cls(messages_from(data.get("carried") or []), skipped,
                   settings_log_from(data.get("settings_log") or []))


def take_boundary(manager: SRInteractionManager, ledger: ControlLedger, R: int
                  ) -> BoundaryDecision:
    """The one rule of a step boundary, for every runtime; it never waits.

    Whether the step may open was decided before (the scheduler's gate, which
    holds a paused branch); here the branch takes what waits for it.

    Args:
        manager: The run's manager (started).
        ledger: The run's carried messages and skipped restarts.
        R: The branch's restart.
    """
    taken = manager.consume_settings()
    log = ledger.log_settings(taken)
    if ledger.skips(R):
        decision = BoundaryDecision(transition="next_r")
    else:
        messages = manager.pass_boundary()
        decision = ledger.settle(messages, manager.consume_search_transition(), R)
    return replace(decision, settings_log=log, new_settings=len(taken))


@runtime_checkable
class AgentControls(Protocol):
    """The controls of one run as :class:`~srh_core.interactive.SRAgentInteractive` uses them."""

    @property
    def cancel_signal(self) -> Any:
        """Event-like (``is_set()``): a force-pause is cutting work (tools check it)."""
        ...

    def start(self, save_path: str | None) -> None:
        """The run's first boundary is near: begin (idempotent)."""
        ...

    def boundary(self, R: int, C: int, L: int) -> BoundaryDecision:
        """What branch (R, C) takes before opening step L (see :func:`take_boundary`)."""
        ...

    def request_pause(self) -> None:
        """Pause at the next boundary (after a tool-free reply, say)."""
        ...

    def publish_event(self, kind: InteractionEventKind, payload: Mapping[str, Any]) -> None:
        ...

    def publish_events(self, events: Sequence[tuple[InteractionEventKind, Mapping[str, Any]]]
                       ) -> None:
        """Publish several events in order (one write where the timeline is remote)."""
        ...

    def cancellable(self, cancel: Callable[[], None]) -> AbstractContextManager[None]:
        """Call ``cancel`` if a force-pause comes while the block runs."""
        ...

    def finish(self, status: str | None, reason: str | None) -> None:
        """The run ended (its ``finished`` event): publish it and stop listening."""
        ...


class LocalControls:
    """The controls of a run in this process: a manager, and a channel pumped into it.

    Args:
        manager: The run's manager.
        channel: Where commands come from; None uses the run directory's
            files when the run has one (``save_path``); an
            :class:`~srh_core.interactive.InProcessChannel` needs no bridge.
    """

    def __init__(self, manager: SRInteractionManager, channel: ControlChannel | None = None
                 ) -> None:
        self.manager = manager
        self.channel = channel
        self.ledger = ControlLedger()
        self._lock = threading.Lock()
        self._bridge: ControlBridge | None = None
        self._started = False

    @property
    def cancel_signal(self) -> Any:
        return self.manager.cancellation_signal

    def start(self, save_path: str | None) -> None:
        with self._lock:
            if self._started:
                return
            channel = self.channel
            if channel is None and save_path is not None:
                channel = RunDirectoryChannel(save_path)
            if channel is not None and not isinstance(channel, InProcessChannel):
                self._bridge = ControlBridge(self.manager, channel)
                self._bridge.start()
            self.ledger.carry(self.manager.start_agent_execution())
            self._started = True

    def boundary(self, R: int, C: int, L: int) -> BoundaryDecision:
        return take_boundary(self.manager, self.ledger, R)

    def paused(self) -> bool:
        """The :class:`~srh_core.seams.PauseGate` question: is a pause asked (no input queued)?"""
        return self.manager.pause_asked()

    def wait_release(self) -> None:
        """Hold the run until a resume, a message or a branch transition releases it."""
        self.manager.wait_release()

    def request_pause(self) -> None:
        self.manager.request_pause()

    def publish_event(self, kind: InteractionEventKind, payload: Mapping[str, Any]) -> None:
        self.manager.publish_event(kind, payload)

    def publish_events(self, events: Sequence[tuple[InteractionEventKind, Mapping[str, Any]]]
                       ) -> None:
        for kind, payload in events:
            self.manager.publish_event(kind, payload)

    def cancellable(self, cancel: Callable[[], None]) -> AbstractContextManager[None]:
        return self.manager.cancellable(cancel)

    def finish(self, status: str | None, reason: str | None) -> None:
        with self._lock:
            if not self._started:
                return
            manager = self.manager
            if manager.state != "idle":
                manager.finish_agent_execution()
            kind = "execution_failed" if status == "failed" else "execution_completed"
            manager.publish_event(kind, {"status": status, "reason": reason})
            if self._bridge is not None:
                self._bridge.stop()
            self._bridge, self._started = None, False
