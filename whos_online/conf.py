"""Settings with their defaults, read at every access so ``override_settings`` works."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    "WHOS_ONLINE_CACHE_ALIAS": "default",
    "WHOS_ONLINE_KEY_PREFIX": "whos_online",
    "WHOS_ONLINE_MAX_AGE": 600,
    "WHOS_ONLINE_COOKIE_NAME": "online",
    "WHOS_ONLINE_COOKIE_AGE": 300,
    "WHOS_ONLINE_TRACK_GUESTS": True,
    "WHOS_ONLINE_LIST_LIMIT": 100,
    "WHOS_ONLINE_PROXY_COUNT": 0,
    "WHOS_ONLINE_BACKOFF": 30,
    "WHOS_ONLINE_SOCKET_TIMEOUT": 0.25,
}


def _get(name: str) -> Any:
    return getattr(settings, name, DEFAULTS[name])


class Settings:
    """Typed, lazy view of the ``WHOS_ONLINE_*`` settings."""

    @property
    def cache_alias(self) -> str:
        return str(_get("WHOS_ONLINE_CACHE_ALIAS"))

    @property
    def key_prefix(self) -> str:
        return str(_get("WHOS_ONLINE_KEY_PREFIX"))

    @property
    def users_key(self) -> str:
        return f"{self.key_prefix}:users"

    @property
    def guests_key(self) -> str:
        return f"{self.key_prefix}:guests"

    @property
    def max_age(self) -> float:
        """The online window in seconds (the setting may be a timedelta)."""
        value = _get("WHOS_ONLINE_MAX_AGE")
        if isinstance(value, timedelta):
            return value.total_seconds()
        return float(value)

    @property
    def cookie_name(self) -> str:
        return str(_get("WHOS_ONLINE_COOKIE_NAME"))

    @property
    def cookie_age(self) -> int:
        return int(_get("WHOS_ONLINE_COOKIE_AGE"))

    @property
    def track_guests(self) -> bool:
        return bool(_get("WHOS_ONLINE_TRACK_GUESTS"))

    @property
    def list_limit(self) -> int:
        return int(_get("WHOS_ONLINE_LIST_LIMIT"))

    @property
    def proxy_count(self) -> int:
        return int(_get("WHOS_ONLINE_PROXY_COUNT"))

    @property
    def backoff(self) -> float:
        return float(_get("WHOS_ONLINE_BACKOFF"))

    @property
    def socket_timeout(self) -> float:
        return float(_get("WHOS_ONLINE_SOCKET_TIMEOUT"))


conf = Settings()
