"""Wagtail pages as rooms, shown by Wagtail's own view restrictions (needs ``wagtail``)::

    WHOS_ONLINE_ROOMS = {"wagtail_serve": "whos_online.contrib.wagtail.pages.page_room"}
    WHOS_ONLINE_ACCESS = "whos_online.contrib.wagtail.pages.access"

A page's room is "wagtailcore.page:<pk>", the name ``object_rooms`` loads a page
by, and one kind for every page type: a reader is in one page's room at a time.
Nothing in the core imports this module; a site that names it has Wagtail.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from wagtail.models import Page

from whos_online.access import object_rooms

ROOM_KIND = "wagtailcore.page"


def page_room(request: HttpRequest, path: str) -> tuple[str, int] | None:
    """The room of the page ``wagtail_serve`` answers for ``path``; none for no page, or
    for one this request does not pass the restrictions of (Wagtail answers its
    password form or login page instead: whoever sees those read nothing)."""
    page = Page.find_for_request(request, path)
    if page is None:
        return None
    if not all(found.accept_request(request) for found in page.get_view_restrictions()):
        return None
    return (ROOM_KIND, page.pk)


class _UserAlone:
    """What ``accept_request`` reads of a request, for a user with no browser: their
    login and groups decide, and no password has been given (Wagtail keeps a password
    in one browser's session, not with the user)."""

    def __init__(self, user: Any) -> None:
        self.user = user
        self.session: dict[str, Any] = {}


def can_view(user: Any, page: Page) -> bool:
    """Whether Wagtail serves ``page`` to ``user`` whatever the browser: live, and every
    view restriction on it or its ancestors passed by their login or groups. A page
    behind a password is nobody's room: a policy is asked of a user (a socket has no
    page session), and a password is not one."""
    viewer = _UserAlone(user)
    return page.live and all(found.accept_request(viewer) for found in page.get_view_restrictions())


# The site list to everyone; a page's room to whom Wagtail shows the page.
access = object_rooms(can_view)
