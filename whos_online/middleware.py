"""Records each visitor at most once per half window (``conf.cookie_age``)."""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Awaitable, Callable, NamedTuple

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.utils.http import http_date

from whos_online.conf import conf, on_settings_change
from whos_online.rooms.url_names import due as url_room
from whos_online.rooms.url_names import enter as enter_url_room
from whos_online.store import recovery
from whos_online.visitors.client_ip import address_of, believed_header, client_address
from whos_online.visitors.guests import network
from whos_online.visitors.visits import (
    HANDED,
    PAGE_MARKS,
    SOCKET_PAGE,
    STAFF_PAGE,
    DueRecord,
    cancel,
    finish_async,
    is_visit,
    load_user_async,
)


class WhosOnlineMiddleware:
    """Record the user or guest behind a request, unless the "online" cookie says it is done.

    The cookie holds the time it was issued, signed with SECRET_KEY together
    with the identity it stands for: the session cookie it was set alongside
    or, for a guest without a session, the guest's network. Django rotates the
    session key on login and flushes it on logout, so any change of identity
    makes the cookie stale, while an unchanged identity is recognised from the
    cookies alone: no session load, no user query, no Redis call. A cookie that
    is expired (replayed after ``conf.cookie_age``), another identity's,
    tampered with or garbage is simply not valid: the visitor is recorded.
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
        # Django calls a process_view only where the middleware has one: a site that maps
        # no URL name to a room pays nothing for the mapping, not even a look for the
        # room's visit after the view. Django runs a sync process_view of an async
        # chain in a thread; the async one needs none.
        self.maps_rooms = bool(conf.rooms)
        if self.maps_rooms:
            self.process_view = self._aprocess_view if self.async_mode else self._process_view

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.async_mode:
            return self.__acall__(request)
        # The user the middleware was handed, by identity (a lazy user stays unread):
        # see visits.viewer.
        setattr(request, HANDED, getattr(request, "user", None))
        # Most requests: the cookie says the site's record is done.
        visit = DueRecord(request) if _due(request) and is_visit(request) else None
        response: HttpResponseBase = self.get_response(request)  # type: ignore[assignment]
        if self.maps_rooms:
            room = url_room(request)
            if room is not None:
                room.finish(response)
        if visit is None and not hasattr(request, PAGE_MARKS):
            return response  # most requests: nothing more to do
        return _after(request, response, visit is not None and visit.finish(response))

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        setattr(request, HANDED, getattr(request, "user", None))
        visit = DueRecord(request) if _due(request) and is_visit(request) else None
        response: HttpResponseBase = await self.get_response(request)  # type: ignore[misc]
        if self.maps_rooms:
            room = url_room(request)
            if room is not None:
                await finish_async(room, response)
        if visit is None and not hasattr(request, PAGE_MARKS):
            return response
        return _after(request, response, visit is not None and await finish_async(visit, response))

    process_view: Callable[[HttpRequest, object, object, object], Awaitable[None] | None]

    def _process_view(
        self, request: HttpRequest, view: object, args: object, kwargs: object
    ) -> None:
        """Make the visit of the room WHOS_ONLINE_ROOMS names for the URL due."""
        enter_url_room(request)

    async def _aprocess_view(
        self, request: HttpRequest, view: object, args: object, kwargs: object
    ) -> None:
        visit = enter_url_room(request)
        if visit is not None:  # the room's block reads on the event loop
            await load_user_async(request, visit.room)

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        """The view raised: the error page Django renders instead is no visit."""
        cancel(request)


def _after(request: HttpRequest, response: HttpResponseBase, recorded: bool) -> HttpResponseBase:
    """The cookie only when recorded, so a failed write is retried; none for a page that
    opens a member's socket (see visits.mark_socket_page). A staff page is private."""
    marks = getattr(request, PAGE_MARKS, ())
    if STAFF_PAGE in marks:
        patch_cache_control(response, private=True)
        patch_vary_headers(response, ["Cookie"])
    if SOCKET_PAGE in marks:
        response.delete_cookie(conf.cookie_name)
    elif recorded:
        _set_cookie(request, response)
    return response


class _Throttle(NamedTuple):
    """What the throttled path reads from settings, read once until a setting changes."""

    cookie_name: str
    cookie_age: int
    session_cookie_name: str
    forwarding_header: str | None


@lru_cache(maxsize=1)
def _throttle() -> _Throttle:
    return _Throttle(conf.cookie_name, conf.cookie_age, conf.session_cookie_name, believed_header())


def _due(request: HttpRequest) -> bool:
    """Whether the request comes without a valid "online" cookie for its identity."""
    # Most requests go no further than this function: the settings it needs are
    # one cached call, unpacked rather than read as attributes.
    cookie_name, cookie_age, session_cookie_name, header = _throttle()
    cookies = request.COOKIES
    value = cookies.get(cookie_name)
    if value is None or len(value) > MAX_VALUE:
        return True
    session = cookies.get(session_cookie_name)
    if session:
        issued = _issued(value, "session", session)
    else:
        meta = request.META
        forwarded = meta.get(header) if header else None
        # A long header is not kept as a cache key (memory): worked out each time.
        short = forwarded is None or len(forwarded) <= MAX_CACHED_HEADERS
        check = _guest_issued if short else _guest_issued.__wrapped__
        issued = check(value, meta.get("REMOTE_ADDR"), forwarded)
    if issued is None:
        return True
    # Either way round: a server whose clock runs ahead may have issued it. One
    # issued before Redis's data began stands for a record it lost (see
    # recovery), unless that is still ahead of this clock (it stepped back).
    now = time.time()
    return abs(now - issued) >= cookie_age or issued < recovery.began <= now


def _identity(request: HttpRequest) -> str | None:
    """What a cookie for this request stands for: the session, or a guest's network.

    None for a guest without a session or a usable address: such a guest gets
    no cookie, so a later request retries.
    """
    session = request.COOKIES.get(conf.session_cookie_name)
    if session:
        return "session:" + session
    ip = client_address(request)
    return None if ip is None else "guest:" + network(ip)


SALT = "whos_online.online"
# Our values are about 50 characters; a longer one is forged and not worth a look.
MAX_VALUE = 100
# A forwarding header longer than this is not cached by value (memory).
MAX_CACHED_HEADERS = 512


@lru_cache(maxsize=1)
def _signer() -> signing.Signer:
    """One Signer until a setting changes: SECRET_KEY and its fallbacks."""
    return signing.Signer(salt=SALT)


def _signed(issued: str, identity: str) -> str:
    # The identity is signed with the time but left out of the value, which shows
    # neither the session key nor the address.
    return f"{issued}|{identity}"


@lru_cache(maxsize=4096)
def _issued(value: str, kind: str, who: str) -> int | None:
    """When ``value`` was issued for the identity ``kind:who``, or None if it was not.

    Cached: each visitor sends the same cookies on every request, and the
    signature check costs more than the rest of the throttled path. The expiry
    is checked by the caller on every request. Emptied when a setting changes,
    so an overridden SECRET_KEY does not reuse an old answer.
    """
    issued, _, signature = value.rpartition(":")
    try:
        _signer().unsign(f"{_signed(issued, f'{kind}:{who}')}:{signature}")
        return signing.b62_decode(issued)
    except (signing.BadSignature, ValueError):
        return None


@lru_cache(maxsize=4096)
def _guest_issued(value: str, remote: object, forwarded: object) -> int | None:
    """``_issued`` for a guest without a session, cached by the headers its address comes from."""
    ip = address_of(remote, forwarded)
    return None if ip is None else _issued(value, "guest", network(ip))


on_settings_change(
    _throttle.cache_clear, _signer.cache_clear, _issued.cache_clear, _guest_issued.cache_clear
)


def issued_at(request: HttpRequest) -> int | None:
    """When the "online" cookie the request carries was issued (whole seconds), or None.

    Unchecked: for a request the middleware let through with it, that is when
    the visitor was last recorded, perhaps by another process.
    """
    value = request.COOKIES.get(conf.cookie_name)
    if not value or len(value) > MAX_VALUE:
        return None
    try:
        return signing.b62_decode(value.partition(":")[0])
    except ValueError:
        return None


def settled_since(request: HttpRequest) -> int | None:
    """When the valid "online" cookie this request carries was issued: its visitor has been
    who they are (this session, or this guest) since then. None without a valid one."""
    return None if _due(request) else issued_at(request)


def _cookie_value(identity: str) -> str:
    issued = signing.b62_encode(int(time.time()))
    signature = _signer().sign(_signed(issued, identity)).rpartition(":")[2]
    return f"{issued}:{signature}"


def _set_cookie(request: HttpRequest, response: HttpResponseBase) -> None:
    identity = _identity(request)
    if identity is None:
        return
    # A shared cache must not replay one visitor's cookie to the next.
    if response.has_header("Cache-Control"):
        patch_cache_control(response, private=True)
    else:
        response.headers["Cache-Control"] = "private"  # what patching no header gives, cheaper
    max_age = conf.cookie_age
    response.set_cookie(
        conf.cookie_name,
        _cookie_value(identity),
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
