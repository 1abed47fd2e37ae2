"""Records each visitor at most once per ``WHOS_ONLINE_COOKIE_AGE`` seconds."""

from __future__ import annotations

import hashlib
import time
from functools import lru_cache
from typing import Awaitable, Callable, cast

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control
from django.utils.http import http_date

from whos_online.conf import conf
from whos_online.visits import record_visit


class WhosOnlineMiddleware:
    """Record the user or guest behind a request, unless the "online" cookie says it is done.

    The cookie holds a digest of the session cookie it was set alongside. Django
    rotates the session key on login and flushes it on logout, so any change of
    identity makes the cookie stale, while an unchanged identity is recognised
    from the cookies alone: no session load, no user query, no Redis call.
    """

    sync_capable = True
    async_capable = True

    def __init__(
        self,
        get_response: Callable[[HttpRequest], HttpResponseBase]
        | Callable[[HttpRequest], Awaitable[HttpResponseBase]],
    ) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.async_mode:
            return self.__acall__(request)
        token = _due_token(request)
        # Before the view, so a visitor counts on their own first page; the
        # cookie only when recorded, so a failed write is retried.
        recorded = token is not None and record_visit(request)
        response = cast(HttpResponseBase, self.get_response(request))
        if token is not None and recorded:
            _set_cookie(request, response, token)
        return response

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        token = _due_token(request)
        recorded = token is not None and await sync_to_async(record_visit)(request)
        response = await cast(Awaitable[HttpResponseBase], self.get_response(request))
        if token is not None and recorded:
            _set_cookie(request, response, token)
        return response


def _due_token(request: HttpRequest) -> str | None:
    """The cookie value for this request's identity, or None if the cookie already holds it."""
    session_cookie, online_cookie = _cookie_names()
    cookies = request.COOKIES
    token = _token(cookies.get(session_cookie, ""))
    return None if cookies.get(online_cookie) == token else token


# (the settings object, the session cookie's name, the online cookie's name)
_names: tuple[object, str, str] | None = None


def _cookie_names() -> tuple[str, str]:
    """The session and online cookies' names, read once per settings object.

    Each read through Django's lazy settings costs about a microsecond, as much
    as the rest of a request whose cookie is valid.
    """
    global _names
    source, names = conf.settings_source(), _names
    if names is None or names[0] is not source:
        names = _names = (source, settings.SESSION_COOKIE_NAME, conf.cookie_name)
    return names[1], names[2]


@lru_cache(maxsize=4096)
def _token(session: str) -> str:
    """The digest of a session cookie; cached, as each visitor sends theirs on every request."""
    return hashlib.blake2b(session.encode(), digest_size=12, person=b"whos_online").hexdigest()


def _set_cookie(request: HttpRequest, response: HttpResponseBase, token: str) -> None:
    # A shared cache must not replay one visitor's cookie to the next.
    if response.has_header("Cache-Control"):
        patch_cache_control(response, private=True)
    else:
        response.headers["Cache-Control"] = "private"  # what patching no header gives, cheaper
    max_age = conf.cookie_age
    response.set_cookie(
        conf.cookie_name,
        token,
        max_age=max_age,
        expires=_expires(int(time.time()) + max_age),
        httponly=True,
        samesite="Lax",
        secure=request.is_secure() or settings.SESSION_COOKIE_SECURE,
    )


@lru_cache(maxsize=2)
def _expires(at: int) -> str:
    """The cookie's Expires date, formatted once per second rather than once per visitor."""
    return http_date(at)
