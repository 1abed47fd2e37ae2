"""whos_online's own client: the cache's Redis, our timeouts."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django_redis import get_redis_connection
from redis.sentinel import Sentinel, SentinelConnectionPool

from tests.conftest import django_redis_cache
from whos_online.connection import _with_timeout, get_client


@pytest.mark.parametrize("options", [{}, {"SOCKET_TIMEOUT": 30, "SOCKET_CONNECT_TIMEOUT": 30}])
def test_our_timeouts_apply_whatever_the_cache_options(
    settings: Any, options: dict[str, Any]
) -> None:
    settings.CACHES = {
        "default": django_redis_cache("redis://:secret@127.0.0.1:6390/7", **options)
    }
    settings.WHOS_ONLINE_SOCKET_TIMEOUT = 0.3
    kwargs = get_client().connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 0.3
    # Everything else comes from the cache alias: no second connection config.
    assert (kwargs["host"], kwargs["port"], kwargs["db"], kwargs["password"]) == (
        "127.0.0.1",
        6390,
        7,
        "secret",
    )


def test_the_alias_setting_picks_the_cache(settings: Any) -> None:
    settings.CACHES = {
        "default": django_redis_cache("redis://127.0.0.1:6390/1"),
        "presence": django_redis_cache("redis://127.0.0.1:6390/2"),
    }
    settings.WHOS_ONLINE_CACHE_ALIAS = "presence"
    assert get_client().connection_pool.connection_kwargs["db"] == 2


def test_one_client_per_pool_and_timeout(settings: Any) -> None:
    settings.CACHES = {"default": django_redis_cache("redis://127.0.0.1:6390/3")}
    assert get_client() is get_client()
    settings.WHOS_ONLINE_SOCKET_TIMEOUT = 0.5
    assert get_client().connection_pool.connection_kwargs["socket_timeout"] == 0.5


def test_the_cache_pool_itself_is_left_alone(settings: Any) -> None:
    settings.CACHES = {"default": django_redis_cache("redis://127.0.0.1:6390/4")}
    ours = get_client()
    theirs = get_redis_connection("default")
    assert ours.connection_pool is not theirs.connection_pool
    assert theirs.connection_pool.connection_kwargs.get("socket_timeout") is None


def test_a_sentinel_pool_is_used_as_it_is() -> None:
    sentinel = Sentinel([("127.0.0.1", 26390)])
    base = redis.Redis(connection_pool=SentinelConnectionPool("mymaster", sentinel))
    assert _with_timeout(base, 0.25) is base
