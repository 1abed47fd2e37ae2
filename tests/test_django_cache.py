"""A site on Django's own RedisCache (what a new project picks), or on a client factory alone."""

from __future__ import annotations

import uuid
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import call_command

from tests.conftest import BrowserClient, RoundTrips, socket_timeout
from tests.counted import listening
from tests.test_faults import UNAVAILABLE
from tests.test_templatetag import listed
from whos_online.store.connection import get_client

pytestmark = pytest.mark.django_db

NO_ISSUES = "System check identified no issues (0 silenced).\n"


def django_cache(location: str, **options: Any) -> dict[str, Any]:
    """A cache alias as Django's docs write one: its OPTIONS are redis-py's pool arguments."""
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": location,
        "OPTIONS": options,
    }


@pytest.fixture
def djangos_cache(redis_db: redis.Redis, settings: Any) -> None:
    """whos_online on an alias of Django's RedisCache, on redis_db's server (fakeredis, then
    REDIS_URL) with its counted connections."""
    suite = settings.CACHES["default"]
    pool = suite["OPTIONS"]["CONNECTION_POOL_KWARGS"]
    settings.CACHES = {**settings.CACHES, "whos_online": django_cache(suite["LOCATION"], **pool)}
    settings.WHOS_ONLINE_CACHE_ALIAS = "whos_online"


def test_a_page_lists_the_member_in_two_round_trips(
    djangos_cache: None, client: BrowserClient, people: Any
) -> None:
    """Recording alice and reading the block, as on a django-redis cache."""
    (alice,) = people("alice")
    client.force_login(alice)
    client.get("/block/")  # loads the scripts, as any server that has run them before
    client.cookies.pop("online")
    with listening(RoundTrips()) as trips:
        page = client.get("/block/").content.decode()
    assert UNAVAILABLE not in page
    assert listed(page) == ["alice"]
    assert trips.count == 2


def test_manage_py_check_accepts_it(djangos_cache: None) -> None:
    """No E004 (W010 is silenced: this alias shares the suite's database, as every test's does)."""
    out = StringIO()
    call_command("check", stdout=out, stderr=out)
    assert out.getvalue() == "System check identified no issues (1 silenced).\n"


def test_a_client_factory_needs_no_redis_cache_alias(
    settings: Any, client: BrowserClient, people: Any
) -> None:
    """The Cluster recipe (docs/howto/scaling.md) on a site whose caches are not Redis."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.WHOS_ONLINE_REDIS_CLIENT = "tests.test_connection.fakeredis_client"
    settings.WHOS_ONLINE_KEY_PREFIX = prefix = f"{{whos_online_test:{uuid.uuid4().hex}}}"
    out = StringIO()
    call_command("check", stdout=out, stderr=out)
    assert out.getvalue() == NO_ISSUES
    (alice,) = people("alice")
    client.force_login(alice)
    assert listed(client.get("/block/").content.decode()) == ["alice"]
    get_client().delete(*get_client().scan_iter(match=f"{prefix}:*"))


@pytest.mark.parametrize(
    "location",
    [
        "redis://:secret@127.0.0.1:6390/3;redis://127.0.0.1:6391/3",
        ["redis://:secret@127.0.0.1:6390/3"],
    ],
)
def test_our_pool_is_the_writers_with_our_timeouts_and_never_blocks(
    settings: Any, location: Any
) -> None:
    """Django writes to the first server; its pool_class may block, ours must not."""
    settings.CACHES = {
        **settings.CACHES,
        "whos_online": django_cache(
            location,
            pool_class="redis.BlockingConnectionPool",
            serializer="django.core.cache.backends.redis.RedisSerializer",
            max_connections=7,
            socket_timeout=30,
        ),
    }
    settings.WHOS_ONLINE_CACHE_ALIAS = "whos_online"
    socket_timeout(settings, 0.3)
    pool = get_client().connection_pool
    assert type(pool) is redis.ConnectionPool and pool.max_connections == 7
    kwargs = pool.connection_kwargs
    assert (kwargs["host"], kwargs["port"], kwargs["db"], kwargs["password"]) == (
        "127.0.0.1", 6390, 3, "secret",
    )  # fmt: skip
    assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 0.3
