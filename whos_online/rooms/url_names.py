"""Rooms on views the site does not own: ``WHOS_ONLINE_ROOMS`` maps URL names to rooms.

    WHOS_ONLINE_ROOMS = {"forum_conversation:topic": "topic:{pk}"}

A key is a URL name as ``{% url %}`` takes it, namespaces included; a value is a
string whose ``{fields}`` are the URL's keyword arguments, or a callable taking the
view's arguments (docs/howto/third-party-views.md). A URL name leaves the third
party's URLconf alone, where wrapping its view in ``@in_room`` would lose its
namespace. The middleware records the visitor in the room before the view runs
and takes them out again if the view shows no page, as ``@in_room`` does.
"""

from __future__ import annotations

from string import Formatter
from typing import Any

from django.http import HttpRequest

from whos_online.conf import conf
from whos_online.room_names import checked_room, no_room


def format_fields(template: str) -> list[str]:
    """The keyword arguments a room string names; ValueError if it is no such string."""
    fields = [field for _, field, _, _ in Formatter().parse(template) if field is not None]
    for field in fields:
        if not field.isidentifier():
            raise ValueError(
                f"{template!r} has the field {{{field}}}: fields name the URL's keyword "
                'arguments, as in "topic:{pk}".'
            )
    return fields


def formatted(spec: object, kwargs: dict[str, Any]) -> object:
    """A room string with its fields filled from ``kwargs``; ValueError for one left empty
    (else every topic would share one room, "topic:"). Any other value as it is."""
    if not isinstance(spec, str):
        return spec
    missing = [field for field in format_fields(spec) if kwargs.get(field) in (None, "")]
    if missing:
        given = ", ".join(f"{name}={value!r}" for name, value in kwargs.items()) or "none"
        raise ValueError(
            f"{spec!r} names no room: the URL gives no {', '.join(missing)} "
            f"(its keyword arguments: {given})."
        )
    return spec.format(**kwargs)


def url_room(request: HttpRequest) -> str | None:
    """The room ``WHOS_ONLINE_ROOMS`` names for the request's URL, or None."""
    match = request.resolver_match
    spec = conf.rooms.get(match.view_name) if match is not None else None
    if match is None or spec is None:
        return None
    where = f"WHOS_ONLINE_ROOMS[{match.view_name!r}]"
    if callable(spec):
        room = spec(request, *match.args, **match.kwargs)
    else:
        try:
            room = formatted(spec, match.kwargs)
        except ValueError as error:
            no_room(error, where)
            return None
    return checked_room(room, where)
