"""Reading who is online: the block's summary, lists, counts, statuses and
last-seen times, with WebSocket presence merged in. See
:mod:`whos_online.presence` for the keys and the privacy rule.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, TypeVar

from whos_online.conf import HALF_WINDOW, conf
from whos_online.store import counting, scripts
from whos_online.store.connection import get_client, text
from whos_online.store.members import Member, read_member
from whos_online.store.recording import member_id
from whos_online.store.stats import Peak, guest_buckets, guest_cap, peak_from
from whos_online.store.status import Status, beating, last_sign, status_of

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
    # Members and guests seen in the past 24 hours, when asked for (``summary(day=True)``),
    # both approximate, and everyone: never fewer than a peak reached in those hours.
    day_users: int | None = None
    day_guests: int | None = None
    day_total: int | None = None
    # When this picture changes by time alone (Unix time: a member turning idle,
    # someone leaving the window), None if nothing will until someone acts.
    changes_at: float | None = None
    # The block rendered from this very summary (rendering.block), once per language while
    # the block cache keeps it. A changed copy (``replace``) starts empty.
    rendered: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def total(self) -> int:
        return self.user_count + self.guest_count

    @property
    def more(self) -> int:
        """Listable members the list limit left out (to ordinary visitors, hidden members
        are no "more": the summary line counts them as hidden)."""
        listable = self.user_count if self.hidden_listed else self.user_count - self.hidden_count
        return max(listable - len(self.members), 0)


def summary(
    *,
    room: str | None = None,
    limit: int | None = None,
    viewer: Any = None,
    day: bool | None = None,
) -> Summary:
    """Members (at most ``limit``, default ``WHOS_ONLINE_LIST_LIMIT``), counts and peak: one round trip.

    Hidden members are counted, and listed only for a staff ``viewer``
    (``viewer=request.user``).
    The site's peak is the kept one, or the count now if it beats it (rooms keep
    no peak); only ``prune`` writes it. With ``day`` (default: when
    ``WHOS_ONLINE_RETENTION`` is a day or more) the same call counts the site's past
    24 hours too.
    """
    return read(room=room, limit=limit, staff_view=is_staff(viewer), day=day)


def read(
    *,
    room: str | None = None,
    limit: int | None = None,
    staff_view: bool = False,
    day: bool | None = None,
) -> Summary:
    """``summary()`` for the surfaces that have decided already whether their viewer is
    staff (the block cache, the hub, the admin page)."""
    limit = conf.list_limit if limit is None else limit
    day = conf.show_day_total if day is None else day
    now = time.time()
    keys = conf.keys(room)
    window = conf.window(room)
    buckets = guest_buckets(keys, now, window)
    hours = []
    if day and room is None:
        for who in ("guests", "members"):
            hours += [*counting.hour_buckets(who, now), counting.past_hours(who, now)[0]]
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
        oldest,
    ) = scripts.SUMMARY.read(
        get_client(),
        [*keys, *conf.socket_keys(room), *buckets, *hours],
        [
            now - window,
            now,
            int(room is None),
            limit,
            int(staff_view),
            len(buckets),
            counting.day_cutoff(now) if hours else "",
            guest_cap(),
        ],
        hyperloglogs=bool(buckets or hours),
    )
    total = int(users) + int(hidden_count) + int(guests)
    peak = peak_from(peak_count, peak_at)
    if peak is not None and peak.count < total:
        # A count the peak would not take (at the guest cap, in a flood) shows no
        # "most ever" below it.
        peak = None
    day_total: int | None = None
    if day_users is not None:
        day_total = int(day_users) + int(day_guests)
        if peak is not None and peak.at.timestamp() >= counting.day_cutoff(now):
            day_total = max(day_total, peak.count)
    rows, idle_at = _members(listed, now, False, window)
    if staff_view:
        hidden_rows, hidden_idle_at = _members(hidden, now, True, window)
        idle_at = min(idle_at, hidden_idle_at)
        rows = sorted(rows + hidden_rows, key=lambda row: row[0], reverse=True)
        members = [member for _, member in rows[: None if limit < 0 else limit]]
    else:
        members = [member for _, member in rows]
    # The picture changes by time alone when a listed member turns idle, the oldest sign
    # inside the window leaves it, or (approximate counting) the guest buckets move on.
    changes_at = min(idle_at, math.inf if oldest is None else float(oldest) + window)
    if buckets:
        width = counting.bucket_seconds()
        changes_at = min(changes_at, (now // width + 1) * width)
    return Summary(
        members=members,
        user_count=int(users) + int(hidden_count),
        guest_count=int(guests),
        peak=peak,
        hidden_count=int(hidden_count),
        hidden_listed=staff_view,
        day_users=None if day_users is None else int(day_users),
        day_guests=None if day_guests is None else int(day_guests),
        day_total=day_total,
        changes_at=None if changes_at == math.inf else changes_at,
    )


def last_seen(user: Any, *, viewer: Any = None) -> datetime | None:
    """When a member (user or pk) was last seen (aware, UTC), or None if never seen or pruned.

    Members are kept for ``WHOS_ONLINE_RETENTION``, so this can be days ago. A
    hidden member reads as never seen unless ``viewer`` is staff.
    """
    return last_seen_many([user], viewer=viewer)[user]


def last_seen_many(users: Iterable[Key], *, viewer: Any = None) -> dict[Key, datetime | None]:
    """``last_seen`` for a page of members (users or pks) in one round trip, keyed as given."""
    return {
        user: None
        if score is None
        else datetime.fromtimestamp(last_sign(score, *signs), tz=timezone.utc)
        for user, (score, *signs) in _scores(users, is_staff(viewer)).items()
    }


def status(user: Any, *, viewer: Any = None) -> Status:
    """Online, idle or offline, by the one rule every surface applies."""
    return statuses([user], viewer=viewer)[user]


def statuses(users: Iterable[Key], *, viewer: Any = None) -> dict[Key, Status]:
    """``status`` for a page of members (users or pks; avatars, a member list) in one round trip.

    A hidden member reads as offline unless ``viewer`` is staff.
    """
    now = time.time()
    scores = _scores(users, is_staff(viewer))
    return {user: status_of(score, now, *signs) for user, (score, *signs) in scores.items()}


def is_staff(viewer: Any) -> bool:
    """Whether ``viewer`` (a user, or None) may see hidden members: staff alone."""
    return bool(getattr(viewer, "is_staff", False))


def _scores(users: Iterable[Key], include_hidden: bool) -> dict[Key, tuple[Any, ...]]:
    """Each member's signs, in one round trip: their score (the newest over the member
    sets), when their connections are alive until and when the last closed (None: none)."""
    given = list(dict.fromkeys(users))
    if not given:
        return {}
    pks = [member_id(user) for user in given]
    keys = conf.keys()
    pipe = get_client().pipeline(transaction=False)
    for key in (keys.users, keys.hidden) if include_hidden else (keys.users,):
        pipe.zmscore(key, pks)
    for key in conf.socket_keys()[:2]:  # live, left
        pipe.zmscore(key, pks)
    *sets, beats, lefts = pipe.execute()
    scores: dict[Key, tuple[Any, ...]] = {}
    for i, user in enumerate(given):
        found = [float(row[i]) for row in sets if row[i] is not None]
        scores[user] = (max(found) if found else None, _float(beats[i]), _float(lefts[i]))
    return scores


def _members(
    listing: Any, now: float, hidden: bool, window: float
) -> tuple[list[tuple[float, Member]], float]:
    """The Members of one of scripts.SUMMARY's listings (JSON ``[[score, pk, card, beat,
    left], ...]``), each with its score, and when the first of those online by their
    page view alone turns idle (inf: none)."""
    members, idle_at = [], math.inf
    for raw_score, pk, card, raw_beat, raw_left in json.loads(text(listing)):
        score, beat, left = float(raw_score), _float(raw_beat), _float(raw_left)
        status = status_of(score, now, beat, left, window)
        if status == "online" and not beating(beat, now):
            idle_at = min(idle_at, score + HALF_WINDOW * window)
        members.append((score, read_member(pk, last_sign(score, beat, left), card, status, hidden)))
    return members, idle_at


def _float(value: Any) -> float | None:
    """A score from Redis or a listing, or None where there is none (None, or JSON false)."""
    return None if value is None or value is False else float(value)
