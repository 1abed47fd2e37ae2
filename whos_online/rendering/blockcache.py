"""The block's summary, kept per process for ``WHOS_ONLINE_BLOCK_CACHE`` seconds.

Every page with the block would otherwise cost a Redis read, so Redis latency
would be page latency. Here a process reads each distinct block (the site or a
room, the staff or the visitors' view) once per period for the pages that
record nobody, however busy it is; a newcomer's first page shows it with them
added, and a page of another visitor it may not count reads afresh (see
``for_request``). When an entry is due, one request reads Redis and the others
keep showing the entry they have meanwhile, so a slow read holds up one page,
not all of them.
If that read fails or Redis is being skipped, an entry less than STALE_IF_ERROR
seconds old is still shown, so a blip does not flash "unavailable"; no page ever
shows an older one, however long the read in flight takes.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Hashable

from whos_online.conf import GUEST_LINGER, conf, on_settings_change
from whos_online.middleware import issued_at, settled_since
from whos_online.store import counting, failsafe, reading
from whos_online.store.reading import Summary
from whos_online.store.recording import Visit
from whos_online.visitors import visits

MAX_ENTRIES = 256  # distinct blocks kept (rooms make many); the least recently read go first
STALE_IF_ERROR = 10.0  # seconds


@dataclass(frozen=True)
class Cached:
    """A summary and when its Redis read began (what it cannot have seen happened after)."""

    summary: Summary
    read_at: float
    # The pks it lists, made once per read: every page of a member asks whether it lists them.
    listed: frozenset[str]

    @cached_property
    def with_a_guest(self) -> Summary:
        """The summary and one guest it does not count: each newcomer's own first page
        shows this, so one rendering serves them all while the read is kept."""
        return replace(self.summary, guest_count=self.summary.guest_count + 1)


_entries: OrderedDict[Hashable, Cached] = OrderedDict()
_refreshing: set[Hashable] = set()
_lock = threading.Lock()


def read(
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
    """The block for this request: the cached summary if it holds the request's own visitor,
    with them added if it surely lacks them alone (a newcomer), else a fresh read,
    which becomes the entry.

    Most visitors recorded since a read cannot be added to it exactly: it does
    not say whether it already counts them (their earlier score may have come
    from another page after it) or the guest they were before logging in, so
    adding them counted one person twice. Their page reads Redis afresh, which
    counts each person once and raises the peak to its total. A viewer
    shown no names (``names=False``) reads the counts-only entry. ``shared``: the
    block for a page a cache may serve to anyone, so the view of nobody in
    particular (no staff view, not the visitor's own name).
    """
    viewer = None if shared else visits.viewer(request)
    asked = time.time()
    entry = read(room, viewer, names)
    # An entry read by this very call holds everyone recorded before it; a shared block
    # holds nobody in particular.
    if entry is None:
        return None
    if shared or entry.read_at >= asked or _holds(entry, request, room, viewer):
        return entry.summary
    if _lacks_only(entry, request, room):
        return entry.with_a_guest
    return (read(room, viewer, names, fresh=True) or entry).summary


def _holds(entry: Cached, request: Any, room: str | None, viewer: Any) -> bool:
    """Whether ``entry`` counts the request's visitor: listed in it, read after their
    record, or read while their score before this request's record was inside the window.

    Without a record here, the site's "online" cookie says when an earlier page
    recorded them, maybe in another process after this entry was read.
    """
    pk = getattr(viewer, "pk", None)
    if pk is not None and str(pk) in entry.listed:
        return True
    visit = visits.visit_of(request, room)
    if visit is None:
        issued = issued_at(request) if room is None and request is not None else None
        return issued is None or issued + 1 <= entry.read_at
    if visit.at <= entry.read_at:
        return True
    before, read_at = visit.before, entry.read_at
    return before is not None and read_at - conf.window(room) <= before <= read_at


def _lacks_only(entry: Cached, request: Any, room: str | None) -> bool:
    """Whether ``entry`` surely lacks the request's visitor and nobody else they are: a
    guest recorded here (on the site or in ``room``) who was not inside its window when
    it was read (no score before this record, or one out of it), who was already this
    guest then, in the same data.

    Guests leave a set ``GUEST_LINGER`` after its window (prune, the guest cap, the
    key's TTL; a guest leaving a room is scored out of its window, not removed), so
    within that long of the read a guest with no score now had none inside the
    window then. Their page shows the read with them added, unless that total would
    pass the "Most ever online" or the day's count printed beside it: then it reads
    afresh, which raises the peak.
    """
    visit = visits.visit_of(request, room)
    if visit is None or visit.member is not None or counting.approximate():
        return False
    summary, read_at = entry.summary, entry.read_at
    if visit.at - read_at > GUEST_LINGER or not _settled(request, read_at):
        return False
    if visit.since is None or visit.since != summary.since:
        return False  # Redis lost its data since the read: it counted people now gone
    if not _was_out(visit, read_at, room):
        return False
    total = summary.total + 1
    return (summary.peak is None or summary.peak.count >= total) and (
        summary.day_total is None or summary.day_total >= total
    )


def _settled(request: Any, read_at: float) -> bool:
    """Whether the request's visitor was already who they are (a guest, and no member
    a read may still list) before ``read_at``.

    A valid "online" cookie says since when. Without one, the site's record on
    this request says it (made now if the page's room block comes first): a
    logout records the guest at once, so a guest new to the site (no score, or
    one out of the window at the read) did not just stop being a member; a login
    is a member's record. A cookie of someone else (the member they were) says
    nothing.
    """
    since = settled_since(request)
    if since is not None:
        return since + 1 <= read_at  # the cookie holds whole seconds
    if conf.cookie_name in request.COOKIES:
        return False
    visits.record_before_reading(request)  # on a room's page: the site's record, due anyway
    site = visits.visit_of(request)
    return site is not None and _was_out(site, read_at)


def _was_out(visit: Visit, read_at: float, room: str | None = None) -> bool:
    """Whether the visitor was not inside the window at ``read_at`` by the score from
    before this ``visit`` (none, or an older one)."""
    return visit.before is None or visit.before < read_at - conf.window(room)


def _fetch(room: str | None, staff_view: bool, names: bool = True) -> Cached | None:
    read_at = time.time()
    found = failsafe.call(reading.read, room=room, limit=conf.list_limit, staff_view=staff_view)
    if isinstance(found, failsafe.Unavailable):
        return None
    if not names:
        found = replace(found, members=[])
    return Cached(found, read_at, frozenset(member.pk for member in found.members))


def clear() -> None:
    """Forget every entry, so each block reads Redis next (tests; after a bulk write)."""
    with _lock:
        _entries.clear()


on_settings_change(clear)  # an entry was read under the settings before
