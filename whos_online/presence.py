"""Who is online, kept in Redis sorted sets scored by last-seen Unix time.

Members are known by primary key: ``<prefix>:users`` holds the pks of members,
``<prefix>:hidden`` those who asked not to be listed, ``<prefix>:cards`` each
member's card (see :mod:`whos_online.members`), ``<prefix>:guests`` guest ids
(see :mod:`whos_online.guests`); a room has its own three sets under
``<prefix>:room:<name>`` and shares the cards. ``<prefix>:peak`` and
``<prefix>:history`` keep the most ever online and the admin's samples.
HyperLogLogs count guests in approximate mode and everyone per hour and per
day (see :mod:`whos_online.counting`).
"Online" means a score inside the window (``WHOS_ONLINE_MAX_AGE``), so stale
members never show even when pruning is late.

WebSocket connections (see :mod:`whos_online.realtime.consumers`) add, per
namespace, ``live`` (pk -> newest heartbeat), ``left`` (pk -> when their last
connection closed) and ``conns:<pk>`` (connection id -> heartbeat).
Heartbeats keep connected members inside the window (see scripts.HEARTBEAT);
reads merge: a living connection (a heartbeat inside
``conf.heartbeat_timeout``) is online, and a member whose newest sign
was a connection now gone is idle at most. Every script that changes what a
namespace shows sets its ``changed`` mark and publishes its room on
``<prefix>:notices``, for the live blocks' hubs (see :mod:`whos_online.realtime.hub`).

Private by default: every function that names or describes members leaves
hidden members out unless asked with ``include_hidden=True`` or for a staff
``viewer`` (``viewer=request.user``). Every function here but ``prune``,
``connect`` and ``heartbeat`` (batched) is one Redis round trip and raises
``redis.exceptions.RedisError`` when Redis fails;
the middleware, template tag and signals call them through
:mod:`whos_online.failsafe` instead.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone
from functools import lru_cache
from itertools import repeat
from typing import Any, Iterable, NamedTuple, TypeVar, cast

from whos_online import counting, recovery, scripts
from whos_online.conf import Keys, conf, on_settings_change, room_name
from whos_online.connection import get_client
from whos_online.guests import Address, guest_id
from whos_online.members import Member, Status, card_json, member_from, parse_cards, read_member

__all__ = [
    # reading
    "Summary",
    "summary",
    "online_users",
    "user_count",
    "guest_count",
    "status",
    "statuses",
    "last_seen",
    "last_seen_many",
    "is_staff",
    "member_id",
    "Peak",
    "peak",
    "reset_peak",
    "DayVisitors",
    "daily_visitors",
    "Sample",
    "history",
    # recording
    "Visit",
    "record_user",
    "record_guest",
    "forget_user",
    "forget_guest",
    "PruneResult",
    "prune",
    # WebSocket connections, for a consumer that cannot inherit the mixin
    "Connection",
    "open_connection",
    "connect",
    "heartbeat",
    "disconnect",
    "connected",
    "check",
    "SOCKET_GRACE",
]

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
    # Members and guests seen in the past 24 hours, when asked for (``summary(day=True)``).
    day_users: int | None = None
    day_guests: int | None = None
    # When this picture changes by time alone (Unix time: a member turning idle,
    # someone leaving the window), None if nothing will until someone acts.
    changes_at: float | None = None
    # When Redis's data began (its generation, see whos_online.recovery): nothing
    # older survived a restart without persistence or a cache clear.
    since: datetime | None = None
    # Renderings of this very summary (e.g. the block's member list per language),
    # so a cached summary is rendered once; a changed copy (``replace``) starts empty.
    rendered: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def total(self) -> int:
        return self.user_count + self.guest_count

    @property
    def day_total(self) -> int | None:
        """Everyone seen in the past 24 hours (guests approximate), or None if not asked for."""
        if self.day_users is None or self.day_guests is None:
            return None
        return self.day_users + self.day_guests

    @property
    def more(self) -> int:
        """Listable members not in ``members`` because of the list limit.

        Hidden members are not "more" to ordinary visitors: the summary line
        already counts them as hidden.
        """
        listable = self.user_count if self.hidden_listed else self.user_count - self.hidden_count
        return max(listable - len(self.members), 0)


class Visit(NamedTuple):
    """A recorded visit: its time (the score), the visitor's score before it
    (None if they were not in the set), for a member how the block shows them,
    and whether the guest cap refused a newcomer (a flood: nothing was written)."""

    at: float
    before: float | None
    member: Member | None = None
    refused: bool = False


def record_user(
    user: Any,
    room: str | None = None,
    where: str | None = None,
    guest_ip: str | Address | None = None,
) -> Visit:
    """Mark ``user`` as seen now (on the site, or in ``room``) with a fresh card.

    A member ``WHOS_ONLINE_IS_HIDDEN`` hides is kept in a set of their own:
    counted, never listed to ordinary visitors. The same write takes them out
    of the other set (so changing one's mind takes effect at the next record)
    and, given the address they browsed from as a guest (``guest_ip``), out of
    the guests, so a login never counts one person twice. ``where`` is the page
    (kept on the card for staff).
    """
    card = card_json(conf.member_card(user), where)
    return _record_member(str(user.pk), conf.is_hidden(user), card, room, guest_ip)


def _record_member(
    pk: str, hidden: bool, card: str, room: str | None, guest_ip: str | Address | None = None
) -> Visit:
    """record_user's Redis part: no site callable runs here (see ``open_connection``)."""
    now = time.time()
    keys = conf.keys(room)
    key, other = (keys.hidden, keys.users) if hidden else (keys.users, keys.hidden)
    drop = guest_id(guest_ip) if guest_ip else ""
    counters = counting.member_counters(now, site=room is None)
    before, _ = _record(
        now,
        keys,
        key,
        pk,
        ttl=conf.retention,
        drop_from=other,
        room=room,
        card=card,
        guest=drop,
        counters=counters,
    )
    return Visit(now, before, read_member(pk, now, card, now, conf.idle_after, hidden))


def record_guest(ip: str | Address, room: str | None = None) -> Visit:
    """Mark the guest at address ``ip`` as seen now.

    A newcomer while the guests fill ``WHOS_ONLINE_MAX_GUESTS`` inside the
    window is refused (``Visit.refused``), so a flood never pushes out the
    guests counted before it. In approximate mode (``WHOS_ONLINE_GUEST_COUNTING``) the guest goes into
    the window's HyperLogLog bucket instead of the sorted set, uncapped (and
    the score before is not known). Raises ValueError if ``ip`` is not an IP
    address.
    """
    now = time.time()
    keys = conf.keys(room)
    counters = counting.guest_counters(keys.guests, now, site=room is None)
    before, refused = _record(
        now,
        keys,
        keys.guests,
        guest_id(ip),
        ttl=conf.max_age,
        keep=conf.max_guests,
        room=room,
        counters=counters,
        listed=not counting.approximate(),
    )
    return Visit(now, before, refused=refused)


def forget_user(user: Any) -> bool:
    """Take a member (user or pk) off the list and out of every room at once (e.g. on logout);
    True if they were on the site's list."""
    keys = conf.keys()
    pk = member_id(user)
    forgotten = scripts.FORGET(
        get_client(),
        5,
        keys.users,
        keys.hidden,
        keys.cards,
        conf.changes_key(),
        conf.member_rooms_key(pk),
        pk,
        time.time(),
        math.ceil(conf.max_age),
        conf.notices_channel,
        conf.key_prefix,
    )
    return bool(forgotten)


def forget_guest(ip: str) -> bool:
    """Take the guest at ``ip`` off the count now (e.g. on login); True if it was there.

    Always False in approximate mode: a HyperLogLog cannot remove anyone.
    """
    if counting.approximate():
        return False
    return bool(get_client().zrem(conf.guests_key, guest_id(ip)))


@dataclass(frozen=True)
class Connection:
    """One open WebSocket connection of a member: site-wide, and in ``room`` if given.

    It carries what recording the member needs (``hidden``, ``card``), made
    once by ``open_connection``, so ``connect`` and heartbeats talk to Redis only.
    """

    pk: str
    id: str
    room: str | None = None
    # Which member set its heartbeats write through to (WHOS_ONLINE_IS_HIDDEN at connect).
    hidden: bool = False
    # The member's card as connect records it ("": none, shown as "Member #pk").
    card: str = ""

    @property
    def namespaces(self) -> tuple[str | None, ...]:
        return (None,) if self.room is None else (None, self.room)


def open_connection(user: Any, room: str | None = None) -> Connection:
    """A new connection of the member ``user``, in ``room`` if given.

    This runs the site's ``WHOS_ONLINE_IS_HIDDEN`` and ``WHOS_ONLINE_MEMBER_CARD``,
    which may read the database: call it where Django manages connections
    (a sync view, or ``database_sync_to_async``), then ``connect`` anywhere.
    """
    card = card_json(conf.member_card(user), None)
    return Connection(str(user.pk), uuid.uuid4().hex, room, conf.is_hidden(user), card)


def connect(connection: Connection) -> float:
    """A member opened ``connection``: record them (a visit, with its card) and beat once.

    One round trip per namespace for the record, plus the first heartbeat.
    Returns the score recorded on the site.
    """
    visits = [
        _record_member(connection.pk, connection.hidden, connection.card, room)
        for room in connection.namespaces
    ]
    heartbeat([connection])
    return visits[0].at


# Connections one heartbeat call carries: 500 took 10-25 ms of Redis time on a
# busy 2-core machine (benchmarks/live_push.py), 200 keep each call to a few ms,
# so a process with 10,000 sockets never holds a shared Redis for long.
HEARTBEAT_BATCH = 200


def heartbeat(connections: Iterable[Connection]) -> None:
    """Mark every connection alive now: one round trip per HEARTBEAT_BATCH connections."""
    batch = list(connections)
    for first in range(0, len(batch), HEARTBEAT_BATCH):
        _beat(batch[first : first + HEARTBEAT_BATCH])


def _beat(connections: list[Connection]) -> None:
    keys = [conf.keys().cards, conf.rooms_key]
    args: list[str] = []
    for connection in connections:
        for room in connection.namespaces:
            ns, socket = conf.keys(room), conf.socket_keys(room)
            member_set = ns.hidden if connection.hidden else ns.users
            keys += [
                socket.live,
                socket.left,
                conf.connections_key(room, connection.pk),
                member_set,
                conf.changes_key(room),
            ]
            args += [connection.pk, connection.id, _room_arg(room)]
    now = time.time()
    timeout = conf.heartbeat_timeout
    scripts.HEARTBEAT(
        get_client(),
        len(keys),
        *keys,
        now,
        math.ceil(timeout),
        math.ceil(conf.retention),
        now - timeout,
        # Two timeouts before leaving the window (a beat is due twice by then), a
        # connected member moves forward by the rest of the window.
        now - conf.max_age + 2 * timeout,
        max(conf.max_age - 2 * timeout, timeout),
        conf.notices_channel,
        *args,
    )


def disconnect(connection: Connection) -> None:
    """``connection`` closed: the member leaves at once unless another connection is alive."""
    keys: list[str] = [conf.rooms_key]
    for room in connection.namespaces:
        socket = conf.socket_keys(room)
        keys += [
            socket.live,
            socket.left,
            conf.connections_key(room, connection.pk),
            conf.changes_key(room),
        ]
    now = time.time()
    scripts.DISCONNECT(
        get_client(),
        len(keys),
        *keys,
        now,
        now - conf.heartbeat_timeout,
        math.ceil(conf.max_age),
        connection.pk,
        connection.id,
        conf.notices_channel,
        *(_room_arg(room) for room in connection.namespaces),
    )


def check(rooms: list[str | None]) -> dict[str | None, Any]:
    """Sweep the namespaces of ``rooms`` (None: the site) for connections of dead
    processes, and return each one's change mark (what the hub compares, to catch a
    lost notice): one round trip."""
    keys: list[str] = []
    for room in rooms:
        socket = conf.socket_keys(room)
        keys += [socket.live, socket.left, conf.changes_key(room)]
    now = time.time()
    marks = scripts.CHECK(
        get_client(),
        len(keys),
        *keys,
        now - conf.heartbeat_timeout,
        now,
        math.ceil(conf.retention),
        conf.notices_channel,
        *(_room_arg(room) for room in rooms),
    )
    return dict(zip(rooms, marks))


def _room_arg(room: str | None) -> str:
    """A room as the scripts' ARGV name it (as the registry keeps it); '' for the site."""
    return "" if room is None else room_name(room) or ""


def connected(room: str | None = None) -> list[str]:
    """Pks of members (hidden ones too) with a living connection, newest heartbeat first."""
    cutoff = time.time() - conf.heartbeat_timeout
    live = get_client().zrange(conf.socket_keys(room).live, "+inf", cutoff, byscore=True, desc=True)
    return [_text(pk) for pk in live]


def online_users(
    limit: int | None = None,
    room: str | None = None,
    *,
    include_hidden: bool = False,
    viewer: Any = None,
) -> list[Member]:
    """Members seen inside the window, most recent first, at most ``limit``.

    Hidden members only with ``include_hidden`` or for a staff ``viewer``.
    """
    limit = -1 if limit is None else limit
    return summary(limit, room, include_hidden=include_hidden, viewer=viewer).members


def user_count(room: str | None = None) -> int:
    """How many members (hidden ones too: a count names nobody) were seen inside the window."""
    cutoff = _cutoff()
    keys = conf.keys(room)
    pipe = get_client().pipeline(transaction=False)
    for key in (keys.users, keys.hidden):
        pipe.zcount(key, cutoff, "+inf")
    return sum(int(count) for count in pipe.execute())


def guest_count(room: str | None = None) -> int:
    """How many guests were seen inside the window (approximately, in approximate mode).

    In approximate mode this merges every bucket of the window (about a
    millisecond of Redis time); the block's ``summary()`` merges two.
    """
    guests = conf.keys(room).guests
    if counting.approximate():
        return int(get_client().pfcount(*counting.window_buckets(guests, time.time())))
    return int(get_client().zcount(guests, _cutoff(), "+inf"))


def summary(
    limit: int | None = None,
    room: str | None = None,
    *,
    include_hidden: bool = False,
    viewer: Any = None,
    day: bool | None = None,
) -> Summary:
    """Members (at most ``limit``, default ``WHOS_ONLINE_LIST_LIMIT``), counts and peak: one round trip.

    Hidden members are counted, and listed only with ``include_hidden`` or for
    a staff ``viewer``, who alone also see where members were last seen.
    Reading the site's counts also raises its peak if they beat it (rooms keep
    no peak). With ``day`` (default: ``WHOS_ONLINE_SHOW_DAY_TOTAL``) the same
    call counts the site's past 24 hours too.
    """
    staff_view = include_hidden or is_staff(viewer)
    limit = conf.list_limit if limit is None else limit
    day = conf.show_day_total if day is None else day
    now = time.time()
    keys = conf.keys(room)
    sockets = conf.socket_keys(room)  # the two KEYS before the last (see scripts.SUMMARY)
    client = get_client()
    buckets, past_ttl = _window_buckets(keys, now), 0
    if buckets:
        past, past_ttl = counting.past_union(keys.guests, now)
        buckets.append(past)
    hours, hours_ttl = [], 0
    if day and room is None:
        past_hours, hours_ttl = counting.past_hours_union(now)
        hours = [*counting.hour_buckets(now), past_hours]
    (
        listed,
        hidden,
        users,
        hidden_count,
        guests,
        peak_count,
        peak_at,
        day_users,
        day_guests,
        listed_sockets,
        hidden_sockets,
        oldest,
        generation,
    ) = scripts.SUMMARY(
        client,
        len(keys) + len(buckets) + len(hours) + len(sockets) + 1,
        *keys,
        *buckets,
        *hours,
        *sockets,
        conf.generation_key,
        now - conf.max_age,
        now,
        PEAK_TTL if room is None else 0,
        limit,
        int(staff_view),
        len(buckets),
        counting.day_cutoff(now) if hours else "",
        past_ttl,
        hours_ttl,
        now - conf.heartbeat_timeout,
        _guest_cap(),
        SOCKET_GRACE,
    )
    _learn(client, generation, now)
    if room is None and peak_count is not None and peak_at is not None:
        recovery.see_peak(int(peak_count), float(peak_at))
    members, idle_at = _members(listed, listed_sockets, now, hidden=False)
    if staff_view:
        hidden_members, hidden_idle_at = _members(hidden, hidden_sockets, now, hidden=True)
        members += hidden_members
        idle_at = min(idle_at, hidden_idle_at)
        members.sort(key=lambda m: m.last_seen, reverse=True)
        if limit >= 0:
            del members[limit:]
    else:
        members = [m.without_where() if m.where is not None else m for m in members]
    return Summary(
        members=members,
        user_count=int(users) + int(hidden_count),
        guest_count=int(guests),
        peak=_peak(peak_count, peak_at),
        hidden_count=int(hidden_count),
        hidden_listed=staff_view,
        day_users=None if day_users is None else int(day_users),
        day_guests=None if day_guests is None else int(day_guests),
        changes_at=_changes_at(now, oldest, idle_at, approximate=bool(buckets)),
        since=None
        if generation is None
        else datetime.fromtimestamp(float(generation), timezone.utc),
    )


def _changes_at(now: float, oldest: Any, idle_at: float, approximate: bool) -> float | None:
    """When a summary read at ``now`` changes by time alone: a listed member turns idle,
    the ``oldest`` score inside the window leaves it, or (approximate counting) the
    window's guest buckets move on. None: never, until something happens."""
    times = [idle_at]
    if oldest is not None:
        times.append(float(oldest) + conf.max_age)
    if approximate:
        width = counting.bucket_seconds()
        times.append((now // width + 1) * width)
    first = min(times)
    return None if first == math.inf else first


@dataclass(frozen=True)
class DayVisitors:
    """Unique members and guests seen on one day (the site's time zone); both approximate."""

    day: date
    members: int
    guests: int

    @property
    def total(self) -> int:
        return self.members + self.guests


def daily_visitors(days: int = 30) -> list[DayVisitors]:
    """Unique visitors of each of the last ``days`` days (at most 30), today first: one round trip."""
    dates = counting.last_days(time.time(), min(days, counting.DAYS_KEPT - 2))
    keys = [counting.day_key(who, day) for day in dates for who in ("members", "guests")]
    counts = iter(scripts.COUNT_EACH(get_client(), len(keys), *keys))
    return [
        DayVisitors(day, int(members), int(guests))
        for day, members, guests in zip(dates, counts, counts)
    ]


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


def last_seen(user: Any, *, include_hidden: bool = False, viewer: Any = None) -> datetime | None:
    """When a member (user or pk) was last seen (aware, UTC), or None if never seen or pruned.

    Members are kept for ``WHOS_ONLINE_RETENTION``, so this can be days ago. A
    hidden member reads as never seen unless ``include_hidden`` or a staff ``viewer``.
    """
    return last_seen_many([user], include_hidden=include_hidden, viewer=viewer)[user]


def last_seen_many(
    users: Iterable[Key], *, include_hidden: bool = False, viewer: Any = None
) -> dict[Key, datetime | None]:
    """``last_seen`` for a page of members (users or pks) in one round trip, keyed as given."""
    return {
        user: None if score is None else datetime.fromtimestamp(score, tz=timezone.utc)
        for user, (score, *_) in _scores(users, include_hidden or is_staff(viewer)).items()
    }


def status(user: Any, *, include_hidden: bool = False, viewer: Any = None) -> Status:
    """Online if seen within ``WHOS_ONLINE_IDLE_AFTER``, idle within the window, else offline."""
    return statuses([user], include_hidden=include_hidden, viewer=viewer)[user]


def statuses(
    users: Iterable[Key], *, include_hidden: bool = False, viewer: Any = None
) -> dict[Key, Status]:
    """``status`` for a page of members (users or pks; avatars, a member list) in one round trip.

    A hidden member reads as offline unless ``include_hidden`` or a staff ``viewer``.
    WebSocket presence is merged in as the block merges it (see scripts.SUMMARY).
    """
    now = time.time()
    scores = _scores(users, include_hidden or is_staff(viewer), sockets=True)
    return {user: _status(score, now, beat, left) for user, (score, beat, left) in scores.items()}


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
                scripts.PRUNE_BATCH(client, 2, key, cards or key, f"({now - kept_for}", batch_size)
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
            _, more = scripts.PRUNE_ROOMS(client, len(keys), *keys, f"({cutoff}", batch_size)
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


def _guest_cap() -> int:
    """The guest cap the peak respects: none in approximate mode, where guests are uncapped."""
    return 0 if counting.approximate() else conf.max_guests


def _window_buckets(keys: Keys, now: float) -> list[str]:
    """The guest HyperLogLogs a count of ``keys``'s window reads: none in exact mode."""
    return counting.window_buckets(keys.guests, now) if counting.approximate() else []


def _sample(client: Any, now: float) -> None:
    users, hidden, guests, *_ = _count_and_raise_peak(client, now, conf.keys())
    pipe = client.pipeline(transaction=False)
    pipe.zadd(conf.history_key, {f"{now:.3f}:{int(users) + int(hidden)}:{int(guests)}": now})
    pipe.zremrangebyscore(conf.history_key, "-inf", f"({now - HISTORY_SECONDS}")
    pipe.zremrangebyrank(conf.history_key, 0, -HISTORY_MAX - 1)
    pipe.expire(conf.history_key, HISTORY_SECONDS)
    pipe.execute()


def _record(
    now: float,
    keys: Keys,
    key: str,
    member: str,
    ttl: float,
    keep: int | None = None,
    drop_from: str | None = None,
    room: str | None = None,
    card: str = "",
    guest: str = "",
    counters: list[tuple[str, int]] | None = None,
    listed: bool = True,
) -> tuple[float | None, bool]:
    """One EVALSHA of scripts.RECORD (one round trip, also on Redis Cluster).

    Returns ``member``'s score before, and whether the guest cap refused them.

    ``counters`` are the HyperLogLogs (key, TTL) ``member`` also goes into;
    without ``listed`` they are all it goes into.
    """
    counters = counters or []
    client = get_client()
    before, refused, generation = scripts.RECORD(
        client,
        9 + len(counters),
        key,
        drop_from or key,
        conf.rooms_key,
        keys.cards,
        keys.guests,
        keys.peak,
        conf.changes_key(room),
        conf.member_rooms_key(member) if room is not None and card else key,
        conf.generation_key,
        *(counter for counter, _ in counters),
        now,
        member,
        math.ceil(ttl),
        keep or 0,
        _room_arg(room),
        card,
        guest,
        "" if listed else "1",
        counting.counted_since(now) if counters else 0,
        _constants(),
        conf.notices_channel,
        *(ttl for _, ttl in counters),
    )
    _learn(client, generation, now)
    return (None if before is None else float(before)), bool(refused)


def _learn(client: Any, generation: Any, asked_at: float) -> None:
    """Take the generation a reply carried; after a loss, write back the peak seen before."""
    lost = recovery.learn(generation, asked_at)
    if lost is not None:
        count, at = lost
        scripts.RAISE_PEAK(client, 1, conf.keys().peak, count, at, PEAK_TTL)


@lru_cache(maxsize=1)
def _constants() -> str:
    """RECORD's argument that is the same for every call until a setting changes."""
    return f"{conf.max_age} {TRIM_PER_WRITE} {conf.max_rooms} {conf.key_prefix}"


on_settings_change(_constants.cache_clear)


PEAK_TTL = 366 * 24 * 3600
# Guests over WHOS_ONLINE_MAX_GUESTS dropped by one write: about 0.1 ms of Redis time.
TRIM_PER_WRITE = 100


def _count_and_raise_peak(client: Any, now: float, keys: Keys) -> Any:
    cutoff = now - conf.max_age
    buckets = _window_buckets(keys, now)
    return scripts.COUNT_AND_RAISE_PEAK(
        client,
        len(keys) + len(buckets),
        *keys,
        *buckets,
        cutoff,
        now,
        PEAK_TTL,
        _guest_cap(),
    )


def _peak(count: Any = None, at: Any = None) -> Peak | None:
    if count is None or at is None:
        return None
    return Peak(int(count), datetime.fromtimestamp(float(at), tz=timezone.utc))


Scores = tuple[float | None, float | None, float | None]


def _scores(users: Iterable[Key], include_hidden: bool, sockets: bool = False) -> dict[Key, Scores]:
    """Each member's last-seen score (the newest over the member sets), in one round trip.

    With ``sockets``, also their newest heartbeat and when their last connection
    closed (None when not read or not there), from the same pipeline.
    """
    given = list(dict.fromkeys(users))
    if not given:
        return {}
    pks = [member_id(user) for user in given]
    keys = conf.keys()
    pipe = get_client().pipeline(transaction=False)
    for key in (keys.users, keys.hidden) if include_hidden else (keys.users,):
        pipe.zmscore(key, pks)
    if sockets:
        for key in conf.socket_keys():
            pipe.zmscore(key, pks)
    per_key = pipe.execute()
    beats, lefts = per_key[-2:] if sockets else ([None] * len(pks),) * 2
    sets = per_key[:-2] if sockets else per_key
    scores: dict[Key, Scores] = {}
    for i, user in enumerate(given):
        found = [float(row[i]) for row in sets if row[i] is not None]
        scores[user] = (max(found) if found else None, _float(beats[i]), _float(lefts[i]))
    return scores


def member_id(user: Any) -> str:
    """A member's id in Redis: the pk of a user object, or a pk given as it is."""
    return str(getattr(user, "pk", user))


# Seconds a closed socket must come after a member's last page view to make them
# idle: the page that replaced a live one is requested before the old socket closes.
SOCKET_GRACE = 5


def _status(
    score: float | None, now: float, beat: float | None = None, left: float | None = None
) -> Status:
    """The HTTP rule, with WebSocket presence merged in as scripts.SUMMARY merges it."""
    if score is None or score < now - conf.max_age:
        return "offline"
    if beat is not None and beat >= now - conf.heartbeat_timeout:
        return "online"
    if max(beat or 0, left or 0) >= score + SOCKET_GRACE:
        return "idle"
    return "online" if score >= now - conf.idle_after else "idle"


def _members(
    listing: Any, sockets: list[Any], now: float, hidden: bool
) -> tuple[list[Member], float]:
    """The Members of one of scripts.SUMMARY's listings (JSON ``[[score, pk, card], ...]``),
    and when the first of those online by the HTTP rule turns idle (inf: none).

    ``sockets`` is empty where nobody has a WebSocket open (no state to merge). An
    empty listing is ``{}`` (cjson cannot tell an empty array from an empty object).
    """
    rows = json.loads(_text(listing))
    idle_after = conf.idle_after
    members, idle_at = [], math.inf
    for (score, pk, _), card, socket in zip(
        rows, parse_cards([raw for _, _, raw in rows]), sockets or repeat(None)
    ):
        member = member_from(pk, float(score), card, now, idle_after, hidden)
        if socket:  # the status WebSocket presence gives, which no clock changes
            member = replace(member, status=cast(Status, _text(socket)))
        elif member.status == "online":
            idle_at = min(idle_at, float(score) + idle_after)
        members.append(member)
    return members, idle_at


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _cutoff() -> float:
    return time.time() - conf.max_age


def _text(member: Any) -> str:
    return member.decode("utf-8", "replace") if isinstance(member, bytes) else member
