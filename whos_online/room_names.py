"""Room names: the one name a room is kept under, whatever value a view or a tag gives.

``{% whos_here "topic" 42 %}``, ``@in_room(lambda request, pk: ("topic", pk))`` and
a Topic instance all name "topic:42" here, and ``whos_online.conf`` lays a room's
Redis keys out under that name.
"""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.db.models import Model

logger = logging.getLogger(__name__)

MAX_ROOM_NAME = 200


def room_name(room: object) -> str | None:
    """The name a room is kept under, for any value a view can produce; None if empty.

    A tuple is the room's parts and a model instance a part (see
    ``room_parts``), so ``("topic", 42)`` and a Topic instance name the rooms
    ``{% whos_here "topic" 42 %}`` and ``{% whos_here topic %}`` show. Any
    other value: its ``str()``; None, "" or a missing part is no room. Longer than
    MAX_ROOM_NAME characters: its start and a hash of the whole, so each long
    name keeps a stable short one of its own (a 10,000-digit pk is a room, not
    an error).
    """
    if isinstance(room, (tuple, Model)):
        name = room_parts(room) or ""
    else:
        name = room if isinstance(room, str) else "" if room is None else str(room)
    if len(name) > MAX_ROOM_NAME:
        digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=12)
        name = f"{name[: MAX_ROOM_NAME - 25]}~{digest.hexdigest()}"
    # A lone surrogate cannot be sent to Redis: it becomes U+FFFD.
    return name.encode("utf-8", "surrogatepass").decode("utf-8", "replace") or None


def room_kind(name: str) -> str:
    """A room's kind, its name up to the first ':' ("topic" for "topic:2"): a member
    is in one room of a kind at a time."""
    return name.split(":", 1)[0]


def room_parts(*parts: object) -> str | None:
    """Parts joined by ":" (``"topic", 42`` is "topic:42"); a model instance is
    "<app_label>.<model_name>:<pk>", stable across renames of its title.

    None if a part is missing (None, or an unsaved instance): an editor's
    preview of a page not yet saved is in no room, as a view whose room is
    None. ValueError for an empty part (a template variable that does not
    exist, ``add`` joining text and a number): a name built from it would
    silently be another room, often one shared by every page.
    """
    if not parts:
        raise ValueError("A room needs a name: no parts were given.")
    names = []
    for part in parts:
        if isinstance(part, tuple):  # the parts a view passes whole: ("topic", 42)
            part = room_parts(*part)
        elif isinstance(part, Model):
            part = None if part.pk is None else f"{part._meta.label_lower}:{part.pk}"
        if part is None:
            return None
        text = str(part)
        if not text:
            raise ValueError(f"{parts!r} names no room: {part!r} is empty.")
        names.append(text)
    return ":".join(names)


def checked_room(room: object, where: str, hint: str = "") -> str | None:
    """``room_name(room)``; parts that name no room raise under DEBUG, else are logged and None.

    ``where`` says who was given them and ``hint`` how to fix it, for the
    message. Without DEBUG a bad room on a page is a warning in the log, not a 500.
    """
    try:
        return room_name(room)
    except ValueError as error:
        no_room(error, where, hint)
        return None


def no_room(error: ValueError, where: str, hint: str = "") -> None:
    """A room that could not be named: raised under DEBUG, else a warning in the log."""
    if settings.DEBUG:
        raise ValueError(f"{where}: {error}{hint}") from None
    logger.warning("%s: %s%s", where, error, hint)
