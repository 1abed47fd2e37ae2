"""Who may see who is online, and who is recorded in which room: what the site declares.

``WHOS_ONLINE_ACCESS`` names a callable ``(user, room) -> access`` (``room=None``: the
site list), asked by every surface; docs/howto/access.md lists its answers. Without it
the site list is public and a page records the rooms it declares, but a socket to a
room is refused: a room a socket subscribes to is what the site declares.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

from whos_online.conf import conf, on_settings_change

logger = logging.getLogger(__name__)

# Close codes (the 4000-4999 range is the application's): the page's script
# stops retrying on either.
REFUSED = 4403
TOO_MANY_CONNECTIONS = 4429


@dataclass(frozen=True)
class RoomAccess:
    """What one viewer may do in one namespace (a room, or the site)."""

    # Whether it is shown who is here (names, cards); else the counts only.
    names: bool
    # Whether a member's page or socket puts them in the room.
    join: bool


JOIN = RoomAccess(names=True, join=True)
SEE = RoomAccess(names=True, join=False)
COUNT = RoomAccess(names=False, join=False)
NAMED = {"join": JOIN, "see": SEE, "count": COUNT}


def room_access(user: Any, room: str | None) -> RoomAccess | None:
    """What ``user`` may do in ``room`` (None: the site); without a policy, a socket's view
    (pages ask ``visits.access_of``, which leaves their rooms open)."""
    policy = conf.access
    if policy is None:
        return JOIN if room is None else None
    return asked(policy, user, room)


def asked(
    policy: Callable[[Any, str | None], Any], user: Any, room: str | None
) -> RoomAccess | None:
    """The policy's answer as a RoomAccess; None (nothing) if it raised, as a policy that
    reads the database does when asked on the event loop (SynchronousOnlyOperation)."""
    try:
        granted = policy(user, room)
    except Exception as error:  # the site's code: fail closed, the page renders
        failed(error)
        return None
    if granted is None or granted is False:
        return None
    if isinstance(granted, RoomAccess):
        return granted
    if isinstance(granted, str) and granted in NAMED:
        return NAMED[granted]
    raise ImproperlyConfigured(
        f"WHOS_ONLINE_ACCESS returned {granted!r} for room {room!r}: "
        'expected "join", "see", "count", a RoomAccess or None.'
    )


# The causes already logged: (exception type, file, line where it was raised).
_logged: set[tuple[str, str, int]] = set()


def failed(error: Exception) -> None:
    """Log a policy's error once per process and cause, not once per request."""
    *_, (frame, line) = traceback.walk_tb(error.__traceback__)
    cause = (type(error).__qualname__, frame.f_code.co_filename, line)
    if cause not in _logged:
        _logged.add(cause)
        logger.error(
            "whos_online: WHOS_ONLINE_ACCESS raised; viewers it raises for see nothing "
            "(logged once per cause)",
            exc_info=error,
        )


on_settings_change(_logged.clear)  # another policy: its causes are new


# Ready-made policies: set WHOS_ONLINE_ACCESS to one's dotted path.


def public(user: Any, room: str | None) -> str:
    """Everything is public: anyone sees who is online and in a room, and members join rooms."""
    return "join"


def names_to_members(user: Any, room: str | None) -> str:
    """Names to members, the counts to anonymous visitors (phpBB's "can view who is online")."""
    return "join" if user.is_authenticated else "count"


def staff_only(user: Any, room: str | None) -> str | None:
    """Everything to staff, nothing to anyone else (a ticket tracker's agents)."""
    return "join" if user.is_authenticated and user.is_staff else None


def helpdesk(user: Any, room: str | None) -> str | None:
    """Names to staff, the counts to everyone else, and each room (a ticket's) to staff
    only: customers see how many are online, never who, and are put in no room."""
    if user.is_authenticated and user.is_staff:
        return "join"
    return "count" if room is None else None


def object_rooms(
    can_view: Callable[[Any, Any], bool], site: str | None = "see"
) -> Callable[[Any, str | None], str | None]:
    """A policy for rooms named by model instances (``@in_room(lambda request, pk: page)``):
    a room is joined by whoever ``can_view(user, instance)``; the site list gets ``site``,
    and a room naming no instance (or one gone) nothing."""

    def policy(user: Any, room: str | None) -> str | None:
        if room is None:
            return site
        found = instance(room)
        return "join" if found is not None and can_view(user, found) else None

    return policy


def instance(room: str) -> Any:
    """The model instance a room is named by ("<app_label>.<model_name>:<pk>"), or None."""
    label, _, pk = room.partition(":")
    app_label, _, model_name = label.partition(".")
    try:
        model = apps.get_model(app_label, model_name)
        return model._default_manager.filter(pk=pk).first()
    except (LookupError, ValueError):  # no such model, a pk of the wrong type
        return None
