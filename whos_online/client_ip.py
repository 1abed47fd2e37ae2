"""The client address a guest is known by, trusting proxies only as far as the site says."""

from __future__ import annotations

import ipaddress

from django.http import HttpRequest

from whos_online.conf import conf
from whos_online.guests import Address


def client_ip(request: HttpRequest) -> str | None:
    """The visitor's address as text, or None if there is no usable one."""
    address = client_address(request)
    return None if address is None else str(address)


def client_address(request: HttpRequest) -> Address | None:
    """Return the visitor's address, parsed (once per request), or None if there is no usable one.

    With ``WHOS_ONLINE_PROXY_COUNT = 0`` (the default) this is REMOTE_ADDR and
    X-Forwarded-For is ignored: a client can write anything there. With N
    proxies in front, each appends the address it saw, so the N-th entry from
    the right was written by our outermost proxy; anything left of it is the
    client's own claim.
    """
    proxies = conf.proxy_count
    candidate: str | None
    if proxies > 0:
        forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        candidate = hops[-proxies] if len(hops) >= proxies else None
    else:
        candidate = str(request.META.get("REMOTE_ADDR") or "")
    if not candidate:
        return None
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        return None
