"""Presence in one page or object ("3 members are reading this thread").

A room is a namespace of its own, pruned as the site is. Decorate its view::

    @in_room(lambda request, pk: ("thread", pk))
    def thread(request, pk): ...

and render ``{% whos_here "thread" thread.pk %}`` in its template: both name
the room "thread:42" (``room_names.room_parts``).
"""

from __future__ import annotations

from functools import wraps
from typing import Any, Callable, TypeVar, cast

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.http import HttpRequest

from whos_online.rendering import blockcache
from whos_online.room_names import checked_room
from whos_online.visitors.visits import PageVisit, page_of

ViewFunction = TypeVar("ViewFunction", bound=Callable[..., Any])


def in_room(room: object | Callable[..., object]) -> Callable[[ViewFunction], ViewFunction]:
    """Record the visitor into ``room`` each time the view succeeds (one Redis round trip).

    ``room`` is a name, or a callable taking the view's arguments (request first)
    and returning one, named as ``{% whos_here %}`` names it (``room_name``). No
    cookie throttles it: being in a room means having just opened it. The record
    is made before the view, so the room's block counts the visitor; a view that
    does not show the room (anything but a 2xx) leaves it again.
    """

    def enter(request: HttpRequest, args: Any, kwargs: Any, where: str) -> PageVisit | None:
        """Record the visitor in the view's room before it runs; the PageVisit to settle."""
        page = page_of(request)
        name = checked_room(room(request, *args, **kwargs) if callable(room) else room, where)
        if page is None or name is None:
            return None
        page.enter(name)
        return page

    def enter_and_read(
        request: HttpRequest, args: Any, kwargs: Any, where: str
    ) -> PageVisit | None:
        """``enter`` for an async view, in a thread: with the room's block read there, so
        the block it renders on the event loop finds it kept."""
        page = enter(request, args, kwargs, where)
        if page is not None and page.rooms:
            blockcache.read_ahead(request, page.rooms[-1])
        return page

    def decorate(view: ViewFunction) -> ViewFunction:
        where = f"@in_room on {view.__module__}.{view.__qualname__}"

        if iscoroutinefunction(view):

            @wraps(view)
            async def async_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                page = await sync_to_async(enter_and_read)(request, args, kwargs, where)
                response = await view(request, *args, **kwargs)
                if page is not None and page.unshown(response.status_code):
                    await sync_to_async(page.settle)(response)
                return response

            return cast(ViewFunction, async_view)

        @wraps(view)
        def sync_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            page = enter(request, args, kwargs, where)
            response = view(request, *args, **kwargs)
            if page is not None and page.unshown(response.status_code):
                page.settle(response)
            return response

        return cast(ViewFunction, sync_view)

    return decorate
