"""The client address a guest is known by, trusting proxies only as far as the site says.

Not django-ipware (4.1.1, tried against this module's tests): it reads trusted
proxies by position and never checks ``REMOTE_ADDR`` against them, so a client
reaching the app directly could name any address. This is nginx's
``real_ip_recursive`` rule: walk left from ``REMOTE_ADDR`` while the hop is a
trusted proxy; the first that is not is the client.
"""

from __future__ import annotations

import ipaddress
import logging

from django.http import HttpRequest

from whos_online.conf import conf
from whos_online.settings_table import Network
from whos_online.store.addresses import Address

logger = logging.getLogger(__name__)
# Whether this process said that guests come through a proxy the settings ignore.
_told_of_proxy = False


def client_address(request: HttpRequest) -> Address | None:
    """Return the visitor's address, parsed, or None if there is no usable one.

    - Default: ``REMOTE_ADDR``; forwarding headers are ignored, since a client
      can write anything there.
    - ``WHOS_ONLINE_PROXIES`` a list of CIDRs: hops are taken from the right,
      ``REMOTE_ADDR`` first, then the proxy header's entries; trusted proxies
      are skipped and the first other address is the client (all trusted: the
      left-most).
    - ``WHOS_ONLINE_PROXIES = N``: the N-th entry from the right of the
      header, which our outermost proxy wrote; left of it is the client's claim.

    Entries may carry a port (``198.51.100.3:51234``, ``[2001:db8::3]:443``).
    A hop that is not an address (junk, ``for=unknown``) where the answer is
    read makes the answer None: reading past it would hand the choice to
    whoever wrote the entries to its left.
    """
    remote = str(request.META.get("REMOTE_ADDR") or "")
    trusted = conf.trusted_proxies
    if trusted is None:  # an invalid setting (check E010): believe nobody
        return None
    proxies = conf.proxy_count
    if not trusted and not proxies:
        return parse_hop(remote)
    rfc7239 = conf.proxy_header == "Forwarded"
    raw = str(request.META.get(_header_key()) or "")
    if trusted:
        return _right_most_untrusted(remote, raw, trusted, rfc7239)
    hops = raw.rsplit(",", proxies)
    if len(hops) < proxies:
        return None
    return _hop(hops[-proxies], rfc7239)


def believed_header() -> str | None:
    """The ``request.META`` key of the forwarding header the settings believe; None: none is."""
    if not (conf.trusted_proxies or conf.proxy_count):
        return None
    return _header_key()


def _header_key() -> str:
    return "HTTP_FORWARDED" if conf.proxy_header == "Forwarded" else "HTTP_X_FORWARDED_FOR"


def note_unknown_proxy(request: HttpRequest, address: Address) -> None:
    """Warn once per process when a guest comes through a proxy the settings ignore.

    Without a proxy setting every guest behind it is the proxy's address, so
    all guests count as one. Called only where a guest is recorded, never on
    the throttled path.
    """
    global _told_of_proxy
    if _told_of_proxy or not address.is_private or believed_header() is not None:
        return
    if _header_key() in request.META:
        _told_of_proxy = True
        logger.warning(
            "A guest came from %s with a forwarding header (%s), but WHOS_ONLINE_PROXIES is "
            "not set: behind a reverse proxy every guest has the proxy's address, so all "
            "guests count as one. Set it to your proxies' count or networks.",
            address,
            conf.proxy_header,
        )


def _right_most_untrusted(
    remote: str, raw: str, trusted: tuple[Network, ...], rfc7239: bool
) -> Address | None:
    address = parse_hop(remote)
    if address is None:
        return None
    # Plain split on commas, not a quote-aware one: our proxy's entry is the
    # right-most, and an unclosed quote the client writes on the left must not
    # swallow it. Proxies quote only "[v6]:port", which holds no comma.
    entries = raw.split(",") if raw.strip() else []
    while any(address.version == net.version and address in net for net in trusted) and entries:
        hop = _hop(entries.pop(), rfc7239)
        if hop is None:
            return None
        address = hop
    return address


def _hop(entry: str, rfc7239: bool) -> Address | None:
    """One entry of X-Forwarded-For, or of Forwarded (its ``for=`` parameter)."""
    if not rfc7239:
        return parse_hop(entry)
    for pair in entry.split(";"):
        name, _, value = pair.partition("=")
        if name.strip().lower() == "for":
            return parse_hop(value.strip().strip('"'))
    return None


def parse_hop(text: str) -> Address | None:
    """``203.0.113.7``, ``203.0.113.7:80``, ``2001:db8::7``, ``[2001:db8::7]:443`` -> address.

    None for anything else.
    """
    text = text.strip()
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]")
        if not bracket or (port and not _is_port(port[1:]) or port[:1] not in ("", ":")):
            return None
        text = host
    elif text.count(":") == 1:  # IPv4 with a port; bare IPv6 has two colons or more
        text, _, port = text.partition(":")
        if not _is_port(port):
            return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_port(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 5 and int(text) <= 65535
