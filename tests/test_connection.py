"""whos_online's own client: the cache's Redis, our timeouts."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import fakeredis
import pytest
import redis
from django_redis import get_redis_connection

from tests.conftest import django_redis_cache, socket_timeout
from whos_online import presence
from whos_online.store import failsafe
from whos_online.store.connection import CacheAliasError, get_client


# Each case a URL (here a database) of its own: django-redis keeps one pool per URL.
@pytest.mark.parametrize(
    ("db", "options"),
    [
        (7, {}),
        (8, {"SOCKET_CONNECT_TIMEOUT": 30}),
        (9, {"CONNECTION_POOL_KWARGS": {"socket_timeout": 30, "socket_connect_timeout": 30}}),
    ],
)
def test_the_cache_s_socket_timeout_bounds_connects_and_replies_alike(
    settings: Any, db: int, options: dict[str, Any]
) -> None:
    location = f"redis://:secret@127.0.0.1:6390/{db}"
    settings.CACHES = {"default": django_redis_cache(location, SOCKET_TIMEOUT=0.3, **options)}
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


def test_one_client_until_a_setting_changes(settings: Any) -> None:
    settings.CACHES = {"default": django_redis_cache("redis://127.0.0.1:6390/3")}
    client = get_client()
    assert get_client() is client
    socket_timeout(settings, 0.5)
    assert get_client().get_connection_kwargs()["socket_timeout"] == 0.5


def test_the_cache_pool_itself_is_left_alone(settings: Any) -> None:
    settings.CACHES = {"default": django_redis_cache("redis://127.0.0.1:6390/4")}
    ours = get_client()
    theirs = get_redis_connection("default")
    assert ours.connection_pool is not theirs.connection_pool
    # The cache's socket timeout is ours too; we bound connecting by it, django-redis not.
    assert ours.get_connection_kwargs()["socket_connect_timeout"] == 2
    assert theirs.get_connection_kwargs().get("socket_connect_timeout") is None


def test_a_blocking_pool_is_not_ours(settings: Any) -> None:
    """Waiting up to 20 s for a free connection would hold the request: ours raises instead.
    The cache's pool class is the cache's: ours is always redis-py's plain pool."""
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


def test_a_sentinel_cache_is_a_mistake_logged_once_naming_the_client_setting(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Sentinel goes through WHOS_ONLINE_REDIS_CLIENT (docs/howto/scaling.md): a Sentinel
    alias's LOCATION names a service, not a server, so no client is made for it."""
    settings.CACHES = {
        "default": django_redis_cache(
            "redis://mymaster/0",
            CLIENT_CLASS="django_redis.client.SentinelClient",
            SENTINELS=[("127.0.0.1", 26390)],
        )
    }
    with pytest.raises(CacheAliasError, match="Sentinel.*WHOS_ONLINE_REDIS_CLIENT"):
        get_client()
    assert failsafe.call(presence.last_seen, 1) is failsafe.UNAVAILABLE
    assert failsafe.call(presence.last_seen, 1) is failsafe.UNAVAILABLE
    [record] = [r for r in caplog.records if r.name.startswith("whos_online")]
    assert "misconfigured" in record.getMessage()


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


DJANGO_ONLY = """
import sys
sys.modules["django_redis"] = None  # an import of it fails
import django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "whos_online"],
    MIDDLEWARE=[
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "whos_online.middleware.WhosOnlineMiddleware",
    ],
    CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                        "LOCATION": "redis://127.0.0.1:6390/4"}},
)
django.setup()
from whos_online.store.connection import get_client
print(get_client().get_connection_kwargs()["db"])
"""


def test_django_redis_is_optional_with_djangos_own_redis_cache() -> None:
    done = subprocess.run(
        [sys.executable, "-c", DJANGO_ONLY], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4"]
