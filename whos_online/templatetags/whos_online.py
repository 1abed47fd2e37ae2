"""``{% load whos_online %}`` then ``{% whos_online %}`` renders the block."""

from __future__ import annotations

from typing import Any

from django import template

from whos_online import failsafe, presence
from whos_online.conf import conf

register = template.Library()


@register.inclusion_tag("whos_online/whos_online.html", takes_context=True)
def whos_online(context: template.Context) -> dict[str, Any]:
    """Members (most recent first), counts and the window; ``online`` is None if Redis is down."""
    return {
        "online": failsafe.call(presence.summary, conf.list_limit),
        "window_minutes": conf.window_minutes,
        "request": context.get("request"),
    }
