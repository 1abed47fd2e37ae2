"""System checks of the site around whos_online: its middleware, its caches and its URLconf."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import suppress
from ipaddress import ip_address
from typing import Any

import redis
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.urls import URLResolver, get_resolver
from django.utils.module_loading import import_string
from redis.exceptions import RedisClusterException, RedisError

from whos_online.conf import conf
from whos_online.rooms.url_names import format_fields
from whos_online.settings_table import DOTTED_PATH
from whos_online.store.connection import (
    DJANGO_BACKEND,
    DJANGO_REDIS_BACKEND,
    CacheAliasError,
    get_client,
)

MIDDLEWARE = "whos_online.middleware.WhosOnlineMiddleware"
AUTH_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"
UPDATE_CACHE = "django.middleware.cache.UpdateCacheMiddleware"


@register(Tags.compatibility)
def check_middleware(**kwargs: Any) -> list[CheckMessage]:
    middleware = list(settings.MIDDLEWARE)
    if MIDDLEWARE not in middleware:
        return [
            Error(
                f"{MIDDLEWARE} is not in MIDDLEWARE, so nobody is ever recorded as online.",
                hint=f"Add it to MIDDLEWARE after {AUTH_MIDDLEWARE}.",
                id="whos_online.E001",
            )
        ]
    if AUTH_MIDDLEWARE not in middleware or middleware.index(AUTH_MIDDLEWARE) > middleware.index(
        MIDDLEWARE
    ):
        return [
            Error(
                f"{MIDDLEWARE} must come after {AUTH_MIDDLEWARE}: it needs request.user "
                "to tell members from guests.",
                hint=f"Move it below {AUTH_MIDDLEWARE} in MIDDLEWARE.",
                id="whos_online.E002",
            )
        ]
    if UPDATE_CACHE in middleware and middleware.index(UPDATE_CACHE) > middleware.index(MIDDLEWARE):
        return [
            Warning(
                f"{UPDATE_CACHE} comes after {MIDDLEWARE}: the per-site cache stores a "
                "member's page before whos_online marks it private, and may serve their "
                "view of the block (staff see hidden members) to anyone.",
                hint="Put UpdateCacheMiddleware first in MIDDLEWARE, as Django documents.",
                id="whos_online.W014",
            )
        ]
    return []


@register(Tags.caches)
def check_cache(**kwargs: Any) -> list[CheckMessage]:
    """The cache alias whos_online connects through, unless WHOS_ONLINE_REDIS_CLIENT replaces it."""
    if getattr(settings, "WHOS_ONLINE_REDIS_CLIENT", None) is not None:
        return []
    alias = conf.cache_alias
    caches = getattr(settings, "CACHES", {})
    if alias not in caches:
        return [
            Error(
                f"WHOS_ONLINE_CACHE_ALIAS is {alias!r}, but CACHES has no such alias.",
                hint="Add a Redis cache (django-redis or Django's RedisCache) under that alias, "
                "or point the setting at one.",
                id="whos_online.E003",
            )
        ]
    backend = caches[alias].get("BACKEND")
    if backend not in (DJANGO_BACKEND, DJANGO_REDIS_BACKEND):
        return [
            Error(
                f"CACHES[{alias!r}] uses {backend!r}; whos_online needs a Redis cache "
                "for its Redis connection.",
                hint=f"Set its BACKEND to {DJANGO_BACKEND!r} or {DJANGO_REDIS_BACKEND!r}, or "
                "set WHOS_ONLINE_CACHE_ALIAS to an alias that does.",
                id="whos_online.E004",
            )
        ]
    shared_by = _shared_by(alias)
    if shared_by:
        return [
            Warning(
                f"WHOS_ONLINE_CACHE_ALIAS is {alias!r}, which is also {shared_by}: "
                "a cache.clear() there (a deploy step, a test helper) flushes the whole Redis "
                "database, erasing who is online, the most-ever-online peak and the history.",
                hint="Give whos_online its own Redis cache alias on its own Redis database "
                '(e.g. "redis://127.0.0.1:6379/1") and name it in WHOS_ONLINE_CACHE_ALIAS.',
                id="whos_online.W010",
            )
        ]
    return []


@register(Tags.caches, deploy=True)
def check_redis_answers(**kwargs: Any) -> list[CheckMessage]:
    """``check --deploy`` only: one PING. A Warning: the site runs without Redis, and the
    Redis may not be up yet where the deploy runs its checks."""
    try:
        get_client().ping()
    except CacheAliasError:
        return []  # E003 or E004 says what is wrong with the alias
    except (RedisError, RedisClusterException) as error:
        return [
            Warning(
                f"whos_online could not reach Redis ({type(error).__name__}: {error}); until "
                "it answers, pages show the block as unavailable and nobody is recorded.",
                hint="Start Redis, or check the LOCATION of the cache alias "
                "WHOS_ONLINE_CACHE_ALIAS names (or WHOS_ONLINE_REDIS_CLIENT).",
                id="whos_online.W013",
            )
        ]
    return []


def _shared_by(alias: str) -> str | None:
    """What else Django's cache framework keeps under ``alias``, or in its Redis database."""
    if alias == "default":
        return "django.core.cache.cache"
    # Django's "cache" and "cached_db" session engines.
    cache_sessions = settings.SESSION_ENGINE.startswith("django.contrib.sessions.backends.cache")
    if cache_sessions and settings.SESSION_CACHE_ALIAS == alias:
        return "the sessions' cache (SESSION_CACHE_ALIAS)"
    ours = _databases(alias)
    for other in settings.CACHES:
        shared = ours & _databases(other) if other != alias else set()
        if shared:
            return f"the Redis database of CACHES[{other!r}] ({min(shared)})"
    return None


def _databases(alias: str) -> set[str]:
    """The Redis databases (``server/db``) a cache alias's LOCATION names: one URL, a list,
    or a string of them split by commas or semicolons. Loopback is one server by any name."""
    location = settings.CACHES[alias].get("LOCATION") or ""
    urls = re.split("[;,]", location) if isinstance(location, str) else location
    found = set()
    for url in urls:
        try:
            params = redis.ConnectionPool.from_url(str(url).strip()).connection_kwargs
        except ValueError:  # not a Redis URL: another kind of cache
            continue
        host = str(params.get("host", "localhost"))
        with suppress(ValueError):  # a host name, not an address
            host = "localhost" if ip_address(host).is_loopback else host
        server = params.get("path") or f"{host}:{params.get('port', 6379)}"
        found.add(f"{server}/{params.get('db', 0)}")
    return found


@register(Tags.urls)
def check_rooms(**kwargs: Any) -> list[CheckMessage]:
    """Each WHOS_ONLINE_ROOMS entry names a URL pattern and a room every such URL can fill."""
    rooms = getattr(settings, "WHOS_ONLINE_ROOMS", {})
    if not isinstance(rooms, dict):
        return [
            Error(
                f"WHOS_ONLINE_ROOMS is {rooms!r}; it must be a dict of URL names to rooms, so "
                "until it is fixed no URL records into a room.",
                hint=ROOMS_HINT,
                id="whos_online.E015",
            )
        ]
    if not rooms:
        return []
    patterns: dict[str, list[frozenset[str]]] = {}
    for name, keywords in _url_names(get_resolver().url_patterns):
        patterns.setdefault(name, []).append(keywords)
    errors: list[CheckMessage] = []
    for name, spec in rooms.items():
        problem = _room_problem(spec, patterns[name]) if name in patterns else "no URL is named so"
        if problem:
            errors.append(
                Error(
                    f"WHOS_ONLINE_ROOMS[{name!r}]: {problem}, so its views name no room.",
                    hint=ROOMS_HINT,
                    id="whos_online.E015",
                )
            )
    return errors


ROOMS_HINT = (
    'E.g. {"forum_conversation:topic": "topic:{pk}"}: a URL name, namespaces included, and '
    "a room whose fields are the URL's keyword arguments. For a URL that captures its path "
    "positionally (a CMS's catch-all), name the room with a callable taking the view's "
    "arguments, request first, or its dotted path (Wagtail's is "
    '"whos_online.contrib.wagtail.pages.page_room"): see "CMS pages as rooms" in the docs.'
)


def _url_names(
    patterns: Iterable[Any], namespace: str = "", given: frozenset[str] = frozenset()
) -> Iterator[tuple[str, frozenset[str]]]:
    """Each named URL pattern as ``reverse`` names it, with the keyword arguments its view gets."""
    for entry in patterns:
        keywords = given | set(entry.pattern.regex.groupindex)
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _url_names(entry.url_patterns, inner, keywords | set(entry.default_kwargs))
        elif entry.name:
            yield namespace + entry.name, keywords | set(entry.default_args)


def _room_problem(spec: object, patterns: list[frozenset[str]]) -> str | None:
    """What keeps ``spec`` from naming a room for URLs with these keyword arguments."""
    if callable(spec):
        return None
    if not isinstance(spec, str):
        return f'{spec!r} is neither a room string ("topic:{{pk}}") nor a callable'
    if DOTTED_PATH.fullmatch(spec):
        try:
            found = import_string(spec)
        except ImportError as error:
            return f"{spec!r} is a dotted path that names nothing to import ({error})"
        return None if callable(found) else f"{spec!r} names {found!r}, which is not callable"
    try:
        fields = format_fields(spec)
    except ValueError as error:
        return str(error).rstrip(".")
    for keywords in patterns:
        missing = [field for field in fields if field not in keywords]
        if missing:
            has = ", ".join(sorted(keywords)) or "none"
            return f"{spec!r} needs {', '.join(missing)}, which the URL does not capture (it has {has})"
    return None
