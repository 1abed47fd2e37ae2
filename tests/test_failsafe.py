"""Redis failures never break the site: fail open, log once per outage, back off."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import User

from tests.conftest import FAKE_CACHE, NOW, BrowserClient, django_redis_cache
from whos_online import presence

pytestmark = pytest.mark.django_db


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every attempt to open a Redis connection."""
    attempts: list[Any] = []
    original = redis.connection.AbstractConnection.connect

    def spy(self: Any) -> Any:
        attempts.append(self)
        return original(self)

    monkeypatch.setattr(redis.connection.AbstractConnection, "connect", spy)
    return attempts


def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.name.startswith("whos_online") and r.levelno >= logging.ERROR
    ]


def test_dead_redis_pages_render_and_the_error_is_logged_once(
    dead_redis: None, caplog: pytest.LogCaptureFixture
) -> None:
    client = BrowserClient()
    for _ in range(5):
        response = client.get("/block/")
        assert response.status_code == 200
        assert "unavailable" in response.content.decode()
        assert "online" not in response.cookies  # so the visit is retried later
    [record] = errors(caplog)
    assert isinstance(record.exc_info[1], redis.ConnectionError)  # type: ignore[index]


def test_back_off_skips_redis_then_retries_and_recovers(
    dead_redis: None,
    settings: Any,
    connects: list[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings.WHOS_ONLINE_BACKOFF = 30
    with time_machine.travel(NOW, tick=False) as traveller:
        BrowserClient().get("/")
        assert len(connects) == 1
        for _ in range(10):
            BrowserClient().get("/block/")
        assert len(connects) == 1  # N requests do not cost N timeouts
        traveller.shift(31)
        BrowserClient().get("/")
        assert len(connects) == 2  # tried again, still down: no second log record
        assert len(errors(caplog)) == 1

        settings.CACHES = {"default": FAKE_CACHE}  # Redis is back
        BrowserClient().get("/")
        assert presence.guest_count() == 0  # still inside the new back-off
        traveller.shift(31)
        response = BrowserClient().get("/", REMOTE_ADDR="203.0.113.9")
        assert "online" in response.cookies
        assert presence.guest_count() == 1
        assert any("answers again" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "cache_options", [{}, {"SOCKET_TIMEOUT": 30, "SOCKET_CONNECT_TIMEOUT": 30}]
)
def test_a_hung_redis_costs_one_short_timeout_whatever_the_cache_options(
    settings: Any,
    black_hole: int,
    cache_options: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings.CACHES = {
        "default": django_redis_cache(f"redis://127.0.0.1:{black_hole}/0", **cache_options)
    }
    settings.WHOS_ONLINE_SOCKET_TIMEOUT = 0.2
    started = time.monotonic()
    assert BrowserClient().get("/block/").status_code == 200
    assert BrowserClient().get("/block/").status_code == 200
    # Without our own timeout this would hang for 30 s (or forever).
    assert time.monotonic() - started < 5
    [record] = errors(caplog)
    assert isinstance(record.exc_info[1], redis.TimeoutError)  # type: ignore[index]


def test_errors_other_than_connection_errors_fail_open_too(
    redis_db: redis.Redis, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    redis_db.set(f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests", "not a sorted set")
    response = BrowserClient().get("/")
    assert response.status_code == 200 and "online" not in response.cookies
    [record] = errors(caplog)
    assert isinstance(record.exc_info[1], redis.ResponseError)  # type: ignore[index]


def test_login_and_logout_work_while_redis_is_down(dead_redis: None) -> None:
    User.objects.create_user("alice", password="pw")
    client = BrowserClient()
    assert client.login(username="alice", password="pw")  # user_logged_in fails open
    assert client.get("/").status_code == 200
    client.logout()  # user_logged_out fails open
    assert client.get("/").status_code == 200
