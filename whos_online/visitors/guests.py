"""The rooms a guest is in, which their own cookie keeps rather than Redis."""

from __future__ import annotations

import math

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control

from whos_online.conf import conf

ROOMS_SALT = "whos_online.guest_rooms"
# Browsers keep 4 KB a cookie: the rooms cookie keeps the most recent kinds that fit in this.
MAX_ROOMS_VALUE = 3000


def guest_rooms(request: HttpRequest) -> dict[str, str]:
    """The room of each kind the guest is in (kind -> room), as their rooms cookie says.

    A member is in one room of a kind at a time, kept in Redis; a guest too, but
    a key per guest would let a crawl of fresh addresses fill Redis, so the room
    they leave on opening another of its kind is named by their cookie, signed
    under SECRET_KEY. {} without one, or for one not signed here.
    """
    value = request.COOKIES.get(conf.rooms_cookie_name, "")
    if not value or len(value) > MAX_ROOMS_VALUE:
        return {}
    try:
        rooms = signing.Signer(salt=ROOMS_SALT).unsign_object(value)
    except (signing.BadSignature, ValueError):
        return {}
    return rooms if isinstance(rooms, dict) else {}


def keep_guest_rooms(
    request: HttpRequest, response: HttpResponseBase, rooms: dict[str, str]
) -> None:
    """Set the guest's rooms cookie (the most recent kinds last) for the online window,
    after which they are in no room; private to shared caches, as the "online" cookie."""
    signer, kept = signing.Signer(salt=ROOMS_SALT), list(rooms.items())
    value = signer.sign_object(dict(kept))
    while len(value) > MAX_ROOMS_VALUE:
        kept = kept[1:]
        value = signer.sign_object(dict(kept))
    patch_cache_control(response, private=True)
    response.set_cookie(
        conf.rooms_cookie_name,
        value,
        max_age=math.ceil(conf.max_age),
        httponly=True,
        samesite="Lax",
        secure=request.is_secure() or settings.SESSION_COOKIE_SECURE,
    )
