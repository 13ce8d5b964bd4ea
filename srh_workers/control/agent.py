"""An interactive run's controls as its agent sees them on a worker: the run's Redis keys.

:class:`RedisAgentControls` is the :class:`~srh_core.interactive.AgentControls`
that :class:`~srh_core.interactive.SRAgentInteractive` gets in a step task (see
:func:`srh_workers.control.parking.agent_options`): the same hooks as
embedded, with the state in Redis. Its boundary never waits: the runtime
parked the branch before the step task opened the step when a pause was
asked (:func:`srh_workers.control.parking.park_step`). A force-pause reaches
work in flight through the run's force-pause flag: :class:`RedisCancelSignal`
(the context's ``cancel_event``, which tools check) reads it, and
``cancellable`` watches it on a thread and calls the hook's cancel (which
cancels the model request) when it is set.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from redis.exceptions import RedisError

from srh_core.api.cancel import cancel_when
from srh_core.interactive import BoundaryDecision
from srh_core.interactive.controls import settings_log_from
from srh_core.interactive.events import InteractionEventKind, check_event_kind
from srh_core.types import json_value
from srh_workers.control.state import boundary_taken, pause_requested, runs_freely
from srh_workers.store import RedisRunStore

logger = logging.getLogger("srh.workers.control")

SIGNAL_CACHE_SECONDS = 0.1
WATCH_SECONDS = 0.1


def timeline_event(kind: InteractionEventKind, payload: Mapping[str, Any]) -> dict[str, Any]:
    """One event as the timeline stores it, before Redis gives it its ``seq``."""
    return {"id": uuid.uuid4().hex, "kind": check_event_kind(kind), "timestamp": time.time(),
            "payload": json_value(dict(payload))}


class RedisCancelSignal:
    """Event-like: set while the run's force-pause flag is (read from Redis).

    A clear flag is cached briefly (tools check it in tight loops, and a
    force-pause may take that long to reach them); a set flag never is, so
    work that starts right after the release is not cut.

    Args:
        store: The run's store.
        cache_seconds: How long a read of a clear flag answers.
    """

    def __init__(self, store: RedisRunStore, cache_seconds: float = SIGNAL_CACHE_SECONDS
                 ) -> None:
        self.store = store
        self.cache_seconds = cache_seconds
        self._lock = threading.Lock()
        self._value = False
        self._read_at = -float("inf")

    def is_set(self) -> bool:
        with self._lock:
            if time.monotonic() - self._read_at < self.cache_seconds:
                return self._value
        try:
            state = self.store.controls.control_state()
        except RedisError as error:  # a control read must not fail the work it watches
            logger.warning("Run %s: cannot read the force-pause flag: %s", self.store.run_id,
                           error)
            return self._value
        with self._lock:
            self._value = bool(state and state.get("forced"))
            self._read_at = -float("inf") if self._value else time.monotonic()
            return self._value


class RedisAgentControls:
    """The :class:`~srh_core.interactive.AgentControls` of a run whose controls live in Redis.

    Args:
        store: The run's store.
        options: The agent's pause options, as stored with the controls.
    """

    def __init__(self, store: RedisRunStore, options: Mapping[str, bool] | None = None) -> None:
        self.store = store
        self.options = dict(options or {})
        self._signal = RedisCancelSignal(store)

    @property
    def cancel_signal(self) -> RedisCancelSignal:
        return self._signal

    def start(self, save_path: str | None) -> None:
        return None  # the controls were opened when the run was submitted

    def boundary(self, R: int, C: int, L: int) -> BoundaryDecision:
        """What the step takes (kept per step: a re-delivered task takes the same)."""
        field = f"{R}:{C}:{L}"
        stored, taken = self.store.controls.control_reads(field)
        if taken is not None:
            return BoundaryDecision.from_dict(taken)
        if runs_freely(stored, R):  # the settings in force still come with it
            return BoundaryDecision(settings_log=settings_log_from(
                (stored or {}).get("ledger", {}).get("settings_log") or []))
        decision = self.store.controls.update_control(boundary_taken(R), taken_field=field).outcome
        return decision if isinstance(decision, BoundaryDecision) else BoundaryDecision()

    def request_pause(self) -> None:
        self.store.controls.update_control(pause_requested())

    def publish_event(self, kind: InteractionEventKind, payload: Mapping[str, Any]) -> None:
        self.store.controls.publish_events([timeline_event(kind, payload)])

    def publish_events(self, events: Sequence[tuple[InteractionEventKind, Mapping[str, Any]]]
                       ) -> None:
        """Publish in one script call (events are numbered together, in order)."""
        if events:
            self.store.controls.publish_events([timeline_event(kind, payload)
                                                for kind, payload in events])

    @contextmanager
    def cancellable(self, cancel: Callable[[], None]) -> Iterator[None]:
        """Watch the force-pause flag while the block runs; call ``cancel`` once it is set."""
        with cancel_when(self._signal.is_set, cancel, poll_seconds=WATCH_SECONDS,
                         name="srh-force-pause-watch"):
            yield

    def finish(self, status: str | None, reason: str | None) -> None:
        return None  # the task that writes the result ends the controls (runtime.finish_controls)
