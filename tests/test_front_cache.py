"""Guests' pages shared by Django's per-site cache, in its documented order, and counted by
the beacon; hostile beacons. (tests/test_nginx_cache.py: the same behind a real nginx.)"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.test import Client
from django.urls import include, path

from tests import online_now
from tests.conftest import NOW, BrowserAsyncClient, BrowserClient, names
from tests.test_middleware import async_get
from whos_online import presence
from whos_online.conf import Settings, conf
from whos_online.rooms.pages import in_room

pytestmark = pytest.mark.django_db

SITE = engines["django"].from_string("{% load whos_online %}<main>{% whos_online %}</main>")
ROOM = engines["django"].from_string(
    '{% load whos_online %}<main>{% whos_online %}{% whos_here "topic" 1 %}</main>'
)
views = Counter[str]()


def site_page(request: HttpRequest) -> HttpResponse:
    views["site"] += 1
    return HttpResponse(SITE.render({}, request))


@in_room("topic:1")
def room_page(request: HttpRequest) -> HttpResponse:
    views["room"] += 1
    return HttpResponse(ROOM.render({}, request))


urlpatterns = [
    path("", site_page),
    path("topic/1/", room_page),
    path("lounge/", room_page),  # only members open it: never stored
    path("whos-online/", include("whos_online.urls")),
]

SITE_CACHE = [
    "django.middleware.cache.UpdateCacheMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "whos_online.middleware.WhosOnlineMiddleware",
    "django.middleware.cache.FetchFromCacheMiddleware",
]
BEACON = re.compile(r'data-whos-online-beacon="([^"]+)"')


def beacons(html: str) -> list[str]:
    """The beacon URLs a page's blocks carry, as beacon.js reads them."""
    return BEACON.findall(html)


@pytest.fixture
def site_cache(settings: Any, redis_db: redis.Redis) -> Any:
    settings.ROOT_URLCONF = __name__
    settings.MIDDLEWARE = SITE_CACHE
    settings.CACHES = {
        **settings.CACHES,
        "pages": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    settings.CACHE_MIDDLEWARE_ALIAS = "pages"
    settings.CACHE_MIDDLEWARE_SECONDS = 60
    views.clear()
    yield settings
    caches["pages"].clear()


@pytest.fixture
def traveller() -> Iterator[Any]:
    with time_machine.travel(NOW, tick=False) as travelling:
        yield travelling


@pytest.mark.parametrize(("url", "rooms"), [("/", 0), ("/topic/1/", 1)])
def test_the_site_cache_serves_guests_and_the_beacon_counts_them(
    site_cache: Any, traveller: Any, people: Any, url: str, rooms: int
) -> None:
    (shy,) = people("shy")
    site_cache.WHOS_ONLINE_MEMBER_CARD = "tests.test_cached_pages.private_card"
    member = BrowserClient()
    member.force_login(shy)  # hidden: no guest may see their name
    assert "(hidden)" not in member.get(url).content.decode()  # private: not stored

    first = BrowserClient().get(url, REMOTE_ADDR="198.51.100.1")
    kind = "room" if rooms else "site"
    assert views[kind] == 2  # the member's page, then the first guest's
    guests = [BrowserClient() for _ in range(10)]
    for n, guest in enumerate(guests, 2):
        page = guest.get(url, REMOTE_ADDR=f"198.51.100.{n}")
        assert page.content == first.content and not page.cookies
        assert "shy" not in page.content.decode()
        for beacon in beacons(page.content.decode()):
            counted = guest.get(beacon, REMOTE_ADDR=f"198.51.100.{n}")
            assert counted.status_code == 204 and "online" in guest.cookies
            assert "no-store" in counted["Cache-Control"]
        assert len(beacons(page.content.decode())) == 1 + rooms
    for n, guest in enumerate(guests, 2):  # returning, with their cookies
        assert guest.get(url, REMOTE_ADDR=f"198.51.100.{n}").content == first.content
    assert views[kind] == 2  # every new and returning guest served from the cache

    traveller.shift(1)  # one block-cache period
    lounge = member.get("/lounge/").content.decode()  # a member's next page
    assert "11 guests" in lounge
    assert online_now.guest_count(room="topic:1") == (11 if rooms else 0)
    assert {c.key for c in member.cookies.values()} >= {"sessionid", "online"}
    assert all("sessionid" not in guest.cookies for guest in guests)


def test_a_members_beacon_on_a_cached_page_counts_the_member_in_its_room(
    site_cache: Any, people: Any
) -> None:
    BrowserClient().get("/topic/1/", REMOTE_ADDR="198.51.100.1")  # stored
    (alice,) = people("alice", is_staff=True)
    member = BrowserClient()
    member.force_login(alice)
    page = member.get("/topic/1/").content.decode()  # the guests' copy
    member.get(beacons(page)[1])
    assert names(presence.summary(room="topic:1", viewer=alice).members) == ["alice"]


@pytest.mark.parametrize(
    "query",
    [
        "room=topic:2",  # a room the site never signed
        "room=topic:1:forged",
        "room=" + "x" * 600,
        "&".join(["room=topic:1"] * 11),
        "room=%00%ff%fe",
    ],
)
def test_a_forged_beacon_is_a_400_that_records_nobody(
    site_cache: Any, redis_db: redis.Redis, caplog: Any, query: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="whos_online")
    guest = BrowserClient()
    for n in range(1, 4):
        answer = guest.get(f"/whos-online/beacon/?{query}", REMOTE_ADDR=f"203.0.113.{n}")
        assert answer.status_code == 400 and not answer.cookies
    assert online_now.guest_count() == 0 and online_now.guest_count(room="topic:2") == 0
    assert not redis_db.keys(f"{conf.key_prefix}*")  # no key at all
    assert not [r for r in caplog.records if r.name.startswith("whos_online")]


def test_a_crawlers_beacon_counts_nobody(site_cache: Any) -> None:
    crawler = Client(HTTP_USER_AGENT="Googlebot/2.1 (+http://www.google.com/bot.html)")
    page = crawler.get("/topic/1/", REMOTE_ADDR="66.249.66.1").content.decode()
    for beacon in beacons(page):
        assert crawler.get(beacon, REMOTE_ADDR="66.249.66.1").status_code == 204
    assert len(beacons(page)) == 2 and not crawler.cookies
    assert online_now.guest_count() == 0 and online_now.guest_count(room="topic:1") == 0


def test_a_flood_of_beacons_stays_under_the_guest_cap(
    site_cache: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Settings, "max_guests", 5)
    page = BrowserClient().get("/topic/1/", REMOTE_ADDR="198.51.100.1").content.decode()
    for n in range(2, 60):
        for beacon in beacons(page):
            BrowserClient().get(beacon, REMOTE_ADDR=f"10.0.{n}.1")
    assert online_now.guest_count() == 5
    assert online_now.guest_count(room="topic:1") <= 5


def test_the_beacon_counts_under_asgi(site_cache: Any) -> None:
    page = BrowserClient().get("/topic/1/", REMOTE_ADDR="198.51.100.1").content.decode()
    guest = BrowserAsyncClient()
    for beacon in beacons(page):
        answer = async_get(guest, beacon, REMOTE_ADDR="198.51.100.2")
        assert answer.status_code == 204
    assert {"online", "online_rooms"} <= set(guest.cookies)
    assert online_now.guest_count(room="topic:1") == 2


def test_a_page_that_counted_its_guest_tells_beacon_js_and_a_shared_one_does_not(
    site_cache: Any, people: Any
) -> None:
    """``Server-Timing: whos-online-counted`` on a guest's page Django answered and recorded
    them on (beacon.js then sends nothing); never on a page a cache may share, nor on a
    member's, nor on a throttled guest's page that recorded nothing."""
    first = BrowserClient().get("/topic/1/", REMOTE_ADDR="198.51.100.1")  # stored, shared
    assert "Server-Timing" not in first and not first.cookies
    site_cache.MIDDLEWARE = SITE_CACHE[1:-1]  # no cache: each page is the guest's own
    guest = BrowserClient()
    for _ in range(2):  # a room records them on every view
        page = guest.get("/topic/1/", REMOTE_ADDR="198.51.100.2")
        assert page["Server-Timing"] == "whos-online-counted" and beacons(page.content.decode())
    assert "Server-Timing" not in guest.get("/", REMOTE_ADDR="198.51.100.2")  # the cookie holds
    member = BrowserClient()
    member.force_login(people("alice")[0])
    assert "Server-Timing" not in member.get("/topic/1/")
