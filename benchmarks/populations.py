"""Who is online before the timing starts, and the Redis memory each visitor takes.

A population of N is N members and N guests (whos_online keeps at most
``conf.max_guests``), all inside the window. The bulk goes in as
pipelined ZADDs; the newest members (those the block lists, with their cards)
and ``GUEST_POOL``'s guests (those the recording requests come from) are
written by whos_online's own record functions, as a site writes them.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Iterable

import redis
from baselines import naive_keys
from benchsite import GUEST_POOL
from django.core.cache import cache
from django.test.utils import override_settings

LISTED = 150  # more than the block lists (WHOS_ONLINE_LIST_LIMIT, 100)


def zadd(admin: redis.Redis, key: str, members: Iterable[str], ago: float = 0) -> None:
    """Seen in the 10 minutes before ``ago`` seconds ago (recording moves one to the top)."""
    now, rng = time.time() - ago, random.Random(key)
    members = iter(members)
    while chunk := list(itertools.islice(members, 20_000)):
        pipe = admin.pipeline(transaction=False)
        for start in range(0, len(chunk), 2000):
            pipe.zadd(key, {m: now - 600 * rng.random() for m in chunk[start : start + 2000]})
        pipe.expire(key, 7200).execute()


class Person:
    """A member as whos_online sees a user: a pk, a full name and a profile URL."""

    def __init__(self, pk: int) -> None:
        self.pk = pk

    def get_full_name(self) -> str:
        return f"{random.Random(self.pk).choice(NAMES)} {self.pk}"

    def get_absolute_url(self) -> str:
        return f"/members/{self.pk}/"


NAMES = "Olivia Liam Emma Noah Ava Elijah Sophia Lucas Mia Mateo Amelia Levi Harper Ezra".split()


def record_member(pk: int) -> None:
    from whos_online import presence

    presence.record_user(Person(pk))


def fill_whos_online(admin: redis.Redis, prefix: str, n: int) -> None:
    from whos_online import presence
    from whos_online.conf import conf

    with override_settings(WHOS_ONLINE_KEY_PREFIX=prefix):
        keys, guests = conf.keys(), min(n, conf.max_guests) - len(GUEST_POOL)
        zadd(admin, keys.users, (str(pk) for pk in range(LISTED, n)))  # the unlisted: no cards
        zadd(admin, keys.guests, (f"{random.getrandbits(64):016x}" for _ in range(guests)))
        for i in range(LISTED):
            record_member(i)
        for ip in GUEST_POOL:
            presence.record_guest(ip)


def fill_baselines(admin: redis.Redis, base: str, n: int) -> None:
    """The naive sorted sets (usernames, addresses) and the cache dict, of n members and n guests."""
    users, addresses = (
        [f"member_{i}" for i in range(n)],
        GUEST_POOL
        + [f"172.{16 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}" for i in range(n - len(GUEST_POOL))],
    )
    for key, members in zip(naive_keys(base), (users, addresses)):
        zadd(admin, key, members)
    now = time.time()
    online = {"users": dict.fromkeys(users, now), "guests": dict.fromkeys(addresses, now)}
    cache.set(base, online, timeout=7200)


def bytes_per_visitor(admin: redis.Redis, prefix: str, n: int) -> tuple[float, float]:
    """Redis memory per guest and per member: n of each recorded as a site records them."""
    from whos_online import presence

    sizes = []
    for kind in ("guests", "members"):
        with override_settings(WHOS_ONLINE_KEY_PREFIX=f"{prefix}:{kind}"):
            for i in range(n):
                if kind == "guests":
                    presence.record_guest(f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}")
                else:
                    record_member(i)
        keys = admin.scan_iter(match=f"{prefix}:{kind}:*", count=1000)
        sizes.append(sum(admin.memory_usage(key, samples=0) or 0 for key in keys) / n)
    return sizes[0], sizes[1]
