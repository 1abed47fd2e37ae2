"""Per-process push for WebSocket subscribers: one hub, and one ticker task, per event loop.

The scripts that change a namespace (the site or a room) publish it
(:func:`whos_online.push.notices`); a thread (:class:`Listener`) marks its views due, and the
ticker reads each due view at most once a ``TICK`` and sends what changed to its
subscribers. A view is also read when its data changes by time alone
(``Summary.changes_at``) and at least every ``CHECK_EVERY`` seconds (a lost
notice). The ticker also sweeps the views' namespaces for dead processes'
connections, and beats for all of the process's connections in batches.

Through faults nothing is kept to replay and no socket is closed: a beat puts back
a member Redis lost, and pages are told "unavailable" after ``UNAVAILABLE_AFTER``
seconds of failed reads (docs/howto/live.md says what each fault does).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import threading
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation

from whos_online import push
from whos_online.conf import conf
from whos_online.rendering.announcements import Cards, announce, diff, since_shown
from whos_online.rendering.block import members_html
from whos_online.store import failsafe, reading
from whos_online.store.reading import Summary

logger = logging.getLogger(__name__)

# Seconds between two reads of one view: a burst of notices costs one read per TICK.
TICK = 0.1
# Seconds between the ticker's looks while no notice waits (for beats, sweeps, expiries).
LOOK = 0.5
# Seconds between sweeps for dead processes' connections, and the most a view goes unread.
CHECK_EVERY = 10.0
# Seconds of failed reads after which open pages are told "unavailable" (a blip is not).
UNAVAILABLE_AFTER = 10.0
# Open connections one member may have tracked in one process (tabs, windows, devices).
MAX_CONNECTIONS_PER_MEMBER = 20
# Seconds between a process's beats unless WHOS_ONLINE_HEARTBEAT says otherwise.
HEARTBEAT = 25


def heartbeat() -> float:
    """Seconds between a process's beats for its connections: WHOS_ONLINE_HEARTBEAT."""
    value = getattr(settings, "WHOS_ONLINE_HEARTBEAT", HEARTBEAT)
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


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
    # Each subscriber with its language.
    subscribers: dict[Subscriber, str] = field(default_factory=dict)
    # Subscribers due the whole state, each with the members its page showed ("" if unknown).
    fresh: dict[Subscriber, str] = field(default_factory=dict)
    # What the subscribers were last sent.
    members: Cards = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    notified: bool = False  # a notice came since the last read
    read_at: float = -math.inf  # time.monotonic() of the last read
    due_at: float = 0.0  # Unix time (as the data's expiries are) of the next read
    unavailable: bool = False  # its subscribers were pushed "unavailable"


class Hub:
    """This event loop's connections and subscribers, and the ticker that serves them."""

    def __init__(self) -> None:
        self.connections: dict[str, push.Connection] = {}
        self.per_member: Counter[str] = Counter()
        self.feeds: dict[View, _Feed] = {}
        self.beat_at = self.checked_at = time.time()
        self.failing_since: float | None = None  # the first failed read since one answered
        self.task: asyncio.Task[None] | None = None
        self.listener: Listener | None = None
        self.wake = asyncio.Event()

    def is_full(self, pk: str) -> bool:
        """Whether member ``pk`` has as many connections here as one member may."""
        return self.per_member[pk] >= MAX_CONNECTIONS_PER_MEMBER

    def track(self, connection: push.Connection) -> bool:
        """Beat for ``connection``; False (not tracked) past the member's connection cap."""
        if self.is_full(connection.pk):
            return False
        self.connections[connection.id] = connection
        self.per_member[connection.pk] += 1
        self._start()
        return True

    def untrack(self, connection: push.Connection) -> None:
        if self.connections.pop(connection.id, None) is not None:
            self.per_member[connection.pk] -= 1
            if not self.per_member[connection.pk]:
                del self.per_member[connection.pk]

    def beat_soon(self) -> None:
        """A connect Redis skipped: beat at the next ticks until Redis takes it."""
        self.beat_at = -math.inf
        self.wake.set()

    def subscribe(
        self, view: View, subscriber: Subscriber, shown: str = "", language: str | None = None
    ) -> None:
        """Send ``subscriber`` the view's state, then its changes, in ``language``; the state
        says what changed since ``shown``, the members its page showed."""
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
            if not feed.subscribers:
                del self.feeds[view]

    def changed(self, room: str | None = None, everywhere: bool = False) -> None:
        """A notice: ``room``'s views (every view, ``everywhere``) are due, a TICK after
        their last read."""
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
            self.wake.clear()  # set by a notice or a subscriber: the next tick is due at once
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.pause())

    def pause(self) -> float:
        """Seconds until the next tick is due: LOOK at most, less when a notified view's TICK
        since its last read ends (not a whole TICK from now)."""
        clock = time.monotonic()
        due = [feed.read_at + TICK - clock for feed in self.feeds.values() if feed.notified]
        return max(0.0, min([LOOK, *due]))

    async def tick(self) -> None:
        """Beat and sweep if due, then read each due view once and send what changed."""
        now = time.time()
        # A clock that went backwards beats (and sweeps) at once rather than never. Both
        # are tried again each tick until Redis takes them.
        every = heartbeat()
        if self.connections and not 0 <= now - self.beat_at < every:
            alive = list(self.connections.values())
            beaten = await asyncio.to_thread(failsafe.write, push.heartbeat, alive, every)
            if not isinstance(beaten, failsafe.Unavailable):
                self.beat_at = now
        if self.feeds and not 0 <= now - self.checked_at < CHECK_EVERY:
            rooms = list({view.room for view in self.feeds})
            swept = await asyncio.to_thread(failsafe.write, push.check, rooms)
            if not isinstance(swept, failsafe.Unavailable):
                self.checked_at = now
        clock = time.monotonic()
        for view, feed in list(self.feeds.items()):
            notified = feed.notified and clock - feed.read_at >= TICK
            if feed.fresh or notified or feed.due_at <= now:
                await self._read(view, feed, now, clock)

    async def _read(self, view: View, feed: _Feed, now: float, clock: float) -> None:
        # A notice that comes during the read is kept for the next one.
        feed.notified, feed.read_at, feed.due_at = False, clock, now + CHECK_EVERY
        online = await asyncio.to_thread(
            failsafe.call, reading.read, room=view.room, staff_view=view.staff
        )
        if isinstance(online, failsafe.Unavailable):  # Redis is down: try again next tick
            feed.notified = True
            self.failing_since = self.failing_since or now
            if now - self.failing_since >= UNAVAILABLE_AFTER and not feed.unavailable:
                # What a page rendered now shows; each gets the whole state once Redis answers.
                told = dict(feed.subscribers)
                feed.unavailable, feed.members, feed.counts = True, {}, {}
                feed.fresh = dict.fromkeys(told, "")
                messages = await database_sync_to_async(_unavailable)(view, told)
                await _deliver([s.presence_message(text) for s, text in messages])
            return
        self.failing_since = None
        feed.due_at = min(online.changes_at or math.inf, now + CHECK_EVERY)
        await self._send(view, feed, online)

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
        # Who subscribes during the render waits for the next read (maybe in a new language).
        fresh = dict(feed.fresh)
        told = {s: feed.subscribers[s] for s in (feed.subscribers if changed else fresh)}

        def messages() -> list[tuple[Subscriber, str]]:
            """Each one's message, rendered and said once per language, on Django's thread
            (a site's template may read the database)."""
            sent: list[tuple[Subscriber, str]] = []
            for language in set(told.values()):
                with translation.override(language):
                    html = _render(view, online)
                    said = "" if truncated else announce(joins, leaves)
                    change = _encode("presence_diff", joins, leaves, counts, html, said)
                    for s in [s for s, its in told.items() if its == language]:
                        if s in fresh:  # the whole state, and what changed since its page
                            since = since_shown(fresh[s], online)
                            state = _encode("presence_state", members, {}, counts, html, since)
                        sent.append((s, state if s in fresh else change))
            return sent

        sent = await database_sync_to_async(messages)()
        # Only once rendered: a tick that failed leaves the state and the diff to the next.
        for subscriber in fresh:
            feed.fresh.pop(subscriber, None)
        feed.members, feed.counts, feed.unavailable = members, counts, False
        await _deliver([s.presence_message(text) for s, text in sent if s in feed.subscribers])


async def _deliver(sends: list[Any]) -> None:
    for result in await asyncio.gather(*sends, return_exceptions=True):
        # A socket closing as we send: its own disconnect follows.
        if isinstance(result, Exception):
            logger.debug("whos_online: a push was not delivered", exc_info=result)


class Listener(threading.Thread):
    """Listens for notices on a thread of its own, from the hub's first subscriber until
    its event loop closes, with redis-py's blocking ``PubSub`` on whos_online's own
    client (its pool and topology). While Redis is down it tries again every second;
    each (re)subscription, and each loss of one, marks every view due."""

    def __init__(self, hub: Hub, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name="whos_online notices", daemon=True)
        self.hub = weakref.ref(hub)
        self.loop = loop
        self.subscribed = threading.Event()

    def listening(self) -> bool:
        return self.hub() is not None and not self.loop.is_closed()

    def notify(self, room: str | None, everywhere: bool = False) -> None:
        hub = self.hub()
        if hub is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed
                self.loop.call_soon_threadsafe(hub.changed, room, everywhere)

    def run(self) -> None:
        while self.listening():
            try:
                self._listen()
            except Exception:  # a dead Redis, a failover: subscribe again
                self.subscribed.clear()
                self.notify(None, everywhere=True)  # a read tells the pages of an outage
                logger.debug("whos_online: notices interrupted", exc_info=True)
                time.sleep(1.0)

    def _listen(self) -> None:
        with contextlib.closing(push.notices()) as notices:
            for notice in notices:
                if not self.listening():
                    return
                if notice is not None:
                    self.notify(notice.room, notice.everywhere)
                    self.subscribed.set()  # a notice comes on a subscription


def _unavailable(view: View, told: dict[Subscriber, str]) -> list[tuple[Subscriber, str]]:
    """What a page rendered now shows ("unavailable"), for each of ``told`` in its language."""
    texts = {}
    for language in set(told.values()):
        with translation.override(language):
            html = _render(view, None)
        texts[language] = json.dumps({"type": "presence_unavailable", "html": html})
    return [(subscriber, texts[language]) for subscriber, language in told.items()]


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
    kind: str, joins: Cards, leaves: Cards, counts: dict[str, Any], html: str, said: str
) -> str:
    message = {"type": kind, "joins": joins, "leaves": leaves, **counts, "html": html}
    if said:
        message["announce"] = said
    return json.dumps(message, separators=(",", ":"))


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def get_hub() -> Hub:
    """The running event loop's hub (a server runs one loop per process)."""
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = Hub()
    return _hubs[loop]
