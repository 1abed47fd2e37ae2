"""Cached pages: no visitor's view of the block is served to another."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import include, path, re_path
from django.views.decorators.cache import cache_control, cache_page
from django.views.decorators.vary import vary_on_cookie
from django.views.static import serve

import whos_online
from tests.conftest import NOW, BrowserClient, hiding
from tests.test_docs import snippets
from tests.test_http_caching import ORDERS
from whos_online import presence

pytestmark = pytest.mark.django_db

STATIC = Path(whos_online.__file__).parent / "static"
PLAIN = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
ROOM = "news:1"
# Each block with no option: the site block, the room block, both as Jinja2 globals.
BLOCKS = {
    "site": PLAIN,
    "room": engines["django"].from_string('{% load whos_online %}{% whos_here "news" 1 %}'),
    "jinja2": engines["jinja2"].from_string('{{ whos_online() }}{{ whos_here("news", 1) }}'),
}
# Presence dots: staff read a hidden member's own status, anyone else "offline".
DOTS = engines["django"].from_string(
    "{% load whos_online %}{% presence_statuses users as statuses %}"
    "{% for user in users %}{{ user.username }}: {{ user|presence:statuses }}{% endfor %}"
)
# The how-to's template, as written.
CACHED = engines["django"].from_string(*snippets("howto/cached-pages.md", "django"))


def page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(CACHED.render({}, request))


def plain(request: HttpRequest) -> HttpResponse:
    return HttpResponse(PLAIN.render({}, request))


def showing(block: str) -> Callable[[HttpRequest], HttpResponse]:
    def view(request: HttpRequest) -> HttpResponse:
        return HttpResponse(BLOCKS[block].render({}, request))

    return view


@cache_page(60, cache="pages")
@vary_on_cookie  # a page that differs by viewer, as Django asks of cache_page
def dots(request: HttpRequest) -> HttpResponse:
    return HttpResponse(DOTS.render({"users": User.objects.filter(username="shy")}, request))


urlpatterns = [
    path("cached/dots/", dots),
    path("cached/", cache_page(60, cache="pages")(page)),
    path("page/", page),
    path("plain/", plain),
    *[path(f"{block}/", showing(block)) for block in BLOCKS],
    # Pages that differ by viewer: Django asks cache_page to vary them on the cookie.
    *[
        path(f"cached/{block}/", cache_page(60, cache="pages")(vary_on_cookie(showing(block))))
        for block in BLOCKS
    ],
    *[
        path(f"public/{block}/", cache_control(public=True, max_age=60)(showing(block)))
        for block in BLOCKS
    ],
    path("whos-online/", include("whos_online.urls")),
    # live.js, for the browser test.
    re_path(r"^assets/(?P<path>.*)$", serve, {"document_root": STATIC}),
]


def wants_privacy(user: Any) -> bool:
    return bool(user.username == "shy")


private_card = hiding(wants_privacy)


@pytest.fixture
def site(redis_db: redis.Redis, settings: Any, people: Any) -> BrowserClient:
    """alice (listed) and shy (hidden) online; returns a logged-in staff member's client."""
    settings.ROOT_URLCONF = __name__
    settings.WHOS_ONLINE_MEMBER_CARD = f"{__name__}.private_card"
    settings.CACHES = {
        **settings.CACHES,
        "pages": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    settings.CACHE_MIDDLEWARE_ALIAS = "pages"
    settings.CACHE_MIDDLEWARE_SECONDS = 60
    for user in people("alice", "shy"):
        member = BrowserClient()
        member.force_login(user)
        member.get("/plain/")
        presence.record_user(user, room=ROOM)
    staff = BrowserClient()
    staff.force_login(User.objects.create(username="admin", is_staff=True))
    yield staff
    caches["pages"].clear()


def assert_nothing_hidden(html: str) -> None:
    assert "alice" in html
    assert "shy" not in html and "(hidden)" not in html


@pytest.mark.parametrize("order", [None, *ORDERS])
def test_a_cached_page_never_shows_the_staff_view_to_the_next_visitor(
    site: BrowserClient, settings: Any, order: str | None
) -> None:
    """cache_page(60) on the view, or Django's per-site cache in either order."""
    url = "/cached/"
    if order is not None:
        settings.MIDDLEWARE = ORDERS[order]
        url = "/page/"
    staff_page = site.get(url).content.decode()
    assert_nothing_hidden(staff_page)
    assert "data-whos-online-fill" in staff_page
    anonymous = BrowserClient().get(url, REMOTE_ADDR="203.0.113.9")
    assert_nothing_hidden(anonymous.content.decode())
    if order != "cache-outside":  # there the session's Vary: Cookie keys pages apart
        assert anonymous.content.decode() == staff_page  # served from the cache


def test_the_staff_viewer_fills_in_their_own_view_from_the_endpoint(site: BrowserClient) -> None:
    site.get("/cached/")
    response = site.get("/whos-online/", HTTP_X_WHOS_ONLINE="poll")
    assert "shy</bdi> (hidden)" in json.loads(response.content)["html"]
    assert "private" in response["Cache-Control"]


def test_a_cached_block_leaves_out_its_own_viewer(
    site: BrowserClient, settings: Any, people: Any, kept_block_reads: Any
) -> None:
    """A member's first page lists them even before the block cache reads again; a page
    a cache keeps for anyone shows what the cache read, not the first viewer's name."""
    kept_block_reads(60)
    with time_machine.travel(NOW, tick=False) as clock:
        BrowserClient().get("/page/", REMOTE_ADDR="203.0.113.9")  # the visitors' view, read
        clock.shift(1)
        carol, dave = BrowserClient(), BrowserClient()
        for client, user in zip((carol, dave), people("carol", "dave")):
            client.force_login(user)
        assert "carol" not in carol.get("/page/").content.decode()
        assert "dave" in dave.get("/plain/").content.decode()


def test_a_page_showing_the_staff_view_is_private(site: BrowserClient) -> None:
    """Shared caches outside Django (a CDN, a proxy) keep no staff page."""
    site.get("/plain/")
    response = site.get("/plain/")  # no "online" cookie set (that alone makes it private)
    assert "online" not in response.cookies
    assert "shy</bdi> (hidden)" in response.content.decode()
    assert "private" in response["Cache-Control"]
    assert "Cookie" in response["Vary"]
    guest = BrowserClient()
    guest.get("/plain/")
    again = guest.get("/plain/")  # the "online" cookie already holds off the write
    assert "online" not in again.cookies
    assert "Cache-Control" not in again  # everyone's view: any cache may keep it


# The per-site cache in Django's documented order (UpdateCacheMiddleware first); the other
# order is whos_online.W014.
@pytest.mark.parametrize("order", [None, "cache-outside"])
@pytest.mark.parametrize("block", list(BLOCKS))
def test_every_block_shows_staff_their_view_and_no_cache_hands_it_on(
    site: BrowserClient, settings: Any, people: Any, order: str | None, block: str
) -> None:
    """cache_page(60) with vary_on_cookie, as Django asks of a page that differs by viewer,
    or Django's per-site cache in its documented order: the staff page is stored for
    no one else; the guest's is, and serves the next member."""
    url = f"/cached/{block}/"
    if order is not None:
        settings.MIDDLEWARE = ORDERS[order]
        url = f"/{block}/"
    staff_page = site.get(url)
    assert "shy</bdi> (hidden)" in staff_page.content.decode()
    assert "private" in staff_page["Cache-Control"]
    guest = BrowserClient().get(url, REMOTE_ADDR="203.0.113.9").content.decode()
    (bob,) = people("bob")
    member = BrowserClient()
    member.force_login(bob)
    for html in (guest, member.get(url).content.decode()):
        assert_nothing_hidden(html)


def test_a_cached_page_of_presence_dots_keeps_a_hidden_members_status_from_guests(
    site: BrowserClient,
) -> None:
    assert site.get("/cached/dots/").content.decode() == "shy: online"
    assert BrowserClient().get("/cached/dots/").content.decode() == "shy: offline"


@pytest.mark.parametrize("order", [None, "cache-outside"])
@pytest.mark.parametrize("block", list(BLOCKS))
def test_a_members_page_under_names_to_members_never_reaches_a_guest(
    site: BrowserClient, settings: Any, people: Any, order: str | None, block: str
) -> None:
    """A member is shown the names, a guest the counts only: a member's page first, and
    the guest after them still gets no name."""
    settings.WHOS_ONLINE_ACCESS = "whos_online.access.names_to_members"
    url = f"/cached/{block}/"
    if order is not None:
        settings.MIDDLEWARE = ORDERS[order]
        url = f"/{block}/"
    carol = BrowserClient()
    carol.force_login(*people("carol"))
    assert "<bdi>alice</bdi>" in carol.get(url).content.decode()
    guest = BrowserClient().get(url, REMOTE_ADDR="203.0.113.9").content.decode()
    assert "members" in guest and "alice" not in guest and "carol" not in guest


@pytest.mark.parametrize("block", list(BLOCKS))
def test_a_public_page_turns_private_when_its_block_is_a_members_own(
    site: BrowserClient, people: Any, block: str
) -> None:
    """A view that says Cache-Control: public (a CDN may keep it for anyone): staff's and
    a member's pages become private and vary on the cookie; a guest's stays public."""
    url = f"/public/{block}/"
    (bob,) = people("bob")
    member = BrowserClient()
    member.force_login(bob)
    for client in (site, member):
        client.get(url)  # sets the "online" cookie, which alone makes a response private
        response = client.get(url)
        assert "online" not in response.cookies
        assert response["Cache-Control"] == "max-age=60, private"
        assert "Cookie" in response["Vary"]
    guest = BrowserClient()
    guest.get(url, REMOTE_ADDR="203.0.113.9")  # sets the "online" cookie: private for that
    again = guest.get(url, REMOTE_ADDR="203.0.113.9")
    assert again["Cache-Control"] == "public, max-age=60"
    assert_nothing_hidden(again.content.decode())


@pytest.mark.parametrize("order", list(ORDERS))
def test_the_endpoint_behind_the_per_site_cache_answers_each_viewer_their_own(
    site: BrowserClient, settings: Any, people: Any, order: str
) -> None:
    settings.MIDDLEWARE = ORDERS[order]
    staff = site.get("/whos-online/")
    assert "shy</bdi> (hidden)" in json.loads(staff.content)["html"]
    (bob,) = people("bob")
    member = BrowserClient()
    member.force_login(bob)
    for client in (BrowserClient(), member):
        data = json.loads(client.get("/whos-online/").content)
        assert_nothing_hidden(data["html"])
        assert "shy" not in [listed["name"] for listed in data["members"]]


@pytest.mark.browser
@pytest.mark.parametrize("redis_db", ["fake"], indirect=True)  # one browser run is enough
def test_in_chromium_the_staff_viewer_sees_the_hidden_member_filled_in_and_a_guest_never(
    site: BrowserClient, live_server: Any, transactional_db: None, settings: Any
) -> None:
    """live.js on the cached page: it fetches the staff view at load and swaps it in;
    a guest served the same cached page is filled with the visitors' view. Playwright
    runs inside the test: its event loop would bar the database from fixtures' teardown."""
    from playwright.sync_api import expect, sync_playwright

    settings.STATIC_URL = "/assets/"  # the live server answers /static/ itself, from nowhere
    session = site.cookies["sessionid"].value
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=shutil.which("chromium"))
        staff = chromium.new_context()
        staff.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
        page = staff.new_page()
        served = page.goto(f"{live_server.url}/cached/")
        assert served is not None and "(hidden)" not in served.text()  # as cached for anyone
        expect(page.locator(".whos-online-hidden")).to_contain_text("shy (hidden)")
        guest = chromium.new_context().new_page()
        served = guest.goto(f"{live_server.url}/cached/")
        assert served is not None and "(hidden)" not in served.text()
        guest.wait_for_load_state("networkidle")  # its own fetch answered
        expect(guest.locator(".whos-online-members")).to_contain_text("alice")
        expect(guest.locator(".whos-online")).not_to_contain_text("shy")
        chromium.close()
