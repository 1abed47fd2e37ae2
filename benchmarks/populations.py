"""Who is online before the timing starts: N members and N guests for each implementation.

Members get typical usernames ("olivia_48213"). whos_online's guests are 16-hex
ids as ``presence.guest_id`` makes them, the baselines' guests are raw addresses.
The addresses the recording requests come from (``GUEST_POOL``) are part of
every population, so recording updates a member instead of adding one and the
population stays at N for the whole run.
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

import redis
from baselines import naive_keys

GUEST_POOL = [f"10.99.{i >> 8}.{i & 255}" for i in range(256)]
FIRST_NAMES = (
    "olivia liam emma noah ava elijah sophia lucas mia mateo amelia levi harper ezra "
    "evelyn james luna aiden camila oliver gianna theo isla kai nova leo aria miles "
    "chloe elias ivy jack zoe henry nora owen hazel wyatt lily ethan"
).split()
FRESH = (0.0, 600.0)  # seen in the last 10 minutes: online (the window is an hour)
ZADD_CHUNK = 2000  # members per ZADD: ~5 ms of Redis time, so a shared server stays responsive
MEMORY_SAMPLES = 10_000  # MEMORY USAGE reads this many elements: exact up to 10k, ~3 ms above


@dataclass(frozen=True)
class Stored:
    """One key as Redis holds it: for the memory-per-member table."""

    implementation: str
    what: str
    online: int  # the population's N
    members: int  # in this key
    bytes: int

    @property
    def per_member(self) -> float:
        return self.bytes / self.members


def usernames(count: int, start: int = 0) -> Iterator[str]:
    rng = random.Random(start)
    return (f"{rng.choice(FIRST_NAMES)}_{i}" for i in range(start, start + count))


def addresses(count: int, start: int = 0) -> Iterator[str]:
    """Addresses outside GUEST_POOL's range."""
    return (f"172.{16 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}" for i in range(start, start + count))


def hex_ids(count: int, seed: int = 0) -> Iterator[str]:
    rng = random.Random(seed)
    return (f"{rng.getrandbits(64):016x}" for _ in range(count))


def fill_sorted_set(
    admin: redis.Redis, key: str, members: Iterable[str], ago: tuple[float, float], ttl: int
) -> int:
    """ZADD members with scores ``ago`` seconds before now, in pipelined chunks; return the count."""
    rng = random.Random(key)
    now = time.time()
    low, high = ago
    total = 0
    pipe = admin.pipeline(transaction=False)
    for chunk in _chunks(members):
        pipe.zadd(key, {m: now - low - rng.random() * (high - low) for m in chunk})
        total += len(chunk)
        if len(pipe) >= 20:
            pipe.execute()
    pipe.expire(key, ttl)
    pipe.execute()
    return total


def _chunks(items: Iterable[str]) -> Iterator[tuple[str, ...]]:
    iterator = iter(items)
    while chunk := tuple(itertools.islice(iterator, ZADD_CHUNK)):
        yield chunk


def whos_online_keys(prefix: str) -> tuple[str, str]:
    """whos_online's (users, guests) sorted sets under ``prefix``, as whos_online names them."""
    from django.test.utils import override_settings

    from whos_online.conf import conf

    with override_settings(WHOS_ONLINE_KEY_PREFIX=prefix):
        return conf.users_key, conf.guests_key


def fill_whos_online(admin: redis.Redis, prefix: str, online: int, ttl: int) -> list[Stored]:
    """``online`` members and as many guests as whos_online keeps (WHOS_ONLINE_MAX_GUESTS)."""
    from whos_online.conf import conf
    from whos_online.presence import guest_id

    guests = min(online, conf.max_guests)
    pool = [guest_id(ip) for ip in GUEST_POOL]
    users_key, guests_key = whos_online_keys(prefix)
    fill_sorted_set(admin, users_key, usernames(online), FRESH, ttl)
    fill_sorted_set(
        admin, guests_key, itertools.chain(pool, hex_ids(guests - len(pool))), FRESH, ttl
    )
    return [
        Stored("whos_online", "users (usernames)", online, online, memory(admin, users_key)),
        Stored("whos_online", "guests (16-hex ids)", online, guests, memory(admin, guests_key)),
    ]


def fill_naive(admin: redis.Redis, base: str, online: int, ttl: int) -> list[Stored]:
    users_key, guests_key = naive_keys(base)
    fill_sorted_set(admin, users_key, usernames(online), FRESH, ttl)
    fill_sorted_set(
        admin,
        guests_key,
        itertools.chain(GUEST_POOL, addresses(online - len(GUEST_POOL))),
        FRESH,
        ttl,
    )
    return [
        Stored("naive sorted set", "users (usernames)", online, online, memory(admin, users_key)),
        Stored("naive sorted set", "guests (addresses)", online, online, memory(admin, guests_key)),
    ]


def online_dict(
    online: int, ago: tuple[float, float], guests: Iterable[str]
) -> dict[str, dict[str, float]]:
    rng = random.Random(online)
    now = time.time()
    low, high = ago
    return {
        "users": {name: now - low - rng.random() * (high - low) for name in usernames(online)},
        "guests": {ip: now - low - rng.random() * (high - low) for ip in guests},
    }


def fill_cache_dict(admin: redis.Redis, key: str, online: int, ttl: int) -> list[Stored]:
    from django.core.cache import cache

    guests = itertools.chain(GUEST_POOL, addresses(online - len(GUEST_POOL)))
    cache.set(key, online_dict(online, FRESH, guests), ttl)
    stored = memory(admin, cache.make_key(key))
    return [Stored("cache dict", "users and guests (one pickled dict)", online, 2 * online, stored)]


def memory(admin: redis.Redis, key: str) -> int:
    """MEMORY USAGE, exact up to MEMORY_SAMPLES elements (SAMPLES 0 on a million blocks Redis ~250 ms)."""
    used = admin.memory_usage(key, samples=MEMORY_SAMPLES)
    if used is None:
        raise RuntimeError(f"{key} is not in Redis")
    return int(used)
