"""Reading who is online: the block's summary, lists, counts, statuses and
last-seen times, with WebSocket presence merged in. See
:mod:`whos_online.presence` for the keys and the privacy rule.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from itertools import repeat
from typing import Any, Iterable, TypeVar, cast

from whos_online import counting, recovery, scripts
from whos_online.conf import conf
from whos_online.connection import get_client, text
from whos_online.members import Member, Status, member_from, parse_cards
from whos_online.recording import member_id
from whos_online.stats import (
    PEAK_TTL,
    Peak,
    guest_buckets,
    guest_cap,
    learn_generation,
    peak_from,
)

Key = TypeVar("Key", bound=Hashable)


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
    client = get_client()
    buckets, past_ttl = guest_buckets(keys, now), 0
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
    ) = scripts.summary(
        client,
        keys=scripts.SummaryKeys(keys, buckets, hours, conf.socket_keys(room), conf.generation_key),
        window_start=now - conf.max_age,
        now=now,
        peak_ttl=PEAK_TTL if room is None else 0,
        limit=limit,
        include_hidden=staff_view,
        day_start=counting.day_cutoff(now) if hours else None,
        window_union_ttl=past_ttl,
        hours_union_ttl=hours_ttl,
        beat_cutoff=now - conf.heartbeat_timeout,
        guest_cap=guest_cap(),
        socket_grace=SOCKET_GRACE,
    )
    learn_generation(client, generation, now)
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
        peak=peak_from(peak_count, peak_at),
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
    rows = json.loads(text(listing))
    idle_after = conf.idle_after
    members, idle_at = [], math.inf
    for (score, pk, _), card, socket in zip(
        rows, parse_cards([raw for _, _, raw in rows]), sockets or repeat(None)
    ):
        member = member_from(pk, float(score), card, now, idle_after, hidden)
        if socket:  # the status WebSocket presence gives, which no clock changes
            member = replace(member, status=cast(Status, text(socket)))
        elif member.status == "online":
            idle_at = min(idle_at, float(score) + idle_after)
        members.append(member)
    return members, idle_at


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _cutoff() -> float:
    return time.time() - conf.max_age
