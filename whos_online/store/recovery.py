"""Noticing that Redis lost its data, and counting everyone again within seconds.

A Redis restarted without persistence, a ``FLUSHDB`` or a ``cache.clear()``
empties the sets while visitors keep their "online" cookies, which would hold
off their records for half a window: most of the site would go
uncounted for minutes. So Redis keeps a generation, when its data began
(``<prefix>:generation``, in microseconds, set by the first record into an empty Redis, never
expiring). Each process learns it from replies it gets anyway: a record's, and
the block's read, which answers "none" once the data is gone. A process holding
WebSockets learns it from its heartbeats and its hub's checks too: they find
none, start the next generation themselves and beat nobody, so that process
records its sockets' members again with nobody else visiting. A cookie issued
before the generation began (both in milliseconds) stands for a record Redis no
longer holds, so its visitor is due again, whatever second they were recorded
in; the throttled path reads one attribute here, never Redis.

The same replies carry the site's peak: a process that saw one before the loss
writes it back ("most ever online" survives a cache clear in any process that
read it). The admin's history cannot be: its page says since when it counts.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from whos_online.conf import on_settings_change

# Cookies issued before this time are due again: 0 while no generation is known
# (every cookie stands); when a read found none, that read's time (every older
# cookie is due, until a record starts the next generation and its reply tells us).
began = 0.0
# Losses this process noticed: the real-time hub records its open sockets'
# members again after each (a heartbeat only keeps members Redis still holds).
losses = 0
_known: float | None = None  # the last generation read, to tell a new one
_known_asked_at = -math.inf  # when the call whose reply taught it was made
_peak: tuple[int, float] | None = None  # the highest peak read: (count, Unix time)
# Replies come back on many threads (requests, the hub): each learns under this lock.
_lock = threading.Lock()


def learn(generation: Any, asked_at: float) -> tuple[int, float] | None:
    """Take the generation the reply to a call made at ``asked_at`` carried (None: Redis
    holds none).

    Returns the peak to write back when it shows the data was lost since the
    generation known before, else None. Threads answer out of order: a reply to
    a call made before the one that taught the known generation says nothing newer.
    """
    global began, losses, _known, _known_asked_at
    with _lock:
        if _known is not None and asked_at <= _known_asked_at:
            return None
        if generation is None:
            began = asked_at  # not yet a loss: the next generation, when it comes, is one
            return None
        value = float(generation)
        lost = _known is not None and value != _known
        if lost:
            losses += 1
        # Cookies hold milliseconds: the one the record that began it set is of it.
        began, _known, _known_asked_at = math.floor(value * 1000) / 1000, value, asked_at
        return _peak if lost else None


def see_peak(count: int, at: float) -> None:
    """Remember the highest peak read, to write it back after a loss."""
    global _peak
    with _lock:
        if _peak is None or count > _peak[0]:
            _peak = (count, at)


def reset() -> None:
    """Know nothing (tests; a process that switched to another Redis)."""
    global began, losses, _known, _known_asked_at, _peak
    with _lock:
        began, losses, _known, _known_asked_at, _peak = 0.0, 0, None, -math.inf, None


on_settings_change(reset)  # another key prefix or Redis: another generation
