"""Who is online, kept in Redis sorted sets scored by last-seen Unix time: the
public API. A site imports from here (and ``whos_online.access``,
``whos_online.defaults``, ``whos_online.push``, ``whos_online.testing``) only; the packages these names
are gathered from (``store``, ``rooms``, ``visitors``) are free to change.

"Online" is a last-seen time inside the window (``WHOS_ONLINE_MAX_AGE``), so stale
members never show even when pruning is late. Reads write nothing: the peak rises
only by ``prune``. Every function that names or describes members leaves hidden
members out unless asked for a staff ``viewer`` (``viewer=request.user``).

Every function here but ``prune`` and ``forget_user`` is one Redis round trip and
raises ``redis.exceptions.RedisError`` when Redis fails, so ``None`` always means
what it says. ``fail_open`` runs one of them as the middleware and the block do:
behind the process's circuit breaker, returning ``UNAVAILABLE`` instead of raising.
"""

from __future__ import annotations

from typing import Callable, ParamSpec, TypeVar

from whos_online.rooms.pages import in_room
from whos_online.store import failsafe
from whos_online.store.failsafe import UNAVAILABLE
from whos_online.store.failsafe import Unavailable as Unavailable
from whos_online.store.members import Member as Member
from whos_online.store.reading import Summary as Summary
from whos_online.store.reading import (
    last_seen,
    last_seen_many,
    status,
    statuses,
    summary,
)
from whos_online.store.recording import Visit as Visit
from whos_online.store.recording import (
    forget_guest,
    forget_user,
    record_guest,
    record_user,
)
from whos_online.store.stats import Peak as Peak
from whos_online.store.stats import PruneResult as PruneResult
from whos_online.store.stats import peak, prune

__all__ = [
    # who is online, and one member
    "summary",
    "status",
    "statuses",
    "last_seen",
    "last_seen_many",
    "peak",
    # recording
    "record_user",
    "record_guest",
    "in_room",
    "forget_user",
    "forget_guest",
    "prune",
    # failing open
    "fail_open",
    "UNAVAILABLE",
]

P = ParamSpec("P")
T = TypeVar("T")
# The writes above: a Redis that refuses writes (a read-only replica, out of memory)
# skips these and still serves the reads.
WRITES = frozenset({record_user, record_guest, forget_user, forget_guest, prune})


def fail_open(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T | Unavailable:
    """Return ``func(*args, **kwargs)``, or ``UNAVAILABLE`` if Redis failed or is being
    skipped: the circuit breaker the middleware and the block share, so a call after a
    failure does not wait for a frozen Redis again. The writes of this module are skipped
    while Redis refuses writes; anything else counts as a read."""
    run = failsafe.write if func in WRITES else failsafe.call
    return run(func, *args, **kwargs)
