"""Who is behind a request, and recording them: shared by the middleware and rooms."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from whos_online import failsafe, presence
from whos_online.client_ip import client_ip
from whos_online.conf import conf


def record_visit(request: HttpRequest, room: str | None = None) -> bool:
    """Record the visitor, on the site or in ``room``; True if there is nothing to retry.

    False when Redis failed (the next request retries), for bots and prefetches
    (a cookie set on a prefetch would hide the real visit after it), for a
    guest without a usable address, and for the live block's polls (a tab left
    open is not a visit).
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
    ip = client_ip(request)
    if ip is None:  # no cookie either: a later request (a fixed proxy setting) retries
        return False
    return failsafe.call(presence.record_guest, ip, room) is not None


def record_member(user: Any, request: HttpRequest | None, room: str | None = None) -> bool:
    """Record a logged-in user with a fresh card, no longer as a guest; False if Redis failed."""
    where = request.path if request is not None and conf.track_pages else None
    ip = client_ip(request) if request is not None and conf.track_guests else None
    return failsafe.call(presence.record_user, user, room, where, ip) is not None
