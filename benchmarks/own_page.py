"""A page with the block against the same page without it, for the visitor's own pages.

    REDIS_URL=redis://127.0.0.1:6379/13 python benchmarks/own_page.py [rounds]  # OWN_PAGE.md

Three visitors, each asking for ``/`` (a view returning "ok") and ``/block/``
(the same with ``{% whos_online %}``) through Django's test client, with
WhosOnlineMiddleware and the block cache at its default of one second, 1,000
members and 1,000 guests online: a guest whose "online" cookie holds off their
records (the common page); a member on a live page, whose every view is
recorded (their socket page drops the cookie) and whom the cached read lists;
and a newcomer (a new address each time: recorded, and not in the cached read,
so the page with the block reads Redis afresh). The two paths of a visitor are
timed alternately in interleaved rounds; the ratio is the median over rounds of
(with ÷ without), as in runner.py. Keys live under the bench's prefix, deleted
at the end.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"

import django  # noqa: E402

django.setup()

from unittest import mock  # noqa: E402

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.template import engines  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import override_settings  # noqa: E402
from django.urls import include, path  # noqa: E402

from whos_online import presence  # noqa: E402
from whos_online.conf import Settings  # noqa: E402
from whos_online.store.connection import get_client  # noqa: E402

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
BLOCK = engines["django"].from_string("{% load whos_online %}{% whos_online live=30 %}")
ONLINE = 1000
PER_SLICE = 40


def ok(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def block(request: HttpRequest) -> HttpResponse:
    return HttpResponse(BLOCK.render({"request": request}, request))


urlpatterns = [
    path("", ok),
    path("block/", block),
    path("whos-online/", include("whos_online.urls")),
]
SITE = {
    "ROOT_URLCONF": __name__,
    "MIDDLEWARE": [*settings.MIDDLEWARE, "whos_online.middleware.WhosOnlineMiddleware"],
    "WHOS_ONLINE_KEY_PREFIX": f"whos_online_bench_page:{os.getpid()}",
    "WHOS_ONLINE_BLOCK_CACHE": 1.0,
    "WHOS_ONLINE_WEBSOCKET_URL": "/ws/whos-online/",
}


def populate() -> None:
    for i in range(ONLINE):
        presence.record_guest(f"10.98.{i >> 8}.{i & 255}")
    users = [User(username=f"bench{i}") for i in range(ONLINE)]
    User.objects.bulk_create(users)
    for user in User.objects.filter(username__startswith="bench"):
        presence.record_user(user)


def cookie_guest() -> Callable[[str], Any]:
    client = Client(HTTP_USER_AGENT=BROWSER, REMOTE_ADDR="10.97.0.1")
    client.get("/")  # the cookie
    return lambda url: client.get(url)


def live_member() -> Callable[[str], Any]:
    client = Client(HTTP_USER_AGENT=BROWSER)
    client.force_login(User.objects.get(username="bench0"))
    client.get("/block/")

    def page(url: str) -> Any:
        client.cookies.pop("online", None)  # as the live page dropped it
        return client.get(url)

    return page


def newcomer() -> Callable[[str], Any]:
    count = iter(range(10**7))

    def page(url: str) -> Any:
        n = next(count)
        address = f"10.{96 - (n >> 16)}.{n >> 8 & 255}.{n & 255}"
        return Client(HTTP_USER_AGENT=BROWSER).get(url, REMOTE_ADDR=address)

    return page


def counted_reads(visitors: dict[str, Callable[[str], Any]]) -> dict[str, float]:
    """Block reads per page with the block, for each visitor (a check that each does as said)."""
    calls = []
    summary = presence.summary

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return summary(*args, **kwargs)

    presence.summary = counting
    try:
        found = {}
        for name, page in visitors.items():
            time.sleep(1)  # the cached read due: the first page reads it
            calls.clear()
            for _ in range(PER_SLICE):
                page("/block/")
            found[name] = (len(calls) - 1) / PER_SLICE
        return found
    finally:
        presence.summary = summary


def timed(page: Callable[[str], Any], url: str) -> float:
    start = time.perf_counter()
    for _ in range(PER_SLICE):
        page(url)
    return (time.perf_counter() - start) / PER_SLICE * 1e6


def main(rounds: int) -> None:
    call_command("migrate", verbosity=0)
    with override_settings(**SITE), mock.patch.object(Settings, "max_guests", 10_000_000):
        populate()
        visitors = {
            "guest with the cookie": cookie_guest(),
            "member on a live page (recorded each view)": live_member(),
            "newcomer (recorded, read afresh)": newcomer(),
        }
        reads = counted_reads(visitors)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in visitors}
        for done in range(rounds + 1):  # the first round warms up, untimed
            for name, page in visitors.items():
                without, with_block = timed(page, "/"), timed(page, "/block/")
                if done:
                    times[name].append((without, with_block))
        print("Redis reads of the block per page with it:", reads)
        print("| Visitor | without µs | with the block µs | ratio (median, range) |")
        print("|---|---:|---:|---:|")
        for name, pairs in times.items():
            ratios = [b / a for a, b in pairs]
            print(
                f"| {name} | {statistics.median(a for a, _ in pairs):,.0f} "
                f"| {statistics.median(b for _, b in pairs):,.0f} "
                f"| {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) |"
            )
        keys = list(get_client().scan_iter(f"{SITE['WHOS_ONLINE_KEY_PREFIX']}:*"))
        if keys:
            get_client().delete(*keys)
    Path(settings.DATABASES["default"]["NAME"]).unlink()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
