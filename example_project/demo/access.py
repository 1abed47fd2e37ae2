"""The demo's WHOS_ONLINE_ACCESS: who sees the site list, and who sees and joins which room.

The site list is public. Its one room is the welcome thread, public like a
forum topic: guests see who is reading it, members join it. Any other room
does not exist.
"""

from __future__ import annotations

from typing import Any

from demo.simulation import THREAD_ROOM


def room_access(user: Any, room: str | None) -> str | None:
    if room is None:  # the site-wide list
        return "see"
    if room == THREAD_ROOM:
        return "join" if user.is_authenticated else "see"
    return None
