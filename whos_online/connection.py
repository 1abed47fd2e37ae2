"""The Redis client whos_online talks to: the cache alias's server, with our short timeouts."""

from __future__ import annotations

from typing import Any, cast

import redis
from django_redis import get_redis_connection
from redis.sentinel import SentinelManagedConnection

from whos_online.conf import conf

# Keyed by (id of the alias's pool, timeout); the alias's pool is kept in the value
# so its id cannot be reused while the entry lives.
_clients: dict[tuple[int, float], tuple[Any, redis.Redis]] = {}


def get_client() -> redis.Redis:
    """Return the client from ``WHOS_ONLINE_REDIS_CLIENT``, or one for the cache alias.

    A site on Redis Cluster (which django-redis has no client for) names a
    callable returning e.g. a ``redis.cluster.RedisCluster``; it is called once
    per settings object and its own timeouts apply.

    Otherwise the client talks to ``WHOS_ONLINE_CACHE_ALIAS``'s server with
    socket timeouts of ours.

    django-redis applies no timeout unless the cache's OPTIONS set one, and its
    IGNORE_EXCEPTIONS does not cover the raw client, so a dead Redis could hold
    every request for as long as the OS lets a socket hang. We build a second pool
    from the same connection settings with ``WHOS_ONLINE_SOCKET_TIMEOUT``.
    """
    factory = conf.redis_client
    if factory is not None:
        return _from_factory(factory)
    base = get_redis_connection(conf.cache_alias)
    pool = base.connection_pool
    timeout = conf.socket_timeout
    key = (id(pool), timeout)
    entry = _clients.get(key)
    if entry is None:
        entry = _clients.setdefault(key, (pool, _with_timeout(base, timeout)))
    return entry[1]


# (the settings object it was made for, the factory, its client)
_factory_client: list[tuple[object, Any, Any]] = []


def _from_factory(factory: Any) -> redis.Redis:
    """One client per settings object and factory: a new pool per request would defeat pooling."""
    source = conf.settings_source()
    if not _factory_client or _factory_client[0][:2] != (source, factory):
        _factory_client[:] = [(source, factory, factory())]
    return cast(redis.Redis, _factory_client[0][2])


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
