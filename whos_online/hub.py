"""Per-process push for WebSocket subscribers: one ticker task per event loop.

Every ``TICK`` seconds the ticker reads each view that has subscribers in this
process once (a view is a namespace, the site or a room, seen by staff or not)
and sends what changed to all of that view's subscribers, so Redis sees one read
per view per process per tick however many sockets are open. Every
``WHOS_ONLINE_HEARTBEAT`` seconds it also beats for all of the process's
connections in one round trip. All Redis work goes through
:mod:`whos_online.failsafe`: while Redis is down nothing is sent and no socket
is closed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.template.loader import render_to_string

from whos_online import failsafe, presence
from whos_online.conf import conf
from whos_online.templatetags.whos_online import members_html

logger = logging.getLogger(__name__)

# Seconds between reads: a join or leave reaches subscribers within about this.
TICK = 0.5
# Connects retried per tick after Redis skipped them (a burst after an outage).
RECORD_RETRIES = 100


class Subscriber(Protocol):
    async def presence_message(self, text: str) -> None:
        """Send ``text`` (a JSON message, encoded once for every subscriber of a view)."""


@dataclass(frozen=True)
class View:
    """What a subscriber sees: a namespace (None: the site), with hidden members for staff."""

    room: str | None
    staff: bool


@dataclass
class _Feed:
    subscribers: set[Subscriber] = field(default_factory=set)
    # Subscribers that have not had the whole state yet.
    fresh: set[Subscriber] = field(default_factory=set)
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)


class Hub:
    """This event loop's connections and subscribers, and the ticker that serves them."""

    def __init__(self) -> None:
        self.connections: dict[str, presence.Connection] = {}
        # Connections whose member the connect could not record (Redis skipped or failed):
        # connection id -> the user, recorded again at the next ticks.
        self.unrecorded: dict[str, Any] = {}
        self.feeds: dict[View, _Feed] = {}
        self.beat_at = time.time()
        self.task: asyncio.Task[None] | None = None

    def track(self, connection: presence.Connection, unrecorded_user: Any = None) -> None:
        """Beat for ``connection``; with ``unrecorded_user``, record them again until it works."""
        self.connections[connection.id] = connection
        if unrecorded_user is not None:
            self.unrecorded[connection.id] = unrecorded_user
        self._start()

    def untrack(self, connection: presence.Connection) -> None:
        self.connections.pop(connection.id, None)
        self.unrecorded.pop(connection.id, None)

    def subscribe(self, view: View, subscriber: Subscriber) -> None:
        feed = self.feeds.setdefault(view, _Feed())
        feed.subscribers.add(subscriber)
        feed.fresh.add(subscriber)
        self._start()

    def unsubscribe(self, view: View, subscriber: Subscriber) -> None:
        feed = self.feeds.get(view)
        if feed is not None:
            feed.subscribers.discard(subscriber)
            feed.fresh.discard(subscriber)
            if not feed.subscribers:
                del self.feeds[view]

    def _start(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self.connections or self.feeds:
            try:
                await self.tick()
            except Exception:  # the ticker serves every socket: it must outlive any one bug
                logger.exception("whos_online: a push tick failed")
            await asyncio.sleep(TICK)

    async def tick(self) -> None:
        """Beat if due, then read each view once and send its subscribers what changed."""
        now = time.time()
        # A clock that went backwards beats at once rather than never.
        if self.connections and not 0 <= now - self.beat_at < conf.heartbeat:
            self.beat_at = now
            alive = list(self.connections.values())
            await asyncio.to_thread(failsafe.write, presence.heartbeat, alive)
        for connection_id, user in list(self.unrecorded.items())[:RECORD_RETRIES]:
            connection = self.connections.get(connection_id)
            if connection is None:  # closed meanwhile
                continue
            if await asyncio.to_thread(failsafe.write, presence.connect, user, connection):
                self.unrecorded.pop(connection_id, None)
        for view, feed in list(self.feeds.items()):
            online = await asyncio.to_thread(
                failsafe.call, presence.summary, None, view.room, view.staff
            )
            if online is not None:
                await self._send(view, feed, online)

    async def _send(self, view: View, feed: _Feed, online: presence.Summary) -> None:
        members = {member.pk: member.as_json() for member in online.members}
        counts = {
            "room": view.room,
            "users": online.user_count,
            "hidden": online.hidden_count,
            "guests": online.guest_count,
            "total": online.total,
            "more": online.more,
        }
        joins, leaves = _diff(feed.members, members)
        changed = joins or leaves or counts != feed.counts
        if not (feed.fresh or changed):
            return  # a quiet tick costs the one read: nothing is rendered or sent
        html = await asyncio.to_thread(_render, view, online)
        # Only once rendered: a tick that failed leaves the state and the diff to the next.
        fresh, feed.fresh = feed.fresh, set()
        feed.members, feed.counts = members, counts
        sends = []
        if fresh:
            state = _encode("presence_state", members, {}, counts, html)
            sends += [subscriber.presence_message(state) for subscriber in fresh]
        if changed:
            diff = _encode("presence_diff", joins, leaves, counts, html)
            sends += [s.presence_message(diff) for s in feed.subscribers - fresh]
        for result in await asyncio.gather(*sends, return_exceptions=True):
            # A socket closing as we send: its own disconnect follows.
            if isinstance(result, Exception):
                logger.debug("whos_online: a push was not delivered", exc_info=result)


def _render(view: View, online: presence.Summary) -> str:
    """The view's block, by the site's template (the page swaps it in)."""
    css = "whos-online" if view.room is None else "whos-here"
    context = {
        "online": online,
        "members_html": members_html(online, css),
        "room": view.room,
        "window_minutes": conf.window_minutes,
    }
    template = "whos_online/whos_online.html" if view.room is None else "whos_online/room.html"
    return render_to_string(template, context)


def _encode(
    kind: str,
    joins: dict[str, dict[str, Any]],
    leaves: dict[str, dict[str, Any]],
    counts: dict[str, Any],
    html: str,
) -> str:
    message = {"type": kind, "joins": joins, "leaves": leaves, **counts, "html": html}
    return json.dumps(message, separators=(",", ":"))


def _diff(
    old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Phoenix-style: a member whose card changed (e.g. their status) leaves and joins again."""
    joins = {pk: card for pk, card in new.items() if old.get(pk) != card}
    leaves = {pk: card for pk, card in old.items() if new.get(pk) != card}
    return joins, leaves


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def get_hub() -> Hub:
    """The running event loop's hub (a server runs one loop per process)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = Hub()
    return hub
