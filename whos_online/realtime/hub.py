"""Per-process push for WebSocket subscribers: one hub, and one ticker task, per event loop.

Redis work follows changes, not rooms or ticks. The scripts that change a
namespace (a record, a connection that opens, closes or dies, a logout)
publish its name on ``<prefix>:notices``; a thread of this process listens
(:class:`Listener`) and marks that namespace's views due: at once, or
``TICK`` after their last read, so a burst costs one read per ``TICK``. The
ticker then reads each due view once (a view is a namespace, the site or a
room, seen by staff or not, with names or counts only) and sends what
changed to all of its subscribers. A view is also due when its own data says
it changes by time alone (a member turning idle, someone leaving the window:
``Summary.changes_at``). Every ``CHECK`` seconds one call sweeps the views'
namespaces for connections of dead processes and reads their change marks,
so a lost notice delays a view by ``CHECK`` at most (a view read since its
mark's time shows that change already, and is not read again; the marks are
the writers' clocks, so this trusts servers' clocks to agree, as NTP keeps
them, closer than a notice's way to a read); a listener that
(re)subscribes marks every view due. Every ``WHOS_ONLINE_HEARTBEAT`` seconds
the ticker beats for all of the process's connections. All Redis work goes
through :mod:`whos_online.failsafe`: while Redis is down nothing is sent and
no socket is closed.
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

from django.template.loader import render_to_string

from whos_online import failsafe, presence, recovery
from whos_online.announcements import announce, diff, since_shown
from whos_online.conf import conf
from whos_online.connection import get_client
from whos_online.templatetags.whos_online import members_html

logger = logging.getLogger(__name__)

# Seconds between two reads of one view: a change reaches its subscribers within it, and
# a burst of notices costs one read per TICK.
TICK = 0.1
# Seconds between the ticker's looks when no notice is waiting: beats, checks and the
# data's own expiries are due within it.
LOOK = 0.5
# Seconds between sweeps for dead processes' connections and lost notices.
CHECK = 10.0
# Connects retried per tick after Redis skipped them (a burst after an outage).
RECORD_RETRIES = 100
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
    subscribers: set[Subscriber] = field(default_factory=set)
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


class Hub:
    """This event loop's connections and subscribers, and the ticker that serves them."""

    def __init__(self) -> None:
        self.connections: dict[str, presence.Connection] = {}
        self.per_member: Counter[str] = Counter()
        # Connections whose member the connect could not record (Redis skipped or failed),
        # recorded again at the next ticks.
        self.unrecorded: dict[str, None] = {}
        self.feeds: dict[View, _Feed] = {}
        # Each namespace's change mark as the last check read it.
        self.marks: dict[str | None, Any] = {}
        self.beat_at = self.checked_at = time.time()
        self.losses = recovery.losses  # Redis data losses this process has noticed
        self.task: asyncio.Task[None] | None = None
        self.listener: Listener | None = None
        # Set by a notice or a subscriber: the ticker runs without waiting out the TICK.
        self.wake = asyncio.Event()

    def is_full(self, pk: str) -> bool:
        """Whether member ``pk`` has as many connections here as one member may."""
        return self.per_member[pk] >= MAX_CONNECTIONS_PER_MEMBER

    def track(self, connection: presence.Connection) -> bool:
        """Beat for ``connection``; False (not tracked) past the member's connection cap."""
        if self.is_full(connection.pk):
            return False
        self.connections[connection.id] = connection
        self.per_member[connection.pk] += 1
        self._start()
        return True

    def record_later(self, connection: presence.Connection) -> None:
        """The connect was skipped (Redis down): record it at the next ticks until it works."""
        if connection.id in self.connections:
            self.unrecorded[connection.id] = None

    def untrack(self, connection: presence.Connection) -> None:
        if self.connections.pop(connection.id, None) is not None:
            self.per_member[connection.pk] -= 1
            if not self.per_member[connection.pk]:
                del self.per_member[connection.pk]
        self.unrecorded.pop(connection.id, None)

    def subscribe(self, view: View, subscriber: Subscriber, shown: str = "") -> None:
        """Send ``subscriber`` the view's state, then its changes; ``shown``, the members
        its page showed, makes the state say what changed since (a view with names)."""
        feed = self.feeds.setdefault(view, _Feed())
        feed.subscribers.add(subscriber)
        feed.fresh[subscriber] = shown if view.names else ""
        self.wake.set()
        self._start()

    def unsubscribe(self, view: View, subscriber: Subscriber) -> None:
        feed = self.feeds.get(view)
        if feed is not None:
            feed.subscribers.discard(subscriber)
            feed.fresh.pop(subscriber, None)
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
        while self.connections or self.feeds:
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
        # A clock that went backwards beats (and checks) at once rather than never.
        if self.connections and not 0 <= now - self.beat_at < conf.heartbeat:
            self.beat_at = now
            alive = list(self.connections.values())
            await asyncio.to_thread(failsafe.write, presence.heartbeat, alive)
        if self.losses != recovery.losses:  # Redis lost its data: connect everyone again
            self.losses = recovery.losses
            self.unrecorded.update(dict.fromkeys(self.connections))
        for connection_id in list(self.unrecorded)[:RECORD_RETRIES]:
            connection = self.connections.get(connection_id)
            if connection is not None:  # else closed meanwhile
                if await asyncio.to_thread(failsafe.write, presence.connect, connection) is None:
                    continue
            self.unrecorded.pop(connection_id, None)
        if self.feeds and not 0 <= now - self.checked_at < CHECK:
            self.checked_at = now
            await self._check()
        clock = time.monotonic()
        for view, feed in list(self.feeds.items()):
            notified = feed.notified and clock - feed.read_at >= TICK
            if feed.fresh or notified or feed.expires_at <= now:
                # A notice that comes during the read is kept for the next one.
                feed.notified, feed.read_at, feed.expires_at = False, clock, math.inf
                started = time.time()
                online = await asyncio.to_thread(
                    failsafe.call, presence.summary, None, view.room, include_hidden=view.staff
                )
                if online is None:  # Redis is down: try again next tick
                    feed.notified = True
                    continue
                feed.expires_at, feed.read_time = online.changes_at or math.inf, started
                await self._send(view, feed, online)

    async def _check(self) -> None:
        rooms = list({view.room for view in self.feeds})
        marks = await asyncio.to_thread(failsafe.write, presence.check, rooms)
        if marks is None:
            return
        # A view's first check only takes its mark: until then the listener's own
        # (re)subscription has made every view due.
        moved = {room: mark for room, mark in marks.items() if self.marks.get(room, mark) != mark}
        for view, feed in self.feeds.items():
            # A notice was lost, unless a read since the change (a notice's) shows it.
            if view.room in moved and not _float(moved[view.room]) < feed.read_time:
                feed.expires_at = 0.0
        self.marks = marks

    async def _send(self, view: View, feed: _Feed, online: presence.Summary) -> None:
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
        html = await asyncio.to_thread(_render, view, online)
        # A list cut at its limit gains and drops names nobody brought or took away.
        truncated = bool(counts["more"] or feed.counts.get("more"))
        # Only once rendered: a tick that failed leaves the state and the diff to the next.
        fresh, feed.fresh = feed.fresh, {}
        feed.members, feed.counts = members, counts
        sends = []
        if fresh:
            state = _encode("presence_state", members, {}, counts, html)
            for subscriber, shown in fresh.items():
                since = since_shown(shown, online)  # "" for most: encoded once for them
                told = (
                    _encode("presence_state", members, {}, counts, html, since) if since else state
                )
                sends.append(subscriber.presence_message(told))
        if changed:
            said = "" if truncated else announce(joins, leaves)
            pushed = _encode("presence_diff", joins, leaves, counts, html, said)
            sends += [s.presence_message(pushed) for s in feed.subscribers - fresh.keys()]
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


def _float(mark: Any) -> float:
    """A change mark's time (Unix time, as its writer's clock read it); inf if none."""
    try:
        return float(mark)
    except (TypeError, ValueError):
        return math.inf


def _render(view: View, online: presence.Summary) -> str:
    """The view's block, by the site's template (the page swaps it in)."""
    css = "whos-online" if view.room is None else "whos-here"
    context = {
        "online": online,
        "members_html": members_html(online, css),
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
