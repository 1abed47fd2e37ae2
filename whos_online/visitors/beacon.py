"""Guests on pages a cache shares: counted by the beacon, a request the cache never serves.

A page a cache in front may keep for anyone (``shared``) must be the same bytes for
every guest, so the middleware sets no cookie on it. The block on it carries the
beacon instead (``beacon.js``, or an ``<img>`` without scripts): a request to
``whos_online:beacon`` with the visitor's cookies and the rooms the page showed,
signed here when the block was rendered so that a client cannot name a room of its
own. Its view records the visitor as the middleware records a page's, once the
rooms verify, and the middleware sets their cookies on its answer.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import get_max_age

ROOM_SALT = "whos_online.beacon"
UPDATE_CACHE = "django.middleware.cache.UpdateCacheMiddleware"
# A page may show a few rooms; more, or a longer token, is forged and not worth a look.
MAX_ROOMS = 10
MAX_TOKEN = 500
# The Server-Timing metric of a guest's page that counted them (and was not shared):
# beacon.js reads it and sends nothing.
COUNTED = "whos-online-counted"


def shared(request: HttpRequest, response: HttpResponseBase) -> bool:
    """Whether a cache in front may keep ``response`` for anyone, as HTTP says: a GET or
    HEAD whose ``Cache-Control`` says ``public``, ``s-maxage`` or a ``max-age`` above 0,
    and not ``private`` or ``no-store``. Django's per-site cache (``UpdateCacheMiddleware``
    in ``MIDDLEWARE``) keeps a response without a ``max-age`` too, setting its own."""
    if request.method not in ("GET", "HEAD"):
        return False
    said = {
        part.split("=")[0].strip().lower() for part in response.get("Cache-Control", "").split(",")
    }
    if said & {"private", "no-store"}:
        return False
    max_age = get_max_age(response)
    if max_age is None:
        return bool(said & {"public", "s-maxage"}) or UPDATE_CACHE in settings.MIDDLEWARE
    return max_age > 0 or "s-maxage" in said


def room_token(room: str) -> str:
    """``room`` signed for a page's beacon."""
    return signing.Signer(salt=ROOM_SALT).sign(room)


def signed_rooms(tokens: list[str]) -> list[str] | None:
    """The rooms a beacon's tokens name; None if any is not one signed here."""
    if len(tokens) > MAX_ROOMS or any(len(token) > MAX_TOKEN for token in tokens):
        return None
    signer = signing.Signer(salt=ROOM_SALT)
    try:
        return [signer.unsign(token) for token in tokens]
    except signing.BadSignature:
        return None
