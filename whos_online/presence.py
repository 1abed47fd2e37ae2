"""Who is online, kept in Redis sorted sets scored by last-seen Unix time: the
public API, gathered from ``whos_online.store.recording``, ``whos_online.store.reading``,
``whos_online.store.stats`` (the Redis store) and ``whos_online.store.sockets`` (the
WebSocket lifecycle).

Members are known by primary key: ``<prefix>:users`` holds the pks of members,
``<prefix>:hidden`` those who asked not to be listed, ``<prefix>:cards`` each
member's card (see :mod:`whos_online.store.members`), ``<prefix>:guests`` guest ids
(see :mod:`whos_online.store.guests`); a room has its own three sets under
``<prefix>:room:<name>`` and shares the cards. ``<prefix>:peak`` and
``<prefix>:history`` keep the most ever online and the admin's samples.
HyperLogLogs count guests in approximate mode and everyone per hour and per
day (see :mod:`whos_online.store.counting`).
"Online" means a score inside the window (``WHOS_ONLINE_MAX_AGE``), so stale
members never show even when pruning is late.

WebSocket connections (see :mod:`whos_online.realtime.consumers`) add, per
namespace, ``live`` (pk -> newest heartbeat), ``left`` (pk -> when their last
connection closed) and ``conns:<pk>`` (connection id -> heartbeat).
A heartbeat or a close inside the window keeps a member inside it without
moving their score, so lists never reorder (``lua/lib/kept.lua``), and
:mod:`whos_online.store.status` turns a member's signs into online, idle or offline.
Every script that changes what a namespace shows sets its ``changed`` mark and,
when the site has WebSockets (``WHOS_ONLINE_WEBSOCKET_URL``), publishes its room on
``<prefix>:notices`` for the live blocks' hubs (see :mod:`whos_online.realtime.hub`).
Reads write nothing a site sees: the peak rises only by ``prune``.

Private by default: every function that names or describes members leaves
hidden members out unless asked for a staff ``viewer`` (``viewer=request.user``).
Options are keywords: only what a call is about (a user, users, an address) is
positional. Every function here but ``prune`` and
``forget_user`` (two) is one Redis round trip (a record two when it moves a
member between rooms of a kind or drops a room over the rooms cap) and raises
``redis.exceptions.RedisError`` when Redis fails; the middleware, template tag
and signals call them through :mod:`whos_online.store.failsafe` instead.

``__all__`` is what a site calls. A consumer that cannot inherit
``whos_online.realtime.consumers.PresenceMixin`` drives its connections with
:mod:`whos_online.store.sockets`.
"""

from __future__ import annotations

from whos_online.rooms.pages import in_room
from whos_online.store.members import Member
from whos_online.store.reading import (
    Summary,
    guest_count,
    last_seen,
    last_seen_many,
    online_users,
    status,
    statuses,
    summary,
    user_count,
)
from whos_online.store.recording import forget_guest, forget_user, record_guest, record_user
from whos_online.store.sockets import connected
from whos_online.store.stats import daily_visitors, history, peak, prune

__all__ = [
    # who is online
    "summary",
    "online_users",
    "user_count",
    "guest_count",
    "connected",
    "Summary",
    "Member",
    # one member
    "status",
    "statuses",
    "last_seen",
    "last_seen_many",
    # over time
    "peak",
    "daily_visitors",
    "history",
    # recording
    "record_user",
    "record_guest",
    "in_room",
    "forget_user",
    "forget_guest",
    "prune",
]
