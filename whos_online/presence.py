"""Who is online, kept in Redis sorted sets scored by last-seen Unix time.

``<prefix>:users`` holds usernames, ``<prefix>:hidden`` members who asked not
to be listed, ``<prefix>:guests`` guest ids (see :mod:`whos_online.guests`);
a room has the same three under ``<prefix>:room:<name>``. ``<prefix>:peak``
and ``<prefix>:history`` keep the most ever online and the admin's samples.
"Online" means a score inside the window (``WHOS_ONLINE_MAX_AGE``), so stale
members never show even when pruning is late. Every function here but
``prune`` is one Redis round trip and raises ``redis.exceptions.RedisError``
when Redis fails; the middleware, template tag
and signals call them through :mod:`whos_online.failsafe` instead.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Literal

from redis.exceptions import ResponseError

from whos_online import scripts
from whos_online.conf import Keys, conf
from whos_online.connection import get_client
from whos_online.guests import guest_id


@dataclass(frozen=True)
class Peak:
    """The most people (members + guests) ever seen online at once, and when."""

    count: int
    at: datetime


@dataclass(frozen=True)
class Summary:
    """What the who's-online block shows: one consistent read of both sets."""

    usernames: list[str]
    user_count: int
    guest_count: int
    peak: Peak | None = None
    hidden_count: int = 0
    # Those of ``usernames`` who asked to be hidden (listed only for staff).
    hidden: frozenset[str] = frozenset()
    # Whether hidden members may be in ``usernames`` (a staff view).
    hidden_listed: bool = False

    @property
    def total(self) -> int:
        return self.user_count + self.guest_count

    @property
    def more(self) -> int:
        """Listable members not in ``usernames`` because of the list limit.

        Hidden members are not "more" to ordinary visitors: the summary line
        already counts them as hidden.
        """
        listable = self.user_count if self.hidden_listed else self.user_count - self.hidden_count
        return max(listable - len(self.usernames), 0)


Status = Literal["online", "idle", "offline"]


def record_user(username: str, hidden: bool = False, room: str | None = None) -> float:
    """Mark ``username`` as seen now (on the site, or in ``room``); return the score written.

    A ``hidden`` member is kept in a set of their own: counted, never listed to
    ordinary visitors. The same write takes them out of the other set, so
    changing one's mind takes effect at the next record.
    """
    keys = conf.keys(room)
    key, other = (keys.hidden, keys.users) if hidden else (keys.users, keys.hidden)
    return _record(key, username, ttl=conf.retention, drop_from=other, room=room)


def record_guest(ip: str, room: str | None = None) -> float:
    """Mark the guest at address ``ip`` as seen now; return the score written.

    Raises ValueError if ``ip`` is not an IP address.
    """
    key = conf.keys(room).guests
    return _record(key, guest_id(ip), ttl=conf.max_age, keep=conf.max_guests, room=room)


def forget_user(username: str) -> bool:
    """Take ``username`` off the list at once (e.g. on logout); True if it was there."""
    pipe = get_client().pipeline(transaction=False)
    for key in _member_keys(conf.keys(), include_hidden=True):
        pipe.zrem(key, username)
    return any(pipe.execute())


def forget_guest(ip: str) -> bool:
    """Take the guest at ``ip`` off the count now (e.g. on login); True if it was there."""
    return bool(get_client().zrem(conf.guests_key, guest_id(ip)))


def online_users(
    limit: int | None = None, include_hidden: bool = True, room: str | None = None
) -> list[str]:
    """Usernames seen inside the window, most recent first, at most ``limit``."""
    keys = _member_keys(conf.keys(room), include_hidden)
    cutoff = _cutoff()  # one window for both sets
    pipe = get_client().pipeline(transaction=False)
    for key in keys:
        _newest(pipe, key, cutoff, limit, scores=len(keys) > 1)
    return _newest_names(pipe.execute(), limit)


def user_count(room: str | None = None) -> int:
    """How many members (hidden ones too) were seen inside the window."""
    cutoff = _cutoff()
    pipe = get_client().pipeline(transaction=False)
    for key in _member_keys(conf.keys(room), include_hidden=True):
        pipe.zcount(key, cutoff, "+inf")
    return sum(int(count) for count in pipe.execute())


def guest_count(room: str | None = None) -> int:
    """How many guests were seen inside the window."""
    return int(get_client().zcount(conf.keys(room).guests, _cutoff(), "+inf"))


def summary(limit: int, include_hidden: bool = False, room: str | None = None) -> Summary:
    """Usernames (at most ``limit``), the counts and the peak, in one round trip.

    Hidden members are counted, and listed only with ``include_hidden`` (for
    staff). Reading the site's counts also raises its peak if they beat it
    (rooms keep no peak).
    """
    now = time.time()
    keys = conf.keys(room)
    listed, hidden_listed, users, hidden, guests, *peak = get_client().eval(
        scripts.SUMMARY,
        len(keys),
        *keys,
        now - conf.max_age,
        now,
        PEAK_TTL if room is None else 0,
        limit,
        int(include_hidden),
    )
    if include_hidden:
        lists = [_pairs(listed), _pairs(hidden_listed)]
    else:
        lists = [listed]
    return Summary(
        usernames=_newest_names(lists, limit),
        user_count=int(users) + int(hidden),
        guest_count=int(guests),
        peak=_peak(*peak),
        hidden_count=int(hidden),
        hidden=frozenset(_text(member) for member, _ in lists[1])
        if include_hidden
        else frozenset(),
        hidden_listed=include_hidden,
    )


def peak() -> Peak | None:
    """The most ever online at once, or None before anyone was counted."""
    return _peak(*get_client().hmget(conf.keys().peak, "count", "at"))


def last_seen(username: str) -> datetime | None:
    """When ``username`` was last seen (aware, UTC), or None if never seen or pruned.

    Members are kept for ``WHOS_ONLINE_RETENTION``, so this can be days ago.
    """
    return last_seen_many([username])[username]


def last_seen_many(
    usernames: Iterable[str], include_hidden: bool = True
) -> dict[str, datetime | None]:
    """``last_seen`` for a page of members in one round trip."""
    return {
        name: None if score is None else datetime.fromtimestamp(score, tz=timezone.utc)
        for name, score in _scores(usernames, include_hidden).items()
    }


def status(username: str) -> Status:
    """Online if seen within ``WHOS_ONLINE_IDLE_AFTER``, idle within the window, else offline."""
    return statuses([username])[username]


def statuses(usernames: Iterable[str], include_hidden: bool = True) -> dict[str, Status]:
    """``status`` for a page of members (avatars, a member list) in one round trip.

    The truth by default; templates pass ``include_hidden=False`` for anyone but
    staff, so a hidden member reads as offline to them.
    """
    now = time.time()
    return {name: _status(score, now) for name, score in _scores(usernames, include_hidden).items()}


@dataclass(frozen=True)
class PruneResult:
    """How many stale members and guests ``prune`` removed, in how many Redis calls."""

    users: int
    guests: int
    batches: int


def prune(batch_size: int = 1000) -> PruneResult:
    """Remove guests older than the window and members older than the retention.

    Removes ``batch_size`` per Redis call.
    One ZREMRANGEBYSCORE over 100,000 stale members blocks Redis (often shared
    with the site's cache and sessions) for ~80 ms; a batch of 1,000 takes ~1 ms.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    client = get_client()
    now = time.time()
    batches = 0

    def prune_key(key: str, kept_for: float) -> int:
        nonlocal batches
        total = 0
        while True:
            # EVAL, not a registered script: on Cluster, loading one needs every master.
            count = int(client.eval(scripts.PRUNE_BATCH, 1, key, f"({now - kept_for}", batch_size))
            batches += 1
            total += count
            if count < batch_size:
                return total

    keys = conf.keys()
    users = prune_key(keys.users, conf.retention) + prune_key(keys.hidden, conf.retention)
    guests = prune_key(keys.guests, conf.max_age)
    # Rooms: those with a visitor inside the window; the others' keys have expired.
    rooms = client.zrange(conf.rooms_key, now - conf.max_age, "+inf", byscore=True)
    for room in (_text(name) for name in rooms):
        room_keys = conf.keys(room)
        for key in (room_keys.users, room_keys.hidden, room_keys.guests):
            prune_key(key, conf.max_age)
    prune_key(conf.rooms_key, conf.max_age)
    # Cron runs this every minute or so: it samples the counts for the admin's
    # chart, and the peak even if no page counts.
    _sample(client, now)
    return PruneResult(users=users, guests=guests, batches=batches)


@dataclass(frozen=True)
class Sample:
    """The counts at one moment, as ``whos_online_prune`` sampled them."""

    at: datetime
    users: int
    guests: int


HISTORY_SECONDS = 24 * 3600
# One sample a minute fills a day; a cron running more often cannot grow it further.
HISTORY_MAX = 2 * 24 * 60


def history(seconds: float = HISTORY_SECONDS) -> list[Sample]:
    """Samples of the last ``seconds`` (at most a day), oldest first."""
    raw = get_client().zrange(conf.history_key, time.time() - seconds, "+inf", byscore=True)
    samples = []
    for member in raw:
        at, users, guests = _text(member).split(":")
        moment = datetime.fromtimestamp(float(at), tz=timezone.utc)
        samples.append(Sample(moment, int(users), int(guests)))
    return samples


def _sample(client: Any, now: float) -> None:
    users, hidden, guests, *_ = _count_and_raise_peak(client, now, conf.keys())
    pipe = client.pipeline(transaction=False)
    pipe.zadd(conf.history_key, {f"{now:.3f}:{int(users) + int(hidden)}:{int(guests)}": now})
    pipe.zremrangebyscore(conf.history_key, "-inf", f"({now - HISTORY_SECONDS}")
    pipe.zremrangebyrank(conf.history_key, 0, -HISTORY_MAX - 1)
    pipe.expire(conf.history_key, HISTORY_SECONDS)
    pipe.execute()


def _record(
    key: str,
    member: str,
    ttl: float,
    keep: int | None = None,
    drop_from: str | None = None,
    room: str | None = None,
) -> float:
    """One EVAL of scripts.RECORD: one round trip, also on Redis Cluster."""
    now = time.time()
    get_client().eval(
        scripts.RECORD,
        3,
        key,
        drop_from or key,
        conf.rooms_key,
        now,
        member,
        math.ceil(ttl),
        keep or 0,
        TRIM_PER_WRITE,
        room or "",
        math.ceil(conf.max_age),
    )
    return now


def _member_keys(keys: Keys, include_hidden: bool) -> tuple[str, ...]:
    return (keys.users, keys.hidden) if include_hidden else (keys.users,)


def _newest(pipe: Any, key: str, cutoff: float, limit: int | None, scores: bool) -> None:
    """Queue ZRANGE key +inf cutoff BYSCORE REV [LIMIT 0 limit] [WITHSCORES]."""
    pipe.zrange(
        key,
        "+inf",
        cutoff,
        desc=True,
        byscore=True,
        offset=None if limit is None else 0,
        num=limit,
        withscores=scores,
    )


def _newest_names(lists: list[list[Any]], limit: int | None) -> list[str]:
    """Names from one newest-first list, or several (with scores) merged newest first.

    Scores are only fetched to merge: parsing them costs more than the rest of
    a render (see benchmarks/RESULTS.md).
    """
    if len(lists) == 1:
        return [_text(member) for member in lists[0]]
    merged = sorted(
        ((member, float(score)) for members in lists for member, score in members),
        key=lambda pair: pair[1],
        reverse=True,
    )
    return [_text(member) for member, _ in merged[:limit]]


PEAK_TTL = 366 * 24 * 3600
# Guests over WHOS_ONLINE_MAX_GUESTS dropped by one write: about 0.1 ms of Redis time.
TRIM_PER_WRITE = 100


def _count_and_raise_peak(client: Any, now: float, keys: Keys) -> Any:
    cutoff = now - conf.max_age
    return client.eval(scripts.COUNT_AND_RAISE_PEAK, len(keys), *keys, cutoff, now, PEAK_TTL)


def _pairs(flat: list[Any]) -> list[tuple[Any, float]]:
    """[member, score, member, score, …] as a script returns WITHSCORES: (member, score)s."""
    members = iter(flat)
    return [(member, float(score)) for member, score in zip(members, members)]


def _peak(count: Any = None, at: Any = None) -> Peak | None:
    if count is None or at is None:
        return None
    return Peak(int(count), datetime.fromtimestamp(float(at), tz=timezone.utc))


def _scores(usernames: Iterable[str], include_hidden: bool) -> dict[str, float | None]:
    """Each name's last-seen score (the newest over the member sets), in one round trip."""
    names = list(dict.fromkeys(usernames))
    if not names:
        return {}
    client = get_client()
    keys = _member_keys(conf.keys(), include_hidden)
    try:
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.zmscore(key, names)
        per_key = pipe.execute()
    except ResponseError as exc:
        if "unknown command" not in str(exc).lower():
            raise
        # Redis before 6.2 has no ZMSCORE: the same answer from ZSCOREs.
        pipe = client.pipeline(transaction=False)
        for key in keys:
            for name in names:
                pipe.zscore(key, name)
        flat = pipe.execute()
        per_key = [flat[i : i + len(names)] for i in range(0, len(flat), len(names))]
    scores: dict[str, float | None] = {}
    for i, name in enumerate(names):
        found = [float(row[i]) for row in per_key if row[i] is not None]
        scores[name] = max(found) if found else None
    return scores


def _status(score: float | None, now: float) -> Status:
    if score is None or score < now - conf.max_age:
        return "offline"
    return "online" if score >= now - conf.idle_after else "idle"


def _cutoff() -> float:
    return time.time() - conf.max_age


def _text(member: Any) -> str:
    return member.decode("utf-8", "replace") if isinstance(member, bytes) else member
