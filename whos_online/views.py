"""The JSON endpoint behind the live block (``include("whos_online.urls")``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.template import Context
from django.template.loader import render_to_string
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from whos_online.conf import conf
from whos_online.templatetags.whos_online import whos_online


@never_cache  # per viewer (staff see hidden members) and always fresh: no shared cache
@require_GET
def live(request: HttpRequest) -> JsonResponse:
    """Counts, listed members and the peak, plus the block rendered by its template.

    The ``html`` lets the script swap the block in place with the site's own
    template override and translations. ``available`` is false while Redis is
    down; the response is still a 200, like every page while Redis is down.
    """
    # The tag's own context (so the same read, the staff rule included), without live=.
    block = whos_online(Context({"request": request}))
    online = block["online"]
    html = render_to_string("whos_online/whos_online.html", block, request)
    body: dict[str, Any] = {"available": online is not None, "html": html}
    if online is not None:
        body.update(
            members=[member.as_json() for member in online.members],
            more=online.more,
            users=online.user_count,
            hidden=online.hidden_count,
            guests=online.guest_count,
            total=online.total,
            window_minutes=conf.window_minutes,
            peak=online.peak and {"count": online.peak.count, "at": online.peak.at.isoformat()},
        )
    return JsonResponse(body)
