"""Settings with their defaults; ``override_settings`` and the test ``settings`` fixture work.

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
from datetime import timedelta
from functools import lru_cache
from typing import Any, Callable, Generic, NamedTuple, TypeVar, Union, cast, overload

from django.conf import settings
from django.core.signals import setting_changed
from django.db.models import Model
from django.http import HttpRequest
from django.utils.module_loading import import_string

DEFAULTS: dict[str, Any] = {
    "WHOS_ONLINE_CACHE_ALIAS": "default",
    "WHOS_ONLINE_KEY_PREFIX": "whos_online",
    "WHOS_ONLINE_MAX_AGE": 600,
    "WHOS_ONLINE_COOKIE_NAME": "online",
    "WHOS_ONLINE_COOKIE_AGE": 300,
    "WHOS_ONLINE_TRACK_GUESTS": True,
    "WHOS_ONLINE_LIST_LIMIT": 100,
    "WHOS_ONLINE_PROXY_COUNT": 0,
    "WHOS_ONLINE_TRUSTED_PROXIES": (),
    "WHOS_ONLINE_PROXY_HEADER": "X-Forwarded-For",
    "WHOS_ONLINE_EXCLUDE_PATHS": (),
    "WHOS_ONLINE_EXCLUDE_USER_AGENTS": (),
    "WHOS_ONLINE_BACKOFF": 5,
    "WHOS_ONLINE_SOCKET_TIMEOUT": 0.25,
    "WHOS_ONLINE_SLOW_CALL": 0.1,
    "WHOS_ONLINE_BLOCK_CACHE": 1.0,
    "WHOS_ONLINE_MAX_GUESTS": 100_000,
    "WHOS_ONLINE_MAX_ROOMS": 10_000,
    "WHOS_ONLINE_IPV6_PREFIX": 64,
    "WHOS_ONLINE_STORE_RAW_IP": False,
    "WHOS_ONLINE_IS_BOT": "whos_online.bots.is_bot",
    "WHOS_ONLINE_IDLE_AFTER": 300,
    "WHOS_ONLINE_RETENTION": None,
    "WHOS_ONLINE_IS_HIDDEN": None,
    "WHOS_ONLINE_REDIS_CLIENT": None,
    "WHOS_ONLINE_MEMBER_CARD": "whos_online.members.default_card",
    "WHOS_ONLINE_TRACK_PAGES": False,
    "WHOS_ONLINE_GUEST_COUNTING": "exact",
    "WHOS_ONLINE_SHOW_DAY_TOTAL": False,
    "WHOS_ONLINE_HEARTBEAT": 25,
    "WHOS_ONLINE_HEARTBEAT_TIMEOUT": 60,
    "WHOS_ONLINE_WEBSOCKET_URL": None,
    "WHOS_ONLINE_ROOM_ACCESS": None,
}
GUEST_COUNTING_MODES = ("exact", "approximate")

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

    def connections_key(self, room: object, pk: str) -> str:
        """One member's open connections in a namespace: connection id -> last heartbeat."""
        return f"{self._namespace(room)}:conns:{pk}"

    def member_rooms_key(self, pk: str) -> str:
        """The rooms a member is in: kind (the name up to its first ':') -> room."""
        return f"{self.key_prefix}:member:{pk}:rooms"

    def changes_key(self, room: object = None) -> str:
        """When a namespace last changed (a mark the hubs compare, in case a notice was lost)."""
        return f"{self._namespace(room)}:changed"

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
    def exclude_user_agents(self) -> re.Pattern[str] | None:
        """User-Agents that are no visitors: regexes searched case-insensitively."""
        return _patterns(_get("WHOS_ONLINE_EXCLUDE_USER_AGENTS"), re.IGNORECASE)

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
        return float(_get("WHOS_ONLINE_SLOW_CALL"))

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
    def store_raw_ip(self) -> bool:
        return bool(_get("WHOS_ONLINE_STORE_RAW_IP"))

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
        return _seconds(_get("WHOS_ONLINE_HEARTBEAT_TIMEOUT"))

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


def _patterns(value: Any, flags: int = 0) -> re.Pattern[str] | None:
    """One regex for a list of them; None for none, or for a broken list (check E013)."""
    if not value or isinstance(value, str) or not isinstance(value, (list, tuple)):
        return None
    return _compile(tuple(str(pattern) for pattern in value), flags)


@lru_cache(maxsize=64)
def _compile(patterns: tuple[str, ...], flags: int) -> re.Pattern[str] | None:
    try:
        return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), flags)
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
