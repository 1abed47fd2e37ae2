"""The template tags for Django's Jinja2 backend, as one Jinja extension.

    TEMPLATES = [..., {"BACKEND": "django.template.backends.jinja2.Jinja2",
                       "OPTIONS": {"extensions": ["whos_online.contrib.jinja2.WhosOnlineExtension"]}}]

gives Jinja templates the tags as globals and the ``presence`` filter. The blocks
are the Django templates themselves, so a site's override applies to both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jinja2 import Environment, pass_context
from jinja2.ext import Extension
from jinja2.runtime import Context as JinjaContext
from markupsafe import Markup

from whos_online.rendering import block


class WhosOnlineExtension(Extension):
    """Adds the globals and the filter; no new syntax."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        environment.globals.update(
            whos_online=_site_block,
            whos_here=_room_block,
            whos_online_style=_style,
            presence_statuses=_statuses,
        )
        environment.filters["presence"] = block.status_word


@pass_context
def _site_block(context: JinjaContext, live: int = 0, cached: bool = False) -> Markup:
    """The ``{% whos_online %}`` block."""
    return Markup(block.site_html(context.get("request"), live, cached=cached))


@pass_context
def _room_block(context: JinjaContext, *room: Any, live: bool = False) -> Markup:
    """The ``{% whos_here room %}`` block: ``whos_here("topic", topic.pk)`` as the tag takes parts."""
    return Markup(block.room_html(context.get("request"), room, live))


@pass_context
def _style(context: JinjaContext) -> Markup:
    """``{{ whos_online_style() }}``: the stylesheet's link, once per page."""
    return Markup(block.style_link(context.get("request")))


@pass_context
def _statuses(context: JinjaContext, users: Iterable[Any]) -> Mapping[str, str]:
    """``{% set statuses = presence_statuses(members) %}``: one round trip for a page."""
    return block.statuses_of(users, context.get("request"))
