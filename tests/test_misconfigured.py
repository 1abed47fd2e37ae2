"""A cache alias that gives whos_online no Redis: pages render, as in an outage, and say it once.

A forgotten ``WHOS_ONLINE_CACHE_ALIAS`` on a site whose default cache is not
Redis, an alias CACHES lacks, a LOCATION that is no URL, or a Redis nobody
listens on: app servers run no checks, so each must fail open at runtime with
one ERROR saying what is wrong, while ``manage.py check`` still reports what it
can. The first three are mistakes in the settings, named as such and never
called an outage; only the last is Redis being unavailable.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import time_machine
from django.core import checks
from django.test import override_settings

from tests.conftest import FAKE_CACHE, NOW, BrowserAsyncClient, BrowserClient, django_redis_cache
from tests.redis_server import spare_port
from tests.test_faults import UNAVAILABLE, block

pytestmark = pytest.mark.django_db

LOCMEM = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
MISTAKE = (
    "whos_online is misconfigured, and records and shows nobody until the setting is fixed "
    "(no Redis was tried; nothing to retry): WHOS_ONLINE_CACHE_ALIAS is {alias!r}, and CACHES "
    "gives no Redis cache for it ({error}); point the setting at a django-redis cache or "
    "Django's RedisCache, or name a client in WHOS_ONLINE_REDIS_CLIENT (manage.py check says more)"
)
# (CACHES, WHOS_ONLINE_CACHE_ALIAS, the one line logged, what check says)
SITES = {
    "a LocMemCache default, no alias set": (
        {"default": LOCMEM},
        "default",
        MISTAKE.format(
            alias="default",
            error="ValueError: its BACKEND is 'django.core.cache.backends.locmem.LocMemCache', "
            "not a Redis cache",
        ),
        "whos_online.E004",
    ),
    "an alias CACHES lacks": (
        {"default": FAKE_CACHE},
        "presence",
        MISTAKE.format(
            alias="presence",
            error="ValueError: CACHES has no such alias",
        ),
        "whos_online.E003",
    ),
    "a LOCATION that is no Redis URL": (
        {"default": django_redis_cache("127.0.0.1:6379")},
        "default",
        MISTAKE.format(
            alias="default",
            error="ValueError: Redis URL must specify one of the following schemes "
            "(redis://, rediss://, unix://)",
        ),
        None,
    ),
}
PORT = spare_port()
DEAD = {"default": django_redis_cache(f"redis://127.0.0.1:{PORT}/0")}


def four_pages(handler: str, caches: dict[str, Any], alias: str = "default") -> None:
    """Four pages a minute apart (past any back-off), each a 200 with the block saying it
    is unavailable (block() checks both): the middleware's record and the tag's read
    failed open."""
    client = BrowserAsyncClient() if handler == "ASGI" else BrowserClient()
    with (
        override_settings(CACHES=caches, WHOS_ONLINE_CACHE_ALIAS=alias),
        time_machine.travel(NOW, tick=False) as traveller,
    ):
        for n in range(4):
            assert UNAVAILABLE in block(client, REMOTE_ADDR=f"203.0.113.{n}")
            traveller.shift(60)


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """whos_online's log lines from INFO up, as (level, message)."""
    return [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name.startswith("whos_online") and record.levelno >= logging.INFO
    ]


@pytest.mark.parametrize("handler", ["WSGI", "ASGI"])
@pytest.mark.parametrize("site", SITES)
def test_a_mistake_in_the_settings_is_named_once_and_pages_render(
    site: str, handler: str, caplog: pytest.LogCaptureFixture
) -> None:
    caches, alias, says, check_id = SITES[site]
    four_pages(handler, caches, alias)
    assert logged(caplog) == [("ERROR", says)]
    with override_settings(CACHES=caches, WHOS_ONLINE_CACHE_ALIAS=alias):
        found = [
            message.id
            for message in checks.run_checks(tags=[checks.Tags.caches])
            if not message.is_silenced()
        ]
    assert found == ([check_id] if check_id else [])


@pytest.mark.parametrize("handler", ["WSGI", "ASGI"])
def test_a_redis_nobody_listens_on_is_an_outage_said_once(
    handler: str, caplog: pytest.LogCaptureFixture
) -> None:
    four_pages(handler, DEAD)
    [(level, line)] = logged(caplog)
    assert level == "ERROR"
    assert line.startswith("Redis is unavailable (ConnectionError: ")
    assert f"127.0.0.1:{PORT}" in line and "Connection refused" in line
    assert line.endswith(
        "; whos_online skips it until it answers again, retrying after 1 s, then at growing "
        "intervals up to 5 s."
    )
