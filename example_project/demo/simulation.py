"""Fake visitors, so the who's-online block has something to show without real traffic.

Shared by the ``simulate_visitors`` command and the home page's button, so both
record visitors the same way: through the public ``whos_online.presence`` API.
Simulated members are real users (created on first use, with no usable
password), so their names link to real profiles and their cards are made by
the site's ``WHOS_ONLINE_MEMBER_CARD`` like anyone's.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from django.contrib.auth import get_user_model

from demo.people import SIMULATED, Person, get_or_create, login_of
from whos_online import presence

# The simulation sees everyone, hidden members too, as staff do.
STAFF = SimpleNamespace(is_staff=True)

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

    members: list[Any]  # users
    guest_ips: list[str]


def simulated_people(count: int, rng: random.Random, skip: set[str]) -> list[Person]:
    """``count`` distinct people whose login is not in ``skip`` (those online already, so
    each simulation adds members): a random pick from SIMULATED, then nameless ones."""
    named = [person for person in SIMULATED if person.login not in skip]
    people = rng.sample(named, min(count, len(named)))
    number = len(SIMULATED)
    while len(people) < count:
        number += 1
        if f"member{number}" not in skip:
            people.append(Person(f"member{number}"))
    return people


def online_logins() -> set[str]:
    """Who is online now (hidden members too), by login: one Redis call, one query."""
    pks = [member.pk for member in presence.summary(limit=-1, viewer=STAFF).members]
    return {login_of(user) for user in get_user_model()._default_manager.filter(pk__in=pks)}


def guest_ip(rng: random.Random) -> str:
    """A random host address from one of the documentation ranges."""
    network = rng.choice(GUEST_NETWORKS)
    # Skip the first and last address: the network and broadcast address of an IPv4 /24.
    return str(network[rng.randrange(1, network.num_addresses - 1)])


def simulate(members: int, guests: int, rng: random.Random | None = None) -> Visitors:
    """Record ``members`` members who are not online yet and ``guests`` guests as seen now.

    Creates the members' users if missing (the database must be migrated).
    Raises redis.exceptions.RedisError if Redis fails (nothing here fails open:
    the caller decides how to report it).
    """
    rng = rng or random.Random()
    people = simulated_people(members, rng, online_logins() if members else set())
    rng.shuffle(people)  # the block lists the most recent first; don't make it alphabetical
    users = [get_or_create(person)[0] for person in people]
    guest_ips: list[str] = []
    while len(guest_ips) < guests:  # distinct, so --guests 40 really adds 40
        ip = guest_ip(rng)
        if ip not in guest_ips:
            guest_ips.append(ip)
    # record_user makes the card, which says who is hidden (demo.cards).
    for user in users:
        presence.record_user(user)
    for ip in guest_ips:
        presence.record_guest(ip)
    # A few of them are reading the thread.
    for user in users[:3]:
        presence.record_user(user, room=THREAD_ROOM)
    for ip in guest_ips[:2]:
        presence.record_guest(ip, room=THREAD_ROOM)
    return Visitors(users, guest_ips)
