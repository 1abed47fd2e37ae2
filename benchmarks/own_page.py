"""A page with the block against the same page without it, for the visitor's own pages,
on this checkout and another one, timed side by side in one run.

    REDIS_URL=redis://127.0.0.1:6379/13 python benchmarks/own_page.py ../before [rounds]

The page is a forum index: a template extending a base (head, a header of
``{% url %}`` nav links and the user's name, a footer) that lists 20 topics read
through the ORM on each request (users "Topic 1".."Topic 20": name, date, link),
behind SessionMiddleware, AuthenticationMiddleware and WhosOnlineMiddleware,
through Django's test client, with templates cached as in production. ``/`` and
``/block/`` are the same page but for ``{% whos_online live=30 %}`` in the
sidebar of ``/block/``. The block cache is at its default of one second; 1,000
members and 1,000 guests are online, and the site's peak is set well above that
(a real site is usually below its record), so no page raises it.

The visitors: a guest whose "online" cookie holds off their records (the common
page); a member on a live page, whose every view is recorded (their socket page
drops the cookie) and whom the kept read lists; a returning guest, whose cookie
has expired while they are still inside the window (recorded, and counted by the
kept read); a guest reloading in their first second (ten pages each: the first
records them, the rest show the read made after it); newcomers (a new address
each page) arriving 40 at a time, faster than the fresh reads a process makes
in a second, and one by one, each reading afresh; and guests with the cookie
each opening the same ten threads in turn (``@in_room``, ``{% whos_here %}``,
a room new to them on each page). The mixes weight the cookie guest, the live
member and the newcomers in bursts (the forum index of a busy process).

Two processes, one per checkout, build the same site; each round shuffles every
(checkout, visitor, page) slice of 40 pages into one order and has the process
that owns it time it, so both checkouts see the same machine. A visitor's
ratio is the median over rounds of (with ÷ without) within its process, and
"after ÷ before" the median of the two processes' times with the block. Keys
live under each process's prefix, deleted at the end.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
# A child times the checkout it is given (see child); the parent, this one.
CHECKOUT = sys.argv[2] if sys.argv[1:2] == ["--child"] else str(HERE.parent)
sys.path[:0] = [str(HERE), str(Path(CHECKOUT).resolve())]
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
from whos_online.presence import in_room  # noqa: E402
from whos_online.rendering import blockcache  # noqa: E402
from whos_online.store import reading  # noqa: E402
from whos_online.store.connection import get_client  # noqa: E402

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
    get_client().hset(conf.keys().peak, mapping={"count": 10 * ONLINE, "at": time.time() - 86400})


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


def newcomer(one_by_one: bool = False) -> Callable[[str], Any]:
    """A new address each page; ``one_by_one``: each page may read afresh (no cap), as
    newcomers arriving slower than a process's fresh reads a second do."""
    count = iter(range(10**7))
    cap = 10**9 if one_by_one else getattr(blockcache, "FRESH_READS_PER_SECOND", 0)

    def page(url: str) -> Any:
        n = next(count) + (1 << 20 if one_by_one else 0)
        address = f"10.{96 - (n >> 16)}.{n >> 8 & 255}.{n & 255}"
        with mock.patch.object(blockcache, "FRESH_READS_PER_SECOND", cap, create=True):
            return Client(HTTP_USER_AGENT=BROWSER).get(url, REMOTE_ADDR=address)

    return page


def returning_guest() -> Callable[[str], Any]:
    """The guests online (populate), back without a cookie: expired, as it does half a
    window after their last record, while they are still inside the window."""
    count = iter(range(10**7))

    def page(url: str) -> Any:
        i = next(count) % ONLINE
        return Client(HTTP_USER_AGENT=BROWSER).get(url, REMOTE_ADDR=f"10.98.{i >> 8}.{i & 255}")

    return page


def reloading_guest() -> Callable[[str], Any]:
    count = iter(range(10**7))
    client = Client()

    def page(url: str) -> Any:
        nonlocal client
        n = next(count)
        if n % 10 == 0:
            client = Client(
                HTTP_USER_AGENT=BROWSER, REMOTE_ADDR=f"10.93.{n >> 12 & 255}.{n >> 4 & 255}"
            )
        return client.get(url)

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


VISITORS: dict[str, Callable[[], Callable[[str], Any]]] = {
    "guest with the cookie": cookie_guest,
    "member on a live page (recorded each view)": live_member,
    "newcomers, 40 at a time": newcomer,
    "returning guest (cookie expired, inside the window)": returning_guest,
    "guest reloading in their first second (10 pages each)": reloading_guest,
    "newcomers one by one (each page reads afresh)": lambda: newcomer(one_by_one=True),
    "guest opening a thread (a room new to them)": thread_reader,
}
MIXED = list(VISITORS)[:3]  # the mixes' cookie guest / live member / newcomer


def block_reads(page: Callable[[str], Any]) -> float:
    """Redis reads of the block per page with it, besides the one a due kept read makes."""
    with mock.patch.object(reading, "read", wraps=reading.read) as read:
        time.sleep(1)  # the kept read due: the first page reads it
        for _ in range(PER_SLICE):
            page("/block/")
        return (read.call_count - 1) / PER_SLICE


def timed(page: Callable[[str], Any], url: str) -> float:
    start = time.perf_counter()
    for _ in range(PER_SLICE):
        page(url)
    return (time.perf_counter() - start) / PER_SLICE * 1e6


def child(checkout: str) -> None:
    """Serve the site on ``checkout``'s whos_online; time the slices asked on stdin."""
    import whos_online

    if not (whos_online.__file__ or "").startswith(checkout):
        raise SystemExit(f"whos_online came from {whos_online.__file__}, not {checkout}")
    call_command("migrate", verbosity=0)
    try:
        with override_settings(**SITE), mock.patch.object(Settings, "max_guests", 10_000_000):
            populate()
            pages = {name: make() for name, make in VISITORS.items()}
            print(json.dumps({name: block_reads(page) for name, page in pages.items()}), flush=True)
            for line in sys.stdin:
                name, url = json.loads(line)
                print(timed(pages[name], url), flush=True)
    finally:
        keys = list(get_client().scan_iter(f"{SITE['WHOS_ONLINE_KEY_PREFIX']}:*"))
        if keys:
            get_client().delete(*keys)
        Path(settings.DATABASES["default"]["NAME"]).unlink()


class Checkout:
    """A child process serving one checkout's site."""

    def __init__(self, path: Path) -> None:
        command = [sys.executable, __file__, "--child", str(path)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.reads: dict[str, float] = json.loads(self.process.stdout.readline())  # type: ignore[union-attr]
        self.times: dict[str, list[tuple[float, float]]] = {name: [] for name in VISITORS}

    def time(self, name: str, url: str) -> float:
        self.process.stdin.write(json.dumps([name, url]) + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return float(self.process.stdout.readline())  # type: ignore[union-attr]

    def close(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.wait()


def median_pair(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(a for a, _ in pairs), statistics.median(b for _, b in pairs)


def report(before: Checkout, after: Checkout, load: list[float], base: str) -> str:
    rows = []
    for name in VISITORS:
        row = [name]
        for side in (before, after):
            ratios = [b / a for a, b in side.times[name]]
            without, with_block = median_pair(side.times[name])
            row += [f"{without:,.0f}", f"{with_block:,.0f}",
                    f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})",
                    f"{side.reads[name]:.3g}"]  # fmt: skip
        over = [b[1] / a[1] for a, b in zip(before.times[name], after.times[name])]
        row.append(f"{statistics.median(over):.2f}")
        rows.append("| " + " | ".join(row) + " |")
    for mix, weights in MIXES.items():
        row = [f"mix {mix}"]
        for side in (before, after):
            medians = [median_pair(side.times[name]) for name in MIXED]
            without, with_block = (
                sum(w * m[i] for w, m in zip(weights, medians)) / sum(weights) for i in (0, 1)
            )
            row += [f"{without:,.0f}", f"{with_block:,.0f}", f"{with_block / without:.2f}", ""]
        rows.append("| " + " | ".join(row) + " | |")
    return "\n".join([
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by `own_page.py` (its "
        f"docstring has the method), {len(before.times[MIXED[0]])} rounds; before is {base}, "
        f"after is {commit(HERE.parent)}. 1-minute load {load[0]:.1f} at the start, "
        f"{load[1]:.1f} at the end.",
        "",
        "| Visitor | before without µs | before with µs | before ratio | before reads/page "
        "| after without µs | after with µs | after ratio | after reads/page "
        "| after ÷ before, with the block |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
    ])  # fmt: skip


def commit(path: Path) -> str:
    git = ["git", "-C", str(path), "describe", "--always", "--dirty"]
    return subprocess.run(git, capture_output=True, text=True).stdout.strip() or path.name


def main(before_path: Path, rounds: int) -> None:
    load = [os.getloadavg()[0]]
    before, after = Checkout(before_path), Checkout(HERE.parent)
    try:
        rng = random.Random(0)
        for done in range(rounds + 1):  # the first round warms up, untimed
            order = [(side, name, url) for side in (before, after) for name in VISITORS
                     for url in ("/", "/block/")]  # fmt: skip
            rng.shuffle(order)
            took = {(id(side), name, url): side.time(name, url) for side, name, url in order}
            if done:
                for side in (before, after):
                    for name in VISITORS:
                        side.times[name].append(
                            (took[id(side), name, "/"], took[id(side), name, "/block/"])
                        )
            print(f"round {done}/{rounds}", file=sys.stderr, flush=True, end="\r")
    finally:
        before.close()
        after.close()
    load.append(os.getloadavg()[0])
    print(report(before, after, load, commit(before_path)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(str(Path(sys.argv[2]).resolve()))
    else:
        main(Path(sys.argv[1]).resolve(), int(sys.argv[2]) if len(sys.argv) > 2 else 15)
