"""The Redis client whos_online talks to: the cache alias's server, with our short timeouts."""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any

import redis
from django_redis import get_redis_connection
from redis.sentinel import SentinelManagedConnection

from whos_online.conf import conf

# Keyed by (id of the alias's pool, timeout); the alias's pool is kept in the value
# so its id cannot be reused while the entry lives.
_clients: dict[tuple[int, float], tuple[Any, redis.Redis]] = {}


# (conf.version, the client for it): get_client() runs on every Redis
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
    version = conf.version
    current = _current
    if current is None or current[0] is not version:
        factory = conf.redis_client
        current = _current = (version, factory() if factory is not None else _for_alias())
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
        name: value for name, value in pool.connection_kwargs.items() if name not in POOL_OWNED
    }
    kwargs.update(
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        **_one_round_trip(pool.connection_class, kwargs),
    )
    # A plain pool, even if the alias uses a blocking one: waiting for a free
    # connection is exactly the stall we are avoiding.
    fast_pool = redis.ConnectionPool(
        connection_class=pool.connection_class,
        max_connections=pool.max_connections,
        **kwargs,
    )
    return redis.Redis(connection_pool=fast_pool)


# What a pool adds to its own connection kwargs (redis-py 8: handlers bound to
# that pool, its HIMPORT registry, the timeouts its maintenance handling
# restores); ours makes its own, or has no maintenance handling at all.
POOL_OWNED = frozenset(
    {
        "maint_notifications_pool_handler",
        "oss_cluster_maint_notifications_handler",
        "maint_notifications_config",
        "orig_host_address",
        "orig_socket_timeout",
        "orig_socket_connect_timeout",
        "himport_registry",
    }
)


def _one_round_trip(connection_class: type, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Connection options that drop redis-py's optional handshake commands.

    A new connection would otherwise send HELLO 3 (redis-py 8's default protocol),
    CLIENT MAINT_NOTIFICATIONS and two CLIENT SETINFO before its first command,
    each a round trip that a slow Redis makes just under the timeout. What is left
    is what the server needs: AUTH with a password and SELECT for a database
    other than 0. RESP2 unless the cache asks for RESP3 (whos_online reads the
    same values either way); no maintenance notifications, which only move
    connections during a managed Redis's maintenance, when failing open is fine.
    Each option is passed only if this redis-py has it (4.6 has none of them).
    """
    accepted = _init_parameters(connection_class)
    options: dict[str, Any] = {}
    if "driver_info" in accepted:  # redis-py 8: None sends no CLIENT SETINFO
        options["driver_info"] = None
    elif "lib_name" in accepted:
        options.update(lib_name=None, lib_version=None)
    if "protocol" in accepted and kwargs.get("protocol") is None:
        options["protocol"] = 2
    if "maint_notifications_config" in accepted:
        from redis.maint_notifications import MaintNotificationsConfig

        options["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    return options


@lru_cache(maxsize=None)
def _init_parameters(connection_class: type) -> frozenset[str]:
    """The keyword arguments a connection class (or any class it passes them on to) takes."""
    names: set[str] = set()
    for klass in connection_class.__mro__:
        init = vars(klass).get("__init__")
        if init is not None:
            names.update(inspect.signature(init).parameters)
    return frozenset(names)
