"""A member's status, from the signs Redis keeps of them (their score, when their push
connections are alive until, and their last socket close): the one rule every surface applies, and ``lua/lib/kept.lua``
inside Redis. The rule in a table: docs/howto/presence-dots.md.

Heartbeats never move the score, so they never reorder a list. A socket closed a
cookie's age or more after the last page view means their tab is gone: a member still
browsing would have been recorded again by then, when their "online" cookie expired.
"""

from __future__ import annotations

import time
from typing import Literal

from whos_online.conf import HALF_WINDOW, conf

Status = Literal["online", "idle", "offline"]


def status_of(
    score: float | None,
    now: float,
    beat: float | None = None,
    left: float | None = None,
    window: float | None = None,
) -> Status:
    """The status of a member whose signs are ``score``, ``beat`` and ``left`` (None: none),
    in the site's window or ``window`` (a room's: idle after half of it)."""
    window = conf.max_age if window is None else window
    if score is None:
        return "offline"
    if beating(beat, now):
        return "online"
    if last_sign(score, beat, left) < now - window:
        return "offline"
    if max(beat or 0.0, left or 0.0) >= score + conf.cookie_age:
        return "idle"
    return "online" if score >= now - HALF_WINDOW * window else "idle"


def beating(beat: float | None, now: float) -> bool:
    """Whether a socket of theirs still beats: ``beat``, when it is alive until, is not past."""
    return beat is not None and beat >= now


def last_sign(score: float, beat: float | None = None, left: float | None = None) -> float:
    """When a member was last seen: their newest sign (now, while a socket is alive)."""
    return max(score, min(beat or 0.0, time.time()), left or 0.0)
