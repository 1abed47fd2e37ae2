"""A forum page with and without the block, and the visitors compare.py sends to it.

The page is a forum index: a template extending a base (head, a header of
``{% url %}`` nav links and the user's name, a footer) that lists 20 topics read
through the ORM, behind SessionMiddleware, AuthenticationMiddleware and
WhosOnlineMiddleware, through Django's test client, with templates cached as in
production. ``/forum/`` and ``/forum/block/`` are the same page but for
``{% whos_online live=30 %}`` in the sidebar of the second, on a site with live blocks
(PAGE_SETTINGS). The visitors' cookies are whatever the responses leave them: nothing
here knows how whos_online decides (at 2d26913 a member's live page deleted their
"online" cookie, so each of their pages with the block recorded them).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from benchsite import BROWSER
from benchsite import urlpatterns as bare_urlpatterns
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.test import Client
from django.urls import path

from whos_online import presence

ONLINE = 1_000  # members and as many guests
TOPICS = 20
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "whos_online.middleware.WhosOnlineMiddleware",
]
# The settings of the forum's pages: a site with live blocks.
PAGE_SETTINGS = {"WHOS_ONLINE_WEBSOCKET_URL": "/ws/whos-online/"}

BASE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>{% block title %}Forum{% endblock %}</title>
<link rel="stylesheet" href="/static/forum.css"></head>
<body>
<header><nav><a href="{% url 'index' %}">Forum</a> <a href="{% url 'search' %}">Search</a>
<a href="{% url 'members' %}">Members</a>
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
PAGES = {
    "base.html": BASE,
    "forum.html": FORUM,
    "forum_block.html": FORUM
    + "{% load whos_online %}{% block sidebar %}{% whos_online live=30 %}{% endblock %}",
}


def ok(request: HttpRequest, **kwargs: Any) -> HttpResponse:
    return HttpResponse("ok")  # the nav links' targets, never asked for


def forum(request: HttpRequest, template: str = "forum.html") -> HttpResponse:
    topics = User.objects.filter(username__startswith="topic").order_by("-date_joined")
    return render(request, template, {"topics": topics[:TOPICS]})


urlpatterns = [
    *bare_urlpatterns,
    path("forum/", forum, name="index"),
    path("forum/block/", forum, {"template": "forum_block.html"}),
    path("topic/<int:pk>/", ok, name="topic"),
    path("search/", ok, name="search"),
    path("members/", ok, name="members"),
    path("login/", ok, name="login"),
]
SITE = {
    "ROOT_URLCONF": __name__,
    "MIDDLEWARE": MIDDLEWARE,
    "TEMPLATES": [
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "loaders": [
                    (
                        "django.template.loaders.cached.Loader",
                        [
                            ("django.template.loaders.locmem.Loader", PAGES),
                            "django.template.loaders.app_directories.Loader",
                        ],
                    )
                ],
                "context_processors": [
                    "django.template.context_processors.request",
                    "django.contrib.auth.context_processors.auth",
                ],
            },
        }
    ],
}


def populate() -> None:
    """The topics, and ONLINE members and guests online, the site's record well above them."""
    User.objects.bulk_create(
        User(username=f"topic{i}", first_name=f"Topic {i}") for i in range(1, TOPICS + 1)
    )
    User.objects.bulk_create(User(username=f"bench{i}") for i in range(ONLINE))
    for user in User.objects.filter(username__startswith="bench"):
        presence.record_user(user)
    for i in range(ONLINE):
        presence.record_guest(returning_address(i))
    # A real site is usually below its record: 5,000 more guests make it, then leave.
    crowd = [f"10.90.{i >> 8}.{i & 255}" for i in range(5 * ONLINE)]
    for address in crowd:
        presence.record_guest(address)
    presence.prune()
    for address in crowd:
        presence.forget_guest(address)


def returning_address(i: int) -> str:
    return f"10.98.{i % ONLINE >> 8}.{i % ONLINE & 255}"


Page = Callable[[str], Any]


def client(address: str) -> Client:
    """A browser's test client (it builds its handler from SITE's MIDDLEWARE)."""
    return Client(HTTP_USER_AGENT=BROWSER, REMOTE_ADDR=address)


def cookie_guest() -> Page:
    guest = client("10.97.0.1")
    guest.get("/forum/")  # the cookie
    return guest.get


def live_member() -> Page:
    member = client("10.97.0.2")
    member.force_login(User.objects.get(username="bench0"))
    member.get("/forum/block/")
    return member.get


_newcomers: Iterator[int] = itertools.count()


def newcomer() -> Page:
    """A new address and no cookie each page."""

    def page(url: str) -> Any:
        n = next(_newcomers)
        return client(f"10.{64 + (n >> 16)}.{n >> 8 & 255}.{n & 255}").get(url)

    return page


def returning_guest() -> Page:
    """A guest online (populate) whose cookie expired while they are inside the window."""
    count = itertools.count()
    return lambda url: client(returning_address(next(count))).get(url)


# The cap on a process's fresh reads a second, if the block's rule has one by this name.
CAP = "FRESH_READS_PER_SECOND"


def caps() -> list[str]:
    """The whos_online modules that cap a process's fresh reads a second (by CAP)."""
    return [
        n for n, m in list(sys.modules.items()) if n.startswith("whos_online") and hasattr(m, CAP)
    ]


@contextmanager
def uncapped() -> Iterator[None]:
    """No cap on fresh reads, as for newcomers arriving slower than the cap."""
    with ExitStack() as stack:
        for name in caps():
            stack.enter_context(mock.patch.object(sys.modules[name], CAP, 10**9))
        yield
