"""Records each visitor at most once per half window (``conf.cookie_age``): the "online"
cookie (``visitors.cookie``) says when they were last recorded."""

from __future__ import annotations

import time
from typing import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control, patch_vary_headers

from whos_online.conf import conf
from whos_online.rooms.url_names import due as url_room
from whos_online.rooms.url_names import enter as enter_url_room
from whos_online.visitors.cookie import recorded_at, set_cookie
from whos_online.visitors.visits import (
    HANDED,
    PAGE_MARKS,
    SOCKET_PAGE,
    STAFF_PAGE,
    DueRecord,
    cancel,
    finish_async,
    is_visit,
    load_user_async,
    visit_of,
)


class WhosOnlineMiddleware:
    """Record the user or guest behind a request, unless their "online" cookie is valid."""

    sync_capable = True
    async_capable = True

    def __init__(
        self,
        get_response: Callable[[HttpRequest], HttpResponseBase]
        | Callable[[HttpRequest], Awaitable[HttpResponseBase]],
    ) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)
        # Django calls a process_view only where the middleware has one: a site that maps
        # no URL name to a room pays nothing for the mapping, not even a look for the
        # room's visit after the view. Django runs a sync process_view of an async
        # chain in a thread; the async one needs none.
        self.maps_rooms = bool(conf.rooms)
        if self.maps_rooms:
            self.process_view = self._aprocess_view if self.async_mode else self._process_view

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.async_mode:
            return self.__acall__(request)
        # The user the middleware was handed, by identity (a lazy user stays unread):
        # see visits.viewer.
        setattr(request, HANDED, getattr(request, "user", None))
        # Most requests: the cookie says the site's record is done.
        visit = DueRecord(request) if recorded_at(request) is None and is_visit(request) else None
        response: HttpResponseBase = self.get_response(request)  # type: ignore[assignment]
        if self.maps_rooms:
            room = url_room(request)
            if room is not None:
                room.finish(response)
        if visit is None and not hasattr(request, PAGE_MARKS):
            return response  # most requests: nothing more to do
        return _after(request, response, visit is not None and visit.finish(response))

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        setattr(request, HANDED, getattr(request, "user", None))
        visit = DueRecord(request) if recorded_at(request) is None and is_visit(request) else None
        response: HttpResponseBase = await self.get_response(request)  # type: ignore[misc]
        if self.maps_rooms:
            room = url_room(request)
            if room is not None:
                await finish_async(room, response)
        if visit is None and not hasattr(request, PAGE_MARKS):
            return response
        return _after(request, response, visit is not None and await finish_async(visit, response))

    process_view: Callable[[HttpRequest, object, object, object], Awaitable[None] | None]

    def _process_view(
        self, request: HttpRequest, view: object, args: object, kwargs: object
    ) -> None:
        """Make the visit of the room WHOS_ONLINE_ROOMS names for the URL due."""
        enter_url_room(request)

    async def _aprocess_view(
        self, request: HttpRequest, view: object, args: object, kwargs: object
    ) -> None:
        visit = enter_url_room(request)
        if visit is not None:  # the room's block reads on the event loop
            await load_user_async(request, visit.room)

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        """The view raised: the error page Django renders instead is no visit."""
        cancel(request)


def _after(request: HttpRequest, response: HttpResponseBase, recorded: bool) -> HttpResponseBase:
    """The cookie only when recorded, so a failed write is retried; none for a page that
    opens a member's socket (see visits.mark_socket_page). A staff page is private."""
    marks = getattr(request, PAGE_MARKS, ())
    if STAFF_PAGE in marks:
        patch_cache_control(response, private=True)
        patch_vary_headers(response, ["Cookie"])
    if SOCKET_PAGE in marks:
        response.delete_cookie(conf.cookie_name)
    elif recorded:
        visit = visit_of(request)
        set_cookie(request, response, time.time() if visit is None else visit.at)
    return response
