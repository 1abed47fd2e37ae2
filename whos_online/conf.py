"""Settings with their defaults; ``override_settings`` and the test ``settings`` fixture work.

``Settings`` also names every Redis key whos_online writes: the key layout is
spelled here alone, and the Lua scripts are given whole key names.

Each value is read and converted once, then kept as a plain attribute until
Django's ``setting_changed`` signal (sent by ``override_settings`` and by
pytest-django's ``settings`` fixture on assignment, not on ``del``) names a
setting whos_online reads. Every read of ``django.conf.settings`` goes through a
Python-level ``__getattribute__``, and an unset setting raises and catches an
AttributeError: a recording request read about 30 of them.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from datetime import date, timedelta
from functools import lru_cache
from typing import Any, Callable, Generic, NamedTuple, TypeVar, Union, cast, overload

from django.conf import settings
from django.core.signals import setting_changed
from django.db.models import Model
from django.http import HttpRequest
from django.utils.module_loading import import_string

GUEST_COUNTING_MODES = ("exact", "approximate")
SECONDS = (int, timedelta)
NUMBER = (int, float)


class Setting(NamedTuple):
    """One ``WHOS_ONLINE_*`` setting: its default, how it is checked, and its line in the docs.

    ``SETTINGS`` below is the one place a setting is declared: ``DEFAULTS`` is made
    from it, ``check`` names the system check that validates it (E005 checks
    ``accepts``, ``minimum``, ``maximum`` and ``choices``; the others are checks of
    their own in checks.py), and the docs' settings reference is generated from it.
    """

    name: str
    default: Any
    takes: str  # what it takes, in words, for the reference
    doc: str  # one or two sentences of Markdown, for the reference
    accepts: tuple[type, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    check: str = "whos_online.E005"


def _callable_setting(
    name: str,
    default: str | None,
    doc: str,
    check: str,
    kind: str = "dotted path, callable or `None`",
) -> Setting:
    """A setting naming a callable, or its dotted path (imported once, on first use)."""
    return Setting(name, default, kind, doc, check=check)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "WHOS_ONLINE_CACHE_ALIAS", "default", "`str`",
        "The django-redis cache whose Redis holds the sets. Give whos_online an alias and "
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
        "The window: who was seen in the last this-many seconds is online.",
        SECONDS, 1,
    ),
    Setting(
        "WHOS_ONLINE_COOKIE_NAME", "online", "`str`", "Name of the throttle cookie.", (str,)
    ),
    Setting(
        "WHOS_ONLINE_COOKIE_AGE", 300, "`int` (seconds)",
        "How long a recorded visitor is not recorded again. Keep it at most half of "
        "`WHOS_ONLINE_MAX_AGE`, or active members flicker out of the list (check `W001`).",
        (int,), 1,
    ),
    Setting(
        "WHOS_ONLINE_TRACK_GUESTS", True, "`bool`", "Count anonymous visitors.", (bool,)
    ),
    Setting(
        "WHOS_ONLINE_LIST_LIMIT", 100, "`int`",
        'Most members the block lists; the rest show as "and N more".',
        (int,), 0,
    ),
    Setting(
        "WHOS_ONLINE_PROXY_COUNT", 0, "`int`",
        "Reverse proxies in front of Django. `0`: use `REMOTE_ADDR` and ignore the proxy "
        "header. `N`: use the N-th address from the right of the proxy header. Left at `0` "
        "behind a proxy, every guest has the proxy's address (one WARNING per process, "
        "logger `whos_online.client_ip`).",
        (int,), 0,
    ),
    Setting(
        "WHOS_ONLINE_TRUSTED_PROXIES", (), "list of CIDRs or addresses",
        'Your proxies\' networks, e.g. `["10.0.0.0/8"]` (instead of a count): hops are read '
        "from `REMOTE_ADDR` leftwards and the first address outside them is the guest.",
        check="whos_online.E010",
    ),
    Setting(
        "WHOS_ONLINE_PROXY_HEADER", "X-Forwarded-For", '`"X-Forwarded-For"` or `"Forwarded"`',
        "The header your proxies write; `\"Forwarded\"` reads RFC 7239's `for=`. Only that "
        "one is read.",
        check="whos_online.E011",
    ),
    Setting(
        "WHOS_ONLINE_EXCLUDE_PATHS", (), "list of regexes",
        "Paths that are no visits (health checks, APIs, assets): matched from the path's "
        'start, so `"/api/"` is a prefix and `r"/healthz$"` exact.',
        check="whos_online.E013",
    ),
    Setting(
        "WHOS_ONLINE_BACKOFF", 5, "`int` or `float` (seconds)",
        "The longest a process skips Redis after a failure before trying again. The first "
        "back-off is 1 s; each failed retry doubles it up to this, so a repaired Redis is "
        "used again within this long (check `W002`).",
        NUMBER, 0,
    ),
    Setting(
        "WHOS_ONLINE_SOCKET_TIMEOUT", 0.25, "`int` or `float` (seconds)",
        "Connect and read timeout of whos_online's own Redis pool, whatever the cache's "
        "OPTIONS say, Sentinel included; a `WHOS_ONLINE_REDIS_CLIENT`'s own timeouts apply "
        "(check `W003`). A call slower than 0.4 × this (0.1 s by default) counts as slow: 5 "
        "in a row make the process skip Redis as a failure does.",
        NUMBER, 0.001,
    ),
    Setting(
        "WHOS_ONLINE_BLOCK_CACHE", 1.0, "`int` or `float` (seconds)",
        "How long a process keeps the block's summary (per site or room, staff or "
        "visitors' view, list limit). `0` reads Redis for every block.",
        NUMBER, 0,
    ),
    Setting(
        "WHOS_ONLINE_MAX_GUESTS", 100_000, "`int`",
        "Cap on the guest set (exact counting only; 100,000 guests take about 10 MB). At the "
        "cap a new guest replaces one already out of the window, or is not counted.",
        (int,), 1,
    ),
    Setting(
        "WHOS_ONLINE_MAX_ROOMS", 10_000, "`int`",
        "Cap on live rooms: registering one more drops the least recently visited with its "
        "keys.",
        (int,), 1,
    ),
    Setting(
        "WHOS_ONLINE_IPV6_PREFIX", 64, "`int` (1–128)",
        "IPv6 guests are grouped by this network prefix: one device rotating privacy "
        "addresses inside its /64 is one guest. `128` counts every address.",
        (int,), 1, 128,
    ),
    _callable_setting(
        "WHOS_ONLINE_IS_BOT", "whos_online.bots.is_bot",
        'Called with the request of a would-be guest; `True` means "not a visitor": not '
        "counted, no cookie. `None` counts every request.",
        "whos_online.E006",
    ),
    Setting(
        "WHOS_ONLINE_IDLE_AFTER", 300, "`int` (seconds) or `timedelta`",
        'A member seen longer ago than this, but inside the window, is `"idle"` rather than '
        '`"online"` (check `W005`).',
        SECONDS, 1,
    ),
    Setting(
        "WHOS_ONLINE_RETENTION", None, "`int` (seconds), `timedelta` or `None` (the window)",
        'How long members\' last-seen times are kept, for "last seen 3 days ago". The list '
        "and counts still use the window; `whos_online_prune` removes members only after "
        "this.",
        (*SECONDS, type(None)), 1,
    ),
    _callable_setting(
        "WHOS_ONLINE_IS_HIDDEN", None,
        "Called with a member's user when they are recorded; `True` means \"don't list me\".",
        "whos_online.E007",
    ),
    _callable_setting(
        "WHOS_ONLINE_REDIS_CLIENT", None,
        "A callable returning the Redis client to use instead of the cache alias's (e.g. a "
        "`redis.cluster.RedisCluster`). Called once; its own timeouts apply, so give it "
        "short ones.",
        "whos_online.E008",
    ),
    _callable_setting(
        "WHOS_ONLINE_MEMBER_CARD", "whos_online.members.default_card",
        "Called with a member's user when they are recorded; returns the card the block "
        "shows: `name`, `url`, `avatar` and up to five small extra fields. The default never "
        "shows an email address.",
        "whos_online.E009",
        "dotted path or callable",
    ),
    Setting(
        "WHOS_ONLINE_TRACK_PAGES", False, "`bool`",
        "Keep the path each member was last recorded on in their card, shown to staff only "
        'on the admin\'s "Online now" page.',
        (bool,),
    ),
    Setting(
        "WHOS_ONLINE_GUEST_COUNTING", "exact", '`"exact"` or `"approximate"`',
        '`"approximate"` counts guests with HyperLogLogs: about 175 KB of Redis whatever the '
        "number of guests, no `WHOS_ONLINE_MAX_GUESTS` cap, within about 1%.",
        (str,), choices=GUEST_COUNTING_MODES,
    ),
    Setting(
        "WHOS_ONLINE_SHOW_DAY_TOTAL", False, "`bool`",
        'Add "In total there were N users online in the past 24 hours." to the block, '
        "counted in the block's own round trip. Set `WHOS_ONLINE_RETENTION` to at least a "
        "day with it (check `W008`).",
        (bool,),
    ),
    Setting(
        "WHOS_ONLINE_HEARTBEAT", 25, "`int` or `float` (seconds) or `timedelta`",
        "How often each server process beats for all its open WebSocket connections: one "
        "Redis round trip per 200 connections, not one per socket. A connection without a "
        "beat for 2.4 × this (60 s by default: two missed beats and a margin) is gone, its "
        "process having died.",
        (*NUMBER, timedelta), 0.001,
    ),
    Setting(
        "WHOS_ONLINE_WEBSOCKET_URL", None, "`str` or `None`",
        "Where `whos_online.realtime.routing` is mounted (e.g. `\"/ws/whos-online/\"`); live "
        "blocks subscribe there. `None`: they poll.",
        (str, type(None)),
    ),
    _callable_setting(
        "WHOS_ONLINE_ROOM_ACCESS", None,
        "Who may see and join which room over WebSockets: called with the user and the "
        "room's name. `None`: no room is served.",
        "whos_online.E014",
    ),
    Setting(
        "WHOS_ONLINE_ROOMS", {}, "`dict` of URL names to rooms",
        "Rooms on views you do not own: a namespaced URL name mapped to a room, a string "
        'filled from the URL\'s keyword arguments (`{"forum_conversation:topic": '
        '"topic:{pk}"}`) or a callable taking the view\'s arguments. See '
        "[Rooms on views you don't own](../howto/third-party-views.md).",
        check="whos_online.E015",
    ),
)  # fmt: skip
DEFAULTS: dict[str, Any] = {setting.name: setting.default for setting in SETTINGS}

# Settings no longer read, and what covers each now (check W011 names any still set).
REMOVED_SETTINGS: dict[str, str] = {
    "WHOS_ONLINE_HEARTBEAT_TIMEOUT": "a WebSocket connection is gone after 2.4 × "
    "WHOS_ONLINE_HEARTBEAT (60 s at the default 25 s), so tune the heartbeat instead",
    "WHOS_ONLINE_SLOW_CALL": "a Redis call is slow after 0.4 × WHOS_ONLINE_SOCKET_TIMEOUT "
    "(0.1 s at the default 0.25 s), so tune the socket timeout instead",
    "WHOS_ONLINE_EXCLUDE_USER_AGENTS": "match your monitors' User-Agents in a "
    "WHOS_ONLINE_IS_BOT callable that also calls whos_online.bots.is_bot (the docs' "
    '"Health checks and monitors" has the recipe)',
    "WHOS_ONLINE_STORE_RAW_IP": "no address is stored any more, only a keyed hash of it "
    '(the docs\' "Privacy and the GDPR")',
}
# A connection is gone after this many heartbeats without one: two missed, and a margin.
HEARTBEATS_TO_TIMEOUT = 2.4
# A Redis call is slow after this share of the socket timeout: well inside it, so a Redis
# that answers just in time still counts as failing.
SLOW_SHARE_OF_TIMEOUT = 0.4

T = TypeVar("T")


def _get(name: str) -> Any:
    return getattr(settings, name, DEFAULTS[name])


class cached_setting(Generic[T]):
    """A ``Settings`` property computed on first read, then kept in the instance's ``__dict__``.

    A non-data descriptor: once kept, a read is a plain attribute lookup (about 30
    a recording request). ``setting_changed`` empties the ``__dict__``.
    """

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> cached_setting[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: Any, owner: type | None = None) -> T | cached_setting[T]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


MAX_ROOM_NAME = 200


def room_name(room: object) -> str | None:
    """The name a room is kept under, for any value a view can produce; None if empty.

    A tuple is the room's parts and a model instance a part (see
    ``room_parts``), so ``("topic", 42)`` and a Topic instance name the rooms
    ``{% whos_here "topic" 42 %}`` and ``{% whos_here topic %}`` show. Any
    other value: its ``str()``; None or "" is no room. Longer than
    MAX_ROOM_NAME characters: its start and a hash of the whole, so each long
    name keeps a stable short one of its own (a 10,000-digit pk is a room, not
    an error).
    """
    if isinstance(room, (tuple, Model)):
        name = room_parts(room)
    else:
        name = room if isinstance(room, str) else "" if room is None else str(room)
    if len(name) > MAX_ROOM_NAME:
        digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=12)
        name = f"{name[: MAX_ROOM_NAME - 25]}~{digest.hexdigest()}"
    # A lone surrogate cannot be sent to Redis: it becomes U+FFFD.
    return name.encode("utf-8", "surrogatepass").decode("utf-8", "replace") or None


def room_kind(name: str) -> str:
    """A room's kind, its name up to the first ':' ("topic" for "topic:2"): a member
    is in one room of a kind at a time."""
    return name.split(":", 1)[0]


def room_parts(*parts: object) -> str:
    """Parts joined by ":" (``"topic", 42`` is "topic:42"); a model instance is
    "<app_label>.<model_name>:<pk>", stable across renames of its title.

    ValueError for a part that names nothing (None, "", an unsaved instance):
    a name built from a missing value would silently be another room, often
    one shared by every page.
    """
    if not parts:
        raise ValueError("A room needs a name: no parts were given.")
    names = []
    for part in parts:
        if isinstance(part, tuple):  # the parts a view passes whole: ("topic", 42)
            part = room_parts(*part)
        elif isinstance(part, Model):
            if part.pk is None:
                raise ValueError(f"{parts!r} names no room: {part!r} is not saved (no pk).")
            part = f"{part._meta.label_lower}:{part.pk}"
        text = "" if part is None else str(part)
        if not text:
            raise ValueError(f"{parts!r} names no room: {part!r} is empty.")
        names.append(text)
    return ":".join(names)


Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


class Keys(NamedTuple):
    """The Redis keys of one namespace: the site's, or a room's."""

    users: str
    hidden: str
    guests: str
    peak: str
    # The site's member cards (rooms share them): pk -> JSON.
    cards: str


class SocketKeys(NamedTuple):
    """WebSocket presence (see whos_online.realtime.consumers) in a namespace: pk -> newest
    heartbeat of their open connections, and pk -> when their last one closed."""

    live: str
    left: str


class Settings:
    """Typed, lazy view of the ``WHOS_ONLINE_*`` settings."""

    @cached_setting
    def cache_alias(self) -> str:
        return str(_get("WHOS_ONLINE_CACHE_ALIAS"))

    @cached_setting
    def key_prefix(self) -> str:
        return str(_get("WHOS_ONLINE_KEY_PREFIX"))

    def keys(self, room: object = None) -> Keys:
        """The site's keys, or a room's: the same layout under ``<prefix>:room:<room>``.

        The room's name as ``room_name`` makes it; ValueError if it is empty.
        """
        return self._site_keys if room is None else self._keys(self._namespace(room))

    @cached_setting
    def _site_keys(self) -> Keys:
        return self._keys(self.key_prefix)

    def _keys(self, base: str) -> Keys:
        return Keys(
            f"{base}:users",
            f"{base}:hidden",
            f"{base}:guests",
            f"{base}:peak",
            f"{self.key_prefix}:cards",
        )

    def socket_keys(self, room: object = None) -> SocketKeys:
        """A namespace's WebSocket presence keys (kept out of Keys: scripts index those)."""
        base = self._namespace(room)
        return SocketKeys(f"{base}:live", f"{base}:left")

    def namespace_keys(self, room: object) -> tuple[str, ...]:
        """Every key of a namespace that a room dropped over WHOS_ONLINE_MAX_ROOMS loses
        (rooms keep no peak; a member's connections there expire with the heartbeat)."""
        keys = self.keys(room)
        return (
            keys.users,
            keys.hidden,
            keys.guests,
            *self.socket_keys(room),
            self.changes_key(room),
        )

    def connections_key(self, room: object, pk: str) -> str:
        """One member's open connections in a namespace: connection id -> last heartbeat."""
        return f"{self._namespace(room)}:conns:{pk}"

    def member_rooms_key(self, pk: str) -> str:
        """The rooms a member is in: kind (the name up to its first ':') -> room."""
        return f"{self.key_prefix}:member:{pk}:rooms"

    def changes_key(self, room: object = None) -> str:
        """When a namespace last changed (a mark the hubs compare, in case a notice was lost)."""
        return f"{self._namespace(room)}:changed"

    # The HyperLogLogs (see whos_online.counting): a namespace's guests per time
    # bucket of the window, and the union of the window's buckets but the newest;
    # the site's guests per hour, and the union of the past 24 hours' but this one;
    # the site's guests and members per day.
    def bucket_key(self, guests_key: str, bucket: int) -> str:
        return f"{guests_key}:hll:{bucket}"

    def buckets_union_key(self, guests_key: str, first: int, last: int) -> str:
        return f"{guests_key}:hll:past:{first}:{last}"

    def hour_key(self, hour: int) -> str:
        return f"{self.key_prefix}:guests:hour:{hour}"

    def hours_union_key(self, hour: int) -> str:
        return f"{self.key_prefix}:guests:hour:past:{hour}"

    def day_key(self, who: str, day: date) -> str:
        """The per-day key of ``who`` ("guests" or "members")."""
        return f"{self.key_prefix}:{who}:day:{day.isoformat()}"

    @cached_setting
    def notices_channel(self) -> str:
        """The Pub/Sub channel the scripts publish a changed namespace's room on ('': the site)."""
        return f"{self.key_prefix}:notices"

    def _namespace(self, room: object) -> str:
        """The site's prefix, or a room's (named as ``room_name`` names it; ValueError if empty)."""
        if room is None:
            return self.key_prefix
        name = room_name(room)
        if name is None:
            raise ValueError("A room needs a name.")
        return f"{self.key_prefix}:room:{name}"

    @cached_setting
    def guests_key(self) -> str:
        return self.keys().guests

    @cached_setting
    def rooms_key(self) -> str:
        """Every room with recent visitors, scored by the last one, so prune can find them."""
        return f"{self.key_prefix}:rooms"

    @cached_setting
    def history_key(self) -> str:
        return f"{self.key_prefix}:history"

    @cached_setting
    def generation_key(self) -> str:
        """The second this Redis's data began (see whos_online.recovery); never expires."""
        return f"{self.key_prefix}:generation"

    @cached_setting
    def max_age(self) -> float:
        """The online window in seconds (the setting may be a timedelta)."""
        return _seconds(_get("WHOS_ONLINE_MAX_AGE"))

    @cached_setting
    def idle_after(self) -> float:
        """Seconds after which a member inside the window shows as idle."""
        return _seconds(_get("WHOS_ONLINE_IDLE_AFTER"))

    @cached_setting
    def retention(self) -> float:
        """How long members' last-seen times are kept: at least the window."""
        value = _get("WHOS_ONLINE_RETENTION")
        return self.max_age if value is None else max(_seconds(value), self.max_age)

    @cached_setting
    def window_minutes(self) -> int:
        """The window in whole minutes, at least 1, as the block shows it."""
        return round(self.max_age / 60) or 1

    @cached_setting
    def cookie_name(self) -> str:
        return str(_get("WHOS_ONLINE_COOKIE_NAME"))

    @cached_setting
    def cookie_age(self) -> int:
        return int(_get("WHOS_ONLINE_COOKIE_AGE"))

    @cached_setting
    def track_guests(self) -> bool:
        return bool(_get("WHOS_ONLINE_TRACK_GUESTS"))

    @cached_setting
    def list_limit(self) -> int:
        return int(_get("WHOS_ONLINE_LIST_LIMIT"))

    @cached_setting
    def proxy_count(self) -> int:
        return int(_get("WHOS_ONLINE_PROXY_COUNT"))

    @cached_setting
    def trusted_proxies(self) -> tuple[Network, ...] | None:
        """The proxies' networks; None when the setting is not a list of CIDRs (check E010)."""
        value = _get("WHOS_ONLINE_TRUSTED_PROXIES")
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            return None
        return _networks(tuple(str(entry) for entry in value))

    @cached_setting
    def proxy_header(self) -> str:
        """Which header the proxies write: "X-Forwarded-For" or "Forwarded" (RFC 7239)."""
        return str(_get("WHOS_ONLINE_PROXY_HEADER"))

    @cached_setting
    def exclude_paths(self) -> re.Pattern[str] | None:
        """Paths that are no visits: regexes matched from the path's start (a prefix works)."""
        return _patterns(_get("WHOS_ONLINE_EXCLUDE_PATHS"))

    @cached_setting
    def backoff(self) -> float:
        """The longest back-off after a Redis failure (the first is shorter)."""
        return float(_get("WHOS_ONLINE_BACKOFF"))

    @cached_setting
    def socket_timeout(self) -> float:
        return float(_get("WHOS_ONLINE_SOCKET_TIMEOUT"))

    @cached_setting
    def slow_call(self) -> float:
        """Seconds after which a Redis call counts as slow, toward opening the breaker."""
        return SLOW_SHARE_OF_TIMEOUT * self.socket_timeout

    @cached_setting
    def block_cache(self) -> float:
        """Seconds a process keeps a block's summary; 0 reads Redis for every block."""
        return float(_get("WHOS_ONLINE_BLOCK_CACHE"))

    @cached_setting
    def max_guests(self) -> int:
        return int(_get("WHOS_ONLINE_MAX_GUESTS"))

    @cached_setting
    def max_rooms(self) -> int:
        return int(_get("WHOS_ONLINE_MAX_ROOMS"))

    @cached_setting
    def ipv6_prefix(self) -> int:
        return int(_get("WHOS_ONLINE_IPV6_PREFIX"))

    @cached_setting
    def is_bot(self) -> Callable[[HttpRequest], bool] | None:
        """The bot filter: a callable taking the request, or None."""
        return cast("Callable[[HttpRequest], bool] | None", _callable("WHOS_ONLINE_IS_BOT"))

    @cached_setting
    def redis_client(self) -> Callable[[], Any] | None:
        """A callable returning the Redis client to use instead of the cache alias's."""
        return cast("Callable[[], Any] | None", _callable("WHOS_ONLINE_REDIS_CLIENT"))

    @cached_setting
    def session_cookie_name(self) -> str:
        return str(settings.SESSION_COOKIE_NAME)

    @cached_setting
    def secret_key(self) -> str:
        return str(settings.SECRET_KEY)

    @cached_setting
    def member_card(self) -> Callable[[Any], dict[str, Any]]:
        """The callable that makes a member's card (name, url, avatar, extras) from the user."""
        return cast("Callable[[Any], dict[str, Any]]", _callable("WHOS_ONLINE_MEMBER_CARD"))

    @cached_setting
    def track_pages(self) -> bool:
        """Whether a member's card records the page they were last seen on (for staff)."""
        return bool(_get("WHOS_ONLINE_TRACK_PAGES"))

    @cached_setting
    def guest_counting(self) -> str:
        """ "exact" (a sorted set of guests) or "approximate" (HyperLogLogs: see counting.py)."""
        return str(_get("WHOS_ONLINE_GUEST_COUNTING"))

    @cached_setting
    def show_day_total(self) -> bool:
        """Whether the block adds "In total there were N users online in the past 24 hours"."""
        return bool(_get("WHOS_ONLINE_SHOW_DAY_TOTAL"))

    @cached_setting
    def heartbeat(self) -> float:
        """Seconds between a process's heartbeats for its open WebSocket connections."""
        return _seconds(_get("WHOS_ONLINE_HEARTBEAT"))

    @cached_setting
    def heartbeat_timeout(self) -> float:
        """A connection without a heartbeat for this long is gone (its process died)."""
        return HEARTBEATS_TO_TIMEOUT * self.heartbeat

    @cached_setting
    def websocket_url(self) -> str | None:
        """Where the site routes ``WhosOnlineConsumer`` (e.g. "/ws/whos-online/"); None: poll."""
        value = _get("WHOS_ONLINE_WEBSOCKET_URL")
        return None if value is None else str(value)

    @cached_setting
    def room_access(self) -> Callable[[Any, str], Any] | None:
        """Who may see and join which room over WebSockets (see whos_online.realtime.access)."""
        return cast("Callable[[Any, str], Any] | None", _callable("WHOS_ONLINE_ROOM_ACCESS"))

    @cached_setting
    def rooms(self) -> dict[str, object]:
        """URL name -> the room its views record into (see whos_online.url_rooms); {} when the
        setting is no dict (check E015)."""
        value = _get("WHOS_ONLINE_ROOMS")
        return dict(value) if isinstance(value, dict) else {}

    @cached_setting
    def is_hidden(self) -> Callable[[Any], bool]:
        """Whether a member asked not to be listed: a callable taking the user."""
        return cast("Callable[[Any], bool]", _callable("WHOS_ONLINE_IS_HIDDEN") or _nobody)


def _callable(name: str) -> Any:
    """The setting's callable, imported once if it is a dotted path."""
    value = _get(name)
    return _import(value) if isinstance(value, str) else value


def _nobody(user: Any) -> bool:
    return False


def _seconds(value: Any) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


@lru_cache(maxsize=64)
def _networks(values: tuple[str, ...]) -> tuple[Network, ...] | None:
    try:
        return tuple(ipaddress.ip_network(value, strict=False) for value in values)
    except ValueError:
        return None


def _patterns(value: Any) -> re.Pattern[str] | None:
    """One regex for a list of them; None for none, or for a broken list (check E013)."""
    if not value or isinstance(value, str) or not isinstance(value, (list, tuple)):
        return None
    return _compile(tuple(str(pattern) for pattern in value))


@lru_cache(maxsize=64)
def _compile(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    try:
        return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))
    except re.error:
        return None


@lru_cache(maxsize=None)
def _import(path: str) -> Any:
    return import_string(path)


conf = Settings()

# Django's settings whos_online reads besides its own.
READ_SETTINGS = frozenset({"CACHES", "SECRET_KEY", "SECRET_KEY_FALLBACKS", "SESSION_COOKIE_NAME"})
_resets: list[Callable[[], object]] = []


def on_settings_change(*resets: Callable[[], object]) -> None:
    """Call each of ``resets`` (an ``lru_cache``'s ``cache_clear``…) when a setting we read changes."""
    _resets.extend(resets)


def _setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting.startswith("WHOS_ONLINE_") or setting in READ_SETTINGS:
        vars(conf).clear()
        for reset in _resets:
            reset()


setting_changed.connect(_setting_changed, dispatch_uid="whos_online.conf")
