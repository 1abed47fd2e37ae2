"""System checks for what would make whos_online silently wrong or slow."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register

from whos_online.conf import DEFAULTS, conf

MIDDLEWARE = "whos_online.middleware.WhosOnlineMiddleware"
AUTH_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"
DJANGO_REDIS_BACKEND = "django_redis.cache.RedisCache"

# Setting -> (accepted types, smallest allowed value or None).
TYPES: dict[str, tuple[tuple[type, ...], float | None]] = {
    "WHOS_ONLINE_CACHE_ALIAS": ((str,), None),
    "WHOS_ONLINE_KEY_PREFIX": ((str,), None),
    "WHOS_ONLINE_MAX_AGE": ((int, timedelta), 1),
    "WHOS_ONLINE_COOKIE_NAME": ((str,), None),
    "WHOS_ONLINE_COOKIE_AGE": ((int,), 1),
    "WHOS_ONLINE_TRACK_GUESTS": ((bool,), None),
    "WHOS_ONLINE_LIST_LIMIT": ((int,), 0),
    "WHOS_ONLINE_PROXY_COUNT": ((int,), 0),
    "WHOS_ONLINE_BACKOFF": ((int, float), 0),
    "WHOS_ONLINE_SOCKET_TIMEOUT": ((int, float), 0.001),
}
SANE_BACKOFF = (1, 600)
SANE_SOCKET_TIMEOUT = (0.01, 2)


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
    return []


@register(Tags.caches)
def check_cache(**kwargs: Any) -> list[CheckMessage]:
    alias = conf.cache_alias
    caches = getattr(settings, "CACHES", {})
    if alias not in caches:
        return [
            Error(
                f"WHOS_ONLINE_CACHE_ALIAS is {alias!r}, but CACHES has no such alias.",
                hint="Add a django-redis cache under that alias, or point the setting at one.",
                id="whos_online.E003",
            )
        ]
    backend = caches[alias].get("BACKEND")
    if backend != DJANGO_REDIS_BACKEND:
        return [
            Error(
                f"CACHES[{alias!r}] uses {backend!r}; whos_online needs a django-redis cache "
                "for its Redis connection.",
                hint=f"Set its BACKEND to {DJANGO_REDIS_BACKEND!r}, or set "
                "WHOS_ONLINE_CACHE_ALIAS to an alias that does.",
                id="whos_online.E004",
            )
        ]
    return []


@register(Tags.compatibility)
def check_settings(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = [
        Error(
            f"{name} is {value!r}; it must be {_describe(types, minimum)}.",
            hint=f"Fix or remove it (the default is {DEFAULTS[name]!r}).",
            id="whos_online.E005",
        )
        for name, (types, minimum) in TYPES.items()
        if hasattr(settings, name)
        and not _valid(value := getattr(settings, name), types, minimum)
    ]
    if errors:
        return errors
    warnings: list[CheckMessage] = []
    if conf.cookie_age >= conf.max_age:
        warnings.append(
            Warning(
                f"WHOS_ONLINE_COOKIE_AGE ({conf.cookie_age} s) is not shorter than "
                f"WHOS_ONLINE_MAX_AGE ({conf.max_age:g} s): an active visitor is re-recorded "
                "only after dropping out of the window, so members flicker out of the list.",
                hint="Keep the cookie age at most half the window.",
                id="whos_online.W001",
            )
        )
    if not SANE_BACKOFF[0] <= conf.backoff <= SANE_BACKOFF[1]:
        warnings.append(
            Warning(
                f"WHOS_ONLINE_BACKOFF is {conf.backoff:g} s: below {SANE_BACKOFF[0]} s a dead "
                f"Redis is retried (and waited on) almost every request; above {SANE_BACKOFF[1]} s "
                "tracking stays off long after Redis is back.",
                hint=f"Use a value between {SANE_BACKOFF[0]} and {SANE_BACKOFF[1]} seconds.",
                id="whos_online.W002",
            )
        )
    if not SANE_SOCKET_TIMEOUT[0] <= conf.socket_timeout <= SANE_SOCKET_TIMEOUT[1]:
        warnings.append(
            Warning(
                f"WHOS_ONLINE_SOCKET_TIMEOUT is {conf.socket_timeout:g} s: too short fails on a "
                "healthy loopback Redis, too long holds requests when Redis hangs.",
                hint=f"Use a value between {SANE_SOCKET_TIMEOUT[0]} and "
                f"{SANE_SOCKET_TIMEOUT[1]} seconds.",
                id="whos_online.W003",
            )
        )
    return warnings


def _valid(value: Any, types: tuple[type, ...], minimum: float | None) -> bool:
    # bool is an int subclass; True is no number of seconds.
    if isinstance(value, bool) and bool not in types:
        return False
    if not isinstance(value, types):
        return False
    if minimum is None:
        return True
    number = value.total_seconds() if isinstance(value, timedelta) else cast(float, value)
    return number >= minimum


def _describe(types: tuple[type, ...], minimum: float | None) -> str:
    names = " or ".join(t.__name__ for t in types)
    return names if minimum is None else f"{names} >= {minimum:g}"
