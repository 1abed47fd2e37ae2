"""The Redis client whos_online talks to: the cache alias's server, with our short timeouts."""

from __future__ import annotations

from typing import Any

import redis
from django_redis import get_redis_connection
from redis.sentinel import SentinelManagedConnection

from whos_online.conf import conf

# Keyed by (id of the alias's pool, timeout); the alias's pool is kept in the value
# so its id cannot be reused while the entry lives.
_clients: dict[tuple[int, float], tuple[Any, redis.Redis]] = {}


# (the settings object, the client for it): get_client() runs on every Redis
# call, and looking the cache alias up each time cost several microseconds.
_current: tuple[object, redis.Redis] | None = None


def get_client() -> redis.Redis:
    """Return the client from ``WHOS_ONLINE_REDIS_CLIENT``, or one for the cache alias.

    A site on Redis Cluster (which django-redis has no client for) names a
    callable returning e.g. a ``redis.cluster.RedisCluster``; it is called once
    per settings object and its own timeouts apply.

    Otherwise the client talks to ``WHOS_ONLINE_CACHE_ALIAS``'s server with
    socket timeouts of ours.
    """
    global _current
    source = conf.settings_source()
    current = _current
    if current is None or current[0] is not source:
        factory = conf.redis_client
        current = _current = (source, factory() if factory is not None else _for_alias())
    return current[1]


def _for_alias() -> redis.Redis:
    """A client for the cache alias's server whose socket timeouts are ours.

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
    # redis-py 8 restores these after a server's maintenance notification.
    for name in ("orig_socket_timeout", "orig_socket_connect_timeout"):
        if name in kwargs:
            kwargs[name] = timeout
    # A plain pool, even if the alias uses a blocking one: waiting for a free
    # connection is exactly the stall we are avoiding.
    fast_pool = redis.ConnectionPool(
        connection_class=pool.connection_class,
        max_connections=pool.max_connections,
        **kwargs,
    )
    return redis.Redis(connection_pool=fast_pool)
