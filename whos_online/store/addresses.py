"""Guests' addresses: one visitor is one guest, known by a keyed hash of their
address (or its network), so no address is ever stored."""

from __future__ import annotations

import ipaddress

from django.utils.crypto import salted_hmac

from whos_online.conf import conf

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
GUEST_SALT = "whos_online.guest"


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
    address, _ = _network(ip)
    return salted_hmac(GUEST_SALT, address.packed, conf.secret_key, algorithm="sha256").hexdigest()[
        :16
    ]


def network(ip: str | Address) -> str:
    """The network a guest counts by, e.g. ``203.0.113.7/32`` or ``2001:db8:1:2::/64``.

    What the "online" cookie of a guest without a session is bound to. Raises
    ValueError if ``ip`` is not an IP address.
    """
    address, network_bits = _network(ip)
    return f"{address}/{network_bits}"


def _network(ip: str | Address) -> tuple[Address, int]:
    """The address cut to its network, and the network's length."""
    address = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            return address.ipv4_mapped, 32
        host_bits = 128 - conf.ipv6_prefix
        return ipaddress.IPv6Address(int(address) >> host_bits << host_bits), conf.ipv6_prefix
    return address, address.max_prefixlen
