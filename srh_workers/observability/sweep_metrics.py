"""Prometheus gauges of the cluster's sweeps, read from Redis at scrape time.

- ``srh_sweeps_in_flight``: sweeps a coordinator looks after (the active set);
- ``srh_sweep_cells{sweep, state}``: cells of each active sweep by state
  (pending, running, done, failed, skipped, cancelled);
- ``srh_sweep_cells_solved{sweep}``: its cells whose run found the exact formula;
- ``srh_runs_in_flight``: runs submitted and without a result yet (the cluster's
  active set, sweep cells or not).

Only active sweeps are listed (a finished sweep's figures are in its report),
so the series stay few. A scrape that cannot reach Redis reports
``srh_sweeps_up 0`` and no sweep series.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from srh_core.sweep.summary import CELL_STATES
from srh_workers.store.client import redis_client
from srh_workers.store.cluster import ClusterIndex
from srh_workers.sweeps.store import SweepRecord, active_sweeps

#: The most sweeps one scrape reads (each costs one HGETALL of its cells).
MAX_SWEEPS_PER_SCRAPE = 50


class SweepCollector:
    """The sweep gauges (a prometheus-client custom collector)."""

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self._client: Any = None

    def _redis(self) -> Any:
        if self._client is None:
            self._client = redis_client(self.redis_url)
        return self._client

    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import GaugeMetricFamily
        from redis.exceptions import RedisError

        up = GaugeMetricFamily("srh_sweeps_up", "1 when the last scrape read the sweeps.")
        flight = GaugeMetricFamily("srh_sweeps_in_flight", "Sweeps being coordinated.")
        cells = GaugeMetricFamily("srh_sweep_cells", "Cells of an active sweep by state.",
                                  labels=["sweep", "state"])
        solved = GaugeMetricFamily("srh_sweep_cells_solved",
                                   "Cells of an active sweep whose run found the exact formula.",
                                   labels=["sweep"])
        runs = GaugeMetricFamily("srh_runs_in_flight", "Runs submitted and without a result.")
        try:
            client = self._redis()
            runs.add_metric([], ClusterIndex(client).watched_count())
            names = active_sweeps(client)
            flight.add_metric([], len(names))
            for name in names[:MAX_SWEEPS_PER_SCRAPE]:
                counts = dict.fromkeys(CELL_STATES, 0)
                found = 0
                for raw in client.hvals(SweepRecord(client, name).cells_key):
                    entry = json.loads(raw)
                    state = entry.get("status", "pending")
                    counts[state] = counts.get(state, 0) + 1
                    found += entry.get("solved") is True
                for state, n in counts.items():
                    cells.add_metric([name, state], n)
                solved.add_metric([name], found)
            up.add_metric([], 1)
        except (RedisError, ValueError):
            up.add_metric([], 0)
            return [up]
        return [up, runs, flight, cells, solved]


__all__ = ["SweepCollector"]
