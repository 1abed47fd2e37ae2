"""A page view as whos_online sees it: one ``PageVisit`` per request, ``request.whos_online``.

The middleware makes it and owns every write (see ``middleware``); blocks only
read, asking it who is looking and when its records' replies came back.
"""

from __future__ import annotations

from itertools import count
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.utils.functional import SimpleLazyObject

from whos_online import access
from whos_online.conf import conf
from whos_online.room_names import room_kind
from whos_online.store import failsafe, recording
from whos_online.store.addresses import Address, guest_id
from whos_online.visitors.beacon import COUNTED, shared
from whos_online.visitors.client_ip import client_address, note_unknown_proxy
from whos_online.visitors.cookie import recorded_at, set_cookie
from whos_online.visitors.guests import guest_rooms, keep_guest_rooms

VISIT_METHODS = frozenset({"GET", "HEAD", "POST"})

# This process's order of events: a record's reply coming back, a block's read being sent.
# "Sent after that reply" is then a comparison of two numbers, whatever the clocks say.
events = count()


def is_visit(request: HttpRequest) -> bool:
    """A GET, HEAD or POST to a path the site does not exclude."""
    if request.method not in VISIT_METHODS:
        return False
    paths = conf.exclude_paths
    return paths is None or not paths.match(request.path_info)


class PageVisit:
    """What whos_online knows of one request: who is looking, what it recorded, and
    what its response needs (a cookie, ``private``)."""

    __slots__ = (
        "request", "replies", "online_before", "rooms", "private", "style_linked", "viewed",
        "recorded_site", "new_on_site", "moved_rooms", "_access",
    )  # fmt: skip

    def __init__(self, request: HttpRequest) -> None:
        self.request = request
        # When each record's reply came back (in ``events``), by room (None: the site):
        # a kept read sent before it cannot count this visitor.
        self.replies: dict[str | None, int] = {}
        # The namespaces where the record found them online already (see _online_before).
        self.online_before: set[str | None] = set()
        self.rooms: list[str] = []  # rooms recorded before the view, left if it fails
        self.private = False  # the page shows its viewer's own view
        self.style_linked = False
        self.viewed = False  # Django ran the view middleware (the URL resolved)
        self.recorded_site = False  # the "online" cookie is due
        self.new_on_site = False  # the site's record found no score of theirs before
        self.moved_rooms: dict[str, str] | None = None  # a guest's rooms, for their cookie
        self._access: dict[str | None, access.RoomAccess | None] = {}

    @property
    def viewer(self) -> Any:
        """Who is looking: ``request.user``, or None when that is surely anonymous.

        Without a session cookie, AuthenticationMiddleware's lazy user is nobody:
        reading it would load an empty session for nothing and add ``Vary: Cookie``.
        A user set otherwise (a login, ``RemoteUserMiddleware``'s header, a token
        middleware) is read as it is.
        """
        user = getattr(self.request, "user", None)
        lazy = isinstance(user, SimpleLazyObject)
        return None if lazy and conf.session_cookie_name not in self.request.COOKIES else user

    @property
    def member(self) -> Any:
        """The signed-in viewer, or None."""
        user = self.viewer
        return user if user is not None and user.is_authenticated else None

    def access(self, room: str | None = None) -> access.RoomAccess | None:
        """What ``WHOS_ONLINE_ACCESS`` lets the viewer do in ``room`` (None: the site),
        asked once per request and namespace. Without a policy a page's rooms are
        open, as the site is: the view that declares a room decides who opens it."""
        if room not in self._access:
            self._access[room] = access_of(self.viewer, room)
        return self._access[room]

    def record_due(self) -> None:
        """Record the visitor on the site unless their cookie is valid: before the view, or
        after a response no view made (a cache in front of the view answered)."""
        if is_visit(self.request) and recorded_at(self.request) is None:
            self.recorded_site = self.record()

    def due_after(self, response: HttpResponseBase) -> bool:
        """Whether the site's record is due after ``response``: no view ran (a cache inside
        the middleware answered), and it is a 2xx or 3xx (not a 404 for an unknown URL)."""
        return not self.viewed and 200 <= response.status_code < 400

    def enter(self, room: str) -> None:
        """Before a room's view: record the visitor in ``room``, where the policy lets them join."""
        if is_visit(self.request) and getattr(self.access(room), "join", False):
            if self.record(room):
                self.rooms.append(room)

    def record(self, room: str | None = None) -> bool:
        """Record the visitor, on the site or in ``room``; True if there is nothing to retry.

        False when Redis failed (the next request retries), for bots and prefetches
        (a cookie set on a prefetch would hide the real visit after it), for a guest
        without a usable address or on a site that counts no guests, and for the live
        block's polls (a tab left open is not a visit).
        """
        request = self.request
        if request.META.get("HTTP_X_WHOS_ONLINE") == "poll":
            return False
        member = self.member
        if member is not None:
            return self.record_member(member, room)
        ip = self.guest_address()
        if ip is None:
            return False
        note_unknown_proxy(request, ip)
        if room is None:
            return self._replied(room, failsafe.write(recording.record_guest, ip))
        # In one room of a kind at a time, as a member: out of the one their cookie names.
        rooms, kind = self.moved_rooms or guest_rooms(request), room_kind(room)
        left = rooms.get(kind)
        visit = failsafe.write(
            recording.record_guest, ip, room=room, left=None if left == room else left
        )
        if not isinstance(visit, failsafe.Unavailable) and not visit.refused:
            self.moved_rooms = {**{k: v for k, v in rooms.items() if k != kind}, kind: room}
        return self._replied(room, visit)

    def record_member(self, user: Any, room: str | None = None, *, login: bool = False) -> bool:
        """Record a signed-in member with a fresh card, no longer as a guest. ``login``: a
        read from before counted them as someone else (the guest they were)."""
        request = self.request
        ip = client_address(request) if conf.track_guests else None
        visit = failsafe.write(recording.record_user, user, room=room, guest_ip=ip)
        return self._replied(room, visit, arrival=login)

    def record_guest(self) -> None:
        """Count the visitor as the guest they now are (a logout), at once: a read from
        before counted them as the member they were."""
        ip = self.guest_address()
        if ip is not None:
            self._replied(None, failsafe.write(recording.record_guest, ip), arrival=True)

    def guest_address(self) -> Address | None:
        """The address a guest is counted by; None where no guest is counted: a site
        that counts none, a bot, or no usable address."""
        if not conf.track_guests:
            return None
        is_bot = conf.is_bot
        if is_bot is not None and is_bot(self.request):
            return None
        return client_address(self.request)

    def _replied(
        self,
        room: str | None,
        visit: recording.Visit | failsafe.Unavailable,
        arrival: bool = False,
    ) -> bool:
        """Note when the record's reply came back, and whether it found them online
        already (not for an ``arrival``: a login, a logout); False if Redis failed. A
        newcomer the guest cap refused (a flood) is not counted, yet nothing is to retry."""
        if isinstance(visit, failsafe.Unavailable):
            return False
        if not visit.refused:
            self.replies[room] = next(events)
            if not arrival and _online_before(visit, room):
                self.online_before.add(room)
            else:
                self.online_before.discard(room)
            if room is None:
                self.new_on_site = visit.before is None
        return True

    def settle(self, response: HttpResponseBase) -> None:
        """After the view: a page that was not shown is no visit. Its rooms (anything but
        a 2xx) are left again; a newcomer to the site (an error page: not a 2xx or
        3xx) is taken off again, and gets no cookie."""
        status = response.status_code
        if self.rooms and not 200 <= status < 300:
            for room in self.rooms:
                failsafe.write(recording.unrecord, self.visitor_id(), room)
            self.rooms, self.moved_rooms = [], None
        if self.recorded_site and not 200 <= status < 400:
            if self.new_on_site:
                failsafe.write(recording.unrecord, self.visitor_id())
            self.recorded_site = False

    def unshown(self, status: int) -> bool:
        """Whether a response of ``status`` leaves a record of this page to take back."""
        return (
            bool(self.rooms)
            and not 200 <= status < 300
            or (self.recorded_site and not 200 <= status < 400)
        )

    def visitor_id(self) -> tuple[str, bool]:
        """The member's pk (True) or the guest's id (False) this page recorded."""
        member = self.member
        if member is not None:
            return recording.member_id(member), True
        ip = self.guest_address()
        return ("" if ip is None else guest_id(ip)), False

    def respond(self, response: HttpResponseBase) -> HttpResponseBase:
        """The cookies the records call for (only when recorded, so a failed write is
        retried), and ``private`` for a page that shows its viewer's own view. A guest's
        page a cache may share gets no cookie: its block's beacon brings them."""
        if self.private:
            patch_cache_control(response, private=True)
            patch_vary_headers(response, ["Cookie"])
        due = self.recorded_site or self.moved_rooms is not None
        if due and self.member is None:
            if shared(self.request, response):
                return response
            # Counted by this very response: the block's beacon.js need not count them again.
            timing = response.get("Server-Timing")
            response["Server-Timing"] = f"{timing}, {COUNTED}" if timing else COUNTED
        if self.recorded_site:
            set_cookie(self.request, response)
        if self.moved_rooms is not None:
            keep_guest_rooms(self.request, response, self.moved_rooms)
        return response


def _online_before(visit: recording.Visit, room: str | None) -> bool:
    """Whether the record found the visitor online since at least a block-cache period
    before it: any read kept now (no older than that) was sent after their previous
    record, and inside its window, so it counts them. The app servers that wrote the
    two scores need clocks that agree within that period, not to the millisecond."""
    before, at = visit.before, visit.at
    return before is not None and at - conf.window(room) <= before <= at - conf.block_cache


def access_of(viewer: Any, room: str | None) -> access.RoomAccess | None:
    """What ``WHOS_ONLINE_ACCESS`` lets ``viewer`` (None: an anonymous visitor) do in
    ``room``; without a policy everything (see ``PageVisit.access``)."""
    policy = conf.access
    if policy is None:
        return access.JOIN
    return access.asked(policy, viewer or AnonymousUser(), room)


def page_of(request: Any) -> PageVisit | None:
    """The request's PageVisit (made here for a request the middleware did not see)."""
    if request is None:
        return None
    page = getattr(request, "whos_online", None)
    if page is None:
        page = request.whos_online = PageVisit(request)
    return page
