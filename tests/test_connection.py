"""whos_online's own client: the cache's Redis, our timeouts."""

from __future__ import annotations

import sys
from typing import Any

import fakeredis
import pytest
import redis
from django_redis import get_redis_connection
from redis.sentinel import SentinelConnectionPool

from tests.conftest import django_redis_cache
from whos_online import presence
from whos_online.store.connection import _one_round_trip, get_client


# Each case a URL (here a database) of its own: django-redis keeps one pool per URL.
@pytest.mark.parametrize(
    ("db", "options"),
    [
        (7, {}),
        (8, {"SOCKET_TIMEOUT": 30, "SOCKET_CONNECT_TIMEOUT": 30}),
        (9, {"CONNECTION_POOL_KWARGS": {"socket_timeout": 30, "socket_connect_timeout": 30}}),
    ],
)
def test_our_timeouts_apply_whatever_the_cache_options(
    settings: Any, db: int, options: dict[str, Any]
) -> None:
    location = f"redis://:secret@127.0.0.1:6390/{db}"
    settings.CACHES = {"default": django_redis_cache(location, **options)}
    settings.WHOS_ONLINE_SOCKET_TIMEOUT = 0.3
    kwargs = get_client().get_connection_kwargs()
    assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 0.3
    # Everything else comes from the cache alias: no second connection config.
    assert (kwargs["host"], kwargs["port"], kwargs["db"], kwargs["password"]) == (
        "127.0.0.1",
        6390,
        db,
        "secret",
    )


def test_the_alias_setting_picks_the_cache(settings: Any) -> None:
    settings.CACHES = {
        "default": django_redis_cache("redis://127.0.0.1:6390/1"),
        "presence": django_redis_cache("redis://127.0.0.1:6390/2"),
    }
    settings.WHOS_ONLINE_CACHE_ALIAS = "presence"
    assert get_client().get_connection_kwargs()["db"] == 2


@pytest.mark.parametrize(
    "location",
    ["redis://127.0.0.1:6390/10,redis://127.0.0.1:6391/10", ["redis://127.0.0.1:6390/11"]],
)
def test_the_first_server_of_a_list_is_ours_as_it_is_django_redis_s_writer(
    settings: Any, location: Any
) -> None:
    settings.CACHES = {"default": django_redis_cache(location)}
    assert get_client().get_connection_kwargs()["port"] == 6390


def test_one_client_per_pool_and_timeout(settings: Any) -> None:
    settings.CACHES = {"default": django_redis_cache("redis://127.0.0.1:6390/3")}
    client = get_client()
    assert get_client() is client
    settings.WHOS_ONLINE_KEY_PREFIX = "another"  # the same connections serve it
    assert get_client() is client
    settings.WHOS_ONLINE_SOCKET_TIMEOUT = 0.5
    assert get_client().get_connection_kwargs()["socket_timeout"] == 0.5


def test_the_cache_pool_itself_is_left_alone(settings: Any) -> None:
    settings.CACHES = {"default": django_redis_cache("redis://127.0.0.1:6390/4")}
    ours = get_client()
    theirs = get_redis_connection("default")
    assert ours.connection_pool is not theirs.connection_pool
    assert theirs.get_connection_kwargs().get("socket_timeout") is None


def test_a_blocking_pool_is_not_ours(settings: Any) -> None:
    """Waiting up to 20 s for a free connection would hold the request: ours raises instead."""
    settings.CACHES = {
        "default": django_redis_cache(
            "redis://127.0.0.1:6390/5",
            CONNECTION_POOL_CLASS="redis.BlockingConnectionPool",
            CONNECTION_POOL_KWARGS={"max_connections": 7},
        )
    }
    assert isinstance(get_redis_connection("default").connection_pool, redis.BlockingConnectionPool)
    pool = get_client().connection_pool
    assert type(pool) is redis.ConnectionPool and pool.max_connections == 7


def test_a_sentinel_cache_gets_a_sentinel_pool_with_our_timeouts(settings: Any) -> None:
    settings.WHOS_ONLINE_SOCKET_TIMEOUT = 0.25
    settings.DJANGO_REDIS_CONNECTION_FACTORY = "django_redis.pool.SentinelConnectionFactory"
    settings.CACHES = {
        "default": django_redis_cache(
            "redis://mymaster/0",
            CLIENT_CLASS="django_redis.client.SentinelClient",
            SENTINELS=[("127.0.0.1", 26390)],
            SOCKET_TIMEOUT=30,
        )
    }
    client = get_client()
    assert isinstance(client.connection_pool, SentinelConnectionPool)
    assert client.connection_pool.service_name == "mymaster"
    assert client.get_connection_kwargs()["socket_timeout"] == 0.25


def fakeredis_client() -> redis.Redis:
    """A WHOS_ONLINE_REDIS_CLIENT factory, as a Cluster site writes one for RedisCluster."""
    return fakeredis.FakeRedis(server=FACTORY_SERVER)


FACTORY_SERVER = fakeredis.FakeServer()


def test_a_client_factory_replaces_the_cache_alias(settings: Any, people: Any) -> None:
    settings.WHOS_ONLINE_REDIS_CLIENT = "tests.test_connection.fakeredis_client"
    settings.WHOS_ONLINE_KEY_PREFIX = "factory-test"
    (alice,) = people("alice")
    client = get_client()
    assert client is get_client()  # made once, not per call
    presence.record_user(alice)
    assert client.zrange("factory-test:users", 0, -1) == [str(alice.pk).encode()]
    assert fakeredis.FakeRedis(server=FACTORY_SERVER).exists("factory-test:users")
    client.delete("factory-test:users", "factory-test:cards")
    settings.WHOS_ONLINE_REDIS_CLIENT = None
    assert get_client() is not client


def test_a_new_connection_sends_only_what_the_server_needs_before_the_first_command(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    """No HELLO, CLIENT SETINFO or CLIENT MAINT_NOTIFICATIONS: each was a round trip.

    SELECT stays for a database other than 0 (the real run uses REDIS_URL's, 15).
    """
    redis_db.connection_pool.disconnect()  # the next command opens a new connection
    round_trips.clear()
    presence.last_seen(1)
    select = [["SELECT"]] if redis_db.get_connection_kwargs().get("db") else []
    assert round_trips.commands == [*select, ["ZMSCORE"] * 3]


@pytest.mark.skipif(redis.VERSION < (5,), reason="RESP3 came with redis-py 5")
def test_a_cache_that_asks_for_resp3_still_skips_the_optional_handshake(
    settings: Any, round_trips: Any
) -> None:
    cache = settings.CACHES["default"]
    # A URL of its own: django-redis keeps one pool per URL.
    settings.CACHES = {"default": {**cache, "LOCATION": cache["LOCATION"] + "?protocol=3"}}
    client = get_client()
    client.connection_pool.disconnect()
    round_trips.clear()
    presence.last_seen(1)
    select = [["SELECT"]] if client.get_connection_kwargs().get("db") else []
    assert round_trips.commands == [["HELLO"], *select, ["ZMSCORE"] * 3]


HANDSHAKES = [
    ((8, 1, 0), True, True, {"driver_info": None, "maint_notifications_config": ...}),
    (
        (7, 0, 0),
        False,
        True,
        {"lib_name": None, "lib_version": None, "maint_notifications_config": ...},
    ),
    ((5, 0, 0), False, False, {"lib_name": None, "lib_version": None}),
    ((4, 6, 0), False, False, {}),
]


# This redis-py plays itself and older ones: it cannot lend a release older than itself
# the options of a newer one (nox's oldest session runs on redis-py 4.6).
@pytest.mark.parametrize(
    ("version", "has_driver_info", "has_maint_notifications", "options"),
    [case for case in HANDSHAKES if case[0] <= redis.VERSION],
)
def test_each_redis_py_skips_what_handshake_it_has(
    monkeypatch: pytest.MonkeyPatch,
    version: tuple[int, ...],
    has_driver_info: bool,
    has_maint_notifications: bool,
    options: dict[str, Any],
) -> None:
    monkeypatch.setattr(redis, "VERSION", version)
    if not has_driver_info:
        monkeypatch.delattr(redis, "DriverInfo", raising=False)
    if not has_maint_notifications:
        monkeypatch.setitem(sys.modules, "redis.maint_notifications", None)  # ImportError
    found = _one_round_trip()
    if "maint_notifications_config" in found:
        assert not found["maint_notifications_config"].enabled
        found["maint_notifications_config"] = ...
    assert found == ({"protocol": 2, **options} if version >= (5,) else {})


def test_a_resp3_cache_gets_no_maintenance_notifications_on_our_connections(settings: Any) -> None:
    """With them on, each new connection would send CLIENT MAINT_NOTIFICATIONS first."""
    pytest.importorskip("redis.maint_notifications")  # redis-py 7+
    settings.CACHES = {"default": django_redis_cache("redis://127.0.0.1:6390/6?protocol=3")}
    assert get_redis_connection("default").connection_pool.maint_notifications_enabled()
    ours = get_client()
    assert ours.get_connection_kwargs()["protocol"] == 3
    assert not ours.connection_pool.maint_notifications_enabled()
