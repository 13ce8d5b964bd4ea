"""ControlBridge: connects a run's InteractionManager to a ControlChannel.

Inside the run's process, a daemon thread receives commands from the
channel and applies them to the manager (so a force-pause arrives while a
model request is in flight, not only at boundaries); every event the
manager publishes is appended to the channel as it happens, and the run's
control state (status, manager snapshot, command cursor) is saved whenever
the state changes or a command arrives. A refused command becomes a
``command_received`` event with ``accepted: false`` and the reason, so the
controller sees why.

On start the bridge restores the manager from the channel's saved state
(queued messages survive a restart; work in flight becomes an
interruption) and continues the event sequence after the last published
event, so readers' cursors stay valid across a resumed run.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from srh_core.interactive.channel import ControlChannel, ControlCommand, command_fields
from srh_core.interactive.errors import InteractionError
from srh_core.interactive.events import Event
from srh_core.interactive.manager import InteractionManager

logger = logging.getLogger("srh.runtime")

DEFAULT_POLL_SECONDS = 0.1
_SAVE_ON = frozenset({"state_changed", "command_received", "execution_completed",
                      "execution_failed"})


class ControlBridge:
    """Pumps ``channel`` into ``manager`` on a thread; publishes the manager's events.

    Args:
        manager: The run's manager.
        channel: Where commands come from and events go.
        poll_seconds: Longest wait for a command before checking for stop.
    """

    def __init__(self, manager: InteractionManager, channel: ControlChannel, *,
                 poll_seconds: float = DEFAULT_POLL_SECONDS) -> None:
        self.manager = manager
        self.channel = channel
        self.poll_seconds = poll_seconds
        self._cursor: str | None = None
        self._active = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Restore, apply the commands already waiting, then listen on a thread."""
        if self._thread is not None:
            return
        saved = self.channel.load_state() or {}
        self._cursor = saved.get("cursor")
        self._active = True
        self.manager.add_listener(self._on_event)
        self._restore(saved.get("manager"))
        self._pump(0.0)
        self._save()
        self._thread = threading.Thread(target=self._listen, name="srh-control-bridge",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and save the final state (``active: false``)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None
        self._active = False
        self._save()
        self.manager.remove_listener(self._on_event)

    # ------------------------------------------------------------ internals
    def _restore(self, snapshot: Any) -> None:
        last = self.channel.last_sequence()
        state = dict(snapshot) if isinstance(snapshot, dict) else self.manager.export_state()
        state["next_sequence"] = max(int(state.get("next_sequence") or 1), last + 1)
        try:
            self.manager.restore_state(state)
        except InteractionError as error:
            logger.warning("The saved control state is unusable (%s); starting afresh", error)
            fresh = self.manager.export_state()
            self.manager.restore_state({**fresh, "next_sequence": max(
                fresh["next_sequence"], last + 1)})

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                self._pump(self.poll_seconds)
            except Exception:  # the listener must outlive a bad read; the run goes on
                logger.exception("The control bridge failed to read commands")
                self._stop.wait(1.0)

    def _pump(self, timeout: float) -> None:
        commands, self._cursor = self.channel.receive(self._cursor, timeout)
        for command in commands:
            self._apply(command)

    def _apply(self, command: ControlCommand) -> None:
        try:
            self.manager.command(command.action, command.message, command_id=command.id,
                                 **command_fields(command))
        except InteractionError as error:
            self.manager.publish_event("command_received", {
                "action": command.action, "id": command.id, "accepted": False,
                "error": str(error)})

    def _on_event(self, event: Event) -> None:
        self.channel.publish([event])
        if event["kind"] in _SAVE_ON:
            self._save()

    def _save(self) -> None:
        # The channel already holds every event; the snapshot keeps only the cursor of them.
        snapshot = self.manager.export_state()
        snapshot.update(events=[], discarded_through=snapshot["next_sequence"] - 1)
        try:
            self.channel.save_state({"status": {**self.manager.status(), "active": self._active},
                                     "manager": snapshot, "cursor": self._cursor})
        except OSError as error:
            logger.warning("Cannot save the control state: %s", error)
