"""whos_online next to HTTP caches, streaming and file responses."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.core.cache import caches

from tests import online_now
from tests.conftest import BrowserClient, names
from tests.urls import PAYLOAD

pytestmark = pytest.mark.django_db

SESSION = "django.contrib.sessions.middleware.SessionMiddleware"
AUTH = "django.contrib.auth.middleware.AuthenticationMiddleware"
WHOS_ONLINE = "whos_online.middleware.WhosOnlineMiddleware"
UPDATE_CACHE = "django.middleware.cache.UpdateCacheMiddleware"
FETCH_CACHE = "django.middleware.cache.FetchFromCacheMiddleware"

ORDERS = {
    # Django's recommended place: cache outermost, whos_online inside it.
    "cache-outside": [UPDATE_CACHE, SESSION, AUTH, WHOS_ONLINE, FETCH_CACHE],
    # whos_online outermost: it sees every request, even those the cache answers.
    "cache-inside": [SESSION, AUTH, WHOS_ONLINE, UPDATE_CACHE, FETCH_CACHE],
}


@pytest.fixture(params=list(ORDERS))
def page_cache(request: pytest.FixtureRequest, settings: Any, redis_db: redis.Redis) -> str:
    settings.MIDDLEWARE = ORDERS[request.param]
    settings.CACHES = {
        **settings.CACHES,
        "pages": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    settings.CACHE_MIDDLEWARE_ALIAS = "pages"
    settings.CACHE_MIDDLEWARE_SECONDS = 60
    yield request.param
    caches["pages"].clear()


def test_a_cached_page_never_replays_one_visitors_cookie(page_cache: str, people: Any) -> None:
    alice, bob = people("alice", "bob")
    first, second = BrowserClient(), BrowserClient()
    first.force_login(alice)
    second.force_login(bob)
    one = first.get("/counter/")
    two = second.get("/counter/")
    assert one.cookies["online"].value != two.cookies["online"].value
    # each cookie is the one its own session would get: the next request is throttled
    for client in (first, second):
        assert "online" not in client.get("/counter/").cookies
    assert set(names(online_now.online_users())) == {"alice", "bob"}


def test_a_guests_page_the_site_cache_keeps_gets_no_cookie(page_cache: str) -> None:
    response = BrowserClient().get("/counter/", REMOTE_ADDR="203.0.113.1")
    assert not response.cookies  # the page's beacon brings them (tests/test_front_cache.py)
    assert "private" not in response["Cache-Control"]


def test_guests_served_from_the_cache_still_count(page_cache: str) -> None:
    first = BrowserClient().get("/counter/", REMOTE_ADDR="203.0.113.1")
    visitor = BrowserClient()
    second = visitor.get("/counter/", REMOTE_ADDR="203.0.113.2")
    assert second.content == first.content  # one rendering, shared, cookie-free
    assert online_now.guest_count() == 2
    assert not second.cookies


def test_cookieless_guests_get_no_vary_cookie(redis_db: redis.Redis) -> None:
    response = BrowserClient().get("/", REMOTE_ADDR="203.0.113.1")
    assert "online" in response.cookies
    assert "Cookie" not in response.get("Vary", "")


@pytest.mark.parametrize("path", ["/stream/", "/download/"])
def test_streaming_and_file_responses_pass_through_untouched(
    redis_db: redis.Redis, path: str
) -> None:
    response = BrowserClient().get(path, REMOTE_ADDR="203.0.113.1")
    assert response.streaming
    assert b"".join(response.streaming_content) == PAYLOAD
    assert "online" in response.cookies
    assert online_now.guest_count() == 1


def test_a_site_counting_no_guests_leaves_their_pages_cookie_free_and_shared(
    page_cache: str, settings: Any
) -> None:
    settings.WHOS_ONLINE_GUESTS = None
    first = BrowserClient().get("/counter/", REMOTE_ADDR="203.0.113.1")
    assert "online" not in first.cookies and "private" not in first.get("Cache-Control", "")
    second = BrowserClient().get("/counter/", REMOTE_ADDR="203.0.113.2")
    assert second.content == first.content  # one rendering, served to every guest
    assert online_now.guest_count() == 0
