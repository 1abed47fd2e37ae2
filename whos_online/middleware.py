"""Records each visitor at most once per half window (``conf.cookie_age``): the "online"
cookie (``visitors.cookie``) says when they were last recorded. Every Redis write of a
page view is made here: before the view, or after a response a cache answered without
one, and taken back after a view that showed no page (see ``visitors.visits``)."""

from __future__ import annotations

from typing import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponseBase

from whos_online.rendering import blockcache
from whos_online.rooms.url_names import url_room
from whos_online.visitors.cookie import recorded_at
from whos_online.visitors.visits import PageVisit


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

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.async_mode:
            return self.__acall__(request)
        page = request.whos_online = PageVisit(request)  # type: ignore[attr-defined]
        response: HttpResponseBase = self.get_response(request)  # type: ignore[assignment]
        if page.due_after(response):
            page.record_due()
        elif page.unshown(response.status_code):
            page.settle(response)
        return page.respond(response)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        page = request.whos_online = PageVisit(request)  # type: ignore[attr-defined]
        response: HttpResponseBase = await self.get_response(request)  # type: ignore[misc]
        if page.due_after(response) and recorded_at(request) is None:
            await sync_to_async(page.record_due)()
        elif page.unshown(response.status_code):
            await sync_to_async(page.settle)(response)
        return page.respond(response)

    def process_view(
        self, request: HttpRequest, view: object, args: object, kwargs: object
    ) -> None:
        """The URL resolved and the middleware before passed it (CSRF): record the visitor,
        on the site and in the room ``WHOS_ONLINE_ROOMS`` names for the URL.

        Under ASGI Django runs this in a thread, as every synchronous ``process_view``:
        there a page that recorded its visitor also reads the blocks it may show, so a
        block rendered on the event loop finds them fresh (see ``blockcache``).
        """
        page: PageVisit = request.whos_online  # type: ignore[attr-defined]
        page.viewed = True
        if getattr(view, "records_its_visitor", False):  # as Django's csrf_exempt is read
            return  # the beacon, once its input holds (``views.beacon``)
        page.record_due()
        room = url_room(request)
        if room is not None:
            page.enter(room)
        if self.async_mode and page.replies:
            blockcache.read_ahead(request)
            if room is not None:
                blockcache.read_ahead(request, room)
