"""The Redis client whos_online talks to: the cache alias's server, with short timeouts of its own."""

from __future__ import annotations

from typing import Any

import redis
from django_redis import get_redis_connection
from redis.sentinel import SentinelManagedConnection

from whos_online.conf import conf

# Keyed by (id of the alias's pool, timeout); the alias's pool is kept in the value
# so its id cannot be reused while the entry lives.
_clients: dict[tuple[int, float], tuple[Any, redis.Redis]] = {}


def get_client() -> redis.Redis:
    """Return a client for ``WHOS_ONLINE_CACHE_ALIAS`` whose socket timeouts are ours.

    django-redis applies no timeout unless the cache's OPTIONS set one, and its
    IGNORE_EXCEPTIONS does not cover the raw client, so a dead Redis could hold
    every request for as long as the OS lets a socket hang. We build a second pool
    from the same connection settings with ``WHOS_ONLINE_SOCKET_TIMEOUT``.
    """
    base = get_redis_connection(conf.cache_alias)
    pool = base.connection_pool
    timeout = conf.socket_timeout
    key = (id(pool), timeout)
    entry = _clients.get(key)
    if entry is None:
        entry = _clients.setdefault(key, (pool, _with_timeout(base, timeout)))
    return entry[1]


def _with_timeout(base: redis.Redis, timeout: float) -> redis.Redis:
    pool = base.connection_pool
    if issubclass(pool.connection_class, SentinelManagedConnection):
        # A Sentinel pool cannot be rebuilt from its kwargs; its own timeouts apply.
        return base
    kwargs = {
        **pool.connection_kwargs,
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
    }
    # A plain pool, even if the alias uses a blocking one: waiting for a free
    # connection is exactly the stall we are avoiding.
    fast_pool = redis.ConnectionPool(
        connection_class=pool.connection_class,
        max_connections=pool.max_connections,
        **kwargs,
    )
    return redis.Redis(connection_pool=fast_pool)
