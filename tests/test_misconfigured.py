"""A cache alias that gives whos_online no Redis: pages render, as in an outage, and say it once.

A forgotten ``WHOS_ONLINE_CACHE_ALIAS`` on a site whose default cache is not
Redis, an alias CACHES lacks, a LOCATION that is no URL, or a Redis nobody
listens on: app servers run no checks, so each must fail open at runtime with
one ERROR saying what is wrong, while ``manage.py check`` still reports what it
can.
"""

from __future__ import annotations

import logging

import pytest
import time_machine
from django.core import checks
from django.test import override_settings

from tests.conftest import FAKE_CACHE, NOW, BrowserAsyncClient, BrowserClient, django_redis_cache
from tests.redis_server import spare_port
from tests.test_faults import UNAVAILABLE, block, log_records

pytestmark = pytest.mark.django_db

LOCMEM = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
# (CACHES, WHOS_ONLINE_CACHE_ALIAS, what the ERROR says, what check says)
SITES = {
    "a LocMemCache default, no alias set": (
        {"default": LOCMEM},
        "default",
        "WHOS_ONLINE_CACHE_ALIAS is 'default', and CACHES gives no Redis cache for it",
        "whos_online.E004",
    ),
    "an alias CACHES lacks": (
        {"default": FAKE_CACHE},
        "presence",
        "WHOS_ONLINE_CACHE_ALIAS is 'presence', and CACHES gives no Redis cache for it",
        "whos_online.E003",
    ),
    "a LOCATION that is no Redis URL": (
        {"default": django_redis_cache("127.0.0.1:6379")},
        "default",
        "WHOS_ONLINE_CACHE_ALIAS is 'default', and CACHES gives no Redis cache for it",
        None,
    ),
    "a Redis nobody listens on": (
        {"default": django_redis_cache(f"redis://127.0.0.1:{spare_port()}/0")},
        "default",
        "Connection refused",
        None,
    ),
}


@pytest.mark.parametrize("handler", ["WSGI", "ASGI"])
@pytest.mark.parametrize("site", SITES)
def test_pages_render_unavailable_and_one_error_names_the_fix(
    site: str, handler: str, caplog: pytest.LogCaptureFixture
) -> None:
    caches, alias, says, check_id = SITES[site]
    client = BrowserAsyncClient() if handler == "ASGI" else BrowserClient()
    with (
        override_settings(CACHES=caches, WHOS_ONLINE_CACHE_ALIAS=alias),
        time_machine.travel(NOW, tick=False) as traveller,
    ):
        for n in range(4):
            # A 200 with the block in it (block() checks both), the middleware's
            # record and the tag's read having failed open.
            assert UNAVAILABLE in block(client, REMOTE_ADDR=f"203.0.113.{n}")
            traveller.shift(60)  # past the back-off: the next request tries the alias again
        found = [
            message.id
            for message in checks.run_checks(tags=[checks.Tags.caches])
            if not message.is_silenced()
        ]
    [error] = log_records(caplog, logging.ERROR)
    assert says in error.getMessage()
    assert found == ([check_id] if check_id else [])
