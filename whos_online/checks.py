"""System checks for what would make whos_online silently wrong or slow."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import timedelta
from ipaddress import ip_address
from typing import Any, cast

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.urls import NoReverseMatch, URLResolver, get_resolver, reverse
from django.utils.module_loading import import_string

from whos_online.client_ip import HEADERS
from whos_online.conf import conf
from whos_online.counting import DAY
from whos_online.members import logs_in_by_email
from whos_online.settings_table import REMOVED_SETTINGS, SETTINGS, Setting
from whos_online.url_rooms import format_fields

MIDDLEWARE = "whos_online.middleware.WhosOnlineMiddleware"
AUTH_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"
DJANGO_REDIS_BACKEND = "django_redis.cache.RedisCache"

SANE_BACKOFF = (1, 600)
HASH_TAG = re.compile(r"\{[^}]+\}")
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
    shared_by = _shared_by(alias)
    if shared_by:
        return [
            Warning(
                f"WHOS_ONLINE_CACHE_ALIAS is {alias!r}, which is also {shared_by}: "
                "a cache.clear() there (a deploy step, a test helper) flushes the whole Redis "
                "database, erasing who is online, the most-ever-online peak and the history.",
                hint="Give whos_online its own django-redis alias on its own Redis database "
                '(e.g. "redis://127.0.0.1:6379/1") and name it in WHOS_ONLINE_CACHE_ALIAS.',
                id="whos_online.W010",
            )
        ]
    return []


CACHE_SESSIONS = (
    "django.contrib.sessions.backends.cache",
    "django.contrib.sessions.backends.cached_db",
)


def _shared_by(alias: str) -> str | None:
    """What else Django's cache framework keeps under ``alias``, or in its Redis database."""
    if alias == "default":
        return "django.core.cache.cache"
    if settings.SESSION_ENGINE in CACHE_SESSIONS and settings.SESSION_CACHE_ALIAS == alias:
        return "the sessions' cache (SESSION_CACHE_ALIAS)"
    ours = _databases(alias)
    for other in settings.CACHES:
        shared = ours & _databases(other) if other != alias else set()
        if shared:
            return f"the Redis database of CACHES[{other!r}] ({min(shared)})"
    return None


def _databases(alias: str) -> set[str]:
    """The Redis databases (``server/db``) a cache alias's LOCATION names.

    django-redis and Django's own Redis cache take one URL, a list, or a string
    of them separated by commas (Django's also semicolons); redis-py parses
    each, as they do. A loopback address is one server by any name.
    """
    location = settings.CACHES[alias].get("LOCATION") or ""
    urls = re.split("[;,]", location) if isinstance(location, str) else location
    found = set()
    for url in urls:
        try:
            params = redis.ConnectionPool.from_url(str(url).strip()).connection_kwargs
        except ValueError:  # not a Redis URL: another kind of cache
            continue
        host = str(params.get("host", "localhost"))
        server = params.get("path") or f"{_loopback(host) or host}:{params.get('port', 6379)}"
        found.add(f"{server}/{params.get('db', 0)}")
    return found


def _loopback(host: str) -> str | None:
    try:
        return "localhost" if host == "localhost" or ip_address(host).is_loopback else None
    except ValueError:
        return None


@register(Tags.compatibility)
def check_settings(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for setting in SETTINGS:
        if setting.check != "whos_online.E005" or not hasattr(settings, setting.name):
            continue
        value = getattr(settings, setting.name)
        if not _valid(value, setting):
            errors.append(
                Error(
                    f"{setting.name} is {value!r}; it must be {_describe(setting)}.",
                    hint=f"Fix or remove it (the default is {setting.default!r}).",
                    id="whos_online.E005",
                )
            )
        elif setting.choices and value not in setting.choices:
            errors.append(
                Error(
                    f"{setting.name} is {value!r}; it must be one of "
                    f"{', '.join(map(repr, setting.choices))}.",
                    hint=f"Use one of them, or remove the setting (the default is "
                    f"{setting.default!r}).",
                    id="whos_online.E005",
                )
            )
    if errors:
        return errors
    warnings: list[CheckMessage] = []
    if conf.show_day_total and conf.retention < DAY:
        warnings.append(
            Warning(
                f"WHOS_ONLINE_SHOW_DAY_TOTAL is on but members are kept for "
                f"{conf.retention:g} s (WHOS_ONLINE_RETENTION): the past 24 hours' total "
                "misses members whom whos_online_prune removed before the day was over.",
                hint="Set WHOS_ONLINE_RETENTION to at least timedelta(days=1).",
                id="whos_online.W008",
            )
        )
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
    client_setting = getattr(settings, "WHOS_ONLINE_REDIS_CLIENT", None)
    if client_setting is not None and not HASH_TAG.search(conf.key_prefix):
        warnings.append(
            Warning(
                f"WHOS_ONLINE_KEY_PREFIX {conf.key_prefix!r} has no hash tag. With a Redis "
                "Cluster client, whos_online's scripts touch several keys at once and fail "
                "with CROSSSLOT unless all keys of the namespace share one slot.",
                hint='Use a prefix with a hash tag, e.g. "{whos_online}" (any other client: '
                "silence whos_online.W006).",
                id="whos_online.W006",
            )
        )
    if conf.idle_after >= conf.max_age:
        warnings.append(
            Warning(
                f"WHOS_ONLINE_IDLE_AFTER ({conf.idle_after:g} s) is not shorter than "
                f"WHOS_ONLINE_MAX_AGE ({conf.max_age:g} s), so no member ever shows as idle.",
                hint="Make it shorter than the window, e.g. half of it.",
                id="whos_online.W005",
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


@register(Tags.compatibility)
def check_removed_settings(**kwargs: Any) -> list[CheckMessage]:
    """A setting whos_online no longer reads is named, not silently ignored."""
    return [
        Warning(
            f"{name} is no longer read: {instead}.",
            hint=f"Remove {name} from your settings.",
            id="whos_online.W011",
        )
        for name, instead in REMOVED_SETTINGS.items()
        if hasattr(settings, name)
    ]


# The checks of the settings that name a callable, one id each.
CALLABLE_CHECKS = {
    "whos_online.E006",
    "whos_online.E007",
    "whos_online.E008",
    "whos_online.E009",
    "whos_online.E014",
}


@register(Tags.compatibility)
def check_callables(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for setting in SETTINGS:
        if setting.check not in CALLABLE_CHECKS:
            continue
        name, value = setting.name, getattr(settings, setting.name, setting.default)
        if value is None:
            continue
        try:
            usable = callable(value if not isinstance(value, str) else import_string(value))
            problem = "is not callable"
        except ImportError as exc:
            usable, problem = False, f"cannot be imported ({exc})"
        if not usable:
            errors.append(
                Error(
                    f"{name} is {value!r}, which {problem}.",
                    hint="Set it to a callable (or its dotted path), or to None.",
                    id=setting.check,
                )
            )
    return errors


@register(Tags.compatibility)
def check_proxies(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    trusted = getattr(settings, "WHOS_ONLINE_TRUSTED_PROXIES", ())
    if conf.trusted_proxies is None:
        errors.append(
            Error(
                f"WHOS_ONLINE_TRUSTED_PROXIES is {trusted!r}; it must be a list of networks "
                "(CIDRs) or addresses. Until it is fixed no guest is counted.",
                hint='E.g. ["10.0.0.0/8", "2001:db8:ff::/48"]: the addresses your reverse '
                "proxies connect from.",
                id="whos_online.E010",
            )
        )
    if conf.proxy_header not in HEADERS:
        errors.append(
            Error(
                f"WHOS_ONLINE_PROXY_HEADER is {conf.proxy_header!r}.",
                hint=f"Use one of {', '.join(map(repr, HEADERS))}: the header your proxies write.",
                id="whos_online.E011",
            )
        )
    if trusted and conf.proxy_count:
        errors.append(
            Error(
                "Both WHOS_ONLINE_TRUSTED_PROXIES and WHOS_ONLINE_PROXY_COUNT are set; "
                "the list wins and the count is ignored.",
                hint="Keep one: the list of your proxies' networks is the safer.",
                id="whos_online.E012",
            )
        )
    return errors


@register(Tags.compatibility)
def check_exclusions(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for name in [s.name for s in SETTINGS if s.check == "whos_online.E013"]:
        value = getattr(settings, name, ())
        problem = None
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            problem = "is not a list"
        else:
            for pattern in value:
                try:
                    re.compile(pattern)
                except (re.error, TypeError) as exc:
                    problem = f"has {pattern!r}, which is no regular expression ({exc})"
                    break
        if problem:
            errors.append(
                Error(
                    f"{name} {problem}; until it is fixed nothing is excluded.",
                    hint=r'A list of regular expressions, e.g. [r"/healthz$", "/api/"].',
                    id="whos_online.E013",
                )
            )
    return errors


@register(Tags.urls)
def check_rooms(**kwargs: Any) -> list[CheckMessage]:
    """Each WHOS_ONLINE_ROOMS entry names a URL pattern and a room every such URL can fill."""
    rooms = getattr(settings, "WHOS_ONLINE_ROOMS", {})
    hint = 'E.g. {"forum_conversation:topic": "topic:{pk}"}: a URL name, namespaces included.'
    if not isinstance(rooms, dict):
        return [
            Error(
                f"WHOS_ONLINE_ROOMS is {rooms!r}; it must be a dict of URL names to rooms, so "
                "until it is fixed no URL records into a room.",
                hint=hint,
                id="whos_online.E015",
            )
        ]
    if not rooms:
        return []
    patterns: dict[str, list[frozenset[str]]] = {}
    for name, given in _url_names(get_resolver().url_patterns):
        patterns.setdefault(name, []).append(given)
    errors: list[CheckMessage] = []
    for name, spec in rooms.items():
        problem = _room_problem(spec, patterns[name]) if name in patterns else "no URL is named so"
        if problem:
            errors.append(
                Error(
                    f"WHOS_ONLINE_ROOMS[{name!r}]: {problem}, so its views name no room.",
                    hint=hint,
                    id="whos_online.E015",
                )
            )
    return errors


def _url_names(
    patterns: Iterable[Any], namespace: str = "", given: frozenset[str] = frozenset()
) -> Iterator[tuple[str, frozenset[str]]]:
    """Each named URL pattern as ``reverse`` names it, with the keyword arguments its view gets
    (captured by it and the includes above it, or given as extra arguments)."""
    for entry in patterns:
        names = given | set(entry.pattern.regex.groupindex)
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _url_names(entry.url_patterns, inner, names | set(entry.default_kwargs))
        elif entry.name:
            yield namespace + entry.name, names | set(entry.default_args)


def _room_problem(spec: object, patterns: list[frozenset[str]]) -> str | None:
    """What keeps ``spec`` from naming a room for URLs with these keyword arguments."""
    if callable(spec):
        return None
    if not isinstance(spec, str):
        return f'{spec!r} is neither a room string ("topic:{{pk}}") nor a callable'
    try:
        fields = format_fields(spec)
    except ValueError as error:
        return str(error).rstrip(".")
    for given in patterns:
        missing = [field for field in fields if field not in given]
        if missing:
            has = ", ".join(sorted(given)) or "none"
            return f"{spec!r} needs {', '.join(missing)}, which the URL does not capture (it has {has})"
    return None


@register(Tags.urls)
def check_live_urls(**kwargs: Any) -> list[CheckMessage]:
    """With WebSockets set up, live blocks need whos_online's URLs (their fallback endpoint)."""
    if not getattr(settings, "WHOS_ONLINE_WEBSOCKET_URL", None):
        return []
    try:
        reverse("whos_online:live")
    except NoReverseMatch:
        return [
            Error(
                "WHOS_ONLINE_WEBSOCKET_URL is set, but whos_online's URLs are not in your "
                "URLconf, so live blocks ({% whos_online live=… %}) cannot refresh.",
                hint='Add path("whos-online/", include("whos_online.urls")) to your URLconf.',
                id="whos_online.E016",
            )
        ]
    return []


@register(Tags.compatibility)
def check_member_names(**kwargs: Any) -> list[CheckMessage]:
    """Email-login sites: the default card never shows the address, but names nobody either."""
    if hasattr(settings, "WHOS_ONLINE_MEMBER_CARD"):
        return []
    user_model = get_user_model()
    if not logs_in_by_email(user_model):
        return []
    return [
        Warning(
            f"{user_model.__name__} logs in by email address and WHOS_ONLINE_MEMBER_CARD is "
            "not set: the block shows members by short name, and as "
            '"Member #<pk>" when that is empty or an email address.',
            hint="Set WHOS_ONLINE_MEMBER_CARD to a callable returning the display name "
            '(e.g. {"name": user.profile.nickname}); see the docs\' how-to "Sites whose users '
            'log in by email address".',
            id="whos_online.W007",
        )
    ]


def _valid(value: Any, setting: Setting) -> bool:
    if value is None:
        return type(None) in setting.accepts
    # bool is an int subclass; True is no number of seconds.
    if isinstance(value, bool) and bool not in setting.accepts:
        return False
    if not isinstance(value, setting.accepts):
        return False
    number = value.total_seconds() if isinstance(value, timedelta) else cast(float, value)
    minimum, maximum = setting.minimum, setting.maximum
    return (minimum is None or number >= minimum) and (maximum is None or number <= maximum)


def _describe(setting: Setting) -> str:
    """What E005 accepts, in words: "int or timedelta >= 1"."""
    names = " or ".join("None" if t is type(None) else t.__name__ for t in setting.accepts)
    minimum, maximum = setting.minimum, setting.maximum
    if minimum is not None and maximum is not None:
        return f"{names} from {minimum:g} to {maximum:g}"
    return names if minimum is None else f"{names} >= {minimum:g}"
