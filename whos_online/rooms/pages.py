"""Presence in one page or object ("3 members are reading this thread").

A room is a namespace of its own (``<prefix>:room:<name>:users`` …) with the
same window, TTLs and pruning as the site. Decorate the view that shows it::

    @in_room(lambda request, pk: ("thread", pk))
    def thread(request, pk): ...

and render ``{% whos_here "thread" thread.pk %}`` in its template: both name
the room "thread:42" (``room_names.room_parts``).
"""

from __future__ import annotations

import logging
from functools import wraps
from typing import Any, Callable, TypeVar, cast

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest

from whos_online.room_names import room_name
from whos_online.visitors.visits import DueRecord, finish_async, is_visit, load_user_async

ViewFunction = TypeVar("ViewFunction", bound=Callable[..., Any])

logger = logging.getLogger(__name__)


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


def in_room(room: object | Callable[..., object]) -> Callable[[ViewFunction], ViewFunction]:
    """Record the visitor into ``room`` each time the view succeeds (one Redis round trip).

    ``room`` is a name, or a callable taking the view's arguments (request
    first) and returning one. Any value names a room as ``{% whos_here %}``
    names it (``room_names.room_name``): a tuple is the tag's parts, a model
    instance is "<app_label>.<model_name>:<pk>", None or "" is no room; parts
    that name no room are an error under DEBUG (``checked_room``). Unlike the
    site-wide record there is no cookie throttle: being in a room means having
    just opened it. As on the site, a ``{% whos_here %}`` of the room rendered
    by the view records first, and a view that does not show the room (raises,
    or answers other than 2xx: an error, a redirect to the login page) records
    nothing. ``WHOS_ONLINE_ROOMS`` does the same for views the site does not own.
    """

    def visit(request: HttpRequest, args: Any, kwargs: Any, where: str) -> DueRecord | None:
        if not is_visit(request):
            return None
        name = checked_room(room(request, *args, **kwargs) if callable(room) else room, where)
        return None if name is None else DueRecord(request, name)

    def decorate(view: ViewFunction) -> ViewFunction:
        where = f"@in_room on {view.__module__}.{view.__qualname__}"
        if iscoroutinefunction(view):

            @wraps(view)
            async def async_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                due = visit(request, args, kwargs, where)
                await load_user_async(request, due.room if due is not None else None)
                response = await view(request, *args, **kwargs)
                if due is not None:
                    await finish_async(due, response)
                return response

            return cast(ViewFunction, async_view)

        @wraps(view)
        def sync_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            due = visit(request, args, kwargs, where)
            response = view(request, *args, **kwargs)
            if due is not None:
                due.finish(response)
            return response

        return cast(ViewFunction, sync_view)

    return decorate
