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

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.http import HttpRequest

from whos_online.visits import record_visit

View = TypeVar("View", bound=Callable[..., Any])


def in_room(room: str | Callable[..., str]) -> Callable[[View], View]:
    """Record the visitor into ``room`` each time the view runs (one Redis round trip).

    ``room`` is a name, or a callable taking the view's arguments (request
    first) and returning one. Unlike the site-wide record there is no cookie
    throttle: being in a room means having just opened it.
    """

    def name(request: HttpRequest, args: Any, kwargs: Any) -> str:
        return room(request, *args, **kwargs) if callable(room) else room

    def decorate(view: View) -> View:
        if iscoroutinefunction(view):

            @wraps(view)
            async def async_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                await sync_to_async(record_visit)(request, name(request, args, kwargs))
                return await view(request, *args, **kwargs)

            return cast(View, async_view)

        @wraps(view)
        def sync_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            record_visit(request, name(request, args, kwargs))
            return view(request, *args, **kwargs)

        return cast(View, sync_view)

    return decorate
