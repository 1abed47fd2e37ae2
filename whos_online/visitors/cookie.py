"""The "online" cookie: when its visitor was last recorded, signed for who they are.

Its value is the time of the visitor's last record in milliseconds and a keyed
BLAKE2b (SECRET_KEY or a fallback) of it with the identity it stands for: the
session cookie, or for a guest without one their address as the server gives it.
Django rotates the session key on login and flushes it on logout, so a changed
identity invalidates it, and an unchanged one is recognised without a session
load, a query, a Redis call or an address parsed. An expired, foreign, tampered
or garbage cookie is simply not valid: the visitor is recorded again.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control

from whos_online.conf import conf, on_settings_change
from whos_online.visitors.client_ip import believed_header, client_address

COOKIE_SALT = "whos_online.online"
# Our values are about 50 characters; a longer one is forged and not worth a look.
MAX_VALUE = 100


def recorded_at(request: HttpRequest) -> float | None:
    """When the visitor was last recorded, by a valid "online" cookie; None without one
    (the request is due for a record)."""
    value = request.COOKIES.get(conf.cookie_name)
    if value is None or len(value) > MAX_VALUE:
        return None
    at, _, signature = value.partition(":")
    message = f"{at}|{_identity(request)}".encode()
    for key in _signing_keys():
        if hmac.compare_digest(signature.encode(), _signature(key, message).encode()):
            break
    else:
        return None
    # Signed here, so ``at`` is our digits. Either way round: a server whose clock runs
    # ahead may have issued it.
    recorded = int(at) / 1000
    return recorded if abs(time.time() - recorded) < conf.cookie_age else None


def _identity(request: HttpRequest) -> str:
    """What a cookie for this request stands for: the session, or a guest's address as
    the request gives it."""
    session = request.COOKIES.get(conf.session_cookie_name)
    if session:
        return "session:" + session
    if believed_header() is None:
        return f"guest:{request.META.get('REMOTE_ADDR')}"
    return f"guest:{client_address(request)}"


# BLAKE2b keyed with SECRET_KEY's and its fallbacks' derived keys, SECRET_KEY's first,
# made once per process (and again when a setting changes): a signature copies one.
_keys: list[hashlib.blake2b] = []


def _signing_keys() -> list[hashlib.blake2b]:
    if not _keys:
        secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
        _keys.extend(
            hashlib.blake2b(
                key=hashlib.sha256(f"{COOKIE_SALT}{s}".encode()).digest(), digest_size=18
            )
            for s in secrets
        )
    return _keys


on_settings_change(_keys.clear)


def _signature(key: hashlib.blake2b, message: bytes) -> str:
    mac = key.copy()
    mac.update(message)
    return mac.hexdigest()


def set_cookie(request: HttpRequest, response: HttpResponseBase) -> None:
    """Give the visitor just recorded their cookie."""
    encoded = str(int(time.time() * 1000))
    signature = _signature(_signing_keys()[0], f"{encoded}|{_identity(request)}".encode())
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
