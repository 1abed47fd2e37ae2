"""Every ``WHOS_ONLINE_*`` setting, declared once: its default, its check and its docs.

``DEFAULTS``, the system checks and the docs' settings reference are all made from
``SETTINGS``, so none of them can disagree with another.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from typing import Any, NamedTuple, Union

from django.utils.module_loading import import_string

SECONDS = (int, timedelta)
NUMBER = (int, float)


class Setting(NamedTuple):
    """One setting. ``check`` names the system check that validates it: E005 checks
    ``accepts``, ``minimum`` and ``choices``; the others are checks of their own."""

    name: str
    default: Any
    takes: str  # what it takes, in words, for the reference
    doc: str  # one or two sentences of Markdown, for the reference
    accepts: tuple[type, ...] = ()
    minimum: float | None = None
    choices: tuple[str | None, ...] = ()
    check: str = "whos_online.E005"


CALLABLE = "dotted path, callable or `None`"  # check_callables checks those that take "callable"

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "WHOS_ONLINE_CACHE_ALIAS", "default", "`str`",
        "The Redis cache (django-redis's, or Django's own `RedisCache`) whose Redis holds the "
        "sets. Give whos_online an alias and "
        "a Redis database of its own (check `W010`).",
        (str,),
    ),
    Setting(
        "WHOS_ONLINE_KEY_PREFIX", "whos_online", "`str`",
        "Keys are `<prefix>:users`, `<prefix>:guests` and so on. On Redis Cluster use a "
        'hash tag such as `"{whos_online}"` so they share a slot (check `W006`).',
        (str,),
    ),
    Setting(
        "WHOS_ONLINE_MAX_AGE", 600, "`int` (seconds) or `timedelta`",
        "The window: who was seen in the last this-many seconds is online. A member seen "
        'more than half of it ago shows as `"idle"`, and a recorded visitor\'s "online" '
        "cookie lasts half of it (so an active visitor is recorded again before leaving it).",
        SECONDS, 1,
    ),
    Setting(
        "WHOS_ONLINE_ROOM_MAX_AGE", None, "`int` (seconds), `timedelta` or `None` (the window)",
        "The rooms' window: a reader stays listed in a room this long after their last sign "
        "there. A room says where someone is now, so it may be shorter than "
        "`WHOS_ONLINE_MAX_AGE` (e.g. 120); never longer (check `W012`).",
        (*SECONDS, type(None)), 1,
    ),
    Setting(
        "WHOS_ONLINE_GUESTS", "exact", '`"exact"`, `"approximate"` or `None`',
        '`"exact"` keeps a sorted set of guests (a keyed hash of each address), capped at '
        '100,000 (about 10 MB): at the cap a new guest replaces one already out of the window, '
        'or is not counted. `"approximate"` counts them with HyperLogLogs: about 175 KB of '
        "Redis whatever their number, within about 1%. `None` counts no guest.",
        (str, type(None)), choices=("exact", "approximate", None),
    ),
    Setting(
        "WHOS_ONLINE_LIST_LIMIT", 100, "`int`",
        'Most members the block lists; the rest show as "and N more".',
        (int,), 0,
    ),
    Setting(
        "WHOS_ONLINE_PROXIES", 0, "`int` or list of CIDRs or addresses, or either under a header",
        "Your reverse proxies. `0`: use `REMOTE_ADDR` and ignore the proxy header. A number "
        "`N`: use the N-th address from the right of the proxy header. A list of your "
        'proxies\' networks (e.g. `["10.0.0.0/8"]`, the safer): hops are read from '
        "`REMOTE_ADDR` leftwards and the first address outside them is the guest. The header "
        "read is `X-Forwarded-For`; for RFC 7239's `Forwarded`, give the number or list under "
        'its name: `{"Forwarded": ["10.0.0.0/8"]}` (only that header is then read; any other '
        "name is check `E011`). Left at `0` behind a proxy, every guest has the proxy's "
        "address (one WARNING per process, a logger under `whos_online`).",
        check="whos_online.E010",
    ),
    Setting(
        "WHOS_ONLINE_EXCLUDE_PATHS", (), "list of regexes",
        "Paths that are no visits (health checks, APIs, assets): matched from the path's "
        'start, so `"/api/"` is a prefix and `r"/healthz$"` exact.',
        check="whos_online.E013",
    ),
    Setting(
        "WHOS_ONLINE_IS_BOT", "whos_online.defaults.is_bot", CALLABLE,
        'Called with the request of a would-be guest; `True` means "not a visitor": not '
        "counted, no cookie. `None` counts every request.",
        check="whos_online.E006",
    ),
    Setting(
        "WHOS_ONLINE_RETENTION", None, "`int` (seconds), `timedelta` or `None` (the window)",
        'How long members\' last-seen times are kept, for "last seen 3 days ago". The list '
        "and counts still use the window; `whos_online_prune` removes members only after "
        'this. At a day or more the block adds "In total there were N users online in the '
        'past 24 hours.", counted in its own round trip.',
        (*SECONDS, type(None)), 1,
    ),
    Setting(
        "WHOS_ONLINE_REDIS_CLIENT", None, CALLABLE,
        "A callable returning the Redis client to use instead of the cache alias's (e.g. a "
        "`redis.cluster.RedisCluster`, or a Sentinel's `master_for(...)`). Called once; its "
        "own timeouts apply, so give it short ones.",
        check="whos_online.E008",
    ),
    Setting(
        "WHOS_ONLINE_MEMBER_CARD", "whos_online.defaults.default_card",
        "dotted path or callable",
        "Called with a member's user when they are recorded; returns the card the block "
        "shows: `name`, `url`, `avatar` and up to five small extra fields, or "
        '`"hidden": True` to keep the member out of every list but the staff\'s. The '
        "default never shows an email address and hides nobody.",
        check="whos_online.E009",
    ),
    Setting(
        "WHOS_ONLINE_ACCESS", None, CALLABLE,
        "Who sees the site list and who sees and joins which room, on pages, the endpoint "
        "and sockets: called with the user and the room's name (`None` for the site). "
        "`None`: the site list is public, a page's rooms open, no room served over a socket. "
        "See [Who may see who is online](../howto/access.md).",
        check="whos_online.E014",
    ),
    Setting(
        "WHOS_ONLINE_ROOMS", {}, "`dict` of URL names to rooms",
        "Rooms on views you do not own: a namespaced URL name mapped to a room, a string "
        'filled from the URL\'s keyword arguments (`{"forum_conversation:topic": '
        '"topic:{pk}"}`) or a callable taking the view\'s arguments (or its dotted path). See '
        "[Rooms on views you don't own](../howto/third-party-views.md).",
        check="whos_online.E015",
    ),
)  # fmt: skip
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

# The reference's sections, by purpose: what every site sets first, then each feature's.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Every site", (
        "WHOS_ONLINE_CACHE_ALIAS", "WHOS_ONLINE_MAX_AGE", "WHOS_ONLINE_PROXIES",
        "WHOS_ONLINE_EXCLUDE_PATHS",
    )),
    ("Who is counted and how they are shown", (
        "WHOS_ONLINE_MEMBER_CARD", "WHOS_ONLINE_GUESTS", "WHOS_ONLINE_IS_BOT",
        "WHOS_ONLINE_LIST_LIMIT", "WHOS_ONLINE_RETENTION",
    )),
    ("Rooms", ("WHOS_ONLINE_ROOMS", "WHOS_ONLINE_ACCESS", "WHOS_ONLINE_ROOM_MAX_AGE")),
    ("Redis", (
        "WHOS_ONLINE_KEY_PREFIX", "WHOS_ONLINE_REDIS_CLIENT",
    )),
)  # fmt: skip

# How ``whos_online.conf`` reads a value of the kinds above.
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


def seconds(value: Any) -> float:
    """Seconds, from a number or a timedelta."""
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


# A WHOS_ONLINE_ROOMS value naming a callable, not a room: identifiers joined by dots,
# so neither a {field} nor the ':' a room's parts are joined by.
DOTTED_PATH = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)+")


def room_spec(value: Any) -> Any:
    """A WHOS_ONLINE_ROOMS value as the middleware uses it: a dotted path as the callable it
    names (None if it names none: check E015), any other value as it is."""
    if not (isinstance(value, str) and DOTTED_PATH.fullmatch(value)):
        return value
    try:
        found = import_string(value)
    except ImportError:
        return None
    return found if callable(found) else None
