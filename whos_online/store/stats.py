"""What is kept over time: the most ever online (the peak), and ``prune`` (cron), which
raises it and samples the counts for the admin page's chart (whos_online.contrib.admin).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from whos_online.conf import Keys, conf
from whos_online.store import counting, scripts
from whos_online.store.connection import get_client, text


@dataclass(frozen=True)
class Peak:
    """The most people (members + guests) ever seen online at once, and when."""

    count: int
    at: datetime


def peak() -> Peak | None:
    """The most ever online at once, or None before anyone was counted."""
    return peak_from(*get_client().hmget(conf.keys().peak, "count", "at"))


def reset_peak() -> Peak | None:
    """Forget the peak (e.g. one a flood of addresses pinned); return what it was.

    The next ``prune`` starts it again from the number online; until then a block shows
    the number online now as the most ever.
    """
    pipe = get_client().pipeline(transaction=False)
    pipe.hmget(conf.keys().peak, "count", "at")
    pipe.delete(conf.keys().peak)
    return peak_from(*pipe.execute()[0])


PEAK_TTL = 366 * 24 * 3600


def peak_from(count: Any = None, at: Any = None) -> Peak | None:
    if count is None or at is None:
        return None
    return Peak(int(count), datetime.fromtimestamp(float(at), tz=timezone.utc))


class PruneResult(NamedTuple):
    """How many stale members and guests ``prune`` removed, in how many Redis calls.

    A tuple, so ``users, guests, _ = prune()`` works as well as ``.users``.
    """

    users: int
    guests: int
    batches: int


def prune(*, batch_size: int = 1000) -> PruneResult:
    """Remove guests older than the window and members older than the retention, and
    raise the peak if the count now beats it (the one call that writes the peak).

    Removes ``batch_size`` per Redis call, so a Redis shared with the site's cache and
    sessions is never held for long.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    client = get_client()
    now = time.time()
    batches = 0

    def prune_key(key: str, kept_for: float, cards: str = "", signs: tuple[str, ...] = ()) -> int:
        """Prune ``key`` (its ``cards``; ``signs``: live, left and its index) in batches,
        reading on past the members a socket keeps (see lua/prune_batch.lua)."""
        nonlocal batches
        total = skip = 0
        declared = [key, cards or key, *(signs or (key, key, key))]
        while True:
            removed, passed, more = scripts.PRUNE_BATCH(
                client, declared, [now - kept_for, batch_size, skip]
            )
            batches += 1
            total, skip = total + int(removed), skip + int(passed)
            if removed < batch_size and not more:
                return total

    keys = conf.keys()
    live, left, kept_users, kept_hidden = conf.socket_keys()
    users = prune_key(keys.users, conf.retention, keys.cards, (live, left, kept_users))
    users += prune_key(keys.hidden, conf.retention, keys.cards, (live, left, kept_hidden))
    guests = prune_key(keys.guests, conf.max_age)
    batches += _prune_rooms(client, now - conf.room_max_age, batch_size)
    prune_key(conf.rooms_key, conf.room_max_age)
    # Cron runs this every minute or so: sample the counts for the admin's chart, raise the peak.
    online, guests_online = count(client, now)
    pipe = client.pipeline(transaction=False)
    pipe.zadd(conf.history_key, {f"{now:.3f}:{online}:{guests_online}": now})
    pipe.zremrangebyscore(conf.history_key, "-inf", f"({now - HISTORY_SECONDS}")
    pipe.zremrangebyrank(conf.history_key, 0, -HISTORY_MAX - 1)
    pipe.expire(conf.history_key, HISTORY_SECONDS)
    pipe.execute()
    # Merge the past 23 hours of each hour counter once an hour (see counting.past_hours),
    # call by call: Redis Cluster refuses PFMERGE in a pipeline.
    merges = [counting.past_hours(who, now) for who in ("guests", "members")]
    if client.exists(*(union for union, _, _ in merges)) < len(merges):
        for union, hours, ttl in merges:
            client.pfmerge(union, *hours)
            client.expire(union, ttl)
    return PruneResult(users=users, guests=guests, batches=batches)


ROOMS_PER_BATCH = 100


def _prune_rooms(client: Any, cutoff: float, batch_size: int) -> int:
    """Prune the rooms with a visitor inside the window (the others' keys expired); batches.

    The registry is read a page at a time (ZRANGE … LIMIT), from the window's
    start upwards by score, and each page's sets are pruned by PRUNE_ROOMS calls of
    at most ``batch_size`` removals: no call grows with the number of rooms.
    """
    batches, start, skip = 0, cutoff, 0
    while True:
        page = client.zrange(
            conf.rooms_key, start, "+inf", byscore=True, offset=skip, num=ROOMS_PER_BATCH,
            withscores=True,
        )  # fmt: skip
        keys: list[str] = []
        for name, _ in page:
            room = conf.keys(text(name))
            keys += [room.users, room.hidden, room.guests, *conf.socket_keys(text(name))]
        more = bool(keys)
        while more:
            _, more = scripts.PRUNE_ROOMS(client, keys, [cutoff, batch_size])
            batches += 1
        if len(page) < ROOMS_PER_BATCH:
            return batches
        # The next page starts at this one's last score, past the rooms seen with it.
        last = page[-1][1]
        ties = sum(1 for _, score in page if score == last)
        skip, start = (skip + ties if last == start else ties), last


HISTORY_SECONDS = 24 * 3600
# One sample a minute fills a day; a cron running more often cannot grow it further.
HISTORY_MAX = 2 * 24 * 60


def guest_cap() -> int:
    """The guest cap the peak respects: none in approximate mode, where guests are uncapped."""
    return 0 if counting.approximate() else conf.max_guests


def guest_buckets(keys: Keys, now: float, window: float) -> list[str]:
    """The guest HyperLogLogs a count of ``keys``'s ``window`` reads: none in exact mode."""
    return counting.window_buckets(keys.guests, now, window) if counting.approximate() else []


def count(client: Any, now: float) -> tuple[int, int]:
    """The members (hidden ones too) and guests online (see lua/count_and_raise_peak.lua),
    raising the site's peak if their sum beats it."""
    keys = conf.keys()
    users, hidden, guests, *_ = scripts.COUNT_AND_RAISE_PEAK(
        client,
        [*keys, *conf.socket_keys(), *guest_buckets(keys, now, conf.max_age)],
        [now - conf.max_age, now, PEAK_TTL, guest_cap()],
    )
    return int(users) + int(hidden), int(guests)
