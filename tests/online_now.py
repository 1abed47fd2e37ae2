"""The tests' shorthand for what ``presence.summary`` answers: who is online and how
many, in a room or on the site, with every member listed."""

from __future__ import annotations

from typing import Any

from whos_online import presence
from whos_online.presence import Member


def online_users(*, room: Any = None, limit: int = -1, viewer: Any = None) -> list[Member]:
    return presence.summary(room=room, limit=limit, viewer=viewer).members


def user_count(*, room: Any = None) -> int:
    return presence.summary(room=room, limit=0).user_count


def guest_count(*, room: Any = None) -> int:
    return presence.summary(room=room, limit=0).guest_count
