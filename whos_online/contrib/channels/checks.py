"""The Channels part's own checks: its setting, and the endpoint its live blocks fall
back to (registered by its app, so a site without it runs neither)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.urls import NoReverseMatch, reverse


@register(Tags.compatibility)
def check_websocket_url(**kwargs: Any) -> list[CheckMessage]:
    value = getattr(settings, "WHOS_ONLINE_WEBSOCKET_URL", None)
    if value is None or isinstance(value, str):
        return []
    return [
        Error(
            f"WHOS_ONLINE_WEBSOCKET_URL is {value!r}; it must be str or None.",
            hint="Fix or remove it (the default is None).",
            id="whos_online.E005",
        )
    ]


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
