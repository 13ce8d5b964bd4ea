"""The Redis side of a distributed run: one key schema, the Lua scripts, a store per key family.

- :mod:`srh_workers.store.keys`: every key name (:class:`RunKeys`, the cluster keys), its
  family and owner (:data:`KEY_SCHEMA`, :data:`CLUSTER_KEY_SCHEMA`), and the encodings of
  pool entries;
- :mod:`srh_workers.store.scripts`: the Lua scripts (``lua/``), registered and called by name;
- :mod:`srh_workers.store.run_store`: :class:`RedisRunStore`, a run's candidate records (the
  ``CandidateStore`` seam) and record (meta, spec and data, result, retention), composing
- :mod:`srh_workers.store.flow`: :class:`FlowState` (``store.flow``: branches, plans,
  results, claims, levels, the stop flag, the lock),
- :mod:`srh_workers.store.control`: :class:`ControlRecords` (``store.controls``),
- :mod:`srh_workers.store.delivery`: :class:`DeliveryGuard` (``store.delivery``);
- :mod:`srh_workers.store.cluster`: :class:`ClusterIndex`, the cluster-wide keys (run
  index, watched runs, the watchdog's lock, endpoints, drained workers);
- :mod:`srh_workers.store.client`: the one Redis client per URL and process.

The names below load their module on first use (``srh status`` needs only the client
before it knows that Redis answers).
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

_LAZY = {
    "ACTIVE_PROGRESS": "keys", "ACTIVE_RUNS": "keys", "FINISHED_RUN_TTL_SECONDS": "keys",
    "RUNS_INDEX": "keys", "WATCHDOG_LOCK": "keys", "KeySpec": "keys", "RunKeys": "keys",
    "KEY_SCHEMA": "keys", "CLUSTER_KEY_SCHEMA": "keys",
    "FlowState": "flow", "ControlRecords": "control", "DeliveryGuard": "delivery",
    "ClusterIndex": "cluster", "redis_client": "client",
    "RedisRunStore": "run_store", "SampleBatch": "run_store", "SampleOutcome": "run_store",
    "SCRIPTS": "scripts", "script_source": "scripts",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
