"""The block's summary, kept per process for ``WHOS_ONLINE_BLOCK_CACHE`` seconds.

Every page with the block would otherwise cost a Redis read, so Redis latency
would be page latency. Here a process reads each distinct block (the site or a
room, the staff or the visitors' view) at most once per period, however busy it
is. When an entry is due, one request reads Redis and the others keep showing
the entry they have meanwhile, so a slow read holds up one page, not all of them.
If that read fails or Redis is being skipped, an entry less than STALE_IF_ERROR
seconds old is still shown, so a blip does not flash "unavailable"; no page ever
shows an older one, however long the read in flight takes.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Hashable, NamedTuple

from whos_online import failsafe, presence, reading, recording, visits
from whos_online.conf import conf, on_settings_change
from whos_online.reading import Summary

MAX_ENTRIES = 256  # distinct blocks kept (rooms make many); the least recently read go first
STALE_IF_ERROR = 10.0  # seconds


class Cached(NamedTuple):
    """A summary and when its Redis read began (what it cannot have seen happened after)."""

    summary: Summary
    read_at: float


_entries: OrderedDict[Hashable, Cached] = OrderedDict()
_refreshing: set[Hashable] = set()
_lock = threading.Lock()


def read(room: str | None = None, viewer: Any = None) -> Cached | None:
    """The cached summary with its read time (fresh from Redis when due); None if unavailable.

    A staff viewer reads the staff view and any other the visitors' view, so
    one entry serves all visitors alike.
    """
    staff_view = reading.is_staff(viewer)
    ttl = conf.block_cache
    if ttl <= 0:
        return _fetch(room, staff_view)
    now = time.time()
    key = (room, staff_view)
    with _lock:
        entry = _entries.get(key)
        if _younger(entry, now, ttl):
            _entries.move_to_end(key)
            return entry
        joined = key in _refreshing
        if joined and _younger(entry, now, STALE_IF_ERROR):
            return entry  # another request is reading Redis for it
        # None yet, or too old to show while that read (which may wait out a
        # timeout on a sick Redis) goes on: read it too, as the circuit allows.
        _refreshing.add(key)
    try:
        fresh = _fetch(room, staff_view)
    finally:
        if not joined:
            with _lock:
                _refreshing.discard(key)
    if fresh is not None:
        with _lock:
            kept = _entries.get(key)
            if kept is None or kept.read_at <= fresh.read_at:  # not an older read ending late
                _entries[key] = fresh
            _entries.move_to_end(key)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
        return fresh
    return entry if _younger(entry, now, STALE_IF_ERROR) else None


def _younger(entry: Cached | None, now: float, seconds: float) -> bool:
    """Whether ``entry`` was read less than ``seconds`` before ``now``.

    Not after ``now``: a clock that went backwards makes the entry due rather
    than stretching its life.
    """
    return entry is not None and 0 <= now - entry.read_at < seconds


def for_request(request: Any, room: str | None = None) -> Summary | None:
    """The block for this request: the cached summary, plus its own visitor if it predates them.

    A visitor counts on their own first page even when the cached read is up to
    ``WHOS_ONLINE_BLOCK_CACHE`` seconds older than their visit.
    """
    entry = read(room, visits.viewer(request))
    if entry is None:
        return None
    visit = visits.visit_of(request, room)
    window = conf.window(room)
    if visit is None or visit.at <= entry.read_at or _counted(visit.before, entry.read_at, window):
        return entry.summary
    return _with_visitor(entry.summary, visit)


def _counted(before: float | None, read_at: float, window: float) -> bool:
    """Whether a visitor last seen at ``before`` was inside the window when the block was read."""
    return before is not None and read_at - window <= before <= read_at


def _with_visitor(online: Summary, visit: recording.Visit) -> Summary:
    member = visit.member
    if member is None:
        return replace(online, guest_count=online.guest_count + 1)
    if member.hidden:
        online = replace(online, hidden_count=online.hidden_count + 1)
    if member.hidden and not online.hidden_listed:
        return replace(online, user_count=online.user_count + 1)
    listed = member if online.hidden_listed else member.without_where()
    members = [listed, *online.members][: conf.list_limit]
    return replace(online, members=members, user_count=online.user_count + 1)


def _fetch(room: str | None, staff_view: bool) -> Cached | None:
    read_at = time.time()
    found = failsafe.call(presence.summary, conf.list_limit, room, include_hidden=staff_view)
    return None if found is None else Cached(found, read_at)


def clear() -> None:
    """Forget every entry, so each block reads Redis next (tests; after a bulk write)."""
    with _lock:
        _entries.clear()


on_settings_change(clear)  # an entry was read under the settings before
