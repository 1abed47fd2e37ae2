"""A real HTTP server and a real HTTP client with a cookie jar, as a browser would."""

from __future__ import annotations

import http.cookiejar
import urllib.request
from typing import Any

import redis

from tests import online_now
from tests.conftest import BROWSER


def test_a_visitor_counts_on_their_first_page_and_is_then_throttled(
    redis_db: redis.Redis, live_server: Any, round_trips: Any, transactional_db: None
) -> None:
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    browser.addheaders = [("User-Agent", BROWSER)]

    first = browser.open(f"{live_server.url}/block/").read().decode()
    assert "1 user online" in first and "1 guest" in first
    assert [c.name for c in jar] == ["online"]
    assert round_trips.records == 1

    for _ in range(3):
        browser.open(f"{live_server.url}/").read()
    assert round_trips.records == 1  # the cookie held off the writes
    assert online_now.guest_count() == 1
