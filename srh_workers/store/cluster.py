"""The cluster-wide keys: the run index, the watched runs, the watchdog's lock, the endpoints.

:class:`ClusterIndex` owns every key that belongs to no single run
(:data:`~srh_workers.store.keys.CLUSTER_KEY_SCHEMA`); nothing else writes them.
Its writers that belong to a run's own transaction (submitting a run, storing
its result) take the caller's pipeline, so the run's keys and its index
entries change together.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from srh_workers.store.keys import (
    ACTIVE_PROGRESS,
    ACTIVE_RUNS,
    DRAINED_WORKERS,
    ENDPOINTS_KEY,
    RUNS_INDEX,
    WATCHDOG_LOCK,
)
from srh_workers.store.scripts import reply_text

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["ClusterIndex"]


class ClusterIndex:
    """The keys of the whole cluster, read and written through one object.

    Args:
        client: A redis-py client (``decode_responses`` either way).
    """

    def __init__(self, client: Redis) -> None:
        self.client = client

    # ----------------------------------------------------------- run index
    def index_run(self, run_id: str, submitted_at: float, pipe: Any = None) -> None:
        """List a submitted run (by submission time) and start watching it."""
        target = self.client if pipe is None else pipe
        target.zadd(RUNS_INDEX, {run_id: submitted_at})
        target.zadd(ACTIVE_RUNS, {run_id: submitted_at})

    def unindex_run(self, run_id: str) -> None:
        """Remove a run from the index and the watched runs (its submission failed)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.zrem(RUNS_INDEX, run_id)
        pipe.zrem(ACTIVE_RUNS, run_id)
        pipe.hdel(ACTIVE_PROGRESS, run_id)
        pipe.execute()

    def recent_runs(self, limit: int = 20) -> list[str]:
        """The ids of the ``limit`` runs submitted last, newest first."""
        return [reply_text(run_id) for run_id in self.client.zrevrange(RUNS_INDEX, 0, limit - 1)]

    def submitted_at(self, run_id: str) -> float | None:
        """When ``run_id`` was submitted (None for a run not in the index)."""
        submitted = self.client.zscore(RUNS_INDEX, run_id)
        return None if submitted is None else float(submitted)

    # ------------------------------------------------------- watched runs
    def finished_keys(self) -> tuple[str, str]:
        """The KEYS a run's result script takes to stop watching the run atomically."""
        return ACTIVE_RUNS, ACTIVE_PROGRESS

    def watched_runs(self, count: int) -> list[tuple[str, float]]:
        """Up to ``count`` watched runs, longest without progress first: (run id, since)."""
        watched = self.client.zrange(ACTIVE_RUNS, 0, count - 1, withscores=True)
        return [(reply_text(run_id), float(since)) for run_id, since in watched]

    def watched_count(self) -> int:
        return int(self.client.zcard(ACTIVE_RUNS))

    def watch_progress(self, run_id: str, marker: str, now: float) -> bool:
        """Record the marker the watchdog saw; True (and the clock reset) when it changed."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hget(ACTIVE_PROGRESS, run_id)
        pipe.hset(ACTIVE_PROGRESS, run_id, marker)
        seen = pipe.execute()[0]
        moved = seen is None or reply_text(seen) != marker
        if moved:
            self.touch_active(run_id, now)
        return moved

    def touch_active(self, run_id: str, at: float | None = None) -> None:
        """Restart the run's stall clock (only while it is watched: XX)."""
        self.client.zadd(ACTIVE_RUNS, {run_id: time.time() if at is None else at}, xx=True)

    def forget_active(self, run_id: str) -> None:
        """Stop watching the run (it has a result, or its keys are gone)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.zrem(ACTIVE_RUNS, run_id)
        pipe.hdel(ACTIVE_PROGRESS, run_id)
        pipe.execute()

    def take_watchdog_turn(self, owner: str, milliseconds: int) -> bool:
        """SET NX PX the watchdog's lock: True for the one worker that checks this interval."""
        return bool(self.client.set(WATCHDOG_LOCK, owner, nx=True, px=milliseconds))

    # ----------------------------------------------------------- endpoints
    def publish_endpoints(self, public: Any) -> None:
        """Publish the public view of the operator's model endpoints (JSON-ready)."""
        self.client.set(ENDPOINTS_KEY, json.dumps(public))

    def endpoints(self) -> Any:
        """The published public view of the endpoints, None before any worker started."""
        raw = self.client.get(ENDPOINTS_KEY)
        return None if raw is None else json.loads(raw)

    # ----------------------------------------------------- drained workers
    def drain_worker(self, node: str, queues: list[str]) -> None:
        """Remember that ``node`` was drained from ``queues`` (``srh worker drain``)."""
        self.client.hset(DRAINED_WORKERS, node, json.dumps({"queues": queues,
                                                            "at": time.time()}))

    def drained_worker(self, node: str) -> Mapping[str, Any] | None:
        """The drain record of ``node`` (queues, at), None when it is not drained."""
        raw = self.client.hget(DRAINED_WORKERS, node)
        return None if raw is None else json.loads(raw)

    def undrain_worker(self, node: str) -> None:
        self.client.hdel(DRAINED_WORKERS, node)

    def drained_workers(self) -> list[str]:
        """Node names ``srh worker drain`` drained (whether or not they still run)."""
        return [reply_text(node) for node in self.client.hkeys(DRAINED_WORKERS)]
