"""Fake visitors, so the who's-online block has something to show without real traffic.

Shared by the ``simulate_visitors`` command and the home page's button, so both
record visitors the same way: through the public ``whos_online.presence`` API.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass

from demo.hidden import HIDDEN
from whos_online import presence

# Not the demo accounts (alice, bob, carol): logging in as one of those should
# visibly add a name. One name carries HTML to show that the block escapes it.
NAMES = (
    "dave",
    "erin",
    "frank",
    "grace",
    "<b>mallory</b>",
    "heidi",
    "ivan",
    "judy",
    "niaj",
    "olivia",
    "peggy",
    "trent",
)

# The demo's one forum thread, with its own "who is reading" room.
THREAD_ROOM = "thread:welcome"

# Documentation ranges (RFC 5737, RFC 3849): never a real visitor's address.
GUEST_NETWORKS = tuple(
    ipaddress.ip_network(net)
    for net in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)


@dataclass(frozen=True)
class Visitors:
    """Who a simulation recorded, in the order it recorded them."""

    usernames: list[str]
    guest_ips: list[str]


def member_names(count: int, rng: random.Random) -> list[str]:
    """``count`` distinct usernames: a random pick from NAMES, numbered ones past its end."""
    if count <= len(NAMES):
        return rng.sample(NAMES, count)
    return list(NAMES) + [f"member{n}" for n in range(len(NAMES) + 1, count + 1)]


def guest_ip(rng: random.Random) -> str:
    """A random host address from one of the documentation ranges."""
    network = rng.choice(GUEST_NETWORKS)
    # Skip the first and last address: the network and broadcast address of an IPv4 /24.
    return str(network[rng.randrange(1, network.num_addresses - 1)])


def simulate(members: int, guests: int, rng: random.Random | None = None) -> Visitors:
    """Record ``members`` members and ``guests`` guests as seen now.

    Raises redis.exceptions.RedisError if Redis fails (nothing here fails open:
    the caller decides how to report it).
    """
    rng = rng or random.Random()
    usernames = member_names(members, rng)
    rng.shuffle(usernames)  # the block lists the most recent first; don't make it alphabetical
    guest_ips: list[str] = []
    while len(guest_ips) < guests:  # distinct, so --guests 40 really adds 40
        ip = guest_ip(rng)
        if ip not in guest_ips:
            guest_ips.append(ip)
    for username in usernames:
        presence.record_user(username, hidden=username in HIDDEN)
    for ip in guest_ips:
        presence.record_guest(ip)
    # A few of them are reading the thread.
    for username in usernames[:3]:
        presence.record_user(username, hidden=username in HIDDEN, room=THREAD_ROOM)
    for ip in guest_ips[:2]:
        presence.record_guest(ip, room=THREAD_ROOM)
    return Visitors(usernames, guest_ips)
