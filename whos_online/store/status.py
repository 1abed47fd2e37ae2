"""A member's status, from the signs Redis keeps of them: the one rule every surface
(the block, rooms, the JSON endpoint, pushes, the admin page, the Python API) applies.

The signs: their score in a member set (their last page view, or a socket's connect),
their newest heartbeat (a socket's, in the live set) and when their last socket closed
(the left set). Heartbeats never move the score, so they never reorder a list.

- **online**: a socket of theirs beats (within the heartbeat timeout), or their last
  page view is within half the window and no socket of theirs closed (or stopped
  beating) half the window or more after it: a member still browsing would have
  been recorded again by then, when their "online" cookie expired, so their tab
  is gone;
- **idle**: not online, but a sign of them is inside the window (``WHOS_ONLINE_MAX_AGE``);
- **offline**: no sign inside the window, never seen, logged out, or pruned.

``lua/lib/kept.lua`` applies the same window rule inside Redis, to list and count.
"""

from __future__ import annotations

from typing import Literal

from whos_online.conf import conf

Status = Literal["online", "idle", "offline"]


def status_of(
    score: float | None, now: float, beat: float | None = None, left: float | None = None
) -> Status:
    """The status of a member whose signs are ``score``, ``beat`` and ``left`` (None: none)."""
    if score is None:
        return "offline"
    if beating(beat, now):
        return "online"
    if last_sign(score, beat, left) < now - conf.max_age:
        return "offline"
    if max(beat or 0.0, left or 0.0) >= score + conf.cookie_age:
        return "idle"
    return "online" if score >= now - conf.idle_after else "idle"


def beating(beat: float | None, now: float) -> bool:
    """Whether a socket of theirs still beats: its newest heartbeat is within the timeout."""
    return beat is not None and beat >= now - conf.heartbeat_timeout


def last_sign(score: float, beat: float | None = None, left: float | None = None) -> float:
    """When a member was last seen: their newest sign."""
    return max(score, beat or 0.0, left or 0.0)
