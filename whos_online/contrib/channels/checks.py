"""The Channels part's own checks: its settings, and the endpoint its live blocks fall
back to (registered by its app, so a site without it runs neither)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.urls import NoReverseMatch, reverse

from whos_online.contrib.channels.hub import HEARTBEAT, heartbeat


@register(Tags.compatibility)
def check_settings(**kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    url = getattr(settings, "WHOS_ONLINE_WEBSOCKET_URL", None)
    if not (url is None or isinstance(url, str)):
        errors.append(_wrong("WHOS_ONLINE_WEBSOCKET_URL", url, "str or None", None))
    beat = getattr(settings, "WHOS_ONLINE_HEARTBEAT", HEARTBEAT)
    number = isinstance(beat, (int, float, timedelta)) and not isinstance(beat, bool)
    if not (number and heartbeat() >= 0.001):
        expected = "int or float or timedelta >= 0.001"
        errors.append(_wrong("WHOS_ONLINE_HEARTBEAT", beat, expected, HEARTBEAT))
    return errors


def _wrong(name: str, value: Any, expected: str, default: Any) -> Error:
    return Error(
        f"{name} is {value!r}; it must be {expected}.",
        hint=f"Fix or remove it (the default is {default!r}).",
        id="whos_online.E005",
    )


@register(Tags.urls)
def check_live_urls(**kwargs: Any) -> list[CheckMessage]:
    """With WebSockets set up, live blocks need whos_online's URLs (their fallback endpoint)."""
    if not getattr(settings, "WHOS_ONLINE_WEBSOCKET_URL", None):
        return []
    try:
        reverse("whos_online:live")
    except NoReverseMatch:
        return [
            Error(
                "WHOS_ONLINE_WEBSOCKET_URL is set, but whos_online's URLs are not in your "
                "URLconf, so live blocks ({% whos_online live=… %}) cannot refresh.",
                hint='Add path("whos-online/", include("whos_online.urls")) to your URLconf.',
                id="whos_online.E016",
            )
        ]
    return []
