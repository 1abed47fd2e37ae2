"""Guests' addresses: one visitor is one guest, known by a keyed hash of their
address (or its network), so no address is ever stored."""

from __future__ import annotations

import ipaddress

from django.utils.crypto import salted_hmac

from whos_online.conf import conf

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def guest_id(ip: str | Address) -> str:
    """The member that stands for the guest at ``ip`` in the guests set.

    The address is normalised first, so one visitor is one guest however it is
    spelled: IPv4-mapped IPv6 counts as its IPv4 address, zone ids are ignored,
    and IPv6 is cut to its /64 network (``conf.ipv6_prefix``), because one
    device rotates privacy addresses inside its /64. The result is a keyed hash
    (SHA-256 under SECRET_KEY, 16 hex digits: short enough for Redis's compact
    small-set encoding), so no address is ever stored.

    Raises ValueError if ``ip`` is not an IP address.
    """
    address = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            address = address.ipv4_mapped
        else:
            host_bits = 128 - conf.ipv6_prefix
            address = ipaddress.IPv6Address(int(address) >> host_bits << host_bits)
    digest = salted_hmac("whos_online.guest", address.packed, algorithm="sha256")
    return digest.hexdigest()[:16]
