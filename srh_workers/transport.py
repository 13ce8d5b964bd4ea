"""kombu's Redis transport, with Redis refusing writes treated as an outage.

Celery's consumer restarts itself (reconnect, back off) after a *connection*
error and exits the worker after any other broker error. kombu counts a
Redis error reply (``ResponseError``) as a channel error, so a Redis at
``maxmemory`` (``OOM command not allowed``) or a replica that became read-only
during a failover made the worker exit on its next ack or poll. Both are
outages that pass: this transport lists them as connection errors, so the
worker logs, backs off and reconnects, and the unacknowledged messages are
restored (``task_acks_late``).

An ack that Redis refuses is logged and the delivery is released locally
anyway: kombu would keep it counted against the prefetch limit, and a worker
with ``--prefetch-multiplier 1`` then never fetched again (alive, idle, its
queue growing). The message stays in Redis's ``unacked`` hash and comes back
after the visibility timeout; every task is idempotent, so running it again
changes nothing. Closing a channel whose connection is already gone (Celery's
consumer after a Redis restart) raises a connection error, not AttributeError,
so the worker reconnects instead of exiting. The app selects it for ``redis://`` brokers
(``broker_transport``); ``rediss://`` keeps kombu's own (its TLS follows the scheme).
"""

from __future__ import annotations

import logging

import redis
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

logger = logging.getLogger("srh.workers.transport")

#: Error replies that mean "Redis cannot take writes now", not "the request is wrong".
REFUSED_WRITES: tuple[type[BaseException], ...] = (
    redis.exceptions.OutOfMemoryError, redis.exceptions.ReadOnlyError)


_OUTAGE = REFUSED_WRITES + (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


class QoS(kombu_redis.QoS):
    """kombu's Redis QoS whose ack frees the prefetch slot even when Redis refuses it."""

    def ack(self, delivery_tag: str) -> None:
        try:
            self._remove_from_indices(delivery_tag).execute()
        except _OUTAGE as error:
            logger.warning("Redis refused the ack of %s (%r): it is re-delivered after the "
                           "visibility timeout", delivery_tag, error)
        virtual.QoS.ack(self, delivery_tag)

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        try:
            super().reject(delivery_tag, requeue=requeue)
        except _OUTAGE as error:
            logger.warning("Redis refused the reject of %s (%r): it is re-delivered after "
                           "the visibility timeout", delivery_tag, error)
            virtual.QoS.ack(self, delivery_tag)


class Channel(kombu_redis.Channel):
    """kombu's Redis channel; closing it after Redis went away is a connection error."""

    QoS = QoS

    def _connparams(self, asynchronous: bool = False) -> dict:
        # Closing a channel restores its unacked messages through a new client; when the
        # consumer closes its broken connection after Redis restarted, the connection's
        # client is already gone and kombu raised AttributeError, which Celery's
        # ``ignore_errors`` does not catch: the worker exited ("Unrecoverable error").
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    """The Redis transport whose connection errors include refused writes."""

    Channel = Channel
    connection_errors = kombu_redis.Transport.connection_errors + REFUSED_WRITES


TRANSPORT_PATH = f"{__name__}:Transport"

__all__ = ["REFUSED_WRITES", "TRANSPORT_PATH", "Channel", "QoS", "Transport"]
