"""The block's summary, kept per process for ``WHOS_ONLINE_BLOCK_CACHE`` seconds.

Every page with the block would otherwise cost a Redis read, so Redis latency
would be page latency. The rule (see ``for_request``): a page shows the kept
read of its block when that read counts the page's visitor, and reads Redis
afresh when it may not; the fresh read becomes the kept one. A read counts the
visitor when it lists them, or when their last record (this page's, or the one
their "online" cookie carries) came before the read and inside its window.
So a newcomer, a login, a logout or a move into a room reads afresh, once; their
next pages show the kept read. Fresh reads are capped per process
(``FRESH_READS_PER_SECOND``): past the cap a page shows the kept read, so a
flood of new addresses cannot turn into a Redis read per request.

When an entry is due, one request reads Redis and the others keep showing the
entry they have meanwhile, so a slow read holds up one page, not all of them.
If that read fails or Redis is being skipped, an entry less than STALE_IF_ERROR
seconds old is still shown, so a blip does not flash "unavailable"; no page ever
shows an older one, however long the read in flight takes.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Hashable

from whos_online.conf import conf, on_settings_change
from whos_online.store import failsafe, reading
from whos_online.store.reading import Summary
from whos_online.visitors import visits
from whos_online.visitors.cookie import recorded_at

MAX_ENTRIES = 256  # distinct blocks kept (rooms make many); the least recently read go first
STALE_IF_ERROR = 10.0  # seconds
# Reads for visitors a kept read may not count, per process and second, past which
# pages show the kept read: what a flood of newcomers costs Redis at most.
FRESH_READS_PER_SECOND = 10


@dataclass(frozen=True)
class Cached:
    """A summary and when its Redis read began (what it cannot have seen happened after)."""

    summary: Summary
    read_at: float
    # The pks it lists: every page of a member asks whether it lists them.
    listed: frozenset[str]


_entries: OrderedDict[Hashable, Cached] = OrderedDict()
_refreshing: set[Hashable] = set()
_lock = threading.Lock()


def entry(
    room: str | None = None, viewer: Any = None, names: bool = True, *, fresh: bool = False
) -> Cached | None:
    """The cached summary with its read time (from Redis when due, or ``fresh``); None if
    unavailable.

    A staff viewer reads the staff view and any other the visitors' view, so
    one entry serves all visitors alike; ``names=False`` reads the counts-only
    view (no member listed), an entry of its own that never holds a name.
    """
    staff_view = names and reading.is_staff(viewer)
    ttl = conf.block_cache
    if ttl <= 0:
        return _fetch(room, staff_view, names)
    now = time.time()
    key = (room, staff_view, names)
    with _lock:
        entry = _entries.get(key)
        if not fresh and _younger(entry, now, ttl):
            _entries.move_to_end(key)
            return entry
        joined = key in _refreshing
        if not fresh and joined and _younger(entry, now, STALE_IF_ERROR):
            return entry  # another request is reading Redis for it
        # None yet, or too old to show while that read (which may wait out a
        # timeout on a sick Redis) goes on: read it too, as the circuit allows.
        _refreshing.add(key)
    try:
        got = _fetch(room, staff_view, names)
    finally:
        if not joined:
            with _lock:
                _refreshing.discard(key)
    if got is not None:
        with _lock:
            kept = _entries.get(key)
            if kept is None or kept.read_at <= got.read_at:  # not an older read ending late
                _entries[key] = got
            _entries.move_to_end(key)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
        return got
    return entry if _younger(entry, now, STALE_IF_ERROR) else None


def _younger(entry: Cached | None, now: float, seconds: float) -> bool:
    """Whether ``entry`` was read less than ``seconds`` before ``now``.

    Not after ``now``: a clock that went backwards makes the entry due rather
    than stretching its life.
    """
    return entry is not None and 0 <= now - entry.read_at < seconds


def for_request(
    request: Any, room: str | None = None, names: bool = True, shared: bool = False
) -> Summary | None:
    """The block for this request: the kept read if it counts the request's visitor,
    else a fresh one (within ``FRESH_READS_PER_SECOND``), which is kept.

    A viewer shown no names (``names=False``) reads the counts-only entry.
    ``shared``: the block for a page a cache may serve to anyone, so the view of
    nobody in particular (no staff view, not the visitor's own name).
    """
    viewer = None if shared else visits.viewer(request)
    kept = entry(room, viewer, names)
    if kept is None:
        return None
    if shared or counts(kept, request, room, viewer) or not _may_read_fresh():
        return kept.summary
    return (entry(room, viewer, names, fresh=True) or kept).summary


def counts(entry: Cached, request: Any, room: str | None, viewer: Any) -> bool:
    """Whether ``entry`` counts the request's visitor: it was read after this request's
    record, or it lists them, or their last record came before it and inside its window.

    Their last record is the score this request's record found from before,
    else the time their "online" cookie carries, on the site. A record that found
    none (a newcomer to the site or the room) or stands for someone else before
    (a login or a logout: see visits.record_logged_in) is never counted by an
    older read, even one listing them. A visitor with neither (a bot, a refused
    newcomer, a room's page that records nobody) is nobody the block could
    count: the kept read stands.
    """
    visit = visits.visit_of(request, room)
    if visit is not None and visit.at <= entry.read_at:
        return True
    if visit is not None and visit.before is None:
        return False
    pk = getattr(viewer, "pk", None)
    if pk is not None and str(pk) in entry.listed:
        return True
    if visit is not None:
        last = visit.before
    else:
        last = recorded_at(request) if room is None and request is not None else None
    if last is None:
        return True
    return entry.read_at - conf.window(room) <= last <= entry.read_at


_second, _fresh_reads = 0, 0


def _may_read_fresh() -> bool:
    """Whether this process may read afresh now (see ``FRESH_READS_PER_SECOND``)."""
    global _second, _fresh_reads
    second = int(time.time())
    with _lock:
        if second != _second:
            _second, _fresh_reads = second, 0
        _fresh_reads += 1
        return _fresh_reads <= FRESH_READS_PER_SECOND


def _fetch(room: str | None, staff_view: bool, names: bool = True) -> Cached | None:
    read_at = time.time()
    found = failsafe.call(reading.read, room=room, limit=conf.list_limit, staff_view=staff_view)
    if isinstance(found, failsafe.Unavailable):
        return None
    if not names:
        found = replace(found, members=[])
    return Cached(found, read_at, frozenset(member.pk for member in found.members))


def clear() -> None:
    """Forget every entry and fresh read, so each block reads Redis next (tests)."""
    global _fresh_reads
    with _lock:
        _entries.clear()
        _fresh_reads = 0


on_settings_change(clear)  # an entry was read under the settings before
