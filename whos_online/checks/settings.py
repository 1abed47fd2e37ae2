"""System checks of whos_online's settings: each value as settings_table declares it, and
the settings against each other."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.utils.module_loading import import_string

from whos_online.conf import conf
from whos_online.settings_table import CALLABLE, PROXY_HEADERS, REMOVED, SETTINGS, Setting, seconds
from whos_online.store.members import logs_in_by_email

HASH_TAG = re.compile(r"\{[^}]+\}")
SANE_SOCKET_TIMEOUT = (0.01, 2)


@register(Tags.compatibility)
def check_settings(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for setting in SETTINGS:
        if setting.check != "whos_online.E005" or not hasattr(settings, setting.name):
            continue
        value = getattr(settings, setting.name)
        if not _valid(value, setting):
            names = " or ".join("None" if t is type(None) else t.__name__ for t in setting.accepts)
            expected = names if setting.minimum is None else f"{names} >= {setting.minimum:g}"
            fix = "Fix or remove it"
        elif setting.choices and value not in setting.choices:
            expected = f"one of {', '.join(map(repr, setting.choices))}"
            fix = "Use one of them, or remove the setting"
        else:
            continue
        errors.append(
            Error(
                f"{setting.name} is {value!r}; it must be {expected}.",
                hint=f"{fix} (the default is {setting.default!r}).",
                id="whos_online.E005",
            )
        )
    if errors:
        return errors
    warnings: list[CheckMessage] = []
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
    room_window = getattr(settings, "WHOS_ONLINE_ROOM_MAX_AGE", None)
    if room_window is not None and seconds(room_window) > conf.max_age:
        warnings.append(
            Warning(
                f"WHOS_ONLINE_ROOM_MAX_AGE ({seconds(room_window):g} s) is longer than "
                f"WHOS_ONLINE_MAX_AGE ({conf.max_age:g} s): rooms use the site's window.",
                hint="A room says where someone is now: make its window at most the site's.",
                id="whos_online.W012",
            )
        )
    if not SANE_SOCKET_TIMEOUT[0] <= conf.socket_timeout <= SANE_SOCKET_TIMEOUT[1]:
        warnings.append(
            Warning(
                f"The socket timeout of the cache {conf.cache_alias!r} is "
                f"{conf.socket_timeout:g} s: too short fails on a healthy loopback Redis, too "
                "long holds requests when Redis hangs.",
                hint=f"Set its OPTIONS' SOCKET_TIMEOUT (django-redis) or socket_timeout "
                f"(Django's RedisCache) between {SANE_SOCKET_TIMEOUT[0]} and "
                f"{SANE_SOCKET_TIMEOUT[1]} seconds, or remove it (the default is 0.25).",
                id="whos_online.W003",
            )
        )
    return warnings


@register(Tags.compatibility)
def check_callables(**kwargs: Any) -> list[CheckMessage]:
    """The settings the table says take a callable, each under its own id."""
    errors: list[CheckMessage] = []
    for setting in SETTINGS:
        if setting.accepts != CALLABLE:
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
    if conf.proxy_header not in PROXY_HEADERS:
        return [
            Error(
                f"WHOS_ONLINE_PROXIES names the header {conf.proxy_header!r}; until it is "
                "fixed no guest is counted.",
                hint=f"Use one of {', '.join(map(repr, PROXY_HEADERS))}: the header your "
                "proxies write.",
                id="whos_online.E011",
            )
        ]
    if conf.trusted_proxies is None:
        value = getattr(settings, "WHOS_ONLINE_PROXIES", 0)
        return [
            Error(
                f"WHOS_ONLINE_PROXIES is {value!r}; it must be a number of proxies (0 or more) "
                "or a list of networks (CIDRs) or addresses. Until it is fixed no guest is "
                "counted.",
                hint='E.g. ["10.0.0.0/8", "2001:db8:ff::/48"]: the addresses your reverse '
                "proxies connect from.",
                id="whos_online.E010",
            )
        ]
    return []


@register(Tags.compatibility)
def check_removed(**kwargs: Any) -> list[CheckMessage]:
    """A setting whos_online no longer reads, still set: say what does its work now."""
    return [
        Warning(
            f"{name} is set, but whos_online no longer reads it.",
            hint=f"Remove it; instead, {instead}.",
            id="whos_online.W015",
        )
        for name, instead in REMOVED.items()
        if hasattr(settings, name)
    ]


@register(Tags.compatibility)
def check_exclusions(**kwargs: Any) -> list[CheckMessage]:
    value = getattr(settings, "WHOS_ONLINE_EXCLUDE_PATHS", ())
    problem = None
    if not isinstance(value, (list, tuple)):
        problem = "is not a list"
    else:
        for pattern in value:
            try:
                re.compile(pattern)
            except (re.error, TypeError) as exc:
                problem = f"has {pattern!r}, which is no regular expression ({exc})"
                break
    if not problem:
        return []
    return [
        Error(
            f"WHOS_ONLINE_EXCLUDE_PATHS {problem}; until it is fixed nothing is excluded.",
            hint=r'A list of regular expressions, e.g. [r"/healthz$", "/api/"].',
            id="whos_online.E013",
        )
    ]


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
    if isinstance(value, bool) and bool not in setting.accepts:
        return False  # bool is an int subclass; True is no number of seconds
    if not isinstance(value, setting.accepts):
        return False
    return value is None or setting.minimum is None or seconds(value) >= setting.minimum
