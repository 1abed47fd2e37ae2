"""Guests' pages shared by a real nginx front cache (``proxy_cache``, keyed by URL: the
stand-in for a CDN) in front of a real Django server, and counted by the beacon."""

from __future__ import annotations

import getpass
import http.cookiejar
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import Client
from django.urls import include, path, re_path
from django.views.decorators.cache import cache_control
from django.views.static import serve

from tests import online_now
from tests.conftest import BROWSER
from tests.redis_server import spare_port
from tests.test_cached_pages import STATIC
from tests.test_front_cache import beacons, room_page, site_page, views

# What a site behind a CDN says of its pages.
shared = cache_control(public=True, max_age=60)
urlpatterns = [
    path("", shared(site_page)),
    path("topic/1/", shared(room_page)),
    path("lounge/", room_page),
    path("whos-online/", include("whos_online.urls")),
    re_path(r"^assets/(?P<path>.*)$", serve, {"document_root": STATIC}),  # beacon.js
]

# nginx keeps a page by URL, bypasses the cache for a signed-in member (docs/howto/
# cached-pages.md), tells the app the client's address after a CDN's, and says a hit. Its
# workers run as this user, who owns the temp dir (root's would run as nobody).
CONFIG = """
user {user};
worker_processes 1;
events {{ worker_connections 64; }}
http {{
    access_log off;
    proxy_cache_path {tmp}/cache keys_zone=pages:1m;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass {upstream};
            proxy_cache pages;
            proxy_cache_bypass $cookie_sessionid;
            proxy_no_cache $cookie_sessionid;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            add_header X-Cache-Status $upstream_cache_status always;
        }}
    }}
}}
"""


@pytest.fixture
def nginx(live_server: Any, settings: Any, redis_db: redis.Redis, tmp_path: Path) -> Iterator[str]:
    """nginx on a spare loopback port in front of the live server; its URL."""
    settings.ROOT_URLCONF = __name__
    settings.WHOS_ONLINE_PROXIES = 2  # a CDN's edge, then nginx
    port = spare_port()
    config = tmp_path / "nginx.conf"
    config.write_text(
        CONFIG.format(user=getpass.getuser(), tmp=tmp_path, port=port, upstream=live_server.url)
    )
    server = subprocess.Popen(
        ["nginx", "-p", str(tmp_path), "-c", str(config), "-e", str(tmp_path / "error.log")]
        + ["-g", f"daemon off; pid {tmp_path / 'nginx.pid'};"]
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/whos-online/beacon/?room=x", timeout=1)
            except urllib.error.HTTPError:  # the 400 of a server that answers
                break
            except OSError:
                time.sleep(0.05)
        views.clear()
        yield url
    finally:
        server.terminate()
        server.wait(10)


class Browser:
    """A visitor behind the CDN: their own address and cookie jar."""

    def __init__(self, address: str, cookie: str = "") -> None:
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.opener.addheaders = [("User-Agent", BROWSER), ("X-Forwarded-For", address)]
        if cookie:
            self.opener.addheaders.append(("Cookie", cookie))

    def get(self, url: str) -> tuple[str, str, str]:
        """The body, the X-Cache-Status and the Set-Cookie of ``url``."""
        with self.opener.open(url) as response:
            body = response.read().decode()
            return body, response.headers["X-Cache-Status"], response.headers["Set-Cookie"]


@pytest.mark.parametrize(("page", "rooms"), [("/", 0), ("/topic/1/", 1)])
def test_nginx_serves_guests_and_the_beacon_counts_them(
    nginx: str, transactional_db: None, django_user_model: Any, page: str, rooms: int
) -> None:
    signed_in = Client()
    signed_in.force_login(django_user_model.objects.create(username="alice"))
    member = Browser("192.0.2.1", f"sessionid={signed_in.cookies['sessionid'].value}")
    assert member.get(nginx + page)[1] == "BYPASS"  # signed in: never from the cache

    first = Browser("198.51.100.1").get(nginx + page)
    assert first[1] == "MISS" and first[2] is None  # no cookie: stored for everyone
    assert "alice" in first[0]
    hits = 0
    guests = [Browser(f"198.51.100.{n}") for n in range(2, 12)]
    for guest in guests:
        body, status, cookie = guest.get(nginx + page)
        hits += status == "HIT"
        assert body == first[0] and cookie is None
        assert len(beacons(body)) == 1 + rooms
        for beacon in beacons(body):
            assert guest.get(nginx + beacon)[1] == "MISS"  # never stored
        assert {c.name for c in guest.jar} == ({"online", "online_rooms"} if rooms else {"online"})
    assert hits >= 9
    for guest in guests:  # returning, with their cookies
        assert guest.get(nginx + page)[1] == "HIT"
    assert views["room" if rooms else "site"] == 2  # the member's page, the first guest's

    lounge = member.get(nginx + "/lounge/")[0]
    assert "11 guests" in lounge  # the first by their own page, the others by the beacon
    assert online_now.guest_count(room="topic:1") == (11 if rooms else 0)


@pytest.mark.browser
@pytest.mark.parametrize("redis_db", ["fake"], indirect=True)  # one browser run is enough
def test_in_chromium_the_beacon_counts_guests_nginx_serves(
    nginx: str, transactional_db: None, settings: Any
) -> None:
    """beacon.js once per cookie period on a site page, on every room page; the
    ``<noscript>`` image without scripts. Playwright runs inside the test: its event
    loop would bar the database from fixtures' teardown."""
    from playwright.sync_api import sync_playwright

    settings.STATIC_URL = "/assets/"
    for page in ("/", "/topic/1/"):
        Browser("198.51.100.1").get(nginx + page)  # stored
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=shutil.which("chromium"))
        context = chromium.new_context(
            user_agent=BROWSER,  # not HeadlessChrome's, which is a crawler's
            extra_http_headers={"X-Forwarded-For": "198.51.100.7"},
        )
        tab = context.new_page()
        sent: list[str] = []
        tab.on("request", lambda request: sent.append(request.url))
        with tab.expect_response(lambda answer: "/beacon/" in answer.url) as beacon:
            assert tab.goto(nginx).headers["x-cache-status"] == "HIT"  # type: ignore[union-attr]
        assert beacon.value.status == 204
        assert "online" in {cookie["name"] for cookie in context.cookies()}
        assert online_now.guest_count() == 2

        tab.reload(wait_until="networkidle")  # the cookie holds: no beacon
        with tab.expect_response(lambda answer: "/beacon/?room=" in answer.url):
            tab.goto(nginx + "/topic/1/")  # a room page: its beacon names the room
        lounge = tab.goto(nginx + "/lounge/", wait_until="networkidle")  # not shared:
        assert lounge.headers["server-timing"] == "whos-online-counted"  # type: ignore[union-attr]
        # counted by its own response, so its beacon sends nothing

        without_scripts = chromium.new_context(
            java_script_enabled=False,
            user_agent=BROWSER,
            extra_http_headers={"X-Forwarded-For": "198.51.100.8"},
        ).new_page()
        with without_scripts.expect_response(lambda answer: "/beacon/" in answer.url):
            without_scripts.goto(nginx)  # the <noscript> image
        chromium.close()
    assert len([url for url in sent if "/beacon/" in url]) == 2
    assert online_now.guest_count(room="topic:1") == 2
    assert online_now.guest_count() == 3
