"""The event timeline of one interactive run: bounded, ordered, read by cursor.

Every event is ``{"seq", "id", "kind", "timestamp", "payload"}``: ``seq``
increases by one per published event and is the consumer's cursor;
``payload`` is JSON. The timeline keeps the newest ``capacity`` events. A
consumer asks for the events after the last ``seq`` it saw and is told when
some of them were discarded (``truncated``) or when its cursor is ahead of
the timeline (``cursor_reset``: the producer restarted without its history),
so it knows to reload instead of silently missing events.

Streamed deltas of one model response (``assistant_delta`` with a
``response_id``) replace each other, and the response's terminal event
removes them: a page that reloads replays each response once, not every
snapshot of it. Removing them does not count as truncation.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, cast, get_args

from srh_core.interactive.errors import InteractionSnapshotError
from srh_core.types import json_value

InteractionEventKind: TypeAlias = Literal[
    "prompt_added",
    "context",
    "assistant_started",
    "assistant_delta",
    "assistant_completed",
    "assistant_failed",
    "tool_started",
    "tool_completed",
    "settings_applied",
    "settings_failed",
    "workspace_changed",
    "execution_completed",
    "execution_failed",
    "command_received",
    "state_changed",
    "search_position_changed",
    "topk_updated",
]
EVENT_KINDS: frozenset[str] = frozenset(get_args(InteractionEventKind))
EVENT_FIELDS = frozenset({"seq", "id", "kind", "timestamp", "payload"})
DEFAULT_EVENT_CAPACITY = 1000
_DELTA_KIND = "assistant_delta"
_TERMINAL_KINDS = frozenset({"assistant_completed", "assistant_failed"})

Event = dict[str, Any]


def check_event_kind(kind: str) -> InteractionEventKind:
    """Return ``kind`` when it is a supported event kind.

    Raises:
        ValueError: For any other kind (the message lists the supported ones).
    """
    if kind not in EVENT_KINDS:
        raise ValueError(f"Unsupported interaction event kind {kind!r}; supported kinds: "
                         f"{', '.join(sorted(EVENT_KINDS))}.")
    return cast(InteractionEventKind, kind)


class EventTimeline:
    """The newest ``capacity`` events, with sequence cursors and truncation metadata.

    Not thread-safe on its own: :class:`~srh_core.interactive.InteractionManager`
    calls it under its lock.

    Args:
        capacity: Maximum number of retained events (>= 1).
    """

    def __init__(self, capacity: int = DEFAULT_EVENT_CAPACITY) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"event_capacity must be an int >= 1. Got {capacity!r} instead.")
        self.capacity = capacity
        self._events: deque[Event] = deque(maxlen=capacity)
        self.next_sequence = 1
        self.discarded_through = 0

    @property
    def last_sequence(self) -> int:
        return self.next_sequence - 1

    def append(self, kind: InteractionEventKind, payload: Mapping[str, Any]) -> Event:
        """Store one event; return a copy of it."""
        event: Event = {"seq": self.next_sequence, "id": uuid.uuid4().hex, "kind": kind,
                        "timestamp": time.time(), "payload": json_value(dict(payload))}
        self.next_sequence += 1
        response_id = event["payload"].get("response_id")
        if response_id and kind == _DELTA_KIND:
            self._drop_stream_events(response_id, {_DELTA_KIND})
        elif response_id and kind in _TERMINAL_KINDS:
            self._drop_stream_events(response_id, {_DELTA_KIND})
        if len(self._events) == self.capacity:
            self.discarded_through = max(self.discarded_through, self._events[0]["seq"])
        self._events.append(event)
        return dict(event)

    def after(self, after_sequence: int = 0) -> dict[str, Any]:
        """The retained events newer than ``after_sequence``, and what the caller missed.

        Returns:
            ``events``; ``truncated`` (events after the cursor were discarded);
            ``discarded_through`` (the newest discarded sequence);
            ``cursor_reset`` (the cursor is ahead of this timeline, so every
            retained event is returned); ``last_seq``; ``server_time``.
        """
        if isinstance(after_sequence, bool) or not isinstance(after_sequence, int) \
                or after_sequence < 0:
            raise ValueError(f"after_sequence must be an int >= 0. Got {after_sequence!r} "
                             "instead.")
        cursor_reset = after_sequence > self.last_sequence
        cursor = 0 if cursor_reset else after_sequence
        return {"events": [dict(event) for event in self._events if event["seq"] > cursor],
                "truncated": cursor < self.discarded_through,
                "discarded_through": self.discarded_through, "cursor_reset": cursor_reset,
                "last_seq": self.last_sequence, "server_time": time.time()}

    def export(self) -> dict[str, Any]:
        return {"events": [dict(event) for event in self._events],
                "next_sequence": self.next_sequence,
                "discarded_through": self.discarded_through, "event_capacity": self.capacity}

    @classmethod
    def restore(cls, snapshot: Mapping[str, Any]) -> EventTimeline:
        """Rebuild a timeline from :meth:`export`; every field is checked.

        Raises:
            InteractionSnapshotError: A field is missing, mistyped or inconsistent.
        """
        capacity = snapshot["event_capacity"]
        if not _is_int(capacity) or capacity < 1:
            raise InteractionSnapshotError(
                f"Persisted event_capacity must be an int >= 1. Got {capacity!r} instead.")
        timeline = cls(capacity)
        events = _checked_events(snapshot["events"])
        timeline._events.extend(events[-capacity:])
        discarded = snapshot["discarded_through"]
        if not _is_int(discarded) or discarded < 0:
            raise InteractionSnapshotError(
                f"Persisted discarded_through must be an int >= 0. Got {discarded!r} instead.")
        newest = events[-1]["seq"] if events else 0
        following = snapshot["next_sequence"]
        if not _is_int(following) or following <= max(newest, discarded):
            raise InteractionSnapshotError(
                f"Persisted next_sequence {following!r} must be an int above the newest "
                f"retained ({newest}) and discarded ({discarded}) sequences.")
        timeline.next_sequence, timeline.discarded_through = following, discarded
        if len(events) > capacity:
            timeline.discarded_through = max(discarded, events[-capacity - 1]["seq"])
        return timeline

    def _drop_stream_events(self, response_id: str, kinds: set[str]) -> None:
        kept = [event for event in self._events
                if not (event["kind"] in kinds
                        and event["payload"].get("response_id") == response_id)]
        if len(kept) != len(self._events):
            self._events = deque(kept, maxlen=self.capacity)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checked_events(events: Any) -> list[Event]:
    if not isinstance(events, list):
        raise InteractionSnapshotError(
            f"Persisted events must be a list. Got {type(events).__name__} instead.")
    checked = [_checked_event(event) for event in events]
    sequences = [event["seq"] for event in checked]
    if any(later <= earlier for earlier, later in zip(sequences, sequences[1:], strict=False)):
        raise InteractionSnapshotError("Persisted event sequences must strictly increase.")
    return checked


def _checked_event(event: Any) -> Event:
    if not isinstance(event, Mapping) or set(event) != EVENT_FIELDS:
        keys = sorted(event) if isinstance(event, Mapping) else type(event).__name__
        raise InteractionSnapshotError(
            f"A persisted event must have exactly the fields {sorted(EVENT_FIELDS)}. "
            f"Got {keys} instead.")
    if event["kind"] not in EVENT_KINDS:
        raise InteractionSnapshotError(f"A persisted event has the unsupported kind "
                                       f"{event['kind']!r}.")
    problems = [name for name, ok in (
        ("seq", _is_int(event["seq"]) and event["seq"] >= 1),
        ("id", isinstance(event["id"], str) and bool(event["id"])),
        ("timestamp", isinstance(event["timestamp"], (int, float))
         and not isinstance(event["timestamp"], bool)),
        ("payload", isinstance(event["payload"], Mapping))) if not ok]
    if problems:
        raise InteractionSnapshotError(
            f"A persisted event has invalid field(s) {problems}: {dict(event)!r:.200}")
    return {**event, "payload": dict(event["payload"])}

