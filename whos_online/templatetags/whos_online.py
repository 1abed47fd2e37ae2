"""``{% load whos_online %}``: the ``{% whos_online %}`` block and presence dots.

``{{ user|presence }}`` gives "online", "idle" or "offline" (one Redis call)
for a user, a listed member or a pk; for a page of avatars, fetch them all
first in one call and pass the result::

    {% presence_statuses members as statuses %}
    {% for member in members %}<span class="dot {{ member|presence:statuses }}"></span>{% endfor %}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from django import template
from django.core.exceptions import ImproperlyConfigured
from django.urls import NoReverseMatch, reverse

from whos_online import blockcache, failsafe, presence
from whos_online.conf import conf, room_name
from whos_online.visits import record_before_reading

register = template.Library()

# Seconds; a faster poll would cost every open tab a request for little news.
MIN_REFRESH = 5


@register.inclusion_tag("whos_online/whos_online.html", takes_context=True)
def whos_online(context: template.Context, live: int = 0) -> dict[str, Any]:
    """Members (most recent first), counts and the window; ``online`` is None if Redis is down.

    ``live=N`` makes the block refresh itself: pushed over the WebSocket where
    ``WHOS_ONLINE_WEBSOCKET_URL`` says the site routes ``WhosOnlineConsumer``,
    else (and while the socket is down) every N seconds by polling the endpoint
    of ``whos_online.urls``. Without JavaScript it is the same block, as of page load.
    """
    record_before_reading(context.get("request"))  # the viewer counts on this very page
    block: dict[str, Any] = {
        "online": blockcache.for_request(context.get("request")),
        "window_minutes": conf.window_minutes,
        "request": context.get("request"),
    }
    if live:
        try:
            block["live_url"] = reverse("whos_online:live")
        except NoReverseMatch:
            raise ImproperlyConfigured(
                "{% whos_online live=… %} polls an endpoint: add "
                'path("whos-online/", include("whos_online.urls")) to your URLconf.'
            ) from None
        block["live"] = max(int(live), MIN_REFRESH)
        block["ws_url"] = conf.websocket_url
    return block


@register.inclusion_tag("whos_online/room.html", takes_context=True)
def whos_here(context: template.Context, room: Any, live: bool = False) -> dict[str, Any]:
    """Who is in ``room`` (recorded by the ``in_room`` view decorator); None if Redis is down.

    Any value names a room as ``in_room`` names it; an empty one is nobody's room.
    ``live=True`` subscribes to the room over the WebSocket (``WHOS_ONLINE_WEBSOCKET_URL``
    plus the room); a room has no polling endpoint, so without the setting it is static.
    """
    request = context.get("request")
    name = room_name(room)
    if name is None:
        online: presence.Summary | None = presence.Summary(members=[], user_count=0, guest_count=0)
    else:
        record_before_reading(request, name)
        online = blockcache.for_request(request, name)
    ws_url = conf.websocket_url
    return {
        "online": online,
        "room": room,
        "window_minutes": conf.window_minutes,
        "request": context.get("request"),
        "ws_url": f"{ws_url}{quote(name, safe='')}/" if live and ws_url and name else None,
    }


@register.simple_tag(takes_context=True)
def presence_statuses(context: template.Context, users: Iterable[Any]) -> Mapping[str, str]:
    """Statuses of users (or members, or pks) in one round trip; empty if Redis is down.

    Hidden members read as offline unless the viewer is staff.
    """
    pks = [presence.member_id(user) for user in users]
    return failsafe.call(presence.statuses, pks, False, _viewer(context)) or {}


@register.filter(name="presence")
def presence_word(user: Any, statuses: Mapping[str, str] | None = None) -> str:
    """A user's (or member's, or pk's) status word, from ``statuses`` if given, else from Redis.

    Without ``statuses`` the filter cannot see who is looking, so a hidden
    member reads as offline; staff pages use ``presence_statuses``.
    """
    pk = presence.member_id(user)
    if statuses is None:
        statuses = failsafe.call(presence.statuses, [pk]) or {}
    return statuses.get(pk, "offline")


def _viewer(context: template.Context) -> Any:
    """The user looking at the page (no request in the context: nobody, so no staff view)."""
    return getattr(context.get("request"), "user", None)
