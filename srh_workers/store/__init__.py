"""The Redis side of a distributed run: its key schema, its Lua scripts, its one store class.

- :mod:`srh_workers.store.keys`: every key name of a run (:class:`RunKeys`) and the
  encodings of pool entries;
- :mod:`srh_workers.store.scripts`: the Lua scripts (``lua/``), registered and called by name;
- :mod:`srh_workers.store.run_store`: :class:`RedisRunStore`, every read and write of a run.
"""

from srh_workers.store.keys import (
    ACTIVE_PROGRESS,
    ACTIVE_RUNS,
    FINISHED_RUN_TTL_SECONDS,
    RUNS_INDEX,
    WATCHDOG_LOCK,
    KeySpec,
    RunKeys,
)
from srh_workers.store.run_store import RedisRunStore, SampleBatch, SampleOutcome
from srh_workers.store.scripts import SCRIPTS, script_source

__all__ = ["ACTIVE_PROGRESS", "ACTIVE_RUNS", "FINISHED_RUN_TTL_SECONDS", "RUNS_INDEX", "SCRIPTS",
           "WATCHDOG_LOCK", "KeySpec", "RedisRunStore", "RunKeys", "SampleBatch", "SampleOutcome",
           "script_source"]
