"""Guest identity: one visitor is one guest, and no address is stored by default."""

from __future__ import annotations

import ipaddress

from django.utils.crypto import salted_hmac

from whos_online.conf import conf


def guest_id(ip: str) -> str:
    """The member that stands for the guest at ``ip`` in the guests set.

    The address is normalised first, so one visitor is one guest however it is
    spelled: IPv4-mapped IPv6 counts as its IPv4 address, zone ids are ignored,
    and IPv6 is cut to its ``WHOS_ONLINE_IPV6_PREFIX`` network, because one
    device rotates privacy addresses inside its /64. By default the result is a
    keyed hash (HMAC-SHA256 under SECRET_KEY, 16 hex digits: short enough for
    Redis's compact small-set encoding), so no address is stored; with
    ``WHOS_ONLINE_STORE_RAW_IP`` it is the normalised address itself.

    Raises ValueError if ``ip`` is not an IP address.
    """
    address = ipaddress.ip_address(ip)
    network_bits: int = address.max_prefixlen
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            address, network_bits = address.ipv4_mapped, 32
        else:
            network_bits = conf.ipv6_prefix
            host_bits = 128 - network_bits
            address = ipaddress.IPv6Address(int(address) >> host_bits << host_bits)
    if conf.store_raw_ip:
        whole = network_bits == address.max_prefixlen
        return str(address) if whole else f"{address}/{network_bits}"
    return salted_hmac("whos_online.guest", address.packed, algorithm="sha256").hexdigest()[:16]
