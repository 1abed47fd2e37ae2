"""The middleware through Django's test clients, sync and async."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync, iscoroutinefunction
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.template import engines
from django.test import AsyncClient, Client, RequestFactory
from django.utils.http import http_date

from tests import online_now
from tests.conftest import BROWSER, NOW, BrowserAsyncClient, BrowserClient, names
from whos_online import presence
from whos_online.middleware import WhosOnlineMiddleware
from whos_online.store import reading

pytestmark = pytest.mark.django_db


def async_get(client: AsyncClient, path: str, **extra: Any) -> Any:
    """Drive the ASGI handler from a sync test (Django 4.2's AsyncClient.get is not async def)."""

    async def fetch() -> Any:
        return await client.get(path, **extra)

    return async_to_sync(fetch)()


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password="pw")


def test_first_visit_counts_the_guest_and_sets_the_cookie(
    redis_db: redis.Redis, client: Client, round_trips: Any
) -> None:
    response = client.get("/", REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 200
    assert round_trips.commands == [["EVALSHA"]]
    assert online_now.guest_count() == 1
    cookie = response.cookies["online"]
    assert cookie["max-age"] == 300
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and not cookie["secure"]
    assert response["Cache-Control"] == "private"


@time_machine.travel(NOW, tick=False)
def test_the_cookie_expires_with_its_max_age(redis_db: redis.Redis, client: Client) -> None:
    response = client.get("/", REMOTE_ADDR="203.0.113.7")
    expires = response.cookies["online"]["expires"]
    assert expires == http_date(NOW.timestamp() + 300)
    with time_machine.travel(NOW + timedelta(seconds=61), tick=False):
        response = BrowserClient().get("/", REMOTE_ADDR="203.0.113.8")
    assert response.cookies["online"]["expires"] == http_date(NOW.timestamp() + 361)


def test_a_guests_page_a_cache_may_share_keeps_its_headers_and_gets_no_cookie(
    redis_db: redis.Redis, client: Client
) -> None:
    response = client.get("/cached-page/", REMOTE_ADDR="203.0.113.7")
    assert not response.cookies  # the page's beacon brings them
    assert response["Cache-Control"] == "max-age=60"
    assert online_now.guest_count() == 1  # counted on their own first page all the same


def test_the_visitor_counts_on_their_own_first_page(redis_db: redis.Redis, client: Client) -> None:
    response = client.get("/block/", REMOTE_ADDR="203.0.113.7")
    assert "1 guest" in response.content.decode()


def test_with_the_cookie_a_request_costs_no_redis_call_and_no_query(
    redis_db: redis.Redis,
    client: Client,
    alice: User,
    round_trips: Any,
    django_assert_num_queries: Any,
) -> None:
    client.force_login(alice)
    client.get("/")
    round_trips.clear()
    with django_assert_num_queries(0):
        response = client.get("/")
    assert round_trips.count == 0
    assert "online" not in response.cookies


def test_without_the_cookie_a_member_costs_one_round_trip(
    redis_db: redis.Redis, client: Client, alice: User, round_trips: Any
) -> None:
    client.force_login(alice)
    round_trips.clear()
    client.get("/")
    assert round_trips.commands == [["EVALSHA"]]
    assert names(online_now.online_users()) == ["alice"]


def test_cookie_age_throttles_and_expiry_records_again(
    redis_db: redis.Redis, client: Client, round_trips: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 84
    response = client.get("/")
    assert response.cookies["online"]["max-age"] == 42  # half the window
    client.get("/")
    assert round_trips.count == 1
    del client.cookies["online"]  # what the browser does after max-age
    client.get("/")
    assert round_trips.count == 2


def test_secure_cookie_on_https_or_with_secure_sessions(
    redis_db: redis.Redis, client: Client, settings: Any
) -> None:
    assert client.get("/", secure=True).cookies["online"]["secure"]
    client.cookies.clear()
    settings.SESSION_COOKIE_SECURE = True
    assert client.get("/").cookies["online"]["secure"]


def test_login_shows_the_member_at_once_and_the_cookie_does_not_hide_them(
    redis_db: redis.Redis, client: Client, alice: User, round_trips: Any
) -> None:
    client.get("/")  # a guest with a throttle cookie
    assert names(online_now.online_users()) == []
    client.force_login(alice)  # user_logged_in
    assert names(online_now.online_users()) == ["alice"]
    round_trips.clear()
    client.get("/")  # new session key: the guest's cookie no longer counts
    assert round_trips.commands == [["EVALSHA"]]
    round_trips.clear()
    client.get("/")
    assert round_trips.count == 0


def test_a_guest_who_logs_in_stops_counting_as_a_guest(
    redis_db: redis.Redis, client: Client, alice: User
) -> None:
    client.get("/", REMOTE_ADDR="203.0.113.7")
    BrowserClient().get("/", REMOTE_ADDR="198.51.100.1")  # someone else
    assert online_now.guest_count() == 2
    client.post("/login/", {"username": "alice", "password": "pw"}, REMOTE_ADDR="203.0.113.7")
    assert names(online_now.online_users()) == ["alice"]
    assert online_now.guest_count() == 1


def test_logout_takes_the_member_off_at_once(
    redis_db: redis.Redis, client: Client, alice: User
) -> None:
    client.force_login(alice)
    client.get("/")
    client.logout()  # user_logged_out
    assert names(online_now.online_users()) == []
    client.get("/")
    assert names(online_now.online_users()) == []


def test_switching_accounts_records_the_new_one(
    redis_db: redis.Redis, client: Client, alice: User
) -> None:
    bob = User.objects.create_user("bob", password="pw")
    client.force_login(alice)
    client.get("/")
    client.force_login(bob)
    client.get("/")
    assert set(names(online_now.online_users())) == {"alice", "bob"}


def test_a_forged_cookie_records_anyway(
    redis_db: redis.Redis, client: Client, round_trips: Any
) -> None:
    client.cookies["online"] = "forged"
    response = client.get("/")
    assert round_trips.count == 1
    assert response.cookies["online"].value != "forged"


def test_a_cookie_from_another_session_records_anyway(
    redis_db: redis.Redis, alice: User, django_user_model: Any
) -> None:
    bob = django_user_model.objects.create_user("bob")
    alices, bobs = BrowserClient(), BrowserClient()
    alices.force_login(alice)
    bobs.force_login(bob)
    stolen = alices.get("/").cookies["online"].value
    presence.forget_user(bob)
    bobs.cookies["online"] = stolen
    response = bobs.get("/")
    assert names(online_now.online_users()) == ["bob", "alice"]
    assert response.cookies["online"].value != stolen


def test_guests_are_not_tracked_when_disabled(
    redis_db: redis.Redis, client: Client, alice: User, settings: Any
) -> None:
    settings.WHOS_ONLINE_GUESTS = None
    client.get("/")
    assert online_now.guest_count() == 0
    client.force_login(alice)
    client.get("/")
    assert names(online_now.online_users()) == ["alice"]


def test_x_forwarded_for_is_ignored_by_default(redis_db: redis.Redis) -> None:
    for spoofed in ["198.51.100.1", "198.51.100.2", "198.51.100.3"]:
        BrowserClient().get("/", REMOTE_ADDR="203.0.113.7", HTTP_X_FORWARDED_FOR=spoofed)
    assert online_now.guest_count() == 1


def test_with_one_proxy_the_rightmost_forwarded_address_is_the_guest(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_PROXIES = 1
    # The client prepends spoofed entries; only the proxy's own entry counts.
    for spoofed in ["198.51.100.1", "198.51.100.2"]:
        BrowserClient().get(
            "/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=f"{spoofed}, 203.0.113.7"
        )
    BrowserClient().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert online_now.guest_count() == 2


def test_with_two_proxies_the_second_from_the_right_counts(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_PROXIES = 2
    BrowserClient().get("/", HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.7, 10.0.0.2")
    BrowserClient().get("/", HTTP_X_FORWARDED_FOR="198.51.100.2, 203.0.113.7, 10.0.0.3")
    assert online_now.guest_count() == 1
    presence.record_guest("203.0.113.7")
    assert online_now.guest_count() == 1


@pytest.mark.parametrize(
    "meta",
    [
        {"REMOTE_ADDR": "not an address"},
        {"REMOTE_ADDR": ""},
    ],
)
def test_an_unusable_address_is_not_recorded_and_is_no_error(
    redis_db: redis.Redis, meta: dict[str, str]
) -> None:
    response = BrowserClient().get("/", **meta)  # type: ignore[arg-type]
    assert response.status_code == 200
    assert online_now.guest_count() == 0


def test_too_few_forwarded_hops_records_no_guest(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_PROXIES = 2
    assert BrowserClient().get("/", HTTP_X_FORWARDED_FOR="203.0.113.7").status_code == 200
    assert online_now.guest_count() == 0


def test_async_client_records_and_then_throttles(redis_db: redis.Redis, round_trips: Any) -> None:
    client = BrowserAsyncClient()
    first = async_get(client, "/", REMOTE_ADDR="203.0.113.7")
    assert first.status_code == 200 and "online" in first.cookies
    assert online_now.guest_count() == 1
    client.cookies["online"] = first.cookies["online"].value
    round_trips.clear()
    second = async_get(client, "/")
    assert round_trips.count == 0 and "online" not in second.cookies


def test_over_an_async_handler_it_says_it_is_async_as_djangos_docs_ask() -> None:
    """Other middleware and servers tell an async one by ``iscoroutinefunction``."""

    async def view(request: Any) -> HttpResponse:
        return HttpResponse()

    assert iscoroutinefunction(WhosOnlineMiddleware(view))
    assert not iscoroutinefunction(WhosOnlineMiddleware(lambda request: HttpResponse()))


def test_an_async_view_showing_its_room_counts_its_guest_there(redis_db: redis.Redis) -> None:
    response = async_get(BrowserAsyncClient(), "/lobby/", REMOTE_ADDR="203.0.113.7")
    assert "1 here now" in response.content.decode()  # recorded and read before the view
    assert online_now.guest_count(room="lobby") == 1 and online_now.guest_count() == 1


def test_async_client_records_members(redis_db: redis.Redis, alice: User, round_trips: Any) -> None:
    client = BrowserAsyncClient()
    client.force_login(alice)
    async_get(client, "/")
    assert names(online_now.online_users()) == ["alice"]


def test_a_renamed_session_cookie_is_seen_at_once(
    redis_db: redis.Redis, alice: User, settings: Any
) -> None:
    client = BrowserClient()
    assert "online" in client.get("/").cookies  # the names are now read and kept
    settings.SESSION_COOKIE_NAME = "renamed"
    client.force_login(alice)  # a new identity, in the session cookie's new name
    assert "online" in client.get("/").cookies
    assert [m.name for m in online_now.online_users()] == ["alice"]


def test_a_head_request_is_a_visit_the_default_bot_filter_drops_for_guests(
    redis_db: redis.Redis, settings: Any, alice: User
) -> None:
    member = BrowserClient()
    member.force_login(alice)
    presence.forget_user(alice)  # recorded again below by the HEAD alone
    assert "online" in member.head("/").cookies
    assert names(online_now.online_users()) == ["alice"]
    assert online_now.guest_count() == 0
    BrowserClient().head("/", REMOTE_ADDR="203.0.113.7")
    assert online_now.guest_count() == 0  # bots.is_bot: a HEAD is no person at a screen
    settings.WHOS_ONLINE_IS_BOT = None
    BrowserClient().head("/", REMOTE_ADDR="203.0.113.7")
    assert online_now.guest_count() == 1


def test_an_anonymous_session_without_a_usable_address_gets_no_cookie_so_it_retries(
    redis_db: redis.Redis, settings: Any
) -> None:
    client = BrowserClient()
    client.cookies[settings.SESSION_COOKIE_NAME] = "no-such-session"
    response = client.get("/", REMOTE_ADDR="junk")
    assert "online" not in response.cookies and online_now.guest_count() == 0
    assert "online" in client.get("/", REMOTE_ADDR="203.0.113.7").cookies
    assert online_now.guest_count() == 1


def test_a_member_another_middleware_signs_in_without_a_session_cookie_is_a_member(
    redis_db: redis.Redis, settings: Any, alice: User
) -> None:
    """Django's RemoteUserMiddleware: the user comes from a header, not a session cookie."""
    remote = "django.contrib.auth.middleware.RemoteUserMiddleware"
    settings.MIDDLEWARE = [*settings.MIDDLEWARE[:2], remote, *settings.MIDDLEWARE[2:]]
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.RemoteUserBackend"]
    response = Client().get("/block/", REMOTE_USER="alice", HTTP_USER_AGENT=BROWSER)
    assert names(online_now.online_users()) == ["alice"] and online_now.guest_count() == 0
    assert "<bdi>alice</bdi>" in response.content.decode()


def test_a_block_in_an_async_view_never_reads_redis_on_the_event_loop(
    redis_db: redis.Redis, settings: Any, monkeypatch: pytest.MonkeyPatch, kept_block_reads: Any
) -> None:
    """The newcomer's page reads in the middleware's thread and shows them; a throttled
    page shows the kept read, and one that is due is refreshed in a thread."""
    kept_block_reads(1)
    on_the_loop: list[bool] = []
    read = reading.read

    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
            on_the_loop.append(True)
        except RuntimeError:
            on_the_loop.append(False)
        return read(*args, **kwargs)

    monkeypatch.setattr(reading, "read", watched)
    client = BrowserAsyncClient()
    with time_machine.travel(NOW, tick=False) as traveller:
        first = async_get(client, "/async-block/", REMOTE_ADDR="203.0.113.7")
        assert "1 user online: 0 members, 1 guest" in first.content.decode()
        client.cookies["online"] = first.cookies["online"].value
        traveller.shift(5)  # the kept read is due
        async_get(client, "/async-block/", REMOTE_ADDR="203.0.113.7")
    assert on_the_loop and not any(on_the_loop)


def test_a_tag_rendered_without_the_middleware_writes_nothing(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    request = RequestFactory().get("/", HTTP_USER_AGENT=BROWSER, REMOTE_ADDR="203.0.113.7")
    html = (
        engines["django"].from_string("{% load whos_online %}{% whos_online %}").render({}, request)
    )
    assert "0 users online" in html
    assert round_trips.records == 0 and online_now.guest_count() == 0
