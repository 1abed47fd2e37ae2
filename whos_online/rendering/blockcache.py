"""The block's reads, kept per process for ``conf.block_cache`` seconds (1 s).

Every page with the block would otherwise cost a Redis read, so Redis latency
would be page latency. One rule decides which read a page shows: **a page that
recorded its visitor reads afresh, unless the kept read was sent after that
record's reply came back or the record found them online since before any read
kept now (not a login or a logout); every other page shows the kept read.**
"After" is this process's order of events (``visits.events``), not a clock;
"online since before" is the record's own reply (their score before it: inside
the window, and a block-cache period or more before this record).
Fresh reads are capped per process and second
(``FRESH_READS_PER_SECOND``): past the cap a page shows the kept read, so a
flood of newcomers cannot turn into a Redis read per request.

When an entry is due, one request reads Redis while the others show the entry
they have; if that read fails, an entry less than STALE_IF_ERROR seconds old is
still shown. A block on the event loop (an async view) never waits on Redis: it
shows the kept read and refreshes it in a thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Hashable

from whos_online.conf import conf, on_settings_change
from whos_online.store import failsafe, reading
from whos_online.store.reading import Summary
from whos_online.visitors.visits import events, page_of

MAX_ENTRIES = 256  # distinct blocks kept (rooms make many); the least recently read go first
STALE_IF_ERROR = 10.0  # seconds
# Reads for visitors the kept read cannot count, per process and second, past which
# pages show the kept read: what a flood of newcomers costs Redis at most.
FRESH_READS_PER_SECOND = 10


@dataclass(frozen=True)
class Cached:
    """A summary, and when its read was sent: in ``visits.events`` (to compare with a
    record's reply) and by the clock (for its age)."""

    summary: Summary
    sent: int
    sent_at: float


_entries: OrderedDict[Hashable, Cached] = OrderedDict()
_refreshing: set[Hashable] = set()
_lock = threading.Lock()


def for_request(
    request: Any, room: str | None = None, names: bool = True, shared: bool = False
) -> Summary | None:
    """The block for this request by the rule above; None if unavailable.

    A viewer shown no names (``names=False``) reads the counts-only entry.
    ``shared``: the block for a page a cache may serve to anyone, so the view of
    nobody in particular (no staff view).
    """
    page = None if shared else page_of(request)
    viewer = None if page is None else page.viewer
    staff_view = names and reading.is_staff(viewer)
    kept = entry(room, staff_view, names)
    replied = None if page is None or room in page.online_before else page.replies.get(room)
    if replied is not None and kept is not None and kept.sent < replied and _may_read_fresh():
        kept = entry(room, staff_view, names, fresh=True) or kept
    return None if kept is None else kept.summary


def read_ahead(request: Any, room: str | None = None) -> None:
    """Make now, in this thread, the read a block of ``room`` on this page will show: for
    a block an async view renders on the event loop."""
    page = page_of(request)
    granted = None if page is None else page.access(room)
    if granted is not None:
        for_request(request, room, granted.names)


def entry(
    room: str | None = None, staff_view: bool = False, names: bool = True, *, fresh: bool = False
) -> Cached | None:
    """The kept read of ``room``'s block (the staff view, or only the counts), read from
    Redis when due or ``fresh``; None if unavailable."""
    key = (room, staff_view, names)
    if conf.block_cache <= 0:
        return _read(key)
    now = time.time()
    with _lock:
        kept = _entries.get(key)
        due = fresh or not _younger(kept, now, conf.block_cache)
        joined = key in _refreshing
        if not due:
            _entries.move_to_end(key)
            return kept
        if joined and _younger(kept, now, STALE_IF_ERROR):
            return kept  # another request is reading it
        _refreshing.add(key)
    if _on_event_loop():
        asyncio.get_running_loop().run_in_executor(None, _refresh, key, joined)
        return kept
    got = _refresh(key, joined)
    if got is not None:
        return got
    return kept if _younger(kept, now, STALE_IF_ERROR) else None


def _refresh(key: tuple[str | None, bool, bool], joined: bool) -> Cached | None:
    """Read ``key`` from Redis and keep it (unless a newer read was kept meanwhile)."""
    try:
        got = _read(key)
    finally:
        if not joined:
            with _lock:
                _refreshing.discard(key)
    if got is not None:
        with _lock:
            kept = _entries.get(key)
            if kept is None or kept.sent < got.sent:  # not an older read ending late
                _entries[key] = got
            _entries.move_to_end(key)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
    return got


def _read(key: tuple[str | None, bool, bool]) -> Cached | None:
    room, staff_view, names = key
    sent, sent_at = next(events), time.time()
    found = failsafe.call(reading.read, room=room, limit=conf.list_limit, staff_view=staff_view)
    if isinstance(found, failsafe.Unavailable):
        return None
    return Cached(found if names else replace(found, members=[]), sent, sent_at)


def _younger(entry: Cached | None, now: float, seconds: float) -> bool:
    """Whether ``entry`` was sent less than ``seconds`` before ``now``; not after ``now``:
    a clock that went backwards makes the entry due rather than stretching its life."""
    return entry is not None and 0 <= now - entry.sent_at < seconds


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


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


def clear() -> None:
    """Forget every entry and fresh read, so each block reads Redis next (tests)."""
    global _fresh_reads
    with _lock:
        _entries.clear()
        _fresh_reads = 0


on_settings_change(clear)  # an entry was read under the settings before
