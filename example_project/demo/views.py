"""The demo's pages. The who's-online block itself comes from base.html."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from redis.exceptions import RedisError

from demo.simulation import THREAD_ROOM, simulate
from whos_online import presence
from whos_online.conf import conf
from whos_online.rooms import in_room

# What one click on the home page's button adds.
BUTTON_MEMBERS = 5
BUTTON_GUESTS = 15
# The members page lists at most this many names, one Redis round trip each for last_seen.
MEMBERS_PAGE_LIMIT = 100


def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "home.html",
        {
            "button_visitors": BUTTON_MEMBERS + BUTTON_GUESTS,
            "window_minutes": conf.window_minutes,
        },
    )


def about(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "about.html",
        {
            "max_age": settings.WHOS_ONLINE_MAX_AGE,
            "cookie_age": settings.WHOS_ONLINE_COOKIE_AGE,
        },
    )


@in_room(THREAD_ROOM)
def thread(request: HttpRequest) -> HttpResponse:
    """A forum thread with "who is reading": the decorator records, the tag lists."""
    return render(request, "thread.html", {"room": THREAD_ROOM})


def profile(request: HttpRequest, username: str) -> HttpResponse:
    """A member's presence dot and "last seen", kept for WHOS_ONLINE_RETENTION."""
    try:
        seen = presence.last_seen_many([username], include_hidden=request.user.is_staff)[username]
    except RedisError:
        seen = None
    return render(
        request, "profile.html", {"username": username, "names": [username], "seen": seen}
    )


def members(request: HttpRequest) -> HttpResponse:
    """Everyone online with their last-seen time, read with the Python API.

    Unlike the template tag, the presence API does not fail open, so this page
    catches RedisError itself and says so instead of raising a 500.
    """
    rows: list[tuple[str, datetime | None, str]] = []
    counts: tuple[int, int] | None = None
    error = ""
    try:
        names = presence.online_users(limit=MEMBERS_PAGE_LIMIT)
        # One round trip each for the whole page, however many rows it has.
        # last_seen may be None if a member was pruned between the calls.
        seen = presence.last_seen_many(names)
        states = presence.statuses(names)
        rows = [(name, seen[name], states[name]) for name in names]
        counts = (presence.user_count(), presence.guest_count())
    except RedisError as exc:
        error = f"{type(exc).__name__}: {exc}"
    return render(
        request,
        "members.html",
        {
            "rows": rows,
            "counts": counts,
            "error": error,
            "limit": MEMBERS_PAGE_LIMIT,
            "window_minutes": conf.window_minutes,
        },
    )


@require_POST
def simulate_visitors(request: HttpRequest) -> HttpResponseRedirect:
    """The home page's button: the embedded Redis can only be seeded from inside the server."""
    try:
        visitors = simulate(BUTTON_MEMBERS, BUTTON_GUESTS)
    except RedisError as exc:
        messages.error(request, f"Redis failed, nobody was simulated: {exc}")
    else:
        messages.success(
            request,
            f"Simulated {len(visitors.usernames)} members and {len(visitors.guest_ips)} guests.",
        )
    return redirect("home")
