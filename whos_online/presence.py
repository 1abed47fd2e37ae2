"""Who is online, kept in Redis sorted sets scored by last-seen Unix time: the
public API. A site imports from here (and ``whos_online.access``,
``whos_online.push``, ``whos_online.testing``) only; the packages these names
are gathered from (``store``, ``rooms``, ``visitors``) are free to change.

Members are known by primary key and guests by a keyed hash of their address, in
Redis sorted sets scored by last-seen time; "online" is a score inside the window
(``WHOS_ONLINE_MAX_AGE``), so stale members never show even when pruning is late.
docs/explanation/how-it-works.md lays out the keys and scripts. Reads write
nothing: the peak rises only by ``prune``.

Private by default: every function that names or describes members leaves
hidden members out unless asked for a staff ``viewer`` (``viewer=request.user``).
Options are keywords: only what a call is about (a user, users, an address) is
positional. Every function here but ``prune`` and
``forget_user`` (two) is one Redis round trip (a record two when it moves a
member between rooms of a kind or drops a room over the rooms cap) and raises
``redis.exceptions.RedisError`` when Redis fails, so ``None`` always means what it
says. ``fail_open`` (a read) and ``fail_open_write`` (a write) run one of them as the
middleware, template tag and signals do: behind the process's circuit breaker,
returning ``UNAVAILABLE`` instead of raising: a wrapper rather than a ``try`` in
the site's code, because only the shared breaker spares the calls after a failure
the wait for a frozen Redis's timeout.

``__all__`` is what a site calls, the types those calls return and what a site's
own bot filter or member card builds on (``is_bot``, ``default_card``).
"""

from __future__ import annotations

from whos_online.rooms.pages import in_room
from whos_online.store.failsafe import UNAVAILABLE, Unavailable
from whos_online.store.failsafe import call as fail_open
from whos_online.store.failsafe import write as fail_open_write
from whos_online.store.members import Member, default_card
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
from whos_online.store.recording import (
    Visit,
    forget_guest,
    forget_user,
    record_guest,
    record_user,
)
from whos_online.store.stats import (
    DayVisitors,
    Peak,
    PruneResult,
    Sample,
    daily_visitors,
    history,
    peak,
    prune,
)
from whos_online.visitors.bots import is_bot

__all__ = [
    # who is online
    "summary",
    "online_users",
    "user_count",
    "guest_count",
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
    "Peak",
    "DayVisitors",
    "Sample",
    # recording
    "record_user",
    "record_guest",
    "in_room",
    "forget_user",
    "forget_guest",
    "prune",
    "Visit",
    "PruneResult",
    # fail-open calls
    "fail_open",
    "fail_open_write",
    "UNAVAILABLE",
    "Unavailable",
    # what a site's own settings build on
    "is_bot",
    "default_card",
]
