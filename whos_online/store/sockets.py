"""Push presence, the store's part of :mod:`whos_online.push`: a member's open push
connections (a WebSocket, an event stream), their heartbeats and closes, a check for
dead processes' connections, and the notices the scripts publish on each change.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass
from typing import Any, Generator, Iterable

from whos_online.conf import conf
from whos_online.store import scripts
from whos_online.store.connection import get_client, text
from whos_online.store.members import card_of
from whos_online.store.recording import record_member, room_arg


@dataclass(frozen=True)
class Connection:
    """One open push connection of a member: site-wide, and in ``room`` if given. It
    carries what recording them needs, so ``connect`` and heartbeats talk to Redis only."""

    pk: str
    id: str
    room: str | None = None
    # Which member set its heartbeats keep alive (their card's "hidden" at connect).
    hidden: bool = False
    # The member's card as connect records it ("": none, shown as "Member #pk").
    card: str = ""

    @property
    def namespaces(self) -> tuple[str | None, ...]:
        return (None,) if self.room is None else (None, self.room)


def open_connection(user: Any, room: str | None = None) -> Connection:
    """A new connection of the member ``user``, in ``room`` if given.

    This runs ``WHOS_ONLINE_MEMBER_CARD``, which may read the database: call it where
    Django manages connections (``database_sync_to_async``), then ``connect`` anywhere.
    """
    card, hidden = card_of(user)
    return Connection(str(user.pk), uuid.uuid4().hex, room, hidden, card)


# How often a push beats unless it says otherwise (``every``), in seconds.
EVERY = 25.0
# A connection is gone after this many of its beats' intervals without one: two missed
# beats, and a margin.
BEATS_TO_TIMEOUT = 2.4


def connect(connection: Connection, every: float = EVERY) -> float:
    """A member opened ``connection``: record them (a visit, with its card) and beat once
    (see ``heartbeat`` for ``every``).

    One round trip per namespace for the record, plus the first heartbeat.
    Returns the score recorded on the site.
    """
    visits = [
        record_member(connection.pk, connection.hidden, connection.card, room, keep_card=True)
        for room in connection.namespaces
    ]
    heartbeat([connection], every)
    return visits[0].at


# Connections one heartbeat call carries: a process with 10,000 sockets never holds a
# shared Redis for long (see benchmarks/live_push.py).
HEARTBEAT_BATCH = 200


def heartbeat(connections: Iterable[Connection], every: float = EVERY) -> None:
    """Mark every connection alive (see lua/heartbeat.lua), each in each of its namespaces,
    until BEATS_TO_TIMEOUT × ``every`` seconds from now: the caller beats again every
    ``every`` seconds. One round trip per HEARTBEAT_BATCH connections.

    A member Redis no longer holds (it lost its data) is put back, with their card.
    """
    batch = list(connections)
    for first in range(0, len(batch), HEARTBEAT_BATCH):
        _beat(batch[first : first + HEARTBEAT_BATCH], BEATS_TO_TIMEOUT * every)


def _beat(connections: list[Connection], timeout: float) -> None:
    """One HEARTBEAT call (see lua/heartbeat.lua) for ``connections``, alive for ``timeout``
    seconds, each in each of its namespaces: its live, left, index and connections keys,
    and its member set."""
    now = time.time()
    keys = [conf.keys().cards, conf.rooms_key]
    args: list[Any] = [
        now,
        now + timeout,
        math.ceil(timeout),
        math.ceil(conf.retention),
        conf.notices_channel,
    ]
    for connection in connections:
        for room in connection.namespaces:
            ns, socket = conf.keys(room), conf.socket_keys(room)
            kept, other_kept = socket.kept_users, socket.kept_hidden
            if connection.hidden:
                kept, other_kept = other_kept, kept
            keys += [socket.live, socket.left, kept, other_kept]
            keys.append(conf.connections_key(room, connection.pk))
            keys.append(ns.hidden if connection.hidden else ns.users)
            args += [connection.pk, connection.id, room_arg(room), connection.card]
    scripts.HEARTBEAT(get_client(), keys, args)


def disconnect(connection: Connection, at: float | None = None) -> float:
    """``connection`` closed (now, or ``at``: a close Redis took late): the member leaves at
    once unless another connection is alive (see lua/disconnect.lua).

    Returns when the close was written.
    """
    now = time.time() if at is None else at
    keys = [conf.rooms_key]
    for room in connection.namespaces:
        keys += [*conf.socket_keys(room), *conf.keys(room)[:2]]
        keys.append(conf.connections_key(room, connection.pk))
    args = [now, math.ceil(conf.max_age), connection.pk, connection.id, conf.notices_channel]
    args += map(room_arg, connection.namespaces)
    scripts.DISCONNECT(get_client(), keys, args)
    return now


def check(rooms: list[str | None]) -> None:
    """Sweep the namespaces of ``rooms`` (None: the site) for connections of dead
    processes (see lua/check.lua): one round trip."""
    keys = [key for room in rooms for key in conf.socket_keys(room)]
    args = [time.time(), math.ceil(conf.retention), conf.notices_channel]
    scripts.CHECK(get_client(), keys, [*args, *map(room_arg, rooms)])


def connected(*, room: str | None = None) -> list[str]:
    """Pks of members (hidden ones too) with a living connection, the one alive longest first."""
    now = time.time()
    live = get_client().zrange(conf.socket_keys(room).live, "+inf", now, byscore=True, desc=True)
    return [text(pk) for pk in live]


@dataclass(frozen=True)
class Notice:
    """A change: the members of ``room`` (None: the site) changed; with ``everywhere``,
    any namespace's may have (notices were missed until a new subscription)."""

    room: str | None
    everywhere: bool = False


def notices(wait: float = 1.0) -> Generator[Notice | None, None, None]:
    """Each change as Redis publishes it, from a Pub/Sub subscription on whos_online's
    client: first ``Notice(None, everywhere=True)`` once subscribed, then one per change
    (a join, a leave, a status or card changing: not a member's time running out, which
    ``Summary.changes_at`` tells), and None after each ``wait`` seconds without one (a
    chance to stop). A Redis error is raised: subscribe again with a new call."""
    pubsub = get_client().pubsub()
    try:
        pubsub.subscribe(conf.notices_channel)
        while True:
            message = pubsub.get_message(timeout=wait)
            if message is None:
                yield None
            elif message["type"] == "subscribe":
                yield Notice(None, everywhere=True)
            elif message["type"] == "message":
                yield Notice(text(message["data"]) or None)
    finally:
        pubsub.close()
