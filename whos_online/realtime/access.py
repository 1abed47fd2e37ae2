"""Who may see and who may join a room over WebSockets: what the site declares, nothing more.

``WHOS_ONLINE_ROOM_ACCESS`` names a callable ``(user, room) -> access`` that
the WebSocket routes and ``PresenceMixin`` ask once per connection (through
``database_sync_to_async``: it may read the database). ``access`` is one of

- ``"join"``: sees who is here, and a member's socket puts them here;
- ``"see"``: sees who is here, without being counted in;
- ``"count"``: sees the counts only: no name or card is ever sent;
- a ``RoomAccess`` for any other pair (e.g. counted in, counts only);
- ``None`` or ``False``: no access. The socket is closed with code
  ``REFUSED`` (4403) before anything is sent.

Without the setting every room is refused: a room is what the site declares,
as in Discourse's presence channels. The site-wide namespace is not a room:
its block is public, and it is served as the block is rendered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from whos_online.conf import conf

# Close codes (the 4000-4999 range is the application's): the page's script
# stops retrying on either.
REFUSED = 4403
TOO_MANY_CONNECTIONS = 4429


@dataclass(frozen=True)
class RoomAccess:
    """What one socket may do in one room."""

    # Whether it is sent who is here (cards); else the counts only.
    names: bool
    # Whether a member's socket puts them in the room (and on the site).
    join: bool


JOIN = RoomAccess(names=True, join=True)
SEE = RoomAccess(names=True, join=False)
COUNT = RoomAccess(names=False, join=False)
NAMED = {"join": JOIN, "see": SEE, "count": COUNT}


def room_access(user: Any, room: str | None) -> RoomAccess | None:
    """What ``user`` may do in ``room`` (None: the site), by ``WHOS_ONLINE_ROOM_ACCESS``."""
    if room is None:
        return JOIN
    policy = conf.room_access
    granted = policy(user, room) if policy is not None else None
    if granted is None or granted is False:
        return None
    if isinstance(granted, RoomAccess):
        return granted
    if isinstance(granted, str) and granted in NAMED:
        return NAMED[granted]
    raise ImproperlyConfigured(
        f"WHOS_ONLINE_ROOM_ACCESS returned {granted!r} for room {room!r}: "
        'expected "join", "see", "count", a RoomAccess or None.'
    )


def public(user: Any, room: str) -> str:
    """Every room is public: anyone sees who is in it, members join it (the demo's threads)."""
    return "join"
