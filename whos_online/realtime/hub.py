"""Per-process push for WebSocket subscribers: one hub, and one ticker task, per event loop.

Redis work follows changes, not rooms or ticks. The scripts that change a
namespace (a record, a connection that opens, closes or dies, a logout)
publish its name on ``<prefix>:notices``; a thread of this process listens
(:class:`Listener`) and marks that namespace's views due: at once, or
``TICK`` after their last read, so a burst costs one read per ``TICK``. The
ticker then reads each due view once (a view is a namespace, the site or a
room, seen by staff or not, with names or counts only) and sends what
changed to all of its subscribers, rendered and said once in each of their
languages (:mod:`whos_online.realtime.language`). A view is also due when its own data says
it changes by time alone (a member turning idle, someone leaving the window:
``Summary.changes_at``). Every ``CHECK_EVERY`` seconds one call sweeps the views'
namespaces for connections of dead processes and reads their change marks,
so a lost notice delays a view by ``CHECK_EVERY`` at most (``SOCKET_CHECK`` in a process
holding member sockets, which so notices a Redis that lost its data; a view read
since its mark's time shows that change already, and is not read again; the marks
are the writers' clocks, so this trusts servers' clocks to agree, as NTP keeps
them, closer than a notice's way to a read); a listener that
(re)subscribes marks every view due. Every ``WHOS_ONLINE_HEARTBEAT`` seconds
the ticker beats for all of the process's connections. All Redis work goes
through :mod:`whos_online.store.failsafe`, and no socket is closed for Redis.

Through faults: a heartbeat or check whose reply says Redis lost its data
(:mod:`whos_online.store.recovery`) has the ticker record every connection's member
again; a close Redis did not take is kept (MAX_PENDING_LEAVES) and written at
the next ticks once it answers; and a view Redis could not be read for longer
than a rendered block shows its last read (``blockcache.STALE_IF_ERROR``) is
pushed the block's "unavailable", then the whole state once Redis answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation

from whos_online.conf import conf
from whos_online.rendering.announcements import Cards, announce, diff, since_shown
from whos_online.rendering.block import members_html
from whos_online.rendering.blockcache import STALE_IF_ERROR
from whos_online.store import failsafe, reading, recovery, sockets
from whos_online.store.connection import get_client
from whos_online.store.reading import Summary

logger = logging.getLogger(__name__)

# Seconds between two reads of one view: a change reaches its subscribers within it, and
# a burst of notices costs one read per TICK.
TICK = 0.1
# Seconds between the ticker's looks when no notice is waiting: beats, checks and the
# data's own expiries are due within it.
LOOK = 0.5
# Seconds between sweeps for dead processes' connections and lost notices.
CHECK_EVERY = 10.0
# The same, in a process holding member sockets: it notices a Redis that lost its
# data within this (one call per process; its heartbeats are 25 s apart).
SOCKET_CHECK = 5.0
# Connects (and closes) retried per tick after Redis skipped them (a burst after an outage).
RECORD_RETRIES = 100
# Closes kept while Redis cannot take them (the oldest go first): a member whose last
# socket closed meanwhile is taken off "online" once Redis answers.
MAX_PENDING_LEAVES = 10_000
# Open connections one member may have tracked in one process (tabs, windows, devices).
MAX_CONNECTIONS_PER_MEMBER = 20


class Subscriber(Protocol):
    async def presence_message(self, text: str) -> None:
        """Send ``text`` (a JSON message, encoded once for every subscriber of a view)."""


@dataclass(frozen=True)
class View:
    """What a subscriber sees: a namespace (None: the site), with hidden members for staff,
    and the members' cards unless ``names`` is false (counts only)."""

    room: str | None
    staff: bool
    names: bool = True


@dataclass
class _Feed:
    # Each subscriber with its language: its messages are rendered and said in it.
    subscribers: dict[Subscriber, str] = field(default_factory=dict)
    # Subscribers that have not had the whole state yet, each with the members its page
    # showed (``X-Whos-Online-Shown``'s format; "" if unknown): its state says the change.
    fresh: dict[Subscriber, str] = field(default_factory=dict)
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    # A notice came since the last read.
    notified: bool = False
    # When it was read last (monotonic: a burst of notices waits out the TICK; Unix time:
    # a change mark older than that read is in it), and when its data changes by time
    # alone (Unix time; 0: read it at the next tick).
    read_at: float = -math.inf
    read_time: float = -math.inf
    expires_at: float = 0.0
    # The subscribers pushed "unavailable" (they get the whole state once Redis answers).
    unavailable: set[Subscriber] = field(default_factory=set)


class Hub:
    """This event loop's connections and subscribers, and the ticker that serves them."""

    def __init__(self) -> None:
        self.connections: dict[str, sockets.Connection] = {}
        self.per_member: Counter[str] = Counter()
        # Connections whose member the connect could not record (Redis skipped or failed),
        # recorded again at the next ticks.
        self.unrecorded: dict[str, None] = {}
        # Closed connections whose close Redis did not take, with when they closed,
        # written at the next ticks.
        self.unleft: dict[str, tuple[sockets.Connection, float]] = {}
        self.feeds: dict[View, _Feed] = {}
        # Each namespace's change mark as the last check read it.
        self.marks: dict[str | None, Any] = {}
        self.beat_at = self.checked_at = time.time()
        # When Redis last answered this hub (a beat, a check, a read): what its pages show
        # is as old as that.
        self.answered_at = self.beat_at
        self.losses = recovery.losses  # Redis data losses this process has noticed
        self.task: asyncio.Task[None] | None = None
        self.listener: Listener | None = None
        # Set by a notice or a subscriber: the ticker runs without waiting out the TICK.
        self.wake = asyncio.Event()

    def is_full(self, pk: str) -> bool:
        """Whether member ``pk`` has as many connections here as one member may."""
        return self.per_member[pk] >= MAX_CONNECTIONS_PER_MEMBER

    def track(self, connection: sockets.Connection) -> bool:
        """Beat for ``connection``; False (not tracked) past the member's connection cap."""
        if self.is_full(connection.pk):
            return False
        self.connections[connection.id] = connection
        self.per_member[connection.pk] += 1
        self._start()
        return True

    def record_later(self, connection: sockets.Connection) -> None:
        """The connect was skipped (Redis down): record it at the next ticks until it works."""
        if connection.id in self.connections:
            self.unrecorded[connection.id] = None

    def leave_later(self, connection: sockets.Connection, at: float) -> None:
        """Write the close of ``connection``, at ``at``, at the next ticks until Redis takes
        it: a close written late still says when the page went, not when Redis came back."""
        self.unleft[connection.id] = (connection, at)
        while len(self.unleft) > MAX_PENDING_LEAVES:
            del self.unleft[next(iter(self.unleft))]
        self._start()

    def left(self, connection: sockets.Connection) -> None:
        """Redis took the close of ``connection``."""
        self.unleft.pop(connection.id, None)

    def untrack(self, connection: sockets.Connection) -> None:
        if self.connections.pop(connection.id, None) is not None:
            self.per_member[connection.pk] -= 1
            if not self.per_member[connection.pk]:
                del self.per_member[connection.pk]
        self.unrecorded.pop(connection.id, None)

    def subscribe(
        self, view: View, subscriber: Subscriber, shown: str = "", language: str | None = None
    ) -> None:
        """Send ``subscriber`` the view's state, then its changes, in ``language`` (None:
        ``LANGUAGE_CODE``); ``shown``, the members its page showed, makes the state say
        what changed since (a view with names)."""
        feed = self.feeds.setdefault(view, _Feed())
        feed.subscribers[subscriber] = language or settings.LANGUAGE_CODE
        feed.fresh[subscriber] = shown if view.names else ""
        self.wake.set()
        self._start()

    def unsubscribe(self, view: View, subscriber: Subscriber) -> None:
        feed = self.feeds.get(view)
        if feed is not None:
            feed.subscribers.pop(subscriber, None)
            feed.fresh.pop(subscriber, None)
            feed.unavailable.discard(subscriber)
            if not feed.subscribers:
                del self.feeds[view]

    def changed(self, room: str | None = None, everywhere: bool = False) -> None:
        """A notice: ``room``'s views (every view, ``everywhere``) are read at once, or a
        TICK after their last read: a burst of notices costs one read per TICK."""
        for view, feed in self.feeds.items():
            if everywhere or view.room == room:
                feed.notified = True
        self.wake.set()

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.done():
            self.task = loop.create_task(self._run())
        if self.feeds and self.listener is None:
            self.listener = Listener(self, loop)
            self.listener.start()

    async def _run(self) -> None:
        while self.connections or self.feeds or self.unleft:
            try:
                await self.tick()
            except Exception:  # the ticker serves every socket: it must outlive any one bug
                logger.exception("whos_online: a push tick failed")
            await self._pause()

    async def _pause(self) -> None:
        """Until the next tick: LOOK at most, less when woken (a notice, a subscriber) or
        when a notified view's TICK since its last read ends (not a whole TICK from now)."""
        self.wake.clear()
        try:
            await asyncio.wait_for(self.wake.wait(), self.pause())
        except asyncio.TimeoutError:
            pass

    def pause(self) -> float:
        """Seconds until the next tick is due, at most LOOK."""
        clock = time.monotonic()
        due = [feed.read_at + TICK - clock for feed in self.feeds.values() if feed.notified]
        return max(0.0, min([LOOK, *due]))

    async def tick(self) -> None:
        """Beat and check if due, then read each due view once and send what changed."""
        now = time.time()
        lost = False
        # A clock that went backwards beats (and checks) at once rather than never.
        # Both are tried again each tick until Redis takes them: the first after an
        # outage tells whether Redis came back empty.
        if self.connections and not 0 <= now - self.beat_at < conf.heartbeat:
            alive = list(self.connections.values())
            beaten = await asyncio.to_thread(failsafe.write, sockets.heartbeat, alive)
            if not isinstance(beaten, failsafe.Unavailable):
                self.beat_at = self.answered_at = now
                lost = beaten
        every = SOCKET_CHECK if self.connections else CHECK_EVERY
        if (self.feeds or self.connections) and not 0 <= now - self.checked_at < every:
            lost = await self._check(now) or lost
        if lost or self.losses != recovery.losses:  # Redis lost its data: connect everyone again
            self.losses = recovery.losses
            self.unrecorded.update(dict.fromkeys(self.connections))
        await self._retry()
        clock = time.monotonic()
        for view, feed in list(self.feeds.items()):
            notified = feed.notified and clock - feed.read_at >= TICK
            if feed.fresh or notified or feed.expires_at <= now:
                # A notice that comes during the read is kept for the next one.
                feed.notified, feed.read_at, feed.expires_at = False, clock, math.inf
                started = time.time()
                online = await asyncio.to_thread(
                    failsafe.call, reading.read, room=view.room, staff_view=view.staff
                )
                if isinstance(online, failsafe.Unavailable):  # Redis is down: try again next tick
                    feed.notified = True
                    if now - self.answered_at >= STALE_IF_ERROR:
                        await self._send_unavailable(view, feed)
                    continue
                self.answered_at = now
                if feed.unavailable:  # Redis is back: the whole state, as on subscribing
                    feed.unavailable.clear()
                    feed.fresh = {s: feed.fresh.get(s, "") for s in feed.subscribers}
                feed.expires_at, feed.read_time = online.changes_at or math.inf, started
                await self._send(view, feed, online)

    async def _retry(self) -> None:
        """Write the closes, then the connects, Redis skipped (RECORD_RETRIES of each a tick)."""
        for closed, at in list(self.unleft.values())[:RECORD_RETRIES]:
            closed_now = await asyncio.to_thread(failsafe.write, sockets.disconnect, closed, at)
            if isinstance(closed_now, failsafe.Unavailable):
                break  # Redis is still down
            self.left(closed)
        for connection_id in list(self.unrecorded)[:RECORD_RETRIES]:
            connection = self.connections.get(connection_id)
            if connection is not None:  # else closed meanwhile
                connected = await asyncio.to_thread(failsafe.write, sockets.connect, connection)
                if isinstance(connected, failsafe.Unavailable):
                    continue
            self.unrecorded.pop(connection_id, None)

    async def _check(self, now: float) -> bool:
        """Sweep and read the marks; whether Redis had lost its data."""
        rooms = list({view.room for view in self.feeds}) or [None]
        checked = await asyncio.to_thread(failsafe.write, sockets.check, rooms)
        if isinstance(checked, failsafe.Unavailable):
            # Read the views: past the stale limit, they say "unavailable".
            self.changed(everywhere=True)
            return False
        self.checked_at = self.answered_at = now
        marks, lost = checked
        # A view's first check only takes its mark: until then the listener's own
        # (re)subscription has made every view due.
        moved = {room: mark for room, mark in marks.items() if self.marks.get(room, mark) != mark}
        for view, feed in self.feeds.items():
            # A notice was lost, unless a read since the change (a notice's) shows it.
            if view.room in moved and not _float(moved[view.room]) < feed.read_time:
                feed.expires_at = 0.0
        self.marks = marks
        return lost

    async def _send_unavailable(self, view: View, feed: _Feed) -> None:
        """Push what a page rendered now shows ("unavailable") to the subscribers not told yet."""
        untold = {
            s: language for s, language in feed.subscribers.items() if s not in feed.unavailable
        }
        if not untold:
            return
        feed.unavailable |= untold.keys()
        feed.members, feed.counts = {}, {}
        messages = await database_sync_to_async(_unavailable)(view, untold)
        await _deliver([s.presence_message(text) for s, text in messages])

    async def _send(self, view: View, feed: _Feed, online: Summary) -> None:
        if not view.names:
            online = replace(online, members=[])
        members = {member.pk: member.as_json() for member in online.members}
        counts = {
            "room": view.room,
            "users": online.user_count,
            "hidden": online.hidden_count,
            "guests": online.guest_count,
            "total": online.total,
            "more": online.more if view.names else 0,
        }
        joins, leaves = diff(feed.members, members)
        changed = joins or leaves or counts != feed.counts
        if not (feed.fresh or changed):
            return  # a read that found nothing new: nothing is rendered or sent
        # A list cut at its limit gains and drops names nobody brought or took away.
        truncated = bool(counts["more"] or feed.counts.get("more"))
        read = _Read(view, online, members, counts, joins, leaves, truncated)
        # Who subscribes during the render waits for the next read (maybe in a new language).
        fresh = dict(feed.fresh)
        told = {s: feed.subscribers[s] for s in (feed.subscribers if changed else fresh)}
        messages = await database_sync_to_async(read.messages)(told, fresh)
        # Only once rendered: a tick that failed leaves the state and the diff to the next.
        for subscriber in fresh:
            feed.fresh.pop(subscriber, None)
        feed.members, feed.counts = members, counts
        sends = [s.presence_message(text) for s, text in messages if s in feed.subscribers]
        await _deliver(sends)


async def _deliver(sends: list[Any]) -> None:
    for result in await asyncio.gather(*sends, return_exceptions=True):
        # A socket closing as we send: its own disconnect follows.
        if isinstance(result, Exception):
            logger.debug("whos_online: a push was not delivered", exc_info=result)


class Listener(threading.Thread):
    """Listens for notices, on a thread of its own, from the hub's first subscriber until
    its event loop closes.

    redis-py's blocking ``PubSub`` on whos_online's own client (its pool and
    topology: Sentinel, Cluster), so a notice costs Redis one message per
    process, not a read. While Redis is down it tries again every second (the
    outage itself is logged by the failsafe's reads); each (re)subscription
    marks every view due, since notices may have been missed meanwhile.
    """

    def __init__(self, hub: Hub, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name="whos_online notices", daemon=True)
        self.hub = weakref.ref(hub)
        self.loop = loop
        self.subscribed = threading.Event()

    def listening(self) -> bool:
        return self.hub() is not None and not self.loop.is_closed()

    def notify(self, room: str | None, everywhere: bool = False) -> None:
        hub = self.hub()
        if hub is not None and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(hub.changed, room, everywhere)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def run(self) -> None:
        while self.listening():
            try:
                self._listen()
            except Exception:  # a dead Redis, a failover: subscribe again
                self.subscribed.clear()
                logger.debug("whos_online: notices interrupted", exc_info=True)
                time.sleep(1.0)

    def _listen(self) -> None:
        pubsub = get_client().pubsub()  # type: ignore[no-untyped-call]
        try:
            pubsub.subscribe(conf.notices_channel)
            while self.listening():
                message = pubsub.get_message(timeout=1.0)
                if message is None:
                    continue
                if message["type"] == "subscribe":
                    self.notify(None, everywhere=True)
                    self.subscribed.set()
                elif message["type"] == "message":
                    room = message["data"]
                    self.notify((room.decode() if isinstance(room, bytes) else room) or None)
        finally:
            pubsub.close()


@dataclass(frozen=True)
class _Read:
    """What one read of a view found, to be told to its subscribers in their languages."""

    view: View
    online: Summary
    members: Cards
    counts: dict[str, Any]
    joins: Cards
    leaves: Cards
    # The list is cut at its limit: the change goes unsaid.
    truncated: bool

    def messages(
        self, told: dict[Subscriber, str], fresh: dict[Subscriber, str]
    ) -> list[tuple[Subscriber, str]]:
        """A message for each of ``told`` (each with its language): the whole state for
        the ``fresh`` (each with the members its page showed), the change for the others.
        The block is rendered, and the change said, once per language. Run where Django
        manages the thread (``database_sync_to_async``): a site's template may read the
        database."""
        messages: list[tuple[Subscriber, str]] = []
        for language, subscribers in _by_language(told).items():
            with translation.override(language):
                messages += self._in_language(subscribers, fresh)
        return messages

    def _in_language(
        self, subscribers: list[Subscriber], fresh: dict[Subscriber, str]
    ) -> list[tuple[Subscriber, str]]:
        html = _render(self.view, self.online)
        messages = []
        others = [subscriber for subscriber in subscribers if subscriber not in fresh]
        if others:
            said = "" if self.truncated else announce(self.joins, self.leaves)
            change = _encode("presence_diff", self.joins, self.leaves, self.counts, html, said)
            messages += [(subscriber, change) for subscriber in others]
        states: dict[str, str] = {}  # by what each says since its page: most say nothing
        for subscriber in subscribers:
            if subscriber in fresh:
                since = since_shown(fresh[subscriber], self.online)
                if since not in states:
                    states[since] = _encode(
                        "presence_state", self.members, {}, self.counts, html, since
                    )
                messages.append((subscriber, states[since]))
        return messages


def _by_language(told: dict[Subscriber, str]) -> dict[str, list[Subscriber]]:
    by_language: dict[str, list[Subscriber]] = {}
    for subscriber, language in told.items():
        by_language.setdefault(language, []).append(subscriber)
    return by_language


def _unavailable(view: View, told: dict[Subscriber, str]) -> list[tuple[Subscriber, str]]:
    """What a page rendered now shows ("unavailable"), for each of ``told`` in its language."""
    messages: list[tuple[Subscriber, str]] = []
    for language, subscribers in _by_language(told).items():
        with translation.override(language):
            html = _render(view, None)
        text = json.dumps({"type": "presence_unavailable", "html": html}, separators=(",", ":"))
        messages += [(subscriber, text) for subscriber in subscribers]
    return messages


def _float(mark: Any) -> float:
    """A change mark's time (Unix time, as its writer's clock read it); inf if none."""
    try:
        return float(mark)
    except (TypeError, ValueError):
        return math.inf


def _render(view: View, online: Summary | None) -> str:
    """The view's block, by the site's template (the page swaps it in); None: unavailable."""
    css = "whos-online" if view.room is None else "whos-here"
    context = {
        "online": online,
        "members_html": "" if online is None else members_html(online, css),
        "room": view.room,
        "window_minutes": conf.window_minutes if view.room is None else conf.room_window_minutes,
        "counts_only": not view.names,
    }
    template = "whos_online/whos_online.html" if view.room is None else "whos_online/room.html"
    return render_to_string(template, context)


def _encode(
    kind: str,
    joins: dict[str, dict[str, Any]],
    leaves: dict[str, dict[str, Any]],
    counts: dict[str, Any],
    html: str,
    announcement: str = "",
) -> str:
    message = {"type": kind, "joins": joins, "leaves": leaves, **counts, "html": html}
    if announcement:
        message["announce"] = announcement
    return json.dumps(message, separators=(",", ":"))


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def get_hub() -> Hub:
    """The running event loop's hub (a server runs one loop per process)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = Hub()
    return hub
