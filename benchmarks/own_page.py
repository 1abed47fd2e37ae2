"""A page with the block against the same page without it, for the visitor's own pages.

    REDIS_URL=redis://127.0.0.1:6379/13 python benchmarks/own_page.py [rounds]  # OWN_PAGE.md

The page is a forum index: a template extending a base (head, a header of
``{% url %}`` nav links and the user's name, a footer) that lists 20 topics read
through the ORM on each request (users "Topic 1".."Topic 20": name, date, link),
behind SessionMiddleware, AuthenticationMiddleware and WhosOnlineMiddleware,
through Django's test client, with templates cached as in production. ``/`` and
``/block/`` are the same page but for ``{% whos_online live=30 %}`` in the
sidebar of ``/block/``. The block cache is at its default of one second; 1,000
members and 1,000 guests are online, and the site's peak is set well above that
(a real site is usually below its record), so no page raises it.

Three visitors on that page: a guest whose "online" cookie holds off their
records (the common page); a member on a live page, whose every view is
recorded (their socket page drops the cookie) and whom the cached read lists;
and a newcomer (a new address each time: recorded, and not in the cached read,
which their page shows with them added). A fourth, on a thread page (the same
page under ``@in_room``, its sidebar ``{% whos_here %}``), is guests with the
cookie each opening the same ten threads in turn: recorded into each room,
which that room's cached read does not hold, so their page shows it with them
added. The two paths of a visitor are timed alternately in interleaved rounds
of 40 pages each, after an untimed warm-up round; a visitor's ratio is the
median over rounds of (with ÷ without), as in runner.py.
Each mix (cookie guest / live member / newcomer) weights the visitors' median
times, and its ratio is the weighted time with ÷ without. Keys live under the
bench's prefix, deleted at the end.
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
from django.shortcuts import render  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import override_settings  # noqa: E402
from django.urls import include, path  # noqa: E402

from whos_online import presence  # noqa: E402
from whos_online.conf import Settings, conf  # noqa: E402
from whos_online.rooms.pages import in_room  # noqa: E402
from whos_online.store import reading, scripts  # noqa: E402
from whos_online.store.connection import get_client  # noqa: E402
from whos_online.store.stats import PEAK_TTL  # noqa: E402

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
ONLINE = 1000
PER_SLICE = 40
TOPICS = 20
THREADS = 10
MIXES = {"90/9/1": (90, 9, 1), "75/5/20": (75, 5, 20)}  # cookie guest / live member / newcomer

BASE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>{% block title %}Forum{% endblock %}</title>
<link rel="stylesheet" href="/static/forum.css"></head>
<body>
<header><nav><a href="{% url 'index' %}">Forum</a> <a href="{% url 'search' %}">Search</a>
<a href="{% url 'members' %}">Members</a> <a href="{% url 'whos_online:live' %}">Online</a>
{% if user.is_authenticated %}{{ user.get_username }}{% else %}<a href="{% url 'login' %}">Log in</a>{% endif %}
</nav></header>
<main>{% block content %}{% endblock %}</main>
<aside>{% block sidebar %}{% endblock %}</aside>
<footer><a href="{% url 'index' %}">Forum</a> · <a href="{% url 'members' %}">Members</a></footer>
</body>
</html>
"""
FORUM = """{% extends "base.html" %}{% block content %}<h1>Topics</h1>
<ul>{% for topic in topics %}
<li><a href="{% url 'topic' topic.pk %}">{{ topic.first_name }}</a>
<time>{{ topic.date_joined|date:"j M Y, H:i" }}</time></li>{% endfor %}
</ul>{% endblock %}"""
THREAD = FORUM.replace("<h1>Topics</h1>", "<h1>Topic {{ room }}</h1>")
PAGES = {
    "base.html": BASE,
    "forum.html": FORUM,
    "forum_block.html": FORUM
    + "{% load whos_online %}{% block sidebar %}{% whos_online live=30 %}{% endblock %}",
    "thread.html": THREAD,
    "thread_block.html": THREAD
    + "{% load whos_online %}{% block sidebar %}{% whos_here room %}{% endblock %}",
}


def ok(request: HttpRequest, **kwargs: Any) -> HttpResponse:
    return HttpResponse("ok")  # the nav links' targets, never asked for


def forum(request: HttpRequest, template: str = "forum.html") -> HttpResponse:
    topics = User.objects.filter(username__startswith="topic").order_by("-date_joined")
    return render(request, template, {"topics": topics[:TOPICS]})


@in_room(lambda request, pk, **kwargs: f"thread:{pk}")
def thread(request: HttpRequest, pk: int, template: str = "thread.html") -> HttpResponse:
    topics = User.objects.filter(username__startswith="topic").order_by("-date_joined")
    return render(request, template, {"topics": topics[:TOPICS], "room": f"thread:{pk}"})


urlpatterns = [
    path("", forum, name="index"),
    path("block/", forum, {"template": "forum_block.html"}),
    path("thread/<int:pk>/", thread),
    path("thread/<int:pk>/block/", thread, {"template": "thread_block.html"}),
    path("topic/<int:pk>/", ok, name="topic"),
    path("search/", ok, name="search"),
    path("members/", ok, name="members"),
    path("login/", ok, name="login"),
    path("whos-online/", include("whos_online.urls")),
]
LOADERS = [
    ("django.template.loaders.locmem.Loader", PAGES),
    "django.template.loaders.app_directories.Loader",
]
SITE = {
    "ROOT_URLCONF": __name__,
    "MIDDLEWARE": [*settings.MIDDLEWARE, "whos_online.middleware.WhosOnlineMiddleware"],
    "TEMPLATES": [
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "loaders": [("django.template.loaders.cached.Loader", LOADERS)],
                "context_processors": [
                    "django.template.context_processors.request",
                    "django.contrib.auth.context_processors.auth",
                ],
            },
        }
    ],
    "WHOS_ONLINE_KEY_PREFIX": f"whos_online_bench_page:{os.getpid()}",
    "WHOS_ONLINE_BLOCK_CACHE": 1.0,
    "WHOS_ONLINE_WEBSOCKET_URL": "/ws/whos-online/",
}


def populate() -> None:
    User.objects.bulk_create(
        User(username=f"topic{i}", first_name=f"Topic {i}") for i in range(1, TOPICS + 1)
    )
    for i in range(ONLINE):
        presence.record_guest(f"10.98.{i >> 8}.{i & 255}")
    User.objects.bulk_create(User(username=f"bench{i}") for i in range(ONLINE))
    for user in User.objects.filter(username__startswith="bench"):
        presence.record_user(user)
    # A record of 10,000 set yesterday: the newcomers stay under it.
    scripts.raise_peak(
        get_client(), peak=conf.keys().peak, count=10 * ONLINE, at=time.time() - 86400, ttl=PEAK_TTL
    )


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


def thread_reader() -> Callable[[str], Any]:
    """Guests with the cookie, each opening the same few threads in turn (so the process
    keeps each thread's read, as on a forum whose threads many read): each page a
    room new to its guest."""
    guests = [Client(HTTP_USER_AGENT=BROWSER, REMOTE_ADDR=f"10.95.0.{i}") for i in range(200)]
    for guest in guests:
        guest.get("/")  # the cookie
    count = iter(range(10**7))

    def page(url: str) -> Any:
        n = next(count)
        guest = guests[n // THREADS % len(guests)]
        return guest.get(url.replace("/", f"/thread/{n % THREADS}/", 1))

    return page


def counted_reads(visitors: dict[str, Callable[[str], Any]]) -> dict[str, float]:
    """Redis reads of the block per page with it, for each visitor, besides the one a due
    cache makes (a check that each does as said)."""
    found = {}
    with mock.patch.object(reading, "read", wraps=reading.read) as read:
        for name, page in visitors.items():
            time.sleep(1)  # the cached read due: the first page reads it
            read.reset_mock()
            for _ in range(PER_SLICE):
                page("/block/")
            found[name] = (read.call_count - 1) / PER_SLICE
    return found


def timed(page: Callable[[str], Any], url: str) -> float:
    start = time.perf_counter()
    for _ in range(PER_SLICE):
        page(url)
    return (time.perf_counter() - start) / PER_SLICE * 1e6


def report(reads: dict[str, float], times: dict[str, list[tuple[float, float]]]) -> None:
    print("Redis reads of the block per page with it:", reads)
    print("| Visitor | without µs | with the block µs | ratio (median, range) |")
    print("|---|---:|---:|---:|")
    medians = []
    for name, pairs in times.items():
        ratios = [b / a for a, b in pairs]
        medians.append(
            (statistics.median(a for a, _ in pairs), statistics.median(b for _, b in pairs))
        )
        print(
            f"| {name} | {medians[-1][0]:,.0f} | {medians[-1][1]:,.0f} "
            f"| {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) |"
        )
    for mix, weights in MIXES.items():  # the first three visitors: the forum index
        without, with_block = (
            sum(w * m[i] for w, m in zip(weights, medians)) / sum(weights) for i in (0, 1)
        )
        print(f"| mix {mix} | {without:,.0f} | {with_block:,.0f} | {with_block / without:.2f} |")


def main(rounds: int) -> None:
    call_command("migrate", verbosity=0)
    with override_settings(**SITE), mock.patch.object(Settings, "max_guests", 10_000_000):
        populate()
        visitors = {
            "guest with the cookie": cookie_guest(),
            "member on a live page (recorded each view)": live_member(),
            "newcomer (recorded, added to the kept read)": newcomer(),
            "guest opening a thread (`{% whos_here %}`, a room new to them)": thread_reader(),
        }
        reads = counted_reads(visitors)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in visitors}
        for done in range(rounds + 1):  # the first round warms up, untimed
            for name, page in visitors.items():
                without, with_block = timed(page, "/"), timed(page, "/block/")
                if done:
                    times[name].append((without, with_block))
        report(reads, times)
        keys = list(get_client().scan_iter(f"{SITE['WHOS_ONLINE_KEY_PREFIX']}:*"))
        if keys:
            get_client().delete(*keys)
    Path(settings.DATABASES["default"]["NAME"]).unlink()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
