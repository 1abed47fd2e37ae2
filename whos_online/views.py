"""The JSON endpoint behind the live block (``include("whos_online.urls")``)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control
from django.views.decorators.http import require_GET

from whos_online.conf import conf
from whos_online.presence import Summary
from whos_online.templatetags.whos_online import SITE_TEMPLATE, render_block, site_block


@require_GET
def live(request: HttpRequest) -> HttpResponse:
    """Counts, listed members and the peak, plus the block rendered by its template.

    The ``html`` lets the script swap the block in place with the site's own
    template override and translations. ``available`` is false while Redis is
    down; the response is still a 200, like every page while Redis is down.
    A poll answers from the block cache, and the body is built once per cached
    block; its ``ETag`` lets the browser revalidate (a 304 when nothing changed).
    """
    block = site_block(request)  # the tag's own read, so the same staff rule, without live=
    html = render_block(SITE_TEMPLATE, block)
    body, etag = _body(block["online"], html)
    response = get_conditional_response(request, etag=etag) or HttpResponse(
        body, content_type="application/json"
    )
    response["ETag"] = etag
    # Per viewer (staff see hidden members): only the browser may keep it, and must ask again.
    patch_cache_control(response, private=True, no_cache=True)
    return response


def _body(online: Summary | None, html: str) -> tuple[bytes, str]:
    """The JSON body and its ETag, kept with a cached summary (the same ``html`` object)."""
    key = ("live", html)
    if online is not None and key in online.rendered:
        made: tuple[bytes, str] = online.rendered[key]
        return made
    data: dict[str, Any] = {"available": online is not None, "html": html}
    if online is not None:
        data.update(
            members=[member.as_json() for member in online.members],
            more=online.more,
            users=online.user_count,
            hidden=online.hidden_count,
            guests=online.guest_count,
            total=online.total,
            window_minutes=conf.window_minutes,
            peak=online.peak and {"count": online.peak.count, "at": online.peak.at.isoformat()},
        )
    body = json.dumps(data).encode()
    made = body, f'"{hashlib.blake2b(body, digest_size=12).hexdigest()}"'
    if online is not None:
        online.rendered[key] = made
    return made
