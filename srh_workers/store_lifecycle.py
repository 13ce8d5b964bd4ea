"""The life of a run in Redis after its search: status, stored result, TTL and deletion.

A finished run's keys get the store's TTL (:meth:`RunLifecycle.expire_run`,
called when the result is stored); ``srh`` reads the run's status and stored
result, can keep a finished run (:meth:`RunLifecycle.persist_run`, e.g. to
resume it) or delete it. Every key of a run is a static key of
:class:`srh_workers.keys.RunKeys` or a coordinate key listed in its registry,
so these methods reach all of them. :class:`srh_workers.store.RedisCandidateStore`
inherits them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from srh_core.types import SearchResult
from srh_workers.keys import RunKeys
from srh_workers.scripts import RunScripts, reply_text

if TYPE_CHECKING:
    from redis import Redis


class RunLifecycle:
    """Status, stored result and key retention of one run (a mixin of the store).

    The class that mixes it in provides the ``run_id``, its ``keys``, the
    ``client``, the finished-run ``ttl_seconds`` and its registered ``_scripts``.
    """

    run_id: str
    keys: RunKeys
    client: Redis
    ttl_seconds: int | None
    _scripts: RunScripts

    def run_summary(self) -> dict[str, Any]:
        """Status, policy and counts of the run, read atomically (for ``srh status``)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self.keys.meta)
        pipe.hlen(self.keys.nodes)
        pipe.llen(self.keys.cand_order)
        pipe.zcard(self.keys.rank)
        meta, nodes, pooled, ranked = pipe.execute()
        summary = {reply_text(k): reply_text(v) for k, v in meta.items()
                   if reply_text(k) != "agent_metadata"}
        return {**summary, "run_id": self.run_id, "nodes": nodes, "candidates": pooled,
                "ranked": ranked}

    def stored_result(self) -> SearchResult | None:
        """The result written by ``RedisCandidateStore.result``, or None while the run has none."""
        stored = self.client.get(self.keys.result)
        return None if stored is None else SearchResult.from_dict(json.loads(stored))

    def run_keys(self) -> list[str]:
        """Every key of the run: the static ones and the registered coordinate keys."""
        registered = sorted(reply_text(key) for key in self.client.smembers(self.keys.registry))
        return [*self.keys.static_keys(), *registered]

    def expire_run(self) -> int:
        """Give every key of the run the store's TTL (or none when it is None); count changed keys.

        Call it when the run is finished: a key created afterwards has no TTL.
        """
        seconds = 0 if self.ttl_seconds is None else self.ttl_seconds
        return int(self._scripts.call("set_ttl", self.run_keys(), [seconds]))

    def persist_run(self) -> int:
        """Remove the TTL from every key of the run (e.g. to resume a finished run)."""
        return int(self._scripts.call("set_ttl", self.run_keys(), [0]))

    def delete_run(self) -> int:
        """Delete every key of the run; return how many existed."""
        return int(self.client.delete(*self.run_keys()))


__all__ = ["RunLifecycle"]
