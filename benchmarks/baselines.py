"""The two common ways of doing "who's online" that whos_online is measured against.

Both are written the way they are usually published, with no throttle: they do
their Redis work on every request. Each has a middleware (recording) and a
template tag (``{% load baselines %}``) that fills whos_online's own template, so
the three implementations render the same HTML and only the data access differs.

- **Naive sorted set** (the blog posts): ZADD the visitor, ZREMRANGEBYSCORE the
  stale, ZCOUNT the rest, as three calls on every request; the block reads every
  online member to list the newest.
- **Cache dict** (the widespread pattern): the whole ``{who: last_seen}`` dict in
  one cache key, read, updated, filtered and written back on every request.

Each reads its key from ``BENCH_BASELINE_KEY`` when built and uses whos_online's
window (``WHOS_ONLINE_MAX_AGE``), so the benchmark can run several populations
side by side.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Callable

from django import template
from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponseBase
from django_redis import get_redis_connection

register = template.Library()
LIST_LIMIT = 100  # as WHOS_ONLINE_LIST_LIMIT's default
Online = dict[str, dict[str, float]]  # the cache dict: {"users": {...}, "guests": {...}}


def naive_keys(base: str) -> tuple[str, str]:
    """The naive baseline's (users, guests) sorted sets."""
    return f"{base}:users", f"{base}:guests"


def _visitor(request: HttpRequest) -> tuple[str, str]:
    """("users", username) or ("guests", address)."""
    if request.user.is_authenticated:
        return "users", request.user.get_username()
    return "guests", str(request.META["REMOTE_ADDR"])


class NaiveSortedSetMiddleware:
    """ZADD + ZREMRANGEBYSCORE + ZCOUNT, three round trips on every request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.redis = get_redis_connection("default")
        self.keys = dict(zip(("users", "guests"), naive_keys(settings.BENCH_BASELINE_KEY)))
        self.window = float(settings.WHOS_ONLINE_MAX_AGE)

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        kind, member = _visitor(request)
        key, now = self.keys[kind], time.time()
        self.redis.zadd(key, {member: now})
        self.redis.zremrangebyscore(key, "-inf", now - self.window)
        request.online_count = self.redis.zcount(key, now - self.window, "+inf")  # type: ignore[attr-defined]
        return self.get_response(request)


class CacheDictMiddleware:
    """Read the whole online dict from the cache, update and filter it, write it back."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.key = settings.BENCH_BASELINE_KEY
        self.window = float(settings.WHOS_ONLINE_MAX_AGE)

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        kind, member = _visitor(request)
        now = time.time()
        online: Online = cache.get(self.key) or {"users": {}, "guests": {}}
        online[kind][member] = now
        cutoff = now - self.window
        online = {k: {m: t for m, t in seen.items() if t > cutoff} for k, seen in online.items()}
        cache.set(self.key, online, int(self.window))
        return self.get_response(request)


@register.inclusion_tag("whos_online/whos_online.html")
def naive_online() -> dict[str, Any]:
    """Every online member read back (newest first) to list the first ones, plus a ZCOUNT."""
    users_key, guests_key = naive_keys(settings.BENCH_BASELINE_KEY)
    redis = get_redis_connection("default")
    cutoff = time.time() - float(settings.WHOS_ONLINE_MAX_AGE)
    names = redis.zrevrangebyscore(users_key, "+inf", cutoff)
    guests = redis.zcount(guests_key, cutoff, "+inf")
    return _context([name.decode() for name in names[:LIST_LIMIT]], len(names), int(guests))


@register.inclusion_tag("whos_online/whos_online.html")
def cache_dict_online() -> dict[str, Any]:
    """The whole dict read back, filtered and sorted to list the newest."""
    online: Online = cache.get(settings.BENCH_BASELINE_KEY) or {"users": {}, "guests": {}}
    cutoff = time.time() - float(settings.WHOS_ONLINE_MAX_AGE)
    users = sorted(((t, m) for m, t in online["users"].items() if t > cutoff), reverse=True)
    guests = sum(1 for t in online["guests"].values() if t > cutoff)
    return _context([m for _, m in users[:LIST_LIMIT]], len(users), guests)


def _context(names: list[str], users: int, guests: int) -> dict[str, Any]:
    """whos_online's template context for these names (shown by name, seen now) and counts."""
    # Imported here: every benchmark site loads this template library, on any checkout
    # (instructions.py --before), and only run.py renders the baselines.
    from whos_online.store.members import Member
    from whos_online.store.reading import Summary

    now = datetime.now(timezone.utc)
    listed = [Member(name, name, None, None, now, "online") for name in names]
    window = round(float(settings.WHOS_ONLINE_MAX_AGE) / 60)
    return {"online": Summary(listed, users, guests), "window_minutes": window}
