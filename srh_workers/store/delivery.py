"""The delivery guard's keys of a run: per-message delivery counts and poison records.

:class:`DeliveryGuard` is what :class:`srh_workers.reliability.SRHTask` counts
deliveries with and reports a poison task to; it owns the run's
``delivery:{task_id}:{retries}`` counters and its ``poison`` hash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from srh_workers.store.scripts import reply_text

if TYPE_CHECKING:
    from redis import Redis

    from srh_workers.store.keys import RunKeys

__all__ = ["DeliveryGuard"]


class DeliveryGuard:
    """Delivery counts and poison records of one run (``RedisRunStore.delivery``).

    Args:
        client: A redis-py client.
        keys: The run's key names.
    """

    def __init__(self, client: Redis, keys: RunKeys) -> None:
        self.client = client
        self.keys = keys

    def count_delivery(self, task_id: str, retries: int, ttl_seconds: int) -> int:
        """Count one delivery of a task message (per retry); the count so far.

        The counter gets its TTL when it is created (SET NX EX), so it expires
        whatever happens after; one round trip, no transaction needed.
        """
        key = self.keys.delivery(task_id, retries)
        pipe = self.client.pipeline(transaction=False)
        pipe.set(key, 0, ex=ttl_seconds, nx=True)
        pipe.incr(key)
        return int(pipe.execute()[1])

    def report_poison(self, task_id: str, record_json: str) -> None:
        """Keep a poison task's record in the run's ``poison`` hash (idempotent by task id)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.keys.poison, task_id, record_json)
        pipe.sadd(self.keys.registry, self.keys.poison)
        pipe.execute()

    def poison_reports(self) -> list[str]:
        return [reply_text(value) for value in self.client.hvals(self.keys.poison)]
