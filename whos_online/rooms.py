"""Presence in one page or object ("3 members are reading this thread").

A room is a namespace of its own (``<prefix>:room:<name>:users`` …) with the
same window, TTLs and pruning as the site. Decorate the view that shows it::

    @in_room(lambda request, pk: f"thread:{pk}")
    def thread(request, pk): ...

and render ``{% whos_here "thread:42" %}`` in its template.
"""

from __future__ import annotations

from functools import wraps
from typing import Any, Callable, TypeVar, cast

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest

from whos_online.conf import room_name
from whos_online.visits import Visit, finish_async, is_visit, load_user_async

View = TypeVar("View", bound=Callable[..., Any])


def in_room(room: object | Callable[..., object]) -> Callable[[View], View]:
    """Record the visitor into ``room`` each time the view succeeds (one Redis round trip).

    ``room`` is a name, or a callable taking the view's arguments (request
    first) and returning one: any value (see ``conf.room_name``; empty means
    no room). Unlike the site-wide record there is no cookie throttle: being
    in a room means having just opened it. As on the site, a
    ``{% whos_here %}`` of the room rendered by the view records first, and a
    view that fails (raises, or answers 4xx/5xx) records nothing.
    """

    def visit(request: HttpRequest, args: Any, kwargs: Any) -> Visit | None:
        if not is_visit(request):
            return None
        name = room_name(room(request, *args, **kwargs) if callable(room) else room)
        return None if name is None else Visit(request, name)

    def decorate(view: View) -> View:
        if iscoroutinefunction(view):

            @wraps(view)
            async def async_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                due = visit(request, args, kwargs)
                await load_user_async(request)
                response = await view(request, *args, **kwargs)
                if due is not None:
                    await finish_async(due, response)
                return response

            return cast(View, async_view)

        @wraps(view)
        def sync_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            due = visit(request, args, kwargs)
            response = view(request, *args, **kwargs)
            if due is not None:
                due.finish(response)
            return response

        return cast(View, sync_view)

    return decorate
