"""SRInteractionManager: the interaction manager with the search's branch commands.

``next_c`` and ``next_r`` are queued like messages and, like them, release a
pause; see :mod:`srh_core.interactive.manager` for the common state machine.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, get_args

from srh_core.interactive.errors import InteractionSnapshotError
from srh_core.interactive.events import DEFAULT_EVENT_CAPACITY
from srh_core.interactive.manager import (
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
                    "pending_transition": self._transitions[-1] if self._transitions else None}

    def export_state(self) -> dict[str, Any]:
        with self._condition:
            return {**super().export_state(), "search_transitions": list(self._transitions)}

    def restore_state(self, snapshot: Mapping[str, Any], *, live: bool = False) -> bool:
        transitions = snapshot.get("search_transitions") if isinstance(snapshot, Mapping) \
            else None
        if not isinstance(transitions, list) or any(t not in SEARCH_TRANSITIONS
                                                    for t in transitions):
            raise InteractionSnapshotError(
                f"Persisted search_transitions must be a list of {SEARCH_TRANSITIONS}. Got "
                f"{transitions!r} instead.")
        interrupted = super().restore_state(snapshot, live=live)
        with self._condition:
            self._transitions = deque(transitions[-1:], maxlen=1)
        return interrupted
