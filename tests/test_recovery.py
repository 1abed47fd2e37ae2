"""After Redis loses its data nothing errors, and each visitor is counted again as
their "online" cookie expires; what Redis kept (the peak, the history) is all there is.

A ``FLUSHDB``, a ``cache.clear()`` or a restart without persistence empties
Redis while visitors keep their cookies. Here the loss is this test's own keys
deleted on the shared Redis (never flushed), or a restart of a server of the
test's own. Nothing in the app remembers the loss: no key dates the data, no
cookie is checked against it, no peak is written back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.test import Client

from tests import online_now
from tests.conftest import NOW, BrowserClient, django_redis_cache, require
from tests.redis_server import RedisServer
from whos_online import presence
from whos_online.conf import conf

pytestmark = pytest.mark.django_db


@pytest.fixture
def traveller() -> Iterator[Any]:
    with time_machine.travel(NOW, tick=False) as travelling:
        yield travelling


def browsing() -> list[Client]:
    """Two members and three guests, each recorded once and holding an "online" cookie."""
    visitors = []
    for name in ("alice", "bob"):
        member = BrowserClient()
        member.force_login(User.objects.create_user(name))
        visitors.append(member)
    visitors += [BrowserClient(REMOTE_ADDR=f"203.0.113.{n}") for n in range(3)]
    for visitor in visitors:
        assert "online" in visitor.get("/").cookies
    assert (online_now.user_count(), online_now.guest_count()) == (2, 3)
    return visitors


def block(visitor: Client) -> str:
    response = visitor.get("/block/")
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


def counted_again_as_cookies_expire(visitors: list[Client], traveller: Any) -> None:
    """While their cookies stand, pages show the emptied data without an error; once
    they expire, each visitor's next page counts them again."""
    traveller.shift(1)
    for visitor in visitors:
        assert "0 users online" in block(visitor)  # their cookie holds off a record
    traveller.shift(conf.cookie_age)
    for visitor in visitors:
        block(visitor)
    assert (online_now.user_count(), online_now.guest_count()) == (2, 3)


def test_after_a_flush_visitors_are_counted_again_as_their_cookies_expire(
    redis_db: redis.Redis, traveller: Any, settings: Any
) -> None:
    visitors = browsing()
    redis_db.delete(*redis_db.scan_iter(match=f"{settings.WHOS_ONLINE_KEY_PREFIX}:*"))
    counted_again_as_cookies_expire(visitors, traveller)


def test_a_newcomer_after_a_flush_is_counted_at_once(
    redis_db: redis.Redis, traveller: Any, settings: Any
) -> None:
    browsing()
    redis_db.delete(*redis_db.scan_iter(match=f"{settings.WHOS_ONLINE_KEY_PREFIX}:*"))
    traveller.shift(1)
    assert "1 user online: 0 members, 1 guest" in block(BrowserClient(REMOTE_ADDR="198.51.100.9"))


def test_the_peak_is_what_redis_kept(redis_db: redis.Redis, traveller: Any) -> None:
    browsing()
    presence.prune()  # the peak: 5
    peak = conf.keys().peak.encode()
    redis_db.delete(*(k for k in redis_db.scan_iter(match=f"{conf.key_prefix}:*") if k != peak))
    assert presence.peak() is not None and presence.peak().count == 5  # type: ignore[union-attr]
    redis_db.delete(conf.keys().peak)
    traveller.shift(1)
    presence.record_guest("198.51.100.9")
    assert presence.peak() is None and presence.summary().peak.count == 1  # type: ignore[union-attr]


@pytest.fixture
def own_redis(tmp_path: Path, settings: Any) -> Iterator[RedisServer]:
    """A Redis of this test's own (no persistence), the cache alias pointed at it."""
    require("redis-server")
    with RedisServer(directory=tmp_path / "redis") as server:
        settings.CACHES = {"default": django_redis_cache(server.url)}
        yield server


def test_after_a_restart_visitors_are_counted_again_as_their_cookies_expire(
    own_redis: RedisServer, traveller: Any
) -> None:
    visitors = browsing()
    own_redis.restart()  # empty: it keeps nothing on disk
    with own_redis.client() as direct:
        assert direct.dbsize() == 0
    counted_again_as_cookies_expire(visitors, traveller)
