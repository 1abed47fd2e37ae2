"""Who is behind a request, and recording them: shared by the middleware and rooms."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from whos_online import failsafe, presence
from whos_online.client_ip import client_address
from whos_online.conf import conf


def record_visit(request: HttpRequest, room: str | None = None) -> bool:
    """Record the visitor, on the site or in ``room``; True if there is nothing to retry.

    False when Redis failed (the next request retries), for bots and prefetches
    (a cookie set on a prefetch would hide the real visit after it) and for the
    live block's polls (a tab left open is not a visit).
    """
    # META, not request.headers: building the headers object costs more than the rest.
    if request.META.get("HTTP_X_WHOS_ONLINE") == "poll":
        return False
    # Without a session cookie nobody is logged in, and reading request.user
    # would load the session for nothing (and add Vary: Cookie).
    if settings.SESSION_COOKIE_NAME in request.COOKIES and request.user.is_authenticated:
        return record_member(request.user, request, room)
    if not conf.track_guests:
        return True
    is_bot = conf.is_bot
    if is_bot is not None and is_bot(request):
        return False
    ip = client_address(request)  # parsed once: guest_id takes it as it is
    if ip is None:
        return True
    return _remember(request, room, failsafe.write(presence.record_guest, ip, room))


def record_member(user: Any, request: HttpRequest | None, room: str | None = None) -> bool:
    """Record a logged-in user with a fresh card, no longer as a guest; False if Redis failed."""
    where = request.path if request is not None and conf.track_pages else None
    ip = client_address(request) if request is not None and conf.track_guests else None
    return _remember(request, room, failsafe.write(presence.record_user, user, room, where, ip))


def visit_of(request: HttpRequest | None, room: str | None = None) -> presence.Visit | None:
    """The visit this request recorded (on the site or in ``room``), if it recorded one."""
    return getattr(request, VISITS, {}).get(room)


VISITS = "_whos_online_visits"


def _remember(request: HttpRequest | None, room: str | None, visit: presence.Visit | None) -> bool:
    """Keep the visit on the request (the block merges it into an older cached read)."""
    if visit is None:
        return False
    if request is not None:
        request.__dict__.setdefault(VISITS, {})[room] = visit
    return True
