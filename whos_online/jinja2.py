"""The template tags for Django's Jinja2 backend, as one Jinja extension.

    TEMPLATES = [..., {"BACKEND": "django.template.backends.jinja2.Jinja2",
                       "OPTIONS": {"extensions": ["whos_online.jinja2.WhosOnlineExtension"]}}]

gives Jinja templates ``whos_online(live=0, cached=False)``, ``whos_here(*room)``,
``presence_statuses(users)`` and the ``presence`` filter. The blocks are the
Django templates themselves, filled by the tags' own functions: one source of
HTML, and a site's override of ``whos_online/whos_online.html`` applies to both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.template import Context
from jinja2 import Environment, pass_context
from jinja2.ext import Extension
from jinja2.runtime import Context as JinjaContext
from markupsafe import Markup

from whos_online.templatetags import whos_online as tags


class WhosOnlineExtension(Extension):
    """Adds the globals and the filter; no new syntax."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        environment.globals.update(
            whos_online=whos_online, whos_here=whos_here, presence_statuses=presence_statuses
        )
        environment.filters["presence"] = tags.presence_word


def _django(context: JinjaContext) -> Context:
    # The tags read only the request (who is looking: staff see hidden members).
    return Context({"request": context.get("request")})


@pass_context
def whos_online(context: JinjaContext, live: int = 0, cached: bool = False) -> Markup:
    """The ``{% whos_online %}`` block."""
    return Markup(tags.site_html(context.get("request"), live, cached=cached))


@pass_context
def whos_here(context: JinjaContext, *room: Any, live: bool = False) -> Markup:
    """The ``{% whos_here room %}`` block: ``whos_here("topic", topic.pk)`` as the tag takes parts."""
    return Markup(tags.room_html(context.get("request"), room, live))


@pass_context
def presence_statuses(context: JinjaContext, users: Iterable[Any]) -> Mapping[str, str]:
    """``{% set statuses = presence_statuses(members) %}``: one round trip for a page."""
    return tags.presence_statuses(_django(context), users)
