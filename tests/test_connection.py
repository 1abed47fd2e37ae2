"""whos_online's own client: the cache's Redis, our timeouts."""

from __future__ import annotations

from typing import Any

import fakeredis
import pytest
import redis
from django_redis import get_redis_connection
from redis.sentinel import Sentinel, SentinelConnectionPool

from tests.conftest import django_redis_cache
from whos_online import presence
from whos_online.connection import _one_round_trip, _with_timeout, get_client


@pytest.mark.parametrize("options", [{}, {"SOCKET_TIMEOUT": 30, "SOCKET_CONNECT_TIMEOUT": 30}])
def test_our_timeouts_apply_whatever_the_cache_options(
    settings: Any, options: dict[str, Any]
) -> None:
    settings.CACHES = {"default": django_redis_cache("redis://:secret@127.0.0.1:6390/7", **options)}
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


def test_orig_timeouts_are_ours_too(settings: Any) -> None:
    # redis-py 8 puts the socket timeouts back to these after a maintenance notification.
    settings.CACHES = {"default": django_redis_cache("redis://127.0.0.1:6390/5", SOCKET_TIMEOUT=30)}
    kwargs = get_client().connection_pool.connection_kwargs
    for name in ("orig_socket_timeout", "orig_socket_connect_timeout"):
        assert kwargs.get(name, 0.25) == 0.25


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
    presence.user_count()
    select = [["SELECT"]] if redis_db.connection_pool.connection_kwargs.get("db") else []
    assert round_trips.commands == [*select, ["ZCOUNT", "ZCOUNT"]]


def test_a_cache_that_asks_for_resp3_still_skips_the_optional_handshake(
    settings: Any, round_trips: Any
) -> None:
    cache = settings.CACHES["default"]
    # A URL of its own: django-redis keeps one pool per URL.
    settings.CACHES = {"default": {**cache, "LOCATION": cache["LOCATION"] + "?protocol=3"}}
    client = get_client()
    client.connection_pool.disconnect()
    round_trips.clear()
    presence.user_count()
    select = [["SELECT"]] if client.connection_pool.connection_kwargs.get("db") else []
    assert round_trips.commands == [["HELLO"], *select, ["ZCOUNT", "ZCOUNT"]]


@pytest.mark.parametrize(
    "name",
    [
        "maint_notifications_pool_handler",
        "oss_cluster_maint_notifications_handler",
        "orig_host_address",
        "orig_socket_timeout",
        "orig_socket_connect_timeout",
        "himport_registry",
    ],
)
def test_what_the_cache_pool_made_for_itself_is_not_shared(name: str) -> None:
    base = redis.Redis(host="127.0.0.1", port=6390)
    mine = object()  # a handler, registry or saved value bound to the cache's pool
    base.connection_pool.connection_kwargs[name] = mine
    ours = _with_timeout(base, 0.25).connection_pool
    assert ours.connection_kwargs.get(name) is not mine
    assert ours.connection_kwargs["host"] == "127.0.0.1"


class OldConnection:
    """A redis-py 5 to 7 connection: CLIENT SETINFO named by lib_name and lib_version."""

    def __init__(self, host: str = "", lib_name: Any = "redis-py", lib_version: Any = "7") -> None:
        pass


class OldResp3Connection(OldConnection):
    def __init__(self, protocol: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)


class OldestConnection:
    """redis-py 4.6: none of the options."""

    def __init__(self, host: str = "") -> None:
        pass


@pytest.mark.parametrize(
    ("connection_class", "options"),
    [
        (OldConnection, {"lib_name": None, "lib_version": None}),
        (OldResp3Connection, {"lib_name": None, "lib_version": None, "protocol": 2}),
        (OldestConnection, {}),
    ],
)
def test_older_redis_py_connections_skip_what_handshake_they_have(
    connection_class: type, options: dict[str, Any]
) -> None:
    assert _one_round_trip(connection_class, {}) == options


def test_a_resp3_cache_gets_no_maintenance_notifications_on_our_connections() -> None:
    """With them on, each new connection would send CLIENT MAINT_NOTIFICATIONS first."""
    pytest.importorskip("redis.maint_notifications")  # redis-py 8
    base = redis.Redis(host="127.0.0.1", port=6390, protocol=3)
    assert base.connection_pool.maint_notifications_enabled()  # redis-py's default
    ours = _with_timeout(base, 0.25).connection_pool
    assert ours.connection_kwargs["protocol"] == 3
    assert not ours.maint_notifications_enabled()
