"""The JSON endpoint behind the live block (``include("whos_online.urls")``)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
)
from django.utils.cache import get_conditional_response, patch_cache_control
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe

from whos_online.conf import conf
from whos_online.rendering.announcements import SHOWN_HEADER, since_shown
from whos_online.rendering.block import SITE_TEMPLATE, render_block, site_block
from whos_online.store.reading import Summary
from whos_online.visitors.beacon import signed_rooms
from whos_online.visitors.visits import page_of


@require_GET
def live(request: HttpRequest) -> HttpResponse:
    """Counts, listed members and the peak, plus the block rendered by its template.

    The ``html`` lets the script swap the block in place with the site's own
    template override and translations. ``available`` is false while Redis is
    down; the response is still a 200, like every page while Redis is down.
    A poll answers from the block cache, and the body is built once per cached
    block; its ``ETag`` lets the browser revalidate (a 304 when nothing changed).
    A poll that sends the members its block showed also gets ``announce``, the
    change in a short sentence, as a push carries it. ``WHOS_ONLINE_ACCESS``
    decides what a viewer gets: the counts only (no member), or a 403.
    """
    block = site_block(request)  # the tag's own read, so the same staff rule, without live=
    if block is None:  # WHOS_ONLINE_ACCESS shows this viewer nothing
        return HttpResponseForbidden()
    block["beacon"] = None  # the page's own block has sent it
    html = render_block(SITE_TEMPLATE, block)
    online = block["online"]
    said = since_shown(request.headers.get(SHOWN_HEADER), online) if online else ""
    body, etag = _body(online, html, said, not block["counts_only"])
    response = get_conditional_response(request, etag=etag) or HttpResponse(
        body, content_type="application/json"
    )
    response["ETag"] = etag
    # Per viewer (staff see hidden members): only the browser may keep it, and must ask
    # again. No Vary for SHOWN_HEADER: the ETag is of the body, announcement included.
    patch_cache_control(response, private=True, no_cache=True)
    return response


@require_safe
@never_cache
def beacon(request: HttpRequest) -> HttpResponse:
    """The beacon of a block on a page a cache shares (``visitors.beacon``): records its
    visitor as the middleware records a page's, on the site (the middleware then gives
    them their cookie) and in each ``room`` the page showed, signed by the block. A 400
    for a room not signed here, which records nobody."""
    rooms, page = signed_rooms(request.GET.getlist("room")), page_of(request)
    if rooms is None or page is None:
        return HttpResponseBadRequest()
    page.record_due()
    for room in rooms:
        page.enter(room)
    return HttpResponse(status=204)


beacon.records_its_visitor = True  # type: ignore[attr-defined]


def _body(online: Summary | None, html: str, said: str, names: bool) -> tuple[bytes, str]:
    """The JSON body and its ETag, kept with a cached summary (the same ``html`` object)
    unless it says a change, which is one poller's own."""
    key = ("live", html)
    # A summary from the block cache keeps what was built from it (a dict of its own).
    kept: dict[Any, Any] = online.rendered if online is not None and not said else {}
    if key in kept:
        made: tuple[bytes, str] = kept[key]
        return made
    data: dict[str, Any] = {"available": online is not None, "html": html}
    if online is not None:
        data.update(
            members=[member.as_json() for member in online.members],
            more=online.more if names else 0,
            users=online.user_count,
            hidden=online.hidden_count,
            guests=online.guest_count,
            total=online.total,
            window_minutes=conf.window_minutes,
            peak=online.peak and {"count": online.peak.count, "at": online.peak.at.isoformat()},
        )
    if said:
        data["announce"] = said
    body = json.dumps(data).encode()
    made = body, f'"{hashlib.blake2b(body, digest_size=12).hexdigest()}"'
    kept[key] = made
    return made
