"""Hostile requests over real HTTP, against gunicorn (WSGI) and uvicorn (ASGI).

What depends on the server: the raw forwarding headers as the proxy wrote them
(ports, bracketed IPv6, RFC 7239, 4 KB of hops), and cookie headers of 9 KB
(each server has its own header limits: whatever it answers, never a 5xx and
never a false guest). The site is tests/load_site behind one proxy, started as
tests/test_load.py starts it.
"""

from __future__ import annotations

import http.client
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import REAL_CACHE
from tests.test_load import SITE_SECRET_KEY, serving, site_env  # noqa: F401 (a fixture)
from whos_online.store.addresses import guest_id
from whos_online.store.connection import get_client

pytestmark = pytest.mark.load


def request(url: str, path: str = "/", method: str = "GET", **headers: str) -> Any:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in {"User-Agent": "Mozilla/5.0 (X11) Firefox/140.0", **headers}.items():
            connection.putheader(name.replace("_", "-"), value)
        connection.endheaders()
        response = connection.getresponse()
        response.read()
        return response
    finally:
        connection.close()


@pytest.fixture
def prefix(settings: Any) -> Iterator[str]:
    prefix = f"whos_online_hostile:{uuid.uuid4().hex}"
    settings.CACHES = {"default": REAL_CACHE}
    settings.WHOS_ONLINE_KEY_PREFIX = prefix
    settings.SECRET_KEY = SITE_SECRET_KEY  # so guest_id() here matches the site's
    yield prefix
    client = get_client()
    own = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    if own:
        client.delete(*own)


def guests(prefix: str) -> set[str]:
    return {m.decode() for m in get_client().zrange(f"{prefix}:guests", 0, -1)}


X_FORWARDED_FOR = [
    ("198.51.100.3:51234", "198.51.100.3"),
    ("[2001:db8::3]:443", "2001:db8::3"),
    ("1.1.1.1, 198.51.100.4", "198.51.100.4"),
    ("9.9.9.9, " * 400 + "198.51.100.5", "198.51.100.5"),  # about 4 KB
    ("198.51.100.6, junk", None),
]
FORWARDED = [
    ("for=198.51.100.3:51234", "198.51.100.3"),
    ('for=1.1.1.1, for="[2001:db8::3]:443";proto=https', "2001:db8::3"),
    ('for="1.1.1.1, for=198.51.100.5', "198.51.100.5"),  # an unclosed quote on the left
    ("for=1.1.1.1, for=unknown", None),
]


@pytest.mark.parametrize("server", ["gunicorn", "uvicorn"])
@pytest.mark.parametrize(
    "header, cases", [("X-Forwarded-For", X_FORWARDED_FOR), ("Forwarded", FORWARDED)]
)
def test_forwarding_headers_as_proxies_write_them(
    server: str,
    header: str,
    cases: list[tuple[str, str | None]],
    site_env: dict[str, str],  # noqa: F811
    prefix: str,
    tmp_path: Path,
) -> None:
    env = {**site_env, "LOAD_SITE_KEY_PREFIX": prefix, "LOAD_SITE_PROXY_HEADER": header}
    with serving(server, env, tmp_path / "server.log") as url:
        for value, expected in cases:
            response = request(url, **{header: value})
            assert response.status == 200, (value, response.status)
            set_cookie = response.getheader("Set-Cookie") or ""
            assert ("online=" in set_cookie) is (expected is not None), value
        # Not visits, over the wire: an OPTIONS and a 404 from a fresh address.
        fresh = {header: "for=198.51.100.9" if header == "Forwarded" else "198.51.100.9"}
        assert request(url, "/", "OPTIONS", **fresh).status < 500
        assert request(url, "/no-such-page/", **fresh).status == 404
    expected_guests = {guest_id(address) for _, address in cases if address}
    assert guests(prefix) == expected_guests


@pytest.mark.parametrize("server", ["gunicorn", "uvicorn"])
def test_huge_and_junk_cookie_headers(
    server: str,
    site_env: dict[str, str],  # noqa: F811
    prefix: str,
    tmp_path: Path,
) -> None:
    env = {**site_env, "LOAD_SITE_KEY_PREFIX": prefix}
    address = {"X-Forwarded-For": "198.51.100.7"}
    with serving(server, env, tmp_path / "server.log") as url:
        first = request(url, **address)
        online = first.getheader("Set-Cookie").split(";")[0]
        assert online.startswith("online=")
        throttled = request(url, Cookie=online, **address)
        assert throttled.status == 200 and throttled.getheader("Set-Cookie") is None
        statuses = []
        for cookie in [
            f"{online}; junk={'x' * 9000}",  # a 9 KB cookie header
            "online=" + "y" * 9000,
            f"{online[:-1]}A",  # tampered
            "online=\x7f\xff; sessionid=\x00",
        ]:
            response = request(url, Cookie=cookie, **{"X-Forwarded-For": "198.51.100.8"})
            statuses.append(response.status)
            assert response.status < 500, (cookie[:40], response.status)
    # The server may refuse an oversized header (400/431); what it passes on
    # is judged by the cookie, and nothing but the two addresses is a guest.
    assert guests(prefix) <= {guest_id("198.51.100.7"), guest_id("198.51.100.8")}
    assert guest_id("198.51.100.7") in guests(prefix)
    print(f"\n{server}: cookie statuses {statuses}")
