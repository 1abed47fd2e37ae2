"""The "online" cookie: when its visitor was last recorded, signed for who they are.

Its value holds the time of the visitor's last record in milliseconds, signed
with SECRET_KEY together with the identity it stands for: the session cookie it
was set alongside or, for a guest without a session, the guest's network.
Django rotates the session key on login and flushes it on logout, so any change
of identity makes the cookie invalid, while an unchanged identity is recognised
from the cookies alone: no session load, no user query, no Redis call. A cookie
that is expired (replayed after ``conf.cookie_age``), another identity's,
tampered with or garbage is simply not valid: the visitor is recorded again.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control

from whos_online.conf import conf
from whos_online.store.addresses import network
from whos_online.visitors.client_ip import client_address

COOKIE_SALT = "whos_online.online"
# Our values are about 50 characters; a longer one is forged and not worth a look.
MAX_VALUE = 100


def recorded_at(request: HttpRequest) -> float | None:
    """When the visitor was last recorded, by a valid "online" cookie; None without one
    (the request is due for a record)."""
    value = request.COOKIES.get(conf.cookie_name)
    if value is None or len(value) > MAX_VALUE:
        return None
    identity = _identity(request)
    at = None if identity is None else _signed_at(value, identity)
    if at is None:
        return None
    # Either way round: a server whose clock runs ahead may have issued it.
    now = time.time()
    if abs(now - at) >= conf.cookie_age:
        return None
    return at


def _identity(request: HttpRequest) -> str | None:
    """What a cookie for this request stands for: the session, or a guest's network.

    None for a guest without a session or a usable address: such a guest gets
    no cookie, so a later request retries.
    """
    session = request.COOKIES.get(conf.session_cookie_name)
    if session:
        return "session:" + session
    ip = client_address(request)
    return None if ip is None else "guest:" + network(ip)


def _signed_at(value: str, identity: str) -> float | None:
    """The time ``value`` carries if it was signed for ``identity``, else None."""
    at, _, signature = value.rpartition(":")
    try:
        signing.Signer(salt=COOKIE_SALT).unsign(f"{at}|{identity}:{signature}")
        return signing.b62_decode(at) / 1000
    except (signing.BadSignature, ValueError):
        return None


def set_cookie(request: HttpRequest, response: HttpResponseBase) -> None:
    """Give the visitor just recorded their cookie (none without an identity)."""
    identity = _identity(request)
    if identity is None:
        return
    encoded = signing.b62_encode(int(time.time() * 1000))
    signature = signing.Signer(salt=COOKIE_SALT).sign(f"{encoded}|{identity}").rpartition(":")[2]
    # A shared cache must not replay one visitor's cookie to the next.
    patch_cache_control(response, private=True)
    response.set_cookie(
        conf.cookie_name,
        f"{encoded}:{signature}",
        max_age=conf.cookie_age,
        httponly=True,
        samesite="Lax",
        secure=request.is_secure() or settings.SESSION_COOKIE_SECURE,
    )
