"""SRInteractionManager: the interaction manager with the search's branch commands.

``next_c`` and ``next_r`` are queued like messages and, like them, release a
pause; see :mod:`srh_core.interactive.manager` for the common state machine.
``settings`` queues runtime settings (``{name: value}``) in any state, for the
agent to apply at its next boundary (:func:`~srh_core.interactive.take_boundary`);
they release nothing: which names and values are accepted is the agent's to
say there (``settings_applied`` / ``settings_failed``).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, get_args

from srh_core.interactive.errors import InteractionSnapshotError, InvalidCommandError
from srh_core.interactive.events import DEFAULT_EVENT_CAPACITY
from srh_core.interactive.manager import (
    MAX_SETTINGS_CHARS,
    SEARCH_TRANSITIONS,
    InteractionManager,
    SearchTransition,
    SRInteractionAction,
)


class SRInteractionManager(InteractionManager):
    """Interaction manager with the search's branch commands, ``next_c`` and ``next_r``.

    ``next_c`` ends the current branch and moves on to the next one;
    ``next_r`` ends the current restart (every branch of it) and starts the
    next. Only the newest requested transition is kept; the agent takes it
    at its next boundary with :meth:`consume_search_transition`.
    """

    ACTIONS: tuple[str, ...] = get_args(SRInteractionAction)
    _SNAPSHOT_FIELDS = InteractionManager._SNAPSHOT_FIELDS | {"search_transitions"}

    def __init__(self, *, event_capacity: int = DEFAULT_EVENT_CAPACITY) -> None:
        super().__init__(event_capacity=event_capacity)
        self._transitions: deque[SearchTransition] = deque(maxlen=1)
        self._settings: list[dict[str, Any]] = []

    def command(self, action: str, message: str | None = None, *,
                command_id: str | None = None,
                settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """:meth:`InteractionManager.command`, and ``settings`` (queued for the boundary).

        Raises:
            InvalidCommandError: As the base, and settings that are not a non-empty
                JSON object of names (or given to another action).
        """
        if action != "settings":
            return super().command(action, message, command_id=command_id, settings=settings)
        changes = checked_settings(settings)
        with self._condition:
            self._settings.append(changes)
            payload: dict[str, Any] = {"action": action, "accepted": True, "settings": changes}
            if command_id is not None:
                payload["id"] = command_id
            self._publish_locked("command_received", payload)
            self._condition.notify_all()
            return self.status()

    def consume_settings(self) -> list[dict[str, Any]]:
        """Take the queued settings commands, oldest first."""
        with self._condition:
            taken, self._settings = self._settings, []
            return taken

    def _apply_locked(self, action: str) -> list[Callable[[], None]]:
        if action not in SEARCH_TRANSITIONS:
            return super()._apply_locked(action)
        if self._state == "idle":
            self._refuse(action, "no execution is running (state idle)")
        self._transitions.append(action)  # type: ignore[arg-type]
        if self._state == "paused":
            self._release_locked()
        return []

    def consume_search_transition(self) -> SearchTransition | None:
        """Take the pending branch transition, or None when there is none."""
        with self._condition:
            return self._transitions.popleft() if self._transitions else None

    def _has_boundary_input_locked(self) -> bool:
        return bool(self._messages or self._transitions)

    def status(self) -> dict[str, Any]:
        """:meth:`InteractionManager.status` plus ``pending_transition``."""
        with self._condition:
            return {**super().status(),
                    "pending_transition": self._transitions[-1] if self._transitions else None,
                    "pending_settings": len(self._settings)}

    def export_state(self) -> dict[str, Any]:
        with self._condition:
            return {**super().export_state(), "search_transitions": list(self._transitions),
                    "queued_settings": [dict(c) for c in self._settings]}

    def restore_state(self, snapshot: Mapping[str, Any], *, live: bool = False) -> bool:
        transitions = snapshot.get("search_transitions") if isinstance(snapshot, Mapping) \
            else None
        if not isinstance(transitions, list) or any(t not in SEARCH_TRANSITIONS
                                                    for t in transitions):
            raise InteractionSnapshotError(
                f"Persisted search_transitions must be a list of {SEARCH_TRANSITIONS}. Got "
                f"{transitions!r} instead.")
        queued = snapshot.get("queued_settings", [])  # absent in older snapshots
        if not isinstance(queued, list):
            raise InteractionSnapshotError(f"Persisted queued_settings must be a list. Got "
                                           f"{queued!r:.120} instead.")
        try:
            queued = [checked_settings(changes) for changes in queued]
        except InvalidCommandError as error:
            raise InteractionSnapshotError(f"Persisted queued_settings: {error}") from error
        interrupted = super().restore_state(
            {k: v for k, v in snapshot.items() if k != "queued_settings"}, live=live)
        with self._condition:
            self._transitions = deque(transitions[-1:], maxlen=1)
            self._settings = queued
        return interrupted


def checked_settings(settings: Any) -> dict[str, Any]:
    """A settings command's ``{name: value}``: a non-empty JSON object, bounded in size.

    Raises:
        InvalidCommandError: Anything else.
    """
    if not isinstance(settings, Mapping) or not settings or not all(
            isinstance(name, str) and name for name in settings):
        raise InvalidCommandError("A settings command needs a non-empty object of setting "
                                  f"names to values. Got {settings!r:.120} instead.",
                                  action="settings")
    try:
        text = json.dumps(dict(settings), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidCommandError(f"Settings must be JSON values: {error}.",
                                  action="settings") from error
    if len(text) > MAX_SETTINGS_CHARS:
        raise InvalidCommandError(f"A settings command has at most {MAX_SETTINGS_CHARS} "
                                  f"characters of JSON. Got {len(text)} instead.",
                                  action="settings")
    return json.loads(text)
