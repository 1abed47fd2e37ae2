"""Who is behind a request, and recording them: shared by the middleware and rooms.

A visit is recorded only if the request is one (a GET, HEAD or POST the site
does not exclude) and the view succeeded (a 2xx or 3xx response; in a room a
2xx), so 404 probes, CSRF failures and OPTIONS requests write nothing, and a
redirect to the login page puts nobody in a room. Yet a visitor counts
on their own first page: a block (``{% whos_online %}``, ``{% whos_here %}``)
rendered while the view runs makes the due record just before it reads,
unless the URL did not resolve or the view raised (the error pages Django
renders then). Otherwise the record is made after the view.
"""

from __future__ import annotations

from typing import Any, Callable

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import SynchronousOnlyOperation
from django.http import HttpRequest, HttpResponseBase

from whos_online import access
from whos_online.conf import conf
from whos_online.room_names import room_kind
from whos_online.store import failsafe, recording
from whos_online.store.addresses import Address
from whos_online.visitors.client_ip import client_address, note_unknown_proxy
from whos_online.visitors.guests import guest_rooms, keep_guest_rooms

VISIT_METHODS = frozenset({"GET", "HEAD", "POST"})
# Where a request keeps its due records: {room or None (the site): DueRecord}.
DUE_RECORDS = "_whos_online_visits"


def is_visit(request: HttpRequest) -> bool:
    """A GET, HEAD or POST to a path the site does not exclude."""
    if request.method not in VISIT_METHODS:
        return False
    paths = conf.exclude_paths
    return paths is None or not paths.match(request.path_info)


class DueRecord:
    """A record due for one request, on the site or in a room, made at most once."""

    def __init__(self, request: HttpRequest, room: str | None = None) -> None:
        self.request, self.room = request, room
        self.recorded: bool | None = None  # None: not tried yet
        self.cancelled = False
        _kept(request, DUE_RECORDS, dict)[room] = self

    def record(self) -> bool:
        """Record now unless done or cancelled; True if the record was made.

        In a room only where ``WHOS_ONLINE_ACCESS`` answers "join".
        """
        if self.recorded is None and not self.cancelled:
            joins = self.room is None or getattr(access_of(self.request, self.room), "join", False)
            self.recorded = joins and record_visit(self.request, self.room)
        return bool(self.recorded)

    def finish(self, response: HttpResponseBase) -> bool:
        """After the view: record if the view succeeded; True if it was recorded. A guest's
        rooms, changed by a room's record, go into their cookie."""
        recorded = _succeeded(response, self.room) and self.record()
        self.cancelled = True  # a block rendered later (in a streamed body) records nothing
        rooms = getattr(self.request, GUEST_ROOMS, None)
        if rooms is not None:
            delattr(self.request, GUEST_ROOMS)
            keep_guest_rooms(self.request, response, rooms)
        return recorded


async def load_user_async(request: HttpRequest, room: str | None = None) -> None:
    """Resolve ``request.user``, and ``WHOS_ONLINE_ACCESS``'s answer for ``room``, in a
    thread, so a block on the event loop needs no database."""
    asks = room is not None and conf.access is not None
    if asks or conf.session_cookie_name in request.COOKIES:
        await sync_to_async(_load_user)(request, room if asks else None)


def _load_user(request: HttpRequest, room: str | None) -> None:
    if conf.session_cookie_name in request.COOKIES:
        request.user.is_authenticated  # loads the session and the user
    if room is not None:
        access_of(request, room)


async def finish_async(visit: DueRecord, response: HttpResponseBase) -> bool:
    """``visit.finish()`` from async code: the record in a thread, if one is still due."""
    if visit.recorded is None and not visit.cancelled and _succeeded(response, visit.room):
        return await sync_to_async(visit.finish)(response)
    return visit.finish(response)


def _succeeded(response: HttpResponseBase, room: str | None) -> bool:
    """A 2xx or 3xx visits the site; a room only a 2xx: a redirect (to the login page, to
    the canonical URL) showed nobody the room."""
    return 200 <= response.status_code < (400 if room is None else 300)


def viewer(request: Any) -> Any:
    """Who is looking at a block: ``request.user``, or None when that is surely anonymous.

    The user WhosOnlineMiddleware was handed (AuthenticationMiddleware's, which
    comes first), without a session cookie, is nobody: reading it would load an
    empty session for nothing (a poll's largest cost) and add ``Vary: Cookie``.
    A user set after it (a login, another auth middleware, a test) is read as is.
    """
    user = getattr(request, "user", None)
    handed = user is not None and user is getattr(request, HANDED, None)
    return None if handed and conf.session_cookie_name not in request.COOKIES else user


# Where a request keeps its policy's answers: {room or None (the site): RoomAccess | None}.
ACCESS = "_whos_online_access"


def access_of(request: Any, room: str | None = None) -> access.RoomAccess | None:
    """What ``WHOS_ONLINE_ACCESS`` lets this request's viewer do in ``room`` (None: the site).

    Asked once per request and namespace. Without a policy a page's rooms are
    open, as the site is: the view that declares a room decides who opens it.
    """
    policy = conf.access
    if policy is None:
        return access.JOIN
    kept: dict[str | None, access.RoomAccess | None] = (
        {} if request is None else _kept(request, ACCESS, dict)
    )
    if room not in kept:
        kept[room] = access.asked(policy, viewer(request) or AnonymousUser(), room)
    return kept[room]


# Where the middleware keeps the request.user it was handed, unread (the
# middleware sets it first thing, on every request).
HANDED = "_whos_online_handed_user"
# What the middleware does to a page's response, set while the page renders: a
# set of SOCKET_PAGE and STAFF_PAGE. One attribute, so a request that set none
# (most) costs the middleware one look.
PAGE_MARKS = "_whos_online_page_marks"
# A member's page that opens a live socket (see mark_socket_page).
SOCKET_PAGE = "socket"
# A page whose block shows the staff view (see mark_staff_page).
STAFF_PAGE = "staff"


def _mark_page(request: Any, mark: str) -> None:
    _kept(request, PAGE_MARKS, set).add(mark)


def mark_socket_page(request: Any) -> None:
    """This page opens a member's socket: its response drops their "online" cookie.

    Their next page is then recorded, so once this page's socket closes the
    member still browsing is seen by that page, not left idle by the close for
    as long as the cookie would have throttled them.
    """
    user = viewer(request)
    if user is not None and user.is_authenticated:
        _mark_page(request, SOCKET_PAGE)


def mark_staff_page(request: Any) -> None:
    """This page shows hidden members: the middleware makes its response ``private``.

    A shared cache (a CDN, a proxy, Django's per-site cache outside the
    middleware) then never serves it to another visitor.
    """
    if request is not None:
        _mark_page(request, STAFF_PAGE)


def record_before_reading(request: Any, room: str | None = None) -> None:
    """Make the request's due record for ``room`` now, so the block about to read counts it.

    Not on an error page: the URL did not resolve (resolver_match is None) or
    the view raised (the visit was cancelled).
    """
    visit = getattr(request, DUE_RECORDS, {}).get(room)
    if visit is None or getattr(request, "resolver_match", None) is None:
        return
    try:
        visit.record()
    except SynchronousOnlyOperation:
        # On the event loop (an async view), finding a member or the site's
        # card and hidden callbacks may need the database: the record then
        # follows the view, in a thread.
        pass


def cancel(request: HttpRequest) -> None:
    """The view raised: the error page Django renders now is no visit."""
    for visit in getattr(request, DUE_RECORDS, {}).values():
        visit.cancelled = True


def record_visit(request: HttpRequest, room: str | None = None) -> bool:
    """Record the visitor, on the site or in ``room``; True if there is nothing to retry.

    False when Redis failed (the next request retries), for bots and prefetches
    (a cookie set on a prefetch would hide the real visit after it), for a
    guest without a usable address or on a site that counts no guests (no
    cookie keeps their pages shareable by caches), and for the live block's
    polls (a tab left open is not a visit).
    """
    # META, not request.headers: building the headers object costs more than the rest.
    if request.META.get("HTTP_X_WHOS_ONLINE") == "poll":
        return False
    # Without a session cookie nobody is logged in, and reading request.user
    # would load the session for nothing (and add Vary: Cookie); unless the view
    # logged someone in (a login POST), whom the login signal just recorded.
    user = viewer(request)
    if user is not None and user.is_authenticated:
        return record_logged_in(user, request, room)
    ip = _guest_address(request)  # parsed once: guest_id takes it as it is
    if ip is None:  # no cookie either: a later request (a fixed proxy setting) retries
        return False
    note_unknown_proxy(request, ip)
    if room is None:
        return _remember(request, room, failsafe.write(recording.record_guest, ip))
    # In one room of a kind at a time, as a member: out of the one their cookie names.
    rooms, kind = getattr(request, GUEST_ROOMS, None) or guest_rooms(request), room_kind(room)
    left = rooms.get(kind)
    visit = failsafe.write(
        recording.record_guest, ip, room=room, left=None if left == room else left
    )
    if not isinstance(visit, failsafe.Unavailable) and not visit.refused:
        moved = {other: name for other, name in rooms.items() if other != kind}
        setattr(request, GUEST_ROOMS, {**moved, kind: room})
    return _remember(request, room, visit)


def record_logged_in(
    user: Any, request: HttpRequest | None, room: str | None = None, *, login: bool = False
) -> bool:
    """Record a logged-in user with a fresh card, no longer as a guest; False if Redis failed.

    ``login``: they just logged in, so a block read before counted them as someone
    else (the guest they were): their page reads afresh.
    """
    where = request.path if request is not None and conf.track_pages else None
    ip = client_address(request) if request is not None and conf.track_guests else None
    visit = failsafe.write(recording.record_user, user, room=room, where=where, guest_ip=ip)
    return _remember(request, room, _arrival(visit) if login else visit)


def record_logged_out(request: HttpRequest | None) -> None:
    """Count a member who just logged out as the guest they now are, at once; their page
    reads afresh (a block read before lists the member)."""
    ip = None if request is None else _guest_address(request)
    if ip is not None:
        _remember(request, None, _arrival(failsafe.write(recording.record_guest, ip)))


def _arrival(
    visit: recording.Visit | failsafe.Unavailable,
) -> recording.Visit | failsafe.Unavailable:
    """A visit of someone who just changed who they are: no score of theirs from before."""
    return visit if isinstance(visit, failsafe.Unavailable) else visit._replace(before=None)


def _guest_address(request: HttpRequest) -> Address | None:
    """The address a guest is counted by; None where no guest is counted: a site that
    counts none, a bot, or no usable address."""
    if not conf.track_guests:
        return None
    is_bot = conf.is_bot
    if is_bot is not None and is_bot(request):
        return None
    return client_address(request)


def visit_of(request: HttpRequest | None, room: str | None = None) -> recording.Visit | None:
    """The visit this request recorded (on the site or in ``room``), if it recorded one."""
    return getattr(request, RECORDED, {}).get(room)


# Where a request keeps the visits it recorded: {room or None (the site): recording.Visit}.
RECORDED = "_whos_online_recorded"
# Where a request keeps a guest's rooms after a room's record, for their cookie.
GUEST_ROOMS = "_whos_online_guest_rooms"


def _remember(
    request: HttpRequest | None, room: str | None, visit: recording.Visit | failsafe.Unavailable
) -> bool:
    """Keep the visit on the request (the block tells from it whether a kept read counts it).

    A guest refused at the cap (a flood) is not counted, so not kept; yet
    nothing is to retry: they wait for the cookie to expire, as the flood does.
    """
    if isinstance(visit, failsafe.Unavailable):
        return False
    if request is not None and not visit.refused:
        _kept(request, RECORDED, dict)[room] = visit
    return True


def _kept(request: HttpRequest, name: str, make: Callable[[], Any]) -> Any:
    """What this request keeps under ``name`` (a dict, a set), made by ``make`` on first use."""
    kept = getattr(request, name, None)
    if kept is None:
        kept = make()
        setattr(request, name, kept)
    return kept
