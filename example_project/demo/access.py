"""The demo's WHOS_ONLINE_ACCESS: who may see and join which room over WebSockets.

Its one room is the welcome thread, public like a forum topic: guests see who
is reading it, members join it. Any other room does not exist.
"""

from __future__ import annotations

from typing import Any

from demo.simulation import THREAD_ROOM


def room_access(user: Any, room: str) -> str | None:
    if room == THREAD_ROOM:
        return "join" if user.is_authenticated else "see"
    return None
