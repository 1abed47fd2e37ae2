"""Every ``WHOS_ONLINE_*`` setting, declared once: its default and its check.

``DEFAULTS`` and the system checks are made from ``SETTINGS``; the core reference's
"Settings" section (docs/reference/core.md) describes each one, and tests/test_docs.py
holds its settings, defaults and checks to these.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple, Union

SECONDS = (int, timedelta)
NUMBER = (int, float)
# A dotted path, a callable or None: check_callables checks these, each under its own id.
CALLABLE = (str, Callable, type(None))


class Setting(NamedTuple):
    """One setting. ``check`` names the system check that validates it: E005 checks
    ``accepts``, ``minimum`` and ``choices``; the others are checks of their own."""

    name: str
    default: Any
    accepts: tuple[Any, ...] = ()  # what isinstance() takes
    minimum: float | None = None
    choices: tuple[str | None, ...] = ()
    check: str = "whos_online.E005"


SETTINGS: tuple[Setting, ...] = (
    Setting("WHOS_ONLINE_CACHE_ALIAS", "default", (str,)),
    Setting("WHOS_ONLINE_KEY_PREFIX", "whos_online", (str,)),
    Setting("WHOS_ONLINE_MAX_AGE", 600, SECONDS, 1),
    Setting("WHOS_ONLINE_ROOM_MAX_AGE", None, (*SECONDS, type(None)), 1),
    Setting(
        "WHOS_ONLINE_GUESTS", "exact", (str, type(None)), choices=("exact", "approximate", None)
    ),
    Setting("WHOS_ONLINE_LIST_LIMIT", 100, (int,), 0),
    Setting("WHOS_ONLINE_PROXIES", 0, check="whos_online.E010"),
    Setting("WHOS_ONLINE_EXCLUDE_PATHS", (), check="whos_online.E013"),
    Setting(
        "WHOS_ONLINE_IS_BOT", "whos_online.defaults.is_bot", CALLABLE, check="whos_online.E006"
    ),
    Setting("WHOS_ONLINE_RETENTION", None, (*SECONDS, type(None)), 1),
    Setting("WHOS_ONLINE_REDIS_CLIENT", None, CALLABLE, check="whos_online.E008"),
    Setting(
        "WHOS_ONLINE_MEMBER_CARD",
        "whos_online.defaults.default_card",
        CALLABLE,
        check="whos_online.E009",
    ),
    Setting("WHOS_ONLINE_ACCESS", None, CALLABLE, check="whos_online.E014"),
    Setting("WHOS_ONLINE_ROOMS", {}, check="whos_online.E015"),
)
DEFAULTS: dict[str, Any] = {setting.name: setting.default for setting in SETTINGS}

# Settings whos_online read once, and what does their work now (check W015 names it).
REMOVED = {
    "WHOS_ONLINE_PROXY_HEADER": "give WHOS_ONLINE_PROXIES under the header's name, e.g. "
    '{"Forwarded": ["10.0.0.0/8"]}',
    "WHOS_ONLINE_SOCKET_TIMEOUT": "the cache alias's OPTIONS: SOCKET_TIMEOUT (django-redis) "
    "or socket_timeout (Django's RedisCache)",
    "WHOS_ONLINE_TRACK_PAGES": "rooms say where members are: the in_room decorator and "
    "{% whos_here %}",
    "WHOS_ONLINE_BLOCK_CACHE": "a process keeps a block's read for 1 s; a test that records "
    "someone other than through a page calls whos_online.testing.reset() before reading the "
    "block",
}
# The headers WHOS_ONLINE_PROXIES may name; a bare count or list means the first.
PROXY_HEADERS = ("X-Forwarded-For", "Forwarded")
# The socket timeout of whos_online's Redis calls when the cache alias's OPTIONS set none.
SOCKET_TIMEOUT = 0.25

# How ``whos_online.conf`` reads a value of the kinds above.
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


def seconds(value: Any) -> float:
    """Seconds, from a number or a timedelta."""
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


# A WHOS_ONLINE_ROOMS value naming a callable, not a room: identifiers joined by dots,
# so neither a {field} nor the ':' a room's parts are joined by.
DOTTED_PATH = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)+")
