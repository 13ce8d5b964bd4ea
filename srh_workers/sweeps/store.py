"""A sweep in Redis: its spec and inputs, its cells, its controls, its coordinator's lease.

Keys (cluster-wide; the sweep name is a hash tag, so a sweep's keys share a slot):

- ``srh:sweeps`` (zset): every submitted sweep, scored by its first submission;
- ``srh:sweeps:active`` (set): the sweeps a coordinator must look after (added by
  a submission or a resume, removed by the coordinator once the sweep is over);
- ``srh:sweep:{NAME}:meta`` (hash): ``spec`` (the validated sweep, JSON),
  ``generation`` (one per submission) and ``applied`` (the generation the cells
  were reopened for), ``control`` (``pause``, ``stop``, ``cancel`` or empty),
  ``status``, ``error``, ``owner``, ``submitted_at``, ``updated_at``, ``finished_at``;
- ``srh:sweep:{NAME}:inputs`` (hash): file name -> bytes of what the cells need
  besides built-in problems (a suite file, datasets), so any worker can run them;
- ``srh:sweep:{NAME}:cells`` (hash): cell id -> the cell's entry (JSON), written
  only by the lease holder (:meth:`RedisSweepState.save`, fenced by the lease);
- ``srh:sweep:{NAME}:lease`` (string): the coordinator holding the sweep, with a TTL
  renewed while it lives; when it dies, another worker takes the lease and goes on
  from the cells in Redis.

A sweep's keys carry no TTL: a sweep is small (one entry per cell) and its
report is wanted for as long as anyone keeps the cluster; ``srh sweep delete``
is not provided yet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from redis import Redis

from srh_core.errors import SearchStateError, SRHarnessError
from srh_core.jsonio import dumps
from srh_workers.store.scripts import reply_text

SWEEPS_INDEX = "srh:sweeps"
SWEEPS_ACTIVE = "srh:sweeps:active"
SWEEP_KEY = "srh:sweep:{{{name}}}:{part}"

#: Renew the lease and write cells only while the lease is ours (atomic: a coordinator
#: that lost its lease, e.g. after a long pause, cannot overwrite its successor's cells).
_FENCED_SAVE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
return 1
"""
#: Hold the lease: renew it if it is ours, take it if nobody holds it.
_HOLD = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if not holder then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 2 end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class LeaseLost(SRHarnessError):
    """Another coordinator holds the sweep now: this one must stop touching it."""


def sweep_key(name: str, part: str) -> str:
    return SWEEP_KEY.format(name=name, part=part)


def _text(value: Any) -> Any:
    return reply_text(value) if isinstance(value, bytes) else value


class SweepRecord:
    """Reads and client-side writes of one sweep (the controls, a submission)."""

    def __init__(self, client: Redis, name: str) -> None:
        self.client = client
        self.name = name
        self.meta_key = sweep_key(name, "meta")
        self.cells_key = sweep_key(name, "cells")
        self.inputs_key = sweep_key(name, "inputs")
        self.lease_key = sweep_key(name, "lease")

    # ---------------------------------------------------------------- reads
    def meta(self) -> dict[str, str]:
        return {_text(k): _text(v) for k, v in self.client.hgetall(self.meta_key).items()}

    def exists(self) -> bool:
        return bool(self.client.exists(self.meta_key))

    def require(self) -> dict[str, str]:
        meta = self.meta()
        if not meta:
            raise SearchStateError(f"No sweep named {self.name!r} on this cluster (srh sweep "
                                   "list shows the sweeps).")
        return meta

    def entries(self) -> dict[str, dict[str, Any]]:
        return {_text(k): json.loads(v) for k, v in self.client.hgetall(self.cells_key).items()}

    def inputs(self) -> dict[str, bytes]:
        return {_text(k): bytes(v) for k, v in self.client.hgetall(self.inputs_key).items()}

    def control(self) -> str | None:
        value = self.client.hget(self.meta_key, "control")
        return _text(value) or None

    def lease_holder(self) -> str | None:
        value = self.client.get(self.lease_key)
        return None if value is None else _text(value)

    # -------------------------------------------------------------- writes
    def publish(self, spec_json: str, inputs: Mapping[str, bytes], now: float) -> int:
        """A submission: the spec and inputs replaced, a new generation, the sweep active."""
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(self.inputs_key)
        if inputs:
            pipe.hset(self.inputs_key, mapping=dict(inputs))
        pipe.hset(self.meta_key, mapping={"spec": spec_json, "control": "", "error": "",
                                          "status": "running", "updated_at": now})
        pipe.hsetnx(self.meta_key, "submitted_at", now)
        pipe.hincrby(self.meta_key, "generation", 1)
        pipe.hdel(self.meta_key, "finished_at")
        pipe.zadd(SWEEPS_INDEX, {self.name: now}, nx=True)
        pipe.sadd(SWEEPS_ACTIVE, self.name)
        return int(pipe.execute()[-4])  # hincrby's reply: the new generation

    def set_control(self, control: str | None) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.meta_key, mapping={"control": control or "", "updated_at": time.time()})
        pipe.sadd(SWEEPS_ACTIVE, self.name)  # a coordinator applies it (and ends the sweep)
        pipe.execute()


class RedisSweepState:
    """The runner's :class:`~srh_core.sweep.runner.SweepState` of a sweep on the cluster.

    Writes only the entries that changed since the last save, in one fenced
    script that also renews the lease: a save by a coordinator that lost the
    lease raises :class:`LeaseLost` and writes nothing.
    """

    def __init__(self, record: SweepRecord, owner: str, lease_ms: int) -> None:
        self.record = record
        self.owner = owner
        self.lease_ms = lease_ms
        self._written: dict[str, str] = {}
        self._save = record.client.register_script(_FENCED_SAVE)

    def load(self) -> dict[str, dict[str, Any]]:
        raw = {_text(k): _text(v) for k, v in
               self.record.client.hgetall(self.record.cells_key).items()}
        self._written = dict(raw)
        return {cell_id: json.loads(text) for cell_id, text in raw.items()}

    def save(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        changed = {cell_id: dumps(dict(entry)) for cell_id, entry in entries.items()}
        changed = {k: v for k, v in changed.items() if self._written.get(k) != v}
        args: list[Any] = [self.owner, self.lease_ms]
        for cell_id, text in changed.items():
            args += [cell_id, text]
        if not self._save(keys=[self.record.lease_key, self.record.cells_key], args=args):
            raise LeaseLost(f"sweep {self.record.name}: the lease is held by "
                            f"{self.record.lease_holder()!r}, not {self.owner!r}")
        self._written.update(changed)

    def control(self) -> str | None:
        return self.record.control()


class Lease:
    """The coordinator lease of one sweep (SET NX PX, renewed by its holder)."""

    def __init__(self, record: SweepRecord, owner: str, lease_ms: int) -> None:
        self.record = record
        self.owner = owner
        self.lease_ms = lease_ms
        client = record.client
        self._hold = client.register_script(_HOLD)
        self._release = client.register_script(_RELEASE)

    def hold(self) -> int:
        """0: another holds it; 1: renewed; 2: taken (a new holder, or a takeover)."""
        return int(self._hold(keys=[self.record.lease_key], args=[self.owner, self.lease_ms]))

    def release(self) -> None:
        self._release(keys=[self.record.lease_key], args=[self.owner])


def list_sweeps(client: Redis, limit: int = 100) -> list[str]:
    """The most recently submitted sweeps, newest first."""
    return [_text(name) for name in client.zrevrange(SWEEPS_INDEX, 0, limit - 1)]


def active_sweeps(client: Redis) -> list[str]:
    return sorted(_text(name) for name in client.smembers(SWEEPS_ACTIVE))


__all__ = ["SWEEPS_ACTIVE", "SWEEPS_INDEX", "Lease", "LeaseLost", "RedisSweepState",
           "SweepRecord", "active_sweeps", "list_sweeps", "sweep_key"]
