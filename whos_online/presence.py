"""Who is online, kept in Redis sorted sets scored by last-seen Unix time.

Members are known by primary key: ``<prefix>:users`` holds the pks of members,
``<prefix>:hidden`` those who asked not to be listed, ``<prefix>:cards`` each
member's card (see :mod:`whos_online.members`), ``<prefix>:guests`` guest ids
(see :mod:`whos_online.guests`); a room has its own three sets under
``<prefix>:room:<name>`` and shares the cards. ``<prefix>:peak`` and
``<prefix>:history`` keep the most ever online and the admin's samples.
"Online" means a score inside the window (``WHOS_ONLINE_MAX_AGE``), so stale
members never show even when pruning is late.

Private by default: every function that names or describes members leaves
hidden members out unless asked with ``include_hidden=True`` or for a staff
``viewer`` (``viewer=request.user``). Every function here but ``prune`` is one
Redis round trip and raises ``redis.exceptions.RedisError`` when Redis fails;
the middleware, template tag and signals call them through
:mod:`whos_online.failsafe` instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, NamedTuple, TypeVar

from whos_online import scripts
from whos_online.conf import Keys, conf, room_name
from whos_online.connection import get_client
from whos_online.guests import guest_id
from whos_online.members import Member, Status, card_json, read_member

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Peak:
    """The most people (members + guests) ever seen online at once, and when."""

    count: int
    at: datetime


@dataclass(frozen=True)
class Summary:
    """What the who's-online block shows: one consistent read of the sets and cards."""

    members: list[Member]
    user_count: int
    guest_count: int
    peak: Peak | None = None
    hidden_count: int = 0
    # Whether hidden members may be in ``members`` (a staff view).
    hidden_listed: bool = False

    @property
    def total(self) -> int:
        return self.user_count + self.guest_count

    @property
    def more(self) -> int:
        """Listable members not in ``members`` because of the list limit.

        Hidden members are not "more" to ordinary visitors: the summary line
        already counts them as hidden.
        """
        listable = self.user_count if self.hidden_listed else self.user_count - self.hidden_count
        return max(listable - len(self.members), 0)


def record_user(
    user: Any, room: str | None = None, where: str | None = None, guest_ip: str | None = None
) -> float:
    """Mark ``user`` as seen now (on the site, or in ``room``) with a fresh card; return the score.

    A member ``WHOS_ONLINE_IS_HIDDEN`` hides is kept in a set of their own:
    counted, never listed to ordinary visitors. The same write takes them out
    of the other set (so changing one's mind takes effect at the next record)
    and, given the address they browsed from as a guest (``guest_ip``), out of
    the guests, so a login never counts one person twice. ``where`` is the page
    (kept on the card for staff).
    """
    keys = conf.keys(room)
    pk = str(user.pk)
    hidden = conf.is_hidden(user)
    key, other = (keys.hidden, keys.users) if hidden else (keys.users, keys.hidden)
    card = card_json(conf.member_card(user), where)
    drop = guest_id(guest_ip) if guest_ip else ""
    return _record(
        keys, key, pk, ttl=conf.retention, drop_from=other, room=room, card=card, guest=drop
    )


def record_guest(ip: str, room: str | None = None) -> float:
    """Mark the guest at address ``ip`` as seen now; return the score written.

    Raises ValueError if ``ip`` is not an IP address.
    """
    keys = conf.keys(room)
    return _record(
        keys, keys.guests, guest_id(ip), ttl=conf.max_age, keep=conf.max_guests, room=room
    )


def forget_user(user: Any) -> bool:
    """Take a member (user or pk) off the list at once (e.g. on logout); True if they were there."""
    keys = conf.keys()
    pk = member_id(user)
    pipe = get_client().pipeline(transaction=False)
    pipe.zrem(keys.users, pk)
    pipe.zrem(keys.hidden, pk)
    pipe.hdel(keys.cards, pk)
    listed, hidden, _ = pipe.execute()
    return bool(listed or hidden)


def forget_guest(ip: str) -> bool:
    """Take the guest at ``ip`` off the count now (e.g. on login); True if it was there."""
    return bool(get_client().zrem(conf.guests_key, guest_id(ip)))


def online_users(
    limit: int | None = None,
    room: str | None = None,
    include_hidden: bool = False,
    viewer: Any = None,
) -> list[Member]:
    """Members seen inside the window, most recent first, at most ``limit``.

    Hidden members only with ``include_hidden`` or for a staff ``viewer``.
    """
    return summary(-1 if limit is None else limit, room, include_hidden, viewer).members


def user_count(room: str | None = None) -> int:
    """How many members (hidden ones too: a count names nobody) were seen inside the window."""
    cutoff = _cutoff()
    keys = conf.keys(room)
    pipe = get_client().pipeline(transaction=False)
    for key in (keys.users, keys.hidden):
        pipe.zcount(key, cutoff, "+inf")
    return sum(int(count) for count in pipe.execute())


def guest_count(room: str | None = None) -> int:
    """How many guests were seen inside the window."""
    return int(get_client().zcount(conf.keys(room).guests, _cutoff(), "+inf"))


def summary(
    limit: int | None = None,
    room: str | None = None,
    include_hidden: bool = False,
    viewer: Any = None,
) -> Summary:
    """Members (at most ``limit``, default ``WHOS_ONLINE_LIST_LIMIT``), counts and peak: one round trip.

    Hidden members are counted, and listed only with ``include_hidden`` or for
    a staff ``viewer``, who alone also see where members were last seen.
    Reading the site's counts also raises its peak if they beat it (rooms keep
    no peak).
    """
    staff_view = include_hidden or is_staff(viewer)
    limit = conf.list_limit if limit is None else limit
    now = time.time()
    keys = conf.keys(room)
    listed, listed_cards, hidden, hidden_cards, users, hidden_count, guests, *peak = (
        get_client().eval(
            scripts.SUMMARY,
            len(keys),
            *keys,
            now - conf.max_age,
            now,
            PEAK_TTL if room is None else 0,
            limit,
            int(staff_view),
            conf.max_guests,
        )
    )
    idle_after = conf.idle_after
    members = [
        read_member(pk, score, card, now, idle_after, False)
        for (pk, score), card in zip(_pairs(listed), listed_cards)
    ]
    if staff_view:
        members += [
            read_member(pk, score, card, now, idle_after, True)
            for (pk, score), card in zip(_pairs(hidden), hidden_cards)
        ]
        members.sort(key=lambda m: m.last_seen, reverse=True)
        if limit >= 0:
            del members[limit:]
    else:
        members = [m.without_where() if m.where is not None else m for m in members]
    return Summary(
        members=members,
        user_count=int(users) + int(hidden_count),
        guest_count=int(guests),
        peak=_peak(*peak),
        hidden_count=int(hidden_count),
        hidden_listed=staff_view,
    )


def peak() -> Peak | None:
    """The most ever online at once, or None before anyone was counted."""
    return _peak(*get_client().hmget(conf.keys().peak, "count", "at"))


def reset_peak() -> Peak | None:
    """Forget the peak (e.g. one a flood of addresses pinned); return what it was.

    The next count (a rendered block, or prune) starts it again from the number online.
    """
    pipe = get_client().pipeline(transaction=False)
    pipe.hmget(conf.keys().peak, "count", "at")
    pipe.delete(conf.keys().peak)
    return _peak(*pipe.execute()[0])


def last_seen(user: Any, include_hidden: bool = False, viewer: Any = None) -> datetime | None:
    """When a member (user or pk) was last seen (aware, UTC), or None if never seen or pruned.

    Members are kept for ``WHOS_ONLINE_RETENTION``, so this can be days ago. A
    hidden member reads as never seen unless ``include_hidden`` or a staff ``viewer``.
    """
    return last_seen_many([user], include_hidden, viewer)[user]


def last_seen_many(
    users: Iterable[Key], include_hidden: bool = False, viewer: Any = None
) -> dict[Key, datetime | None]:
    """``last_seen`` for a page of members (users or pks) in one round trip, keyed as given."""
    return {
        user: None if score is None else datetime.fromtimestamp(score, tz=timezone.utc)
        for user, score in _scores(users, include_hidden or is_staff(viewer)).items()
    }


def status(user: Any, include_hidden: bool = False, viewer: Any = None) -> Status:
    """Online if seen within ``WHOS_ONLINE_IDLE_AFTER``, idle within the window, else offline."""
    return statuses([user], include_hidden, viewer)[user]


def statuses(
    users: Iterable[Key], include_hidden: bool = False, viewer: Any = None
) -> dict[Key, Status]:
    """``status`` for a page of members (users or pks; avatars, a member list) in one round trip.

    A hidden member reads as offline unless ``include_hidden`` or a staff ``viewer``.
    """
    now = time.time()
    scores = _scores(users, include_hidden or is_staff(viewer))
    return {user: _status(score, now) for user, score in scores.items()}


def is_staff(viewer: Any) -> bool:
    """Whether ``viewer`` (a user, or None) may see hidden members: staff alone."""
    return bool(getattr(viewer, "is_staff", False))


class PruneResult(NamedTuple):
    """How many stale members and guests ``prune`` removed, in how many Redis calls.

    A tuple, so ``users, guests, _ = prune()`` works as well as ``.users``.
    """

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

    def prune_key(key: str, kept_for: float, cards: str | None = None) -> int:
        nonlocal batches
        total = 0
        while True:
            # EVAL, not a registered script: on Cluster, loading one needs every master.
            count = int(
                client.eval(
                    scripts.PRUNE_BATCH, 2, key, cards or key, f"({now - kept_for}", batch_size
                )
            )
            batches += 1
            total += count
            if count < batch_size:
                return total

    keys = conf.keys()
    users = prune_key(keys.users, conf.retention, keys.cards)
    users += prune_key(keys.hidden, conf.retention, keys.cards)
    guests = prune_key(keys.guests, conf.max_age)
    batches += _prune_rooms(client, now - conf.max_age, batch_size)
    prune_key(conf.rooms_key, conf.max_age)
    # Cron runs this every minute or so: it samples the counts for the admin's
    # chart, and the peak even if no page counts.
    _sample(client, now)
    return PruneResult(users=users, guests=guests, batches=batches)


ROOMS_PER_BATCH = 100


def _prune_rooms(client: Any, cutoff: float, batch_size: int) -> int:
    """Prune the rooms with a visitor inside the window (the others' keys expired); batches.

    The registry is read a page at a time (ZRANGE … LIMIT), from the window's
    start upwards by score, and each page's sets are pruned by PRUNE_ROOMS
    calls of at most ``batch_size`` removals: no call grows with the number of
    rooms.
    """
    batches, start, skip = 0, cutoff, 0
    while True:
        page = client.zrange(
            conf.rooms_key, start, "+inf", byscore=True, offset=skip, num=ROOMS_PER_BATCH,
            withscores=True,
        )  # fmt: skip
        keys = [key for name, _ in page for key in conf.keys(_text(name))[:3]]
        more = bool(keys)
        while more:
            _, more = client.eval(scripts.PRUNE_ROOMS, len(keys), *keys, f"({cutoff}", batch_size)
            batches += 1
        if len(page) < ROOMS_PER_BATCH:
            return batches
        # The next page starts at this one's last score, past the rooms seen with it.
        last = page[-1][1]
        ties = sum(1 for _, score in page if score == last)
        skip, start = (skip + ties if last == start else ties), last


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
    keys: Keys,
    key: str,
    member: str,
    ttl: float,
    keep: int | None = None,
    drop_from: str | None = None,
    room: str | None = None,
    card: str = "",
    guest: str = "",
) -> float:
    """One EVAL of scripts.RECORD: one round trip, also on Redis Cluster."""
    now = time.time()
    get_client().eval(
        scripts.RECORD,
        6,
        key,
        drop_from or key,
        conf.rooms_key,
        keys.cards,
        keys.guests,
        keys.peak,
        now,
        member,
        math.ceil(ttl),
        keep or 0,
        TRIM_PER_WRITE,
        "" if room is None else room_name(room) or "",
        math.ceil(conf.max_age),
        card,
        guest,
        conf.max_rooms,
        conf.key_prefix,
        now - conf.max_age,
    )
    return now


PEAK_TTL = 366 * 24 * 3600
# Guests over WHOS_ONLINE_MAX_GUESTS dropped by one write: about 0.1 ms of Redis time.
TRIM_PER_WRITE = 100


def _count_and_raise_peak(client: Any, now: float, keys: Keys) -> Any:
    cutoff = now - conf.max_age
    return client.eval(
        scripts.COUNT_AND_RAISE_PEAK, len(keys), *keys, cutoff, now, PEAK_TTL, conf.max_guests
    )


def _pairs(flat: list[Any]) -> list[tuple[Any, float]]:
    """[member, score, member, score, …] as a script returns WITHSCORES: (member, score)s."""
    members = iter(flat)
    return [(member, float(score)) for member, score in zip(members, members)]


def _peak(count: Any = None, at: Any = None) -> Peak | None:
    if count is None or at is None:
        return None
    return Peak(int(count), datetime.fromtimestamp(float(at), tz=timezone.utc))


def _scores(users: Iterable[Key], include_hidden: bool) -> dict[Key, float | None]:
    """Each member's last-seen score (the newest over the member sets), in one round trip."""
    given = list(dict.fromkeys(users))
    if not given:
        return {}
    pks = [member_id(user) for user in given]
    keys = conf.keys()
    pipe = get_client().pipeline(transaction=False)
    for key in (keys.users, keys.hidden) if include_hidden else (keys.users,):
        pipe.zmscore(key, pks)
    per_key = pipe.execute()
    scores: dict[Key, float | None] = {}
    for i, user in enumerate(given):
        found = [float(row[i]) for row in per_key if row[i] is not None]
        scores[user] = max(found) if found else None
    return scores


def member_id(user: Any) -> str:
    """A member's id in Redis: the pk of a user object, or a pk given as it is."""
    return str(getattr(user, "pk", user))


def _status(score: float | None, now: float) -> Status:
    if score is None or score < now - conf.max_age:
        return "offline"
    return "online" if score >= now - conf.idle_after else "idle"


def _cutoff() -> float:
    return time.time() - conf.max_age


def _text(member: Any) -> str:
    return member.decode("utf-8", "replace") if isinstance(member, bytes) else member
