"""``conf``: the settings of whos_online.settings_table, typed, and every Redis key's name.

Each value is read once (``cached_property``) and forgotten when Django's
``setting_changed`` signal names a setting whos_online reads.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import date, timedelta
from functools import cached_property
from typing import Any, Callable, NamedTuple, cast

from django.conf import settings
from django.core.signals import setting_changed
from django.http import HttpRequest
from django.utils.module_loading import import_string

from whos_online.room_names import room_name
from whos_online.settings_table import (
    DEFAULTS,
    DOTTED_PATH,
    PROXY_HEADERS,
    SOCKET_TIMEOUT,
    Network,
    seconds,
)

# A Redis call is slow after this share of the socket timeout: well inside it, so a Redis
# that answers just in time still counts as failing.
SLOW_SHARE_OF_TIMEOUT = 0.4
# The "online" cookie and a member's "idle" status both start half a window after their
# last record: an active visitor is recorded again well before leaving the window.
HALF_WINDOW = 0.5


def _get(name: str) -> Any:
    return getattr(settings, name, DEFAULTS[name])


class Keys(NamedTuple):
    """The Redis keys of one namespace: the site's, or a room's."""

    users: str
    hidden: str
    guests: str
    peak: str
    # The site's member cards (rooms share them): pk -> JSON.
    cards: str


class SocketKeys(NamedTuple):
    """A namespace's push presence: pk -> when alive until, pk -> last close, and the
    indexes of the members those keep (lua/lib/kept.lua). The four share one TTL."""

    live: str
    left: str
    kept_users: str
    kept_hidden: str


class Settings:
    """Typed, lazy view of the ``WHOS_ONLINE_*`` settings."""

    @cached_property
    def cache_alias(self) -> str:
        return str(_get("WHOS_ONLINE_CACHE_ALIAS"))

    @cached_property
    def key_prefix(self) -> str:
        return str(_get("WHOS_ONLINE_KEY_PREFIX"))

    def keys(self, room: object = None) -> Keys:
        """The site's keys, or a room's: the same layout under ``<prefix>:room:<room>``."""
        base = self._namespace(room)
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
        return SocketKeys(f"{base}:live", f"{base}:left", *map(self.kept_key, self.keys(room)[:2]))

    def kept_key(self, member_set: str) -> str:
        """The index of the members of ``member_set`` a socket keeps (see lua/lib/kept.lua)."""
        base, _, name = member_set.rpartition(":")
        return f"{base}:kept:{name}"

    def namespace_keys(self, room: object) -> tuple[str, ...]:
        """Every key of a namespace that a room dropped over the rooms cap loses
        (rooms keep no peak; a member's connections there expire with their timeout)."""
        return (*self.keys(room)[:3], *self.socket_keys(room))

    def connections_key(self, room: object, pk: str) -> str:
        """One member's open connections in a namespace: connection id -> when alive until."""
        return f"{self._namespace(room)}:conns:{pk}"

    def member_rooms_key(self, pk: str) -> str:
        """The rooms a member is in: kind (the name up to its first ':') -> room."""
        return f"{self.key_prefix}:member:{pk}:rooms"

    # The HyperLogLogs (see whos_online.store.counting): a namespace's guests per time
    # bucket of the window; the site's guests and members per hour and per day.
    def bucket_key(self, guests_key: str, bucket: int) -> str:
        return f"{guests_key}:hll:{bucket}"

    def hour_key(self, who: str, hour: int) -> str:
        return f"{self.key_prefix}:{who}:hour:{hour}"

    def past_hours_key(self, who: str, hour: int) -> str:
        """The union of ``who``'s 23 hour keys before ``hour``, which prune makes."""
        return f"{self.key_prefix}:{who}:hour:past:{hour}"

    def day_key(self, who: str, day: date) -> str:
        return f"{self.key_prefix}:{who}:day:{day.isoformat()}"

    @cached_property
    def notices_channel(self) -> str:
        """The Pub/Sub channel the scripts publish a changed namespace's room on ('': the site)."""
        return f"{self.key_prefix}:notices"

    def _namespace(self, room: object) -> str:
        """The site's prefix, or a room's (ValueError if its name is empty)."""
        if room is None:
            return self.key_prefix
        name = room_name(room)
        if name is None:
            raise ValueError("A room needs a name.")
        return f"{self.key_prefix}:room:{name}"

    @cached_property
    def rooms_key(self) -> str:
        """Every room with recent visitors, scored by the last one, so prune can find them."""
        return f"{self.key_prefix}:rooms"

    @cached_property
    def history_key(self) -> str:
        return f"{self.key_prefix}:history"

    @cached_property
    def max_age(self) -> float:
        """The online window in seconds (the setting may be a timedelta)."""
        return seconds(_get("WHOS_ONLINE_MAX_AGE"))

    @cached_property
    def room_max_age(self) -> float:
        """The rooms' window in seconds: at most the site's."""
        value = _get("WHOS_ONLINE_ROOM_MAX_AGE")
        return self.max_age if value is None else min(seconds(value), self.max_age)

    def window(self, room: object = None) -> float:
        return self.max_age if room is None else self.room_max_age

    @cached_property
    def retention(self) -> float:
        """How long members' last-seen times are kept: at least the window."""
        value = _get("WHOS_ONLINE_RETENTION")
        return self.max_age if value is None else max(seconds(value), self.max_age)

    @cached_property
    def window_minutes(self) -> int:
        return round(self.max_age / 60) or 1

    @cached_property
    def room_window_minutes(self) -> int:
        return round(self.room_max_age / 60) or 1

    # The throttle cookie: a recorded visitor is not recorded again while they carry it.
    cookie_name = "online"
    # A guest's rooms, one of each kind, beside it (Redis keeps no key per guest).
    rooms_cookie_name = "online_rooms"

    @cached_property
    def cookie_age(self) -> int:
        return max(1, int(HALF_WINDOW * self.max_age))

    @cached_property
    def track_guests(self) -> bool:
        return _get("WHOS_ONLINE_GUESTS") is not None

    @cached_property
    def list_limit(self) -> int:
        return int(_get("WHOS_ONLINE_LIST_LIMIT"))

    @cached_property
    def proxies(self) -> tuple[str, Any]:
        """``WHOS_ONLINE_PROXIES`` as the header the proxies write and their number or
        networks: X-Forwarded-For, unless the setting gives them under a header's name."""
        value = _get("WHOS_ONLINE_PROXIES")
        if isinstance(value, dict) and len(value) == 1:
            ((header, proxies),) = value.items()
            return str(header), proxies
        return PROXY_HEADERS[0], value

    @cached_property
    def proxy_header(self) -> str:
        return self.proxies[0]

    @cached_property
    def proxy_count(self) -> int:
        value = self.proxies[1]
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    @cached_property
    def trusted_proxies(self) -> tuple[Network, ...] | None:
        """The proxies' networks: () for a number of proxies, None for neither or for an
        unknown header (checks E010, E011): then no forwarding header is believed."""
        header, value = self.proxies
        if header not in PROXY_HEADERS:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return ()
        if not isinstance(value, (list, tuple)):
            return None
        try:
            return tuple(ipaddress.ip_network(str(entry), strict=False) for entry in value)
        except ValueError:
            return None

    @cached_property
    def exclude_paths(self) -> re.Pattern[str] | None:
        """One regex for the list; None for none, or for a broken list (check E013)."""
        value = _get("WHOS_ONLINE_EXCLUDE_PATHS")
        if not value or not isinstance(value, (list, tuple)):
            return None
        try:
            return re.compile("|".join(f"(?:{pattern})" for pattern in value))
        except re.error:
            return None

    # The longest back-off in seconds after a Redis failure (the first is shorter), so a
    # repaired Redis is used again within this long.
    backoff = 5.0

    @cached_property
    def socket_timeout(self) -> float:
        """The cache alias's socket timeout (django-redis's ``SOCKET_TIMEOUT`` or Django's
        ``socket_timeout`` in its OPTIONS), else a short one of our own."""
        cache: dict[str, Any] = settings.CACHES.get(self.cache_alias, {})
        options = cache.get("OPTIONS", {})
        value = options.get("SOCKET_TIMEOUT", options.get("socket_timeout"))
        return SOCKET_TIMEOUT if value is None else float(value)

    @cached_property
    def slow_call(self) -> float:
        """Seconds after which a Redis call counts as slow, toward opening the breaker."""
        return SLOW_SHARE_OF_TIMEOUT * self.socket_timeout

    # How long, in seconds, a process keeps a block's read (rendering.blockcache).
    block_cache = 1.0

    # Caps, so no anonymous visitor can grow Redis without bound: guests counted exactly
    # (about 10 MB; "approximate" has no cap) and live rooms (registering one more drops
    # the least recently visited).
    max_guests = 100_000
    max_rooms = 10_000
    # IPv6 guests are grouped by their /64: one device rotating privacy addresses is one guest.
    ipv6_prefix = 64

    @cached_property
    def is_bot(self) -> Callable[[HttpRequest], bool] | None:
        return cast("Callable[[HttpRequest], bool] | None", _callable("WHOS_ONLINE_IS_BOT"))

    @cached_property
    def redis_client(self) -> Callable[[], Any] | None:
        return cast("Callable[[], Any] | None", _callable("WHOS_ONLINE_REDIS_CLIENT"))

    @cached_property
    def session_cookie_name(self) -> str:
        return str(settings.SESSION_COOKIE_NAME)

    @cached_property
    def member_card(self) -> Callable[[Any], dict[str, Any]]:
        return cast("Callable[[Any], dict[str, Any]]", _callable("WHOS_ONLINE_MEMBER_CARD"))

    @cached_property
    def guest_counting(self) -> str:
        return str(_get("WHOS_ONLINE_GUESTS") or "exact")

    @cached_property
    def show_day_total(self) -> bool:
        """The block's 24-hour total counts members kept a day, so needs that retention."""
        return self.retention >= timedelta(days=1).total_seconds()

    @cached_property
    def websocket_url(self) -> str | None:
        """Where the Channels part's routes are mounted (its setting): live blocks subscribe there."""
        value = getattr(settings, "WHOS_ONLINE_WEBSOCKET_URL", None)
        return None if value is None else str(value)

    @cached_property
    def access(self) -> Callable[[Any, str | None], Any] | None:
        return cast("Callable[[Any, str | None], Any] | None", _callable("WHOS_ONLINE_ACCESS"))

    @cached_property
    def rooms(self) -> dict[str, object]:
        """URL name -> room (a string, or a callable that a dotted path names), without the
        entries check E015 reports."""
        value = _get("WHOS_ONLINE_ROOMS")
        if not isinstance(value, dict):
            return {}
        rooms = {}
        for name, spec in value.items():
            if isinstance(spec, str) and DOTTED_PATH.fullmatch(spec):
                try:
                    spec = import_string(spec)
                except ImportError:
                    continue
            if isinstance(spec, str) or callable(spec):
                rooms[name] = spec
        return rooms


def _callable(name: str) -> Any:
    """The setting's callable, imported once if it is a dotted path."""
    value = _get(name)
    return import_string(value) if isinstance(value, str) else value


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
