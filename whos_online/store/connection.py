"""The Redis client whos_online talks to: the cache alias's server, with our short timeouts."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from django_redis import get_redis_connection
from django_redis.pool import get_connection_factory

from whos_online.conf import conf, on_settings_change

DJANGO_REDIS_BACKEND = "django_redis.cache.RedisCache"
DJANGO_BACKEND = "django.core.cache.backends.redis.RedisCache"  # Django's own, since 4.0

# Ours per (id of the alias's pool, timeout), so a settings change that keeps both
# (tests make many) keeps our connections; the alias's pool is kept in the value
# so its id cannot be reused while the entry lives. django-redis keeps the alias's
# pool per URL for the life of the process, and so do we.
_clients: dict[tuple[int, float], tuple[redis.ConnectionPool, redis.Redis]] = {}
# Django's own RedisCache makes its pools lazily and privately: ours are kept per
# (the alias's settings, timeout), for the same reason.
_django_clients: dict[tuple[str, float], redis.Redis] = {}


@lru_cache(maxsize=1)
def get_client() -> redis.Redis:
    """Return the client from ``WHOS_ONLINE_REDIS_CLIENT``, or one for the cache alias.

    Made once until a setting changes: this runs on every Redis call. A site on
    Redis Cluster (which django-redis has no client for) names a callable
    returning e.g. a ``redis.cluster.RedisCluster``; its own timeouts apply.

    Otherwise the client talks to ``WHOS_ONLINE_CACHE_ALIAS``'s server with
    socket timeouts of ours.
    """
    factory = conf.redis_client
    return factory() if factory is not None else _for_alias()


on_settings_change(get_client.cache_clear)


def _for_alias() -> redis.Redis:
    """A client for the cache alias's server, built as the alias's backend builds its own.

    Neither backend applies a timeout unless the cache's OPTIONS set one, and
    django-redis's IGNORE_EXCEPTIONS does not cover the raw client, so a dead
    Redis could hold every request for as long as the OS lets a socket hang. The
    alias's OPTIONS go into a pool of our own with ``WHOS_ONLINE_SOCKET_TIMEOUT``
    (through django-redis's connection factory for a django-redis cache, Sentinel's
    too); the site's pool is left alone.
    """
    alias, timeout = conf.cache_alias, conf.socket_timeout
    cache = settings.CACHES.get(alias, {})
    try:
        if cache.get("BACKEND") == DJANGO_BACKEND:
            return _for_django_cache(cache, timeout)
        site = get_redis_connection(alias).connection_pool
    # No such alias (InvalidCacheBackendError, an ImproperlyConfigured), another backend
    # (NotImplementedError from django-redis), a LOCATION that is no Redis URL (ValueError).
    except (ImproperlyConfigured, NotImplementedError, ValueError) as e:
        raise CacheAliasError(
            f"WHOS_ONLINE_CACHE_ALIAS is {alias!r}, and CACHES gives no Redis cache for it "
            f"({type(e).__name__}: {e}); point the setting at a django-redis cache or Django's "
            "RedisCache (manage.py check says more)"
        ) from e
    key = (id(site), timeout)
    entry = _clients.get(key)
    if entry is None:
        entry = _clients.setdefault(key, (site, _build(cache, timeout)))
    return entry[1]


def _for_django_cache(cache: dict[str, Any], timeout: float) -> redis.Redis:
    """Our client for a ``django.core.cache.backends.redis.RedisCache`` alias.

    Its OPTIONS are redis-py's pool arguments, as Django passes them, less the
    serializer (our values are not pickled); its first server is the one it writes to.
    """
    key = (repr(cache), timeout)
    client = _django_clients.get(key)
    if client is None:
        options = dict(cache.get("OPTIONS", {}))
        options.pop("serializer", None)
        pool_class = _plain(options.pop("pool_class", None) or "redis.ConnectionPool")
        if isinstance(options.get("parser_class"), str):
            options["parser_class"] = import_string(options["parser_class"])
        primary = _first(cache.get("LOCATION") or "", "[;,]")
        kwargs = {**_one_round_trip(), **options, **_timeouts(timeout)}
        pool = pool_class.from_url(primary, **kwargs)
        client = _django_clients.setdefault(key, redis.Redis(connection_pool=pool))
    return client


class CacheAliasError(redis.ConnectionError):
    """The cache alias gives no Redis: a mistake in the settings, not an outage.

    A ``redis.ConnectionError`` still, so whatever fails open (or, as the prune
    command, loudly) on Redis errors does so here too; the fail-open layer logs it
    once as the mistake it is and never backs off and retries it as an outage.
    """


def _build(cache: dict[str, Any], timeout: float) -> redis.Redis:
    """Our client from the alias's LOCATION and OPTIONS, with our timeouts and a plain pool."""
    options = dict(cache.get("OPTIONS", {}))
    options["CONNECTION_POOL_KWARGS"] = {
        **_one_round_trip(),
        **options.get("CONNECTION_POOL_KWARGS", {}),
        **_timeouts(timeout),
    }
    pool_class = options.get("CONNECTION_POOL_CLASS")
    if pool_class and _plain(pool_class) is redis.ConnectionPool:
        options["CONNECTION_POOL_CLASS"] = "redis.ConnectionPool"
    factory = get_connection_factory(options=options)
    # django-redis writes to the first server of a list ("a,b" or ["a", "b"]).
    primary = _first(cache["LOCATION"], ",")
    pool = factory.get_connection_pool(factory.make_connection_params(primary))
    return redis.Redis(connection_pool=pool)


def _timeouts(timeout: float) -> dict[str, float]:
    return {"socket_timeout": timeout, "socket_connect_timeout": timeout}


def _plain(pool_class: str | type[redis.ConnectionPool]) -> type[redis.ConnectionPool]:
    """The cache's pool class, unless it blocks: waiting for a free connection is exactly
    the stall we are avoiding."""
    cls = import_string(pool_class) if isinstance(pool_class, str) else pool_class
    return redis.ConnectionPool if issubclass(cls, redis.BlockingConnectionPool) else cls


def _first(location: str | list[str], separators: str) -> str:
    """The first server of a LOCATION: one URL, a list, or URLs joined by ``separators``."""
    return (re.split(separators, location) if isinstance(location, str) else location)[0]


def _one_round_trip() -> dict[str, Any]:
    """Connection options that drop redis-py's optional handshake commands.

    A new connection would otherwise send HELLO 3 (redis-py 8's default protocol),
    CLIENT MAINT_NOTIFICATIONS and two CLIENT SETINFO before its first command,
    each a round trip that a slow Redis makes just under the timeout. What is left
    is what the server needs: AUTH with a password and SELECT for a database
    other than 0. RESP2 unless the cache asks for RESP3 (whos_online reads the
    same values either way); no maintenance notifications, which only move
    connections during a managed Redis's maintenance, when failing open is fine.
    Each option only where this redis-py has it (4.6 has none of them).
    """
    if redis.VERSION < (5,):
        return {}
    options: dict[str, Any] = {"protocol": 2}
    if hasattr(redis, "DriverInfo"):  # None sends no CLIENT SETINFO
        options["driver_info"] = None
    else:
        options.update(lib_name=None, lib_version=None)
    try:
        from redis.maint_notifications import MaintNotificationsConfig
    except ImportError:
        return options
    options["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    return options


def text(reply: Any) -> str:
    """A value Redis answered, as text: redis-py answers bytes unless told to decode."""
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
