"""The "online" cookie proves when it was issued and to whom: anything else records again.

Each case sends what an attacker (or a stale browser) would send and counts
the recording round trips: 0 means the cookie was believed, 1 that the visitor
was recorded (and got a fresh cookie). Never an error.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import User

from tests import online_now
from tests.conftest import NOW, BrowserAsyncClient, BrowserClient
from tests.test_middleware import async_get
from whos_online.conf import Settings

pytestmark = pytest.mark.django_db

GUEST = "203.0.113.7"
OTHER_GUEST = "198.51.100.9"


def first_cookie(client: Any, **meta: Any) -> str:
    response = client.get("/", **meta)
    return str(response.cookies["online"].value)


def test_the_same_guest_is_believed_with_no_redis_call_and_no_query(
    redis_db: redis.Redis, round_trips: Any, django_assert_num_queries: Any
) -> None:
    client = BrowserClient()
    first_cookie(client, REMOTE_ADDR=GUEST)
    round_trips.clear()
    with django_assert_num_queries(0):
        response = client.get("/", REMOTE_ADDR=GUEST)
    assert round_trips.count == 0 and "online" not in response.cookies


def test_a_cookie_copied_from_another_guest_records_the_copier(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    value = first_cookie(BrowserClient(), REMOTE_ADDR=GUEST)
    copier = BrowserClient()
    copier.cookies["online"] = value
    round_trips.clear()
    response = copier.get("/", REMOTE_ADDR=OTHER_GUEST)
    assert round_trips.records == 1
    assert online_now.guest_count() == 2
    assert response.cookies["online"].value != value


def test_every_guest_gets_a_value_of_their_own(redis_db: redis.Redis) -> None:
    with time_machine.travel(NOW, tick=False):
        values = {first_cookie(BrowserClient(), REMOTE_ADDR=f"203.0.113.{i}") for i in range(5)}
    assert len(values) == 5


def test_the_value_shows_neither_the_address_nor_the_session(
    redis_db: redis.Redis, alice: User
) -> None:
    assert GUEST not in first_cookie(BrowserClient(), REMOTE_ADDR=GUEST)
    member = BrowserClient()
    member.force_login(alice)
    value = first_cookie(member)
    assert member.cookies["sessionid"].value not in value


def test_an_ipv6_guest_rotating_inside_its_64_is_recorded_again_and_counted_once(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    client = BrowserClient()
    first_cookie(client, REMOTE_ADDR="2001:db8:1:2::aaaa")
    round_trips.clear()
    client.get("/", REMOTE_ADDR="2001:db8:1:2:ffff::1")  # another address: a record
    assert round_trips.records == 1 and online_now.guest_count() == 1  # the same guest
    client.get("/", REMOTE_ADDR="2001:db8:1:3::1")  # another network: another guest
    assert round_trips.records == 2 and online_now.guest_count() == 2


@pytest.mark.parametrize(("prefix", "guests"), [(48, 1), (128, 2)])
def test_a_guest_is_counted_by_the_network_the_site_counts_by(
    redis_db: redis.Redis, settings: Any, prefix: int, guests: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Settings, "ipv6_prefix", prefix)
    client = BrowserClient()
    first_cookie(client, REMOTE_ADDR="2001:db8:1:2::aaaa")
    client.get("/", REMOTE_ADDR="2001:db8:1:3::1")  # the same /48, another /64
    assert online_now.guest_count() == guests


@pytest.mark.parametrize("age", [300, 42])
def test_an_expired_cookie_records_again_even_if_the_browser_keeps_sending_it(
    redis_db: redis.Redis, round_trips: Any, settings: Any, age: int
) -> None:
    # The test client never drops a cookie at its max-age: like a client that
    # replays the value it once got.
    settings.WHOS_ONLINE_MAX_AGE = 2 * age  # the cookie lasts half the window
    client = BrowserClient()
    with time_machine.travel(NOW, tick=False) as traveller:
        value = first_cookie(client, REMOTE_ADDR=GUEST)
        traveller.shift(age - 1)
        client.get("/", REMOTE_ADDR=GUEST)
        assert round_trips.records == 1
        traveller.shift(1)
        client.cookies["online"] = value  # replayed as first issued
        response = client.get("/", REMOTE_ADDR=GUEST)
        assert round_trips.records == 2
        assert response.cookies["online"].value != value


def test_a_cookie_from_the_future_counts_only_within_the_cookie_age(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    # Issued by a server whose clock runs ahead.
    client = BrowserClient()
    with time_machine.travel(NOW + timedelta(seconds=299), tick=False):
        first_cookie(client, REMOTE_ADDR=GUEST)
    with time_machine.travel(NOW, tick=False):
        client.get("/", REMOTE_ADDR=GUEST)
        assert round_trips.records == 1
    client.cookies.clear()
    with time_machine.travel(NOW + timedelta(seconds=300), tick=False):
        value = first_cookie(client, REMOTE_ADDR=GUEST)
    with time_machine.travel(NOW, tick=False):
        client.cookies["online"] = value
        client.get("/", REMOTE_ADDR=GUEST)
        assert round_trips.records == 3


def tampered(value: str) -> list[str]:
    issued, _, signature = value.partition(":")
    flipped = chr(ord(signature[-1]) ^ 1)
    return [
        f"{issued}:{signature[:-1]}{flipped}",  # the signature changed
        f"zzzzzz:{signature}",  # a later issue time
        issued,  # no signature
        f"{issued}:",
        "",
        ":",
        "forged",
        "x" * 4000,
        "\xe9\xff\x7f",  # bytes a real server hands over as latin-1
    ]


def test_a_tampered_or_garbage_cookie_records_and_is_no_error(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    value = first_cookie(BrowserClient(), REMOTE_ADDR=GUEST)
    for bad in tampered(value):
        client = BrowserClient()
        client.cookies["online"] = bad
        round_trips.clear()
        response = client.get("/", REMOTE_ADDR=GUEST)
        assert response.status_code == 200, bad
        assert round_trips.records == 1, bad
        assert response.cookies["online"].value != bad, bad


def test_the_async_handler_checks_the_cookie_the_same_way(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    client = BrowserAsyncClient()
    value = async_get(client, "/").cookies["online"].value
    client.cookies["online"] = value
    round_trips.clear()
    assert "online" not in async_get(client, "/").cookies
    assert round_trips.count == 0
    for bad in tampered(value)[:3]:
        client.cookies["online"] = bad
        assert "online" in async_get(client, "/").cookies
    assert round_trips.records == 3


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password="pw")


def test_a_member_cookie_is_bound_to_the_session(
    redis_db: redis.Redis, alice: User, round_trips: Any
) -> None:
    client = BrowserClient()
    client.force_login(alice)
    value = first_cookie(client)
    thief = BrowserClient()
    thief.force_login(alice)  # another session of the same member
    thief.cookies["online"] = value
    round_trips.clear()
    thief.get("/")
    assert round_trips.records == 1


def test_rotating_the_secret_key_keeps_cookies_signed_with_a_fallback(
    redis_db: redis.Redis, round_trips: Any, settings: Any
) -> None:
    client = BrowserClient()
    first_cookie(client, REMOTE_ADDR=GUEST)
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "a-new-secret-key-for-whos-online-tests"
    settings.SECRET_KEY_FALLBACKS = [old]
    round_trips.clear()
    client.get("/", REMOTE_ADDR=GUEST)
    assert round_trips.count == 0
    settings.SECRET_KEY_FALLBACKS = []
    client.get("/", REMOTE_ADDR=GUEST)
    assert round_trips.records == 1


def test_a_guest_behind_a_long_forwarding_header_is_throttled_too(
    redis_db: redis.Redis, round_trips: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_PROXIES = 1
    client = BrowserClient()
    header = "198.51.100.1, " * 300 + GUEST  # 4 KB: checked without the per-value cache
    first_cookie(client, HTTP_X_FORWARDED_FOR=header)
    round_trips.clear()
    client.get("/", HTTP_X_FORWARDED_FOR=header)
    client.get("/", HTTP_X_FORWARDED_FOR=GUEST)
    assert round_trips.count == 0
    client.get("/", HTTP_X_FORWARDED_FOR=f"{GUEST}, {OTHER_GUEST}")
    assert round_trips.records == 1


def test_a_guest_behind_a_forwarded_header_is_throttled_by_it(
    redis_db: redis.Redis, round_trips: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_PROXIES = {"Forwarded": 1}
    client = BrowserClient()
    first_cookie(client, HTTP_FORWARDED=f"for={GUEST}")
    round_trips.clear()
    client.get("/", HTTP_FORWARDED=f"for={GUEST}")
    assert round_trips.count == 0
    client.get("/", HTTP_FORWARDED=f"for={OTHER_GUEST}")  # another guest behind the proxy
    assert round_trips.records == 1 and online_now.guest_count() == 2
