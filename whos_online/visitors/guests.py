"""Guest identity: one visitor is one guest, and no address is ever stored; and the
rooms a guest is in, which their own cookie keeps rather than Redis."""

from __future__ import annotations

import ipaddress
import math
from functools import lru_cache

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control
from django.utils.crypto import salted_hmac

from whos_online.conf import conf

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
SALT = "whos_online.guest"


def guest_id(ip: str | Address) -> str:
    """The member that stands for the guest at ``ip`` in the guests set.

    The address is normalised first, so one visitor is one guest however it is
    spelled: IPv4-mapped IPv6 counts as its IPv4 address, zone ids are ignored,
    and IPv6 is cut to its /64 network (``conf.ipv6_prefix``), because one
    device rotates privacy addresses inside its /64. The result is a keyed hash
    (Django's ``salted_hmac``, SHA-256 under SECRET_KEY, 16 hex digits: short
    enough for Redis's compact small-set encoding), so no address is ever
    stored. An address the caller already parsed is not parsed again.

    Raises ValueError if ``ip`` is not an IP address.
    """
    address, _ = _network(ip, conf.ipv6_prefix)
    return salted_hmac(SALT, address.packed, conf.secret_key, algorithm="sha256").hexdigest()[:16]


def network(ip: str | Address) -> str:
    """The network a guest counts by, e.g. ``203.0.113.7/32`` or ``2001:db8:1:2::/64``.

    What the "online" cookie of a guest without a session is bound to. Raises
    ValueError if ``ip`` is not an IP address.
    """
    return _network_text(ip, conf.ipv6_prefix)


@lru_cache(maxsize=4096)
def _network_text(ip: str | Address, ipv6_prefix: int) -> str:
    # Cached apart from _network: formatting an address costs as much as parsing it.
    address, network_bits = _network(ip, ipv6_prefix)
    return f"{address}/{network_bits}"


@lru_cache(maxsize=4096)
def _network(ip: str | Address, ipv6_prefix: int) -> tuple[Address, int]:
    """The address cut to its network, and the network's length; cached per address."""
    address = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            return address.ipv4_mapped, 32
        host_bits = 128 - ipv6_prefix
        return ipaddress.IPv6Address(int(address) >> host_bits << host_bits), ipv6_prefix
    return address, address.max_prefixlen


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
