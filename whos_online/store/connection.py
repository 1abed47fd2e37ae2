"""The Redis client whos_online talks to: the cache alias's server, with our short timeouts."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings
from django.utils.module_loading import import_string

from whos_online.conf import conf, on_settings_change

DJANGO_REDIS_BACKEND = "django_redis.cache.RedisCache"
DJANGO_BACKEND = "django.core.cache.backends.redis.RedisCache"  # Django's own, since 4.0


class CacheAliasError(redis.ConnectionError):
    """The cache alias gives no Redis: a mistake in the settings, not an outage.

    A ``redis.ConnectionError`` still, so whatever fails open (or, as the prune
    command, loudly) on Redis errors does so here too; the fail-open layer logs it
    once as the mistake it is and never backs off and retries it as an outage.
    """


@lru_cache(maxsize=1)
def get_client() -> redis.Redis:
    """Return the client from ``WHOS_ONLINE_REDIS_CLIENT``, or one for the cache alias.

    Made once until a setting changes. A site on Redis Cluster or Sentinel names
    a callable returning its client (e.g. a ``redis.cluster.RedisCluster``); its
    own timeouts apply.
    """
    factory = conf.redis_client
    return factory() if factory is not None else _for_alias(conf.cache_alias)


on_settings_change(get_client.cache_clear)


def _for_alias(alias: str) -> redis.Redis:
    """A client of our own for the first server of the alias's LOCATION (the one its
    backend writes to), with its connection options and its socket timeout (``conf.socket_timeout``).

    Neither backend applies a timeout unless the cache's OPTIONS set one, and
    django-redis's IGNORE_EXCEPTIONS does not cover a raw client, so a dead Redis
    could hold every request for as long as the OS lets a socket hang. Our pool
    never blocks: waiting for a free connection is the stall we avoid.
    """
    try:
        if alias not in settings.CACHES:
            raise ValueError("CACHES has no such alias")
        cache = settings.CACHES[alias]
        options = _pool_options(cache)
        location = cache.get("LOCATION") or ""
        servers = re.split("[;,]", location) if isinstance(location, str) else list(location)
        timeout = conf.socket_timeout
        options.update(socket_timeout=timeout, socket_connect_timeout=timeout)
        pool = redis.ConnectionPool.from_url(servers[0].strip(), **options)
    except (ValueError, TypeError, ImportError, IndexError) as e:
        raise CacheAliasError(
            f"WHOS_ONLINE_CACHE_ALIAS is {alias!r}, and CACHES gives no Redis cache for it "
            f"({type(e).__name__}: {e}); point the setting at a django-redis cache or Django's "
            "RedisCache, or name a client in WHOS_ONLINE_REDIS_CLIENT (manage.py check says more)"
        ) from e
    return redis.Redis(connection_pool=pool)


def _pool_options(cache: dict[str, Any]) -> dict[str, Any]:
    """redis-py's pool arguments from a cache's OPTIONS, as its backend reads them."""
    options = dict(cache.get("OPTIONS", {}))
    backend = cache.get("BACKEND")
    if backend == DJANGO_BACKEND:  # OPTIONS are the pool's arguments, less these of Django's
        options.pop("serializer", None)
        options.pop("pool_class", None)
        if isinstance(options.get("parser_class"), str):
            options["parser_class"] = import_string(options["parser_class"])
        return options
    if backend != DJANGO_REDIS_BACKEND:
        raise ValueError(f"its BACKEND is {backend!r}, not a Redis cache")
    if "SENTINELS" in options:
        raise ValueError("a Sentinel cache, whose LOCATION names no server")
    kwargs = dict(options.get("CONNECTION_POOL_KWARGS", {}))
    if options.get("PASSWORD"):
        kwargs["password"] = options["PASSWORD"]
    return kwargs


def text(reply: Any) -> str:
    """A value Redis answered, as text: redis-py answers bytes unless told to decode."""
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
