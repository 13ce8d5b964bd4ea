"""How the cluster commands reach Redis and the broker (``SRH_REDIS_URL``, ``SRH_BROKER_URL``)."""

from __future__ import annotations

from typing import Any

from srh_core.errors import ConfigurationError

CONNECTION_HINT = ("start Redis (redis-server) or point SRH_REDIS_URL / SRH_BROKER_URL at it; "
                   "workers start with `srh worker`")


def connections() -> tuple[Any, Any]:
    """The run store's Redis client and the Celery app (to send tasks and ping workers)."""
    from srh_workers.app import get_app

    return redis_of_runs(), get_app()


def redis_of_runs() -> Any:
    """A client of the run store's Redis (``SRH_REDIS_URL``, else the broker's)."""
    from srh_workers.config import WorkerSettings
    from srh_workers.store.client import redis_client

    return redis_client(str(WorkerSettings.from_env().redis_url))


def checked(client: Any) -> Any:
    """``client`` once it answers a PING.

    Raises:
        ConfigurationError: Redis is not reachable (with how to start it).
    """
    import redis

    try:
        client.ping()
    except redis.exceptions.ConnectionError as error:
        raise ConfigurationError(f"Redis is not reachable ({error}): {CONNECTION_HINT}.") from None
    return client
