"""The workers' watchdog: stalled runs are found and moved on with no manual command.

Every worker runs one :class:`Watchdog` thread (started when the worker is
ready, stopped with it; no extra process, no celery beat). Each interval
(``SRH_WATCHDOG_INTERVAL``) the threads of the cluster race for a Redis lock
(:data:`~srh_workers.store.WATCHDOG_LOCK`, SET NX with a TTL of 90 % of the
interval) and the winner checks the runs:

- every run without a result is in the :data:`~srh_workers.store.ACTIVE_RUNS`
  zset, scored by when the watchdog last saw it progress (first: its
  submission). Each check reads every such run's progress marker
  (:meth:`~srh_workers.store.RedisRunStore.progress_marker`: keys registered,
  nodes, model requests, stop flag; one round trip per run) and restarts its
  clock when the marker changed. Deliveries do not count: a re-delivered task
  that changes nothing is no progress;
- a run without progress for ``SRH_STALL_SECONDS`` is stalled: the watchdog
  re-sends what its stored state says comes next
  (:func:`srh_workers.submit.kick_run`, what ``srh kick`` sends) and restarts
  its clock, so it is kicked again only after another ``SRH_STALL_SECONDS``;
- after an outage (a check failed: Redis unreachable or refusing writes), the
  first check that runs kicks every run once, at once, whatever its progress:
  any of its branches may have lost a message (a send or an ack that failed),
  and waiting for the stall threshold would add it to the outage (or more: a
  redelivered task of one branch is progress that hides another's loss);
- a run that has a result or no spec any more leaves the zset; a paused
  interactive run (state ``paused``) is left alone, its steps are parked on
  purpose, unless it was asked to stop (then its steps must run to end it).

Why a kick is safe: every task is idempotent (see :mod:`srh_workers.flow.steps`),
and the stall threshold is at least the longest time a task may hold its
message (hard limit + retry backoff, :meth:`WorkerSettings.check`), so a
task that is still running is not doubled; a task still waiting in a busy
queue may be, and the copy changes nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from srh_core.errors import SearchStateError
from srh_workers.errors import AgentBuildError
from srh_workers.flow.names import Action
from srh_workers.flow.steps import end_unbuilt_run
from srh_workers.store import RedisRunStore
from srh_workers.store.cluster import ClusterIndex
from srh_workers.submit import kick_run

logger = logging.getLogger("srh.workers.watchdog")
LOCK_FRACTION = 0.9
MAX_RUNS_PER_CHECK = 1_000
LOG_EVERY_FAILURES = 10

Send = Callable[[Action], Any]


@dataclass(frozen=True, slots=True)
class Kick:
    """What one check did to a stalled run.

    Attributes:
        run_id: The run.
        quiet_seconds: How long the run had not progressed.
        actions: ``[task name, *coordinate]`` of each task re-sent.
    """

    run_id: str
    quiet_seconds: float
    actions: tuple[tuple[Any, ...], ...]


class Watchdog:
    """Finds runs without progress for ``stall_seconds`` and re-sends their next tasks.

    Args:
        client: Redis of the candidate store.
        send: Enqueues one action (the app's ``send_task``).
        stall_seconds: Quiet time after which a run is stalled.
        interval: Seconds between checks.
        owner: Who holds the check lock (the worker's host name).
    """

    def __init__(self, client: redis.Redis, send: Send, stall_seconds: float, interval: float,
                 owner: str) -> None:
        self.client = client
        self.send = send
        self.stall_seconds = stall_seconds
        self.interval = interval
        self.owner = owner
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- checks
    def check(self, now: float | None = None, outage_began: float | None = None
              ) -> list[Kick] | None:
        """One check, if this worker wins the interval's lock; None when another one did."""
        ms = max(1, int(self.interval * LOCK_FRACTION * 1000))
        if not ClusterIndex(self.client).take_watchdog_turn(self.owner, ms):
            return None
        return self.check_runs(now, outage_began)

    def check_runs(self, now: float | None = None, outage_began: float | None = None
                   ) -> list[Kick]:
        """Kick every stalled run (no lock: for tests and tools).

        Args:
            now: The time of the check.
            outage_began: After Redis was unreachable or refused writes: when the
                outage began. A run not seen progressing since then is kicked at
                once (its messages may have been lost in the outage), not after a
                whole ``stall_seconds``; a run another worker already kicked after
                the outage is not.
        """
        now = time.time() if now is None else now
        kicks = []
        for run_id, since in ClusterIndex(self.client).watched_runs(MAX_RUNS_PER_CHECK):
            kick = self._check_run(run_id, since, now, outage_began)
            if kick is not None:
                kicks.append(kick)
        return kicks

    def _check_run(self, run_id: str, since: float, now: float,
                   outage_began: float | None) -> Kick | None:
        store = RedisRunStore(self.client, run_id, register=False)
        if store.spec_json() is None or store.stored_result() is not None:
            store.cluster.forget_active(run_id)
            return None
        # after an outage every branch may have lost a message: one branch's progress
        # (a redelivered task) must not hide another's loss, so the marker is not asked
        after_outage = outage_began is not None and since <= outage_began
        if store.cluster.watch_progress(run_id, store.progress_marker(), now) \
                and not after_outage:
            return None
        if not after_outage and now - since < self.stall_seconds:
            return None
        # first: a kick that fails half-way waits one more stall
        store.cluster.touch_active(run_id, now)
        if _paused(store):
            return None
        try:
            actions = kick_run(self.client, self.send, run_id)
        except SearchStateError as error:
            logger.warning("run %s is stalled but cannot be kicked: %s", run_id, error)
            return None
        except AgentBuildError as error:  # deterministic: kicking again would not help
            logger.error("%s", error, extra={"event": "agent_build_failed"})
            end_unbuilt_run(self.client, error)
            return None
        kick = Kick(run_id, now - since, tuple((a.task, *a.args[1:]) for a in actions))
        logger.warning("run %s: no progress for %.0f s; re-sent %d task(s): %s", run_id,
                       now - since, len(actions), list(kick.actions),
                       extra={"event": "watchdog_kick", "run_id": run_id})
        return kick

    # ---------------------------------------------------------------- thread
    def start(self) -> Watchdog:
        """Start the checking thread (a daemon: it never keeps a worker alive)."""
        self._thread = threading.Thread(target=self._loop, name="srh-watchdog", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        failures = 0
        outage_began: float | None = None  # when this worker's first check failed
        while not self._stop.wait(self.interval):
            try:
                done = self.check(outage_began=outage_began)
                failures = 0
                if done is not None:  # this worker ran the post-outage check
                    outage_began = None
            except Exception as error:  # the thread's boundary: Redis down, a bad run; go on
                failures += 1
                outage_began = time.time() if outage_began is None else outage_began
                if failures == 1 or failures % LOG_EVERY_FAILURES == 0:
                    logger.warning("watchdog check failed (%d in a row): %r", failures, error,
                                   extra={"event": "watchdog_error"})


def _paused(store: RedisRunStore) -> bool:
    """Paused on purpose: a stopped run is not, its parked steps must run to end it."""
    state = store.controls.control_state()
    return state is not None and (state.get("manager") or {}).get("state") == "paused" \
        and store.flow.stop_reason() is None


__all__ = ["Kick", "Watchdog"]
