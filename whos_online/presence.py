"""Who is online, kept in Redis sorted sets scored by last-seen Unix time: the
public API, gathered from ``whos_online.recording``, ``whos_online.reading``,
``whos_online.stats`` (the Redis store) and ``whos_online.sockets`` (the
WebSocket lifecycle).

Members are known by primary key: ``<prefix>:users`` holds the pks of members,
``<prefix>:hidden`` those who asked not to be listed, ``<prefix>:cards`` each
member's card (see :mod:`whos_online.members`), ``<prefix>:guests`` guest ids
(see :mod:`whos_online.guests`); a room has its own three sets under
``<prefix>:room:<name>`` and shares the cards. ``<prefix>:peak`` and
``<prefix>:history`` keep the most ever online and the admin's samples.
HyperLogLogs count guests in approximate mode and everyone per hour and per
day (see :mod:`whos_online.counting`).
"Online" means a score inside the window (``WHOS_ONLINE_MAX_AGE``), so stale
members never show even when pruning is late.

WebSocket connections (see :mod:`whos_online.realtime.consumers`) add, per
namespace, ``live`` (pk -> newest heartbeat), ``left`` (pk -> when their last
connection closed) and ``conns:<pk>`` (connection id -> heartbeat).
A heartbeat or a close inside the window keeps a member inside it without
moving their score, so lists never reorder (``lua/lib/kept.lua``), and
:mod:`whos_online.status` turns a member's signs into online, idle or offline.
Every script that changes what a namespace shows sets its ``changed`` mark and
publishes its room on ``<prefix>:notices``, for the live blocks' hubs (see
:mod:`whos_online.realtime.hub`).

Private by default: every function that names or describes members leaves
hidden members out unless asked with ``include_hidden=True`` or for a staff
``viewer`` (``viewer=request.user``). Every function here but ``prune``,
``connect``, ``heartbeat`` (batched) and ``forget_user`` (two) is one Redis
round trip (a record two when it moves a member between rooms of a kind or
drops a room over the rooms cap) and raises
``redis.exceptions.RedisError`` when Redis fails;
the middleware, template tag and signals call them through
:mod:`whos_online.failsafe` instead.
"""

from __future__ import annotations

# Besides __all__, as before the split: the settings, a guest's id and the limits
# (``X as X``: kept here on purpose).
from whos_online.conf import conf as conf
from whos_online.guests import guest_id as guest_id
from whos_online.reading import (
    Summary,
    guest_count,
    is_staff,
    last_seen,
    last_seen_many,
    online_users,
    status,
    statuses,
    summary,
    user_count,
)
from whos_online.recording import (
    TRIM_PER_WRITE as TRIM_PER_WRITE,
)
from whos_online.recording import (
    Visit,
    forget_guest,
    forget_user,
    member_id,
    record_guest,
    record_user,
)
from whos_online.sockets import (
    HEARTBEAT_BATCH as HEARTBEAT_BATCH,
)
from whos_online.sockets import (
    Connection,
    check,
    connect,
    connected,
    disconnect,
    heartbeat,
    open_connection,
)
from whos_online.stats import (
    HISTORY_SECONDS as HISTORY_SECONDS,
)
from whos_online.stats import (
    PEAK_TTL as PEAK_TTL,
)
from whos_online.stats import (
    DayVisitors,
    Peak,
    PruneResult,
    Sample,
    daily_visitors,
    history,
    peak,
    prune,
    reset_peak,
)
from whos_online.status import SOCKET_GRACE

__all__ = [
    # reading
    "Summary",
    "summary",
    "online_users",
    "user_count",
    "guest_count",
    "status",
    "statuses",
    "last_seen",
    "last_seen_many",
    "is_staff",
    "member_id",
    "Peak",
    "peak",
    "reset_peak",
    "DayVisitors",
    "daily_visitors",
    "Sample",
    "history",
    # recording
    "Visit",
    "record_user",
    "record_guest",
    "forget_user",
    "forget_guest",
    "PruneResult",
    "prune",
    # WebSocket connections, for a consumer that cannot inherit the mixin
    "Connection",
    "open_connection",
    "connect",
    "heartbeat",
    "disconnect",
    "connected",
    "check",
    "SOCKET_GRACE",
]
