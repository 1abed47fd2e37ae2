"""``{% load whos_online %}``: the ``{% whos_online %}`` block and presence dots.

``{{ user|presence }}`` gives "online", "idle" or "offline" (one Redis call),
"unavailable" while Redis is down, for a user, a listed member or a pk; for a
page of avatars, fetch them all first in one call and pass the result::

    {% presence_statuses members as statuses %}
    {% for member in members %}<span class="dot {{ member|presence:statuses }}"></span>{% endfor %}

The tags only find the request in the context; :mod:`whos_online.rendering.block` renders.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django import template
from django.utils.safestring import SafeString

from whos_online.rendering import block

register = template.Library()


@register.simple_tag(takes_context=True)
def whos_online(context: template.Context, live: int = 0, cached: bool = False) -> SafeString:
    """Members (most recent first), counts and the window; "unavailable" if Redis is down.

    ``live=N`` makes the block refresh itself: pushed over the WebSocket where
    ``WHOS_ONLINE_WEBSOCKET_URL`` says the site routes ``WhosOnlineConsumer``,
    else (and while the socket is down) every N seconds by polling the endpoint
    of ``whos_online.urls``. Without JavaScript it is the same block, as of page load.
    A member's page is marked ``private`` with ``Vary: Cookie`` (``cache_page``
    needs ``vary_on_cookie``: docs/howto/cached-pages.md). ``cached=True`` lets a
    cache store the page whoever it is rendered
    for: it carries the block as anyone may see it, and the script fills in
    the viewer's own (staff see hidden members) from the endpoint.
    """
    return block.site_html(context.get("request"), live, context, cached)


@register.simple_tag(takes_context=True)
def whos_here(context: template.Context, *room: Any, live: bool = False) -> SafeString:
    """Who is in the room (recorded by the ``in_room`` view decorator); "unavailable" if Redis is down.

    The parts name the room as ``in_room`` names it: ``{% whos_here "topic" topic.pk %}``
    is "topic:42", ``{% whos_here topic %}`` "<app_label>.<model_name>:<pk>".
    ``live=True`` subscribes to the room over the WebSocket (``WHOS_ONLINE_WEBSOCKET_URL``
    plus the room); a room has no polling endpoint, so without the setting it is static.
    """
    return block.room_html(context.get("request"), room, live, context)


@register.simple_tag(takes_context=True)
def whos_online_style(context: template.Context) -> SafeString:
    """The optional stylesheet's ``<link>``, anywhere in the page (the body too), once per
    page however many times it is written: beside each block, for a base whose
    ``<head>`` the site cannot fill."""
    return block.style_link(context.get("request"))


@register.simple_tag(takes_context=True)
def presence_statuses(context: template.Context, users: Iterable[Any]) -> Mapping[str, str]:
    """Statuses of users (or members, or pks) in one round trip; "unavailable" if Redis is down.

    Hidden members read as offline unless the viewer is staff.
    """
    return block.statuses_of(users, context.get("request"))


@register.filter(name="presence")
def presence_word(user: Any, statuses: Mapping[str, str] | None = None) -> str:
    """A user's (or member's, or pk's) status word, from ``statuses`` if given, else from Redis.

    Without ``statuses`` the filter cannot see who is looking, so a hidden
    member reads as offline; staff pages use ``presence_statuses``.
    """
    return block.status_word(user, statuses)
