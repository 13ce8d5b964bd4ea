"""The Redis side of a distributed run: its key schema, its Lua scripts, its one store class.

- :mod:`srh_workers.store.keys`: every key name of a run (:class:`RunKeys`) and the
  encodings of pool entries;
- :mod:`srh_workers.store.scripts`: the Lua scripts (``lua/``), registered and called by name;
- :mod:`srh_workers.store.run_store`: :class:`RedisRunStore`, every read and write of a run;
- :mod:`srh_workers.store.client`: the one Redis client per URL and process.

The names below load their module on first use (``srh status`` needs only the client
before it knows that Redis answers).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "ACTIVE_PROGRESS": "keys", "ACTIVE_RUNS": "keys", "FINISHED_RUN_TTL_SECONDS": "keys",
    "RUNS_INDEX": "keys", "WATCHDOG_LOCK": "keys", "KeySpec": "keys", "RunKeys": "keys",
    "RedisRunStore": "run_store", "SampleBatch": "run_store", "SampleOutcome": "run_store",
    "SCRIPTS": "scripts", "script_source": "scripts",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'srh_workers.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"srh_workers.store.{module}"), name)
    globals()[name] = value
    return value
