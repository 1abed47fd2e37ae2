"""The demo's pages. The who's-online block itself comes from base.html."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.html import escape, strip_tags
from django.views.decorators.http import require_GET, require_POST
from redis.exceptions import RedisError

from demo.simulation import THREAD_ROOM, simulate
from whos_online import presence
from whos_online.conf import conf
from whos_online.rendering import blockcache
from whos_online.rooms.pages import in_room
from whos_online.store import failsafe
from whos_online.store.members import default_card

# What one click on the home page's button adds.
BUTTON_MEMBERS = 5
BUTTON_GUESTS = 15
# The members page lists at most this many members (one Redis round trip for all).
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
            "cookie_age": conf.cookie_age,
            "key_prefix": conf.key_prefix,
        },
    )


@in_room(THREAD_ROOM)
def thread(request: HttpRequest) -> HttpResponse:
    """A forum thread with "who is reading": the decorator records, the tag lists."""
    return render(request, "thread.html", {"room": THREAD_ROOM})


def profile(request: HttpRequest, pk: int) -> HttpResponse:
    """A member's name, avatar, presence dot and "last seen" (kept for WHOS_ONLINE_RETENTION).

    The name and avatar come from the same card the block shows; the presence
    read passes the viewer, so a hidden member reads as offline and never seen
    to anyone but staff. Read fail-open: while Redis is down the page says so
    (``failsafe.UNAVAILABLE``) instead of "not seen", which ``None`` means.
    """
    member = get_object_or_404(get_user_model(), pk=pk)
    card = conf.member_card(member)
    seen = failsafe.call(presence.last_seen, member, viewer=request.user)
    context = {
        "member": member,
        "name": card.get("name") or f"Member #{member.pk}",
        "avatar": card.get("avatar"),
        "members": [member],  # for {% presence_statuses %}
        "seen": seen,
        "unavailable": seen is failsafe.UNAVAILABLE,
    }
    return render(request, "profile.html", context)


def members(request: HttpRequest) -> HttpResponse:
    """Everyone online with their last-seen time, read with the Python API in one round trip.

    ``viewer=request.user``: hidden members are listed (and marked) for staff
    only; everyone else gets the safe default, which leaves them out. Unlike the
    template tag, the presence API does not fail open, so this page catches
    RedisError itself and says so instead of raising a 500.
    """
    online = None
    error = ""
    try:
        online = presence.summary(limit=MEMBERS_PAGE_LIMIT, viewer=request.user)
    except RedisError as exc:
        error = f"{type(exc).__name__}: {exc}"
    return render(
        request,
        "members.html",
        {
            "online": online,
            "error": error,
            "limit": MEMBERS_PAGE_LIMIT,
            "window_minutes": conf.window_minutes,
        },
    )


# Initials on a colour picked from the pk: an avatar for everyone, no external service.
AVATAR = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">\
<rect width="64" height="64" rx="32" fill="hsl({hue}, 55%, 42%)"/>\
<text x="32" y="32" dy=".35em" text-anchor="middle" fill="#fff" \
font-family="system-ui, sans-serif" font-size="{size}" font-weight="600">{initials}</text></svg>"""


# Two dots, a member and a guest: the demo's icon, so no page logs a 404 for it.
FAVICON = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">\
<rect width="32" height="32" rx="7" fill="#1f2937"/>\
<circle cx="11" cy="16" r="6" fill="#16a34a"/><circle cx="22" cy="16" r="6" fill="#2563eb"/></svg>"""


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(FAVICON, content_type="image/svg+xml")
    response["Cache-Control"] = "max-age=86400"
    return response


@require_GET
def avatar(request: HttpRequest, pk: int) -> HttpResponse:
    """``/avatars/<pk>.svg``: the member's initials on a colour of their own."""
    user = get_object_or_404(get_user_model(), pk=pk)
    initials = initials_of(default_card(user)["name"]) or "#"
    letters = len(initials.replace("\u200c", ""))
    svg = AVATAR.format(
        hue=round(pk * 137.508) % 360,  # the golden angle: neighbouring pks look apart
        size=34 if letters < 2 else 28,
        initials=escape(initials),
    )
    response = HttpResponse(svg, content_type="image/svg+xml")
    # A new name shows in the block within the cookie age; so does its avatar.
    response["Cache-Control"] = f"max-age={conf.cookie_age}"
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return response


def initials_of(name: str) -> str:
    """The first letters of the first and last word: "Alice Archer" -> "AA", "frank" -> "F"."""
    words = re.findall(r"[^\W\d_]+", strip_tags(name))
    if not words:
        return ""
    picked = words[:1] + words[1:][-1:]
    # A zero-width non-joiner keeps joining scripts' initials apart (Arabic "ي" + "ا").
    return "\u200c".join(word[0] for word in picked).upper()


@require_POST
def simulate_visitors(request: HttpRequest) -> HttpResponseRedirect:
    """The home page's button: the embedded Redis can only be seeded from inside the server."""
    try:
        visitors = simulate(BUTTON_MEMBERS, BUTTON_GUESTS)
    except RedisError as exc:
        messages.error(request, f"Redis failed, nobody was simulated: {exc}")
    else:
        # The block is read from Redis at most once a second per process; the
        # page after the click shows the new crowd at once.
        blockcache.clear()
        messages.success(
            request,
            f"Simulated {len(visitors.members)} members and {len(visitors.guest_ips)} guests.",
        )
    return redirect("home")
