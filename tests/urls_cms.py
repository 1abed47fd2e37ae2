"""A CMS in the shape of Wagtail's: one catch-all view serves every page, its path
captured positionally, and a page with a view restriction answers a password form (a
200). Enough of Wagtail's page API for the room-callable tests (tests/test_url_rooms.py);
tests/test_wagtail.py runs docs/howto/cms-pages.md on Wagtail itself.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.template import engines
from django.urls import re_path

PAGE = engines["django"].from_string(
    '{% load whos_online %}<h1>{{ page.title }}</h1>{% whos_here "page" page.pk %}'
)


class PasswordRestriction:
    """Wagtail's PageViewRestriction of the password kind (passed here with ``?password``;
    Wagtail keeps the password given in the session)."""

    def accept_request(self, request: HttpRequest) -> bool:
        return bool(request.GET.get("password"))


class Page:
    """A page, found by its path as Wagtail's ``Page.find_for_request`` finds it."""

    def __init__(self, pk: int | None, title: str, *restrictions: PasswordRestriction) -> None:
        self.pk, self.title, self.restrictions = pk, title, restrictions

    @classmethod
    def find_for_request(cls, request: HttpRequest, path: str) -> Page | None:
        return PAGES.get(path)

    def get_view_restrictions(self) -> tuple[PasswordRestriction, ...]:
        return self.restrictions


PAGES = {
    "": Page(1, "Home"),
    "about/": Page(2, "About"),
    "members/": Page(3, "Members only", PasswordRestriction()),
}


def page_room(request: HttpRequest, path: str) -> Any:
    """A room callable named by its dotted path, "tests.urls_cms.page_room"."""
    page = Page.find_for_request(request, path)
    return None if page is None else ("page", page.pk)


def serve(request: HttpRequest, path: str) -> HttpResponse:
    """Every page, a password form for a page the request does not pass, and the editor's
    preview of a page not yet saved (``?preview``: no pk)."""
    if "preview" in request.GET:
        return HttpResponse(PAGE.render({"page": Page(None, "Draft")}, request))
    page = Page.find_for_request(request, path)
    if page is None:
        raise Http404(path)
    if not all(r.accept_request(request) for r in page.get_view_restrictions()):
        return HttpResponse('<form method="post"><input type="password"></form>')
    return HttpResponse(PAGE.render({"page": page}, request))


urlpatterns = [re_path(r"^((?:[\w-]+/)*)$", serve, name="wagtail_serve")]
