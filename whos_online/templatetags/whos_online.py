"""``{% load whos_online %}``: the ``{% whos_online %}`` block and presence dots.

``{{ user|presence }}`` gives "online", "idle" or "offline" (one Redis call);
for a page of avatars, fetch them all first in one call and pass the result::

    {% presence_statuses members as statuses %}
    {% for member in members %}<span class="dot {{ member|presence:statuses }}"></span>{% endfor %}
"""

from __future__ import annotations

from collections.abc import Iterable
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


@register.simple_tag
def presence_statuses(users: Iterable[Any]) -> dict[str, presence.Status]:
    """Statuses of users (or usernames) in one round trip; empty if Redis is down."""
    return failsafe.call(presence.statuses, [_username(user) for user in users]) or {}


@register.filter(name="presence")
def presence_word(user: Any, statuses: dict[str, presence.Status] | None = None) -> str:
    """A user's (or username's) status word, from ``statuses`` if given, else from Redis."""
    username = _username(user)
    if statuses is not None:
        return statuses.get(username, "offline")
    return failsafe.call(presence.status, username) or "offline"


def _username(user: Any) -> str:
    return str(user.get_username() if hasattr(user, "get_username") else user)
