"""The Redis side of an interactive run's controls: state, command log, events, parked steps.

:class:`ControlRecords` is ``RedisRunStore.controls``: the one owner of the
run's ``control*`` keys. It knows the keys and how to change them atomically, not the rules: the
state machine lives in :mod:`srh_core.interactive`, applied by
:mod:`srh_workers.control`, which hands the store a function from the state
it read to a :class:`ControlChange`.

Keys (see :data:`~srh_workers.store.keys.KEY_SCHEMA`):

- ``control``: the state JSON (manager snapshot, ledger, options, the
  force-pause flag), changed only by :meth:`ControlRecords.update_control`,
  an optimistic transaction (WATCH, read, decide in Python, MULTI, EXEC,
  again on a conflict), so concurrent controllers and step tasks serialise;
- ``control:commands``: every command received (XADD MAXLEN ~);
- ``control:events``: the timeline; an entry's id is ``<seq>-0`` and seq
  comes from ``control:seq`` inside one Lua script, so events are numbered in
  stream order whichever process publishes them (MAXLEN ~ caps it);
- ``control:held``: the parked steps of a paused run (``step:R:C:L`` or
  ``run``); a release takes them all in the transaction that releases;
- ``control:taken``: a step's boundary decision by ``R:C:L``, so a
  re-delivered step task inserts the same messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.exceptions import WatchError

from srh_core.errors import SearchStateError
from srh_core.jsonio import dumps
from srh_workers.store.scripts import reply_text

if TYPE_CHECKING:
    from redis import Redis

    from srh_workers.store.flow import FlowState
    from srh_workers.store.keys import RunKeys
    from srh_workers.store.scripts import RunScripts

COMMAND_LOG_LENGTH = 1000
EVENT_STREAM_LENGTH = 5000
UPDATE_ATTEMPTS = 100
READ_EVENTS_COUNT = 1000


@dataclass
class ControlChange:
    """What one control update writes, decided from the state it read.

    Attributes:
        state: The new state (None leaves it).
        events: Timeline events to publish (without seq; Redis numbers them).
        command: A command to append to the command log.
        hold: A step to park in the held set.
        release: Take every parked step out of the held set (they are returned).
        taken: The boundary decision to keep for the update's ``taken_field``.
        unlock: Delete the run-granularity lock (when the updater's owner holds it).
        outcome: Anything the caller wants back.
    """

    state: Mapping[str, Any] | None = None
    events: Sequence[Mapping[str, Any]] = ()
    command: Mapping[str, Any] | None = None
    hold: str | None = None
    release: bool = False
    taken: Mapping[str, Any] | None = None
    unlock: bool = False
    outcome: Any = None

    @property
    def writes(self) -> bool:
        return bool(self.state is not None or self.events or self.command is not None
                    or self.hold is not None or self.release or self.taken is not None
                    or self.unlock)


@dataclass(frozen=True, slots=True)
class ControlUpdate:
    """What :meth:`ControlRecords.update_control` did: the change and the released steps."""

    change: ControlChange | None
    released: tuple[str, ...] = ()

    @property
    def outcome(self) -> Any:
        return None if self.change is None else self.change.outcome


@dataclass(frozen=True, slots=True)
class ControlView:
    """One consistent read of the controls (for a status)."""

    state: dict[str, Any] | None
    held: tuple[str, ...]
    last_seq: int
    finished: bool


Decide = Callable[[dict[str, Any] | None, dict[str, Any] | None], ControlChange | None]


def _json(raw: Any) -> dict[str, Any] | None:
    return None if raw is None else dict(json.loads(raw))


class ControlRecords:
    """The control keys of one run (``RedisRunStore.controls``).

    Args:
        client: A redis-py client.
        keys: The run's key names.
        scripts: The store's registered Lua scripts.
        flow: The run's flow state, whose whole-run lock a change may release in the
            same transaction.
    """

    def __init__(self, client: Redis, keys: RunKeys, scripts: RunScripts,
                 flow: FlowState) -> None:
        self.client = client
        self.keys = keys
        self._scripts = scripts
        self.flow = flow

    def control_state(self) -> dict[str, Any] | None:
        """The control state, or None for a run without controls."""
        return _json(self.client.get(self.keys.control))

    def control_reads(self, taken_field: str | None = None
                      ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The state and a step's kept boundary decision, in one round trip."""
        if taken_field is None:
            return self.control_state(), None
        pipe = self.client.pipeline(transaction=False)
        pipe.get(self.keys.control)
        pipe.hget(self.keys.control_taken, taken_field)
        state, taken = pipe.execute()
        return _json(state), _json(taken)

    def update_control(self, decide: Decide, *, taken_field: str | None = None,
                       lock_owner: str | None = None) -> ControlUpdate:
        """Change the controls atomically: ``decide(state, taken)`` says how, from what it read.

        ``decide`` may run several times (after a conflict with another
        updater); only the change of the run that commits is written, events
        included. It returns None to write nothing.

        Args:
            decide: From the state (None when there is none) and the kept
                decision of ``taken_field`` to the change.
            taken_field: The step (``R:C:L``) whose kept decision ``decide`` reads.
            lock_owner: The whole-run task's lock owner; a change with
                ``unlock`` deletes the lock if this owner holds it.

        Raises:
            SearchStateError: Too many conflicting updaters.
        """
        keys = self.keys
        for _ in range(UPDATE_ATTEMPTS):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    lock = self.flow.lock_key
                    pipe.watch(*[keys.control] + ([lock] if lock_owner else []))
                    state = _json(pipe.get(keys.control))
                    taken = _json(pipe.hget(keys.control_taken, taken_field)) \
                        if taken_field else None
                    holder = pipe.get(lock) if lock_owner else None
                    change = decide(state, taken)
                    if change is None or not change.writes:
                        pipe.unwatch()
                        return ControlUpdate(change)
                    pipe.multi()
                    released_at = self._queue_change(pipe, change, taken_field,
                                                     holder is not None
                                                     and reply_text(holder) == lock_owner)
                    replies = pipe.execute()
                except WatchError:
                    continue
            released = () if released_at is None else tuple(
                sorted(reply_text(member) for member in replies[released_at]))
            return ControlUpdate(change, released)
        raise SearchStateError(f"Run {self.keys.run_id}: the controls changed "
                               f"{UPDATE_ATTEMPTS} times during one update.")

    def _queue_change(self, pipe: Any, change: ControlChange, taken_field: str | None,
                      owns_lock: bool) -> int | None:
        """Queue the change's writes on a MULTI pipeline; the index of the released reply."""
        keys, released_at, queued = self.keys, None, 0
        if change.state is not None:
            pipe.set(keys.control, dumps(dict(change.state)))
            queued += 1
        if change.command is not None:
            pipe.xadd(keys.control_commands, {"command": dumps(dict(change.command))},
                      maxlen=COMMAND_LOG_LENGTH, approximate=True)
            queued += 1
        if change.hold is not None:
            pipe.sadd(keys.control_held, change.hold)
            queued += 1
        if change.release:
            pipe.smembers(keys.control_held)
            pipe.delete(keys.control_held)
            released_at, queued = queued, queued + 2
        if change.taken is not None and taken_field is not None:
            pipe.hset(keys.control_taken, taken_field, dumps(dict(change.taken)))
        if change.unlock and owns_lock:
            self.flow.queue_unlock(pipe)
        if change.events:
            self._publish(change.events, pipe)
        return released_at

    def _publish(self, events: Sequence[Mapping[str, Any]], client: Any = None) -> int:
        argv = [EVENT_STREAM_LENGTH, *(dumps(dict(event)) for event in events)]
        reply = self._scripts.call("publish_events", (self.keys.control_events,
                                                      self.keys.control_seq), argv, client)
        return 0 if client is not None else int(reply)

    def publish_events(self, events: Sequence[Mapping[str, Any]]) -> int:
        """Append events to the timeline (numbered by Redis); the last seq."""
        return self._publish(events)

    def first_event_seq(self) -> int | None:
        """The seq of the oldest retained event (None when the stream is empty)."""
        entries = self.client.xrange(self.keys.control_events, "-", "+", count=1)
        return int(reply_text(entries[0][0]).split("-", 1)[0]) if entries else None

    def last_event_seq(self) -> int:
        return int(self.client.get(self.keys.control_seq) or 0)

    def read_events(self, after: int = 0, count: int = READ_EVENTS_COUNT
                    ) -> list[dict[str, Any]]:
        """Up to ``count`` retained events with ``seq > after``, oldest first (``seq`` set)."""
        entries = self.client.xrange(self.keys.control_events, f"{max(0, after) + 1}-0", "+",
                                     count=count)
        events = []
        for entry_id, fields in entries:
            event = json.loads(fields[b"event"] if b"event" in fields else fields["event"])
            events.append({"seq": int(reply_text(entry_id).split("-", 1)[0]), **event})
        return events

    def command_log(self, after: str | None = None, count: int = 100,
                    block_ms: int | None = None) -> list[tuple[str, dict[str, Any]]]:
        """Logged commands after the stream id ``after`` (None: from the start)."""
        reply = self.client.xread({self.keys.control_commands: after or "0-0"}, count=count,
                                  block=block_ms)
        entries = reply[0][1] if reply else []
        return [(reply_text(entry_id), json.loads(fields[b"command"]
                                                  if b"command" in fields
                                                  else fields["command"]))
                for entry_id, fields in entries]

    def control_view(self) -> ControlView:
        """State, parked steps, last seq and whether the run finished, read atomically."""
        pipe = self.client.pipeline(transaction=True)
        pipe.get(self.keys.control)
        pipe.smembers(self.keys.control_held)
        pipe.get(self.keys.control_seq)
        pipe.exists(self.keys.result)
        state, held, seq, finished = pipe.execute()
        return ControlView(_json(state), tuple(sorted(reply_text(m) for m in held)),
                           int(seq or 0), bool(finished))

    def held_steps(self) -> list[str]:
        return sorted(reply_text(m) for m in self.client.smembers(self.keys.control_held))

    def delete_controls(self) -> None:
        """Remove the control keys (a submission that failed after opening them)."""
        keys = self.keys
        self.client.delete(keys.control, keys.control_commands, keys.control_events,
                           keys.control_seq, keys.control_held, keys.control_taken)


__all__ = ["ControlChange", "ControlRecords", "ControlUpdate", "ControlView"]
