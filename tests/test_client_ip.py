"""Which address a guest has: REMOTE_ADDR, or the proxy header as far as the site trusts it.

Every case goes through the test client and reads what Redis holds: the one
guest expected (by its id), or no guest and no "online" cookie, so a later
request retries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import redis

from tests.conftest import BrowserAsyncClient, BrowserClient
from tests.test_middleware import async_get
from whos_online.store.addresses import guest_id
from whos_online.visitors import client_ip

pytestmark = pytest.mark.django_db

PROXY = "10.0.0.1"  # the reverse proxy the app sees as REMOTE_ADDR
FLEET = ["10.0.0.0/8", "fd00::/8"]


def guest_of(redis_db: redis.Redis, settings: Any) -> set[str]:
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests"
    return {m.decode() for m in redis_db.zrange(key, 0, -1)}


CASES = [
    # (settings, META, the guest's address or None)
    ({}, {"REMOTE_ADDR": "203.0.113.7"}, "203.0.113.7"),
    ({}, {"REMOTE_ADDR": "203.0.113.7", "HTTP_X_FORWARDED_FOR": "198.51.100.1"}, "203.0.113.7"),
    ({}, {"REMOTE_ADDR": "203.0.113.7:5000"}, "203.0.113.7"),
    ({}, {"REMOTE_ADDR": "[2001:db8::7]:443"}, "2001:db8::7"),
    ({}, {"REMOTE_ADDR": "junk"}, None),
    ({}, {"REMOTE_ADDR": ""}, None),
    ({}, {"REMOTE_ADDR": "203.0.113.7:99999"}, None),
    ({}, {"REMOTE_ADDR": "[2001:db8::7"}, None),
    ({}, {"REMOTE_ADDR": "203.0.113.7:65535"}, "203.0.113.7"),
    ({}, {"REMOTE_ADDR": "203.0.113.7:65536"}, None),
    ({}, {"REMOTE_ADDR": "203.0.113.7:000080"}, None),  # no port has six digits
    ({}, {"REMOTE_ADDR": "[2001:db8::7]:99999"}, None),
    ({}, {"REMOTE_ADDR": "[2001:db8::7]x443"}, None),
    # One proxy that adds ports, as some cloud load balancers write the header.
    ({"P": 1}, {"HTTP_X_FORWARDED_FOR": "198.51.100.3:51234"}, "198.51.100.3"),
    ({"P": 1}, {"HTTP_X_FORWARDED_FOR": "[2001:db8::3]:443"}, "2001:db8::3"),
    ({"P": 1}, {"HTTP_X_FORWARDED_FOR": "2001:db8::3"}, "2001:db8::3"),
    ({"P": 1}, {"HTTP_X_FORWARDED_FOR": "1.1.1.1, 198.51.100.3"}, "198.51.100.3"),
    ({"P": 1}, {"HTTP_X_FORWARDED_FOR": "198.51.100.3, junk"}, None),
    ({"P": 1}, {}, None),
    ({"P": 2}, {"HTTP_X_FORWARDED_FOR": "198.51.100.3"}, None),
    ({"P": 2}, {"HTTP_X_FORWARDED_FOR": "1.1.1.1,198.51.100.3:80, 10.0.0.2"}, "198.51.100.3"),
    # RFC 7239, when the site says its proxies write it.
    ({"P": 1, "H": "Forwarded"}, {"HTTP_FORWARDED": "for=198.51.100.3"}, "198.51.100.3"),
    (
        {"P": 1, "H": "Forwarded"},
        {"HTTP_FORWARDED": 'for=1.1.1.1, For="[2001:db8::3]:443";proto=https;by=10.0.0.1'},
        "2001:db8::3",
    ),
    ({"P": 1, "H": "Forwarded"}, {"HTTP_FORWARDED": "for=1.1.1.1, for=unknown"}, None),
    ({"P": 1, "H": "Forwarded"}, {"HTTP_FORWARDED": "for=1.1.1.1, proto=https"}, None),
    # Opted in to Forwarded: an X-Forwarded-For the client wrote is not read.
    ({"P": 1, "H": "Forwarded"}, {"HTTP_X_FORWARDED_FOR": "198.51.100.3"}, None),
    ({"P": 1}, {"HTTP_FORWARDED": "for=198.51.100.3"}, None),
    # Trusted proxies: the right-most address that is not one of them.
    ({"T": FLEET}, {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "198.51.100.3"}, "198.51.100.3"),
    (
        {"T": FLEET},
        {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "1.1.1.1, 198.51.100.3:80, fd00::2"},
        "198.51.100.3",
    ),
    (
        {"T": FLEET},  # a client reaching the app directly cannot be believed
        {"REMOTE_ADDR": "203.0.113.66", "HTTP_X_FORWARDED_FOR": "198.51.100.9, 10.0.0.2"},
        "203.0.113.66",
    ),
    ({"T": FLEET}, {"REMOTE_ADDR": PROXY}, PROXY),  # the proxy's own health check
    (
        {"T": FLEET},
        {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "10.9.9.9, 10.0.0.2"},
        "10.9.9.9",
    ),
    ({"T": FLEET}, {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "1.1.1.1, junk"}, None),
    (
        {"T": FLEET, "H": "Forwarded"},  # an unclosed quote cannot swallow our proxy's entry
        {"REMOTE_ADDR": PROXY, "HTTP_FORWARDED": 'for="1.1.1.1, for=198.51.100.3'},
        "198.51.100.3",
    ),
    ({"T": ["10.0.0.0/33"]}, {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "1.1.1.1"}, None),
    # 4 KB of header: the answer is read from the right, the rest costs a split.
    (
        {"T": FLEET},
        {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "1.2.3.4, " * 500 + "198.51.100.3"},
        "198.51.100.3",
    ),
    ({"P": 1}, {"HTTP_X_FORWARDED_FOR": "x" * 4096 + ", 198.51.100.3"}, "198.51.100.3"),
    ({"P": 1}, {"HTTP_X_FORWARDED_FOR": "9" * 4096}, None),
]


def configure(settings: Any, setup: dict[str, Any]) -> None:
    """P: a number of proxies, T: their networks, H: the header they are given under."""
    proxies = setup.get("T", setup.get("P", 0))
    settings.WHOS_ONLINE_PROXIES = {setup["H"]: proxies} if "H" in setup else proxies


@pytest.mark.parametrize("setup, meta, expected", CASES)
def test_the_guest_is_the_address_the_site_trusts(
    redis_db: redis.Redis,
    settings: Any,
    setup: dict[str, Any],
    meta: dict[str, str],
    expected: str | None,
) -> None:
    configure(settings, setup)
    response = BrowserClient().get("/", **meta)  # type: ignore[arg-type]
    assert response.status_code == 200
    if expected is None:
        assert guest_of(redis_db, settings) == set()
        assert "online" not in response.cookies  # so a later request retries
    else:
        assert guest_of(redis_db, settings) == {guest_id(expected)}
        assert "online" in response.cookies


@pytest.mark.parametrize("setup, meta, expected", CASES[13:21])
def test_the_async_handler_agrees(
    redis_db: redis.Redis,
    settings: Any,
    setup: dict[str, Any],
    meta: dict[str, str],
    expected: str | None,
) -> None:
    configure(settings, setup)
    # The ASGI handler builds META from the headers the server received.
    headers = {name[5:].replace("_", "-").title(): value for name, value in meta.items()}
    response = async_get(BrowserAsyncClient(), "/", headers=headers)
    assert response.status_code == 200
    guests = set() if expected is None else {guest_id(expected)}
    assert guest_of(redis_db, settings) == guests
    assert ("online" in response.cookies) is (expected is not None)


def test_a_request_after_an_unusable_address_is_recorded(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_PROXIES = 1
    client = BrowserClient()
    client.get("/", HTTP_X_FORWARDED_FOR="junk")
    client.get("/", HTTP_X_FORWARDED_FOR="198.51.100.3")
    assert guest_of(redis_db, settings) == {guest_id("198.51.100.3")}


BEHIND_A_PROXY = {"REMOTE_ADDR": "10.0.0.5", "HTTP_X_FORWARDED_FOR": "203.0.113.7"}
UNKNOWN_PROXY = (
    "A guest came from 10.0.0.5 with a forwarding header (X-Forwarded-For), but "
    "WHOS_ONLINE_PROXIES is not set: behind a reverse proxy every guest has the proxy's "
    "address, so all guests count as one. Set it to your proxies' count or networks."
)


@pytest.fixture
def proxy_warnings(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> Callable[[], list[tuple[int, str]]]:
    """The process's one warning not yet given; then the client_ip log, as (level, message)."""
    monkeypatch.setattr(client_ip, "_told_of_proxy", False)

    def records() -> list[tuple[int, str]]:
        return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == client_ip.__name__]

    return records


def test_guests_through_an_unknown_proxy_are_warned_about_once(
    redis_db: redis.Redis, settings: Any, proxy_warnings: Callable[[], list[tuple[int, str]]]
) -> None:
    for n in range(3):
        meta = {**BEHIND_A_PROXY, "HTTP_X_FORWARDED_FOR": f"203.0.113.{n}"}
        assert BrowserClient().get("/", **meta).status_code == 200  # type: ignore[arg-type]
    assert proxy_warnings() == [(logging.WARNING, UNKNOWN_PROXY)]
    assert guest_of(redis_db, settings) == {guest_id("10.0.0.5")}  # the harm


@pytest.mark.parametrize(
    ("setup", "meta"),
    [
        ({}, {**BEHIND_A_PROXY, "REMOTE_ADDR": "93.184.216.34"}),  # a public address
        ({}, {"REMOTE_ADDR": "10.0.0.5"}),  # no forwarding header
        ({"H": "Forwarded"}, BEHIND_A_PROXY),  # not the header the site names
        ({"P": 1}, BEHIND_A_PROXY),
        ({"T": ["10.0.0.0/8"]}, BEHIND_A_PROXY),
    ],
)
def test_no_proxy_warning_where_the_settings_are_right(
    redis_db: redis.Redis,
    settings: Any,
    proxy_warnings: Callable[[], list[tuple[int, str]]],
    setup: dict[str, Any],
    meta: dict[str, str],
) -> None:
    configure(settings, setup)
    assert BrowserClient().get("/", **meta).status_code == 200  # type: ignore[arg-type]
    assert guest_of(redis_db, settings) != set()  # recorded: the warning had its chance
    assert proxy_warnings() == []


def test_the_forwarded_header_is_warned_about_where_the_site_names_it(
    redis_db: redis.Redis, settings: Any, proxy_warnings: Callable[[], list[tuple[int, str]]]
) -> None:
    settings.WHOS_ONLINE_PROXIES = {"Forwarded": 0}
    BrowserClient().get("/", REMOTE_ADDR="127.0.0.1", HTTP_FORWARDED="for=203.0.113.7")
    [(level, message)] = proxy_warnings()
    assert level == logging.WARNING
    assert message.startswith("A guest came from 127.0.0.1 with a forwarding header (Forwarded)")
