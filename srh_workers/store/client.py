"""The Redis client of a URL, one per process (shared by the stores, the CLI and the workers)."""

from __future__ import annotations

import threading

import redis

__all__ = ["redis_client"]

_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def redis_client(url: str) -> redis.Redis:
    """One shared client per URL and process (redis-py resets its pool after a fork)."""
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10,
                                          health_check_interval=30)
            _clients[url] = client
        return client
