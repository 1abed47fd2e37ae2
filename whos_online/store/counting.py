"""Counting with HyperLogLogs: which keys hold which stretch of time, and for how long.

A HyperLogLog counts distinct ids in at most 12 KB within about 1%, but cannot
remove anyone, so the keys are time buckets (the live window in approximate mode,
the hours of the last day, each day; see docs/howto/admin.md and scaling.md), each
expiring once no count reads it. Pure arithmetic on times: recording.py, reading.py
and stats.py do the Redis work.
"""

from __future__ import annotations

import math
from datetime import date, datetime

from django.utils import timezone

from whos_online.conf import conf

HOUR = 3600
DAY = 24 * HOUR
# Days the per-day keys outlive their day: the admin shows the last 30.
DAYS_KEPT = 32
# Buckets a live window spans at most, so memory stays fixed for long windows too.
MAX_BUCKETS = 10


def approximate() -> bool:
    """Whether guests are counted with HyperLogLogs instead of the exact sorted set."""
    return conf.guest_counting == "approximate"


def bucket_seconds() -> int:
    """A live bucket's length: a minute, or a whole number of minutes for windows over 10."""
    return 60 * max(1, math.ceil(conf.max_age / 60 / MAX_BUCKETS))


def window_buckets(guests_key: str, now: float, window: float | None = None) -> list[str]:
    """The live buckets of a namespace's window (default: the site's), oldest first.

    The oldest is the bucket holding the window's start, so the window is
    rounded up to whole buckets: a guest last seen up to one bucket before it
    may still count.
    """
    width = bucket_seconds()
    start = now - (conf.max_age if window is None else window)
    buckets = range(int(start // width), int(now // width) + 1)
    return [conf.bucket_key(guests_key, bucket) for bucket in buckets]


def live_bucket(guests_key: str, now: float) -> tuple[str, int]:
    """The bucket a guest seen at ``now`` goes into, and its TTL: until no window reads it."""
    width = bucket_seconds()
    bucket = int(now // width)
    return conf.bucket_key(guests_key, bucket), _until((bucket + 1) * width + conf.max_age, now)


def day_cutoff(now: float) -> float:
    """Where "the last 24 hours" start: the hour 23 hours before this one began.

    Hour buckets make the guests' figure cover 23 to 24 hours; members are
    counted from the same moment, so both halves cover the same stretch.
    """
    return (int(now // HOUR) - 23) * HOUR


def hour_buckets(who: str, now: float) -> list[str]:
    """The hour buckets of ``who`` ("guests" or "members") of the last 24 hours, oldest first."""
    last = int(now // HOUR)
    return [conf.hour_key(who, hour) for hour in range(last - 23, last + 1)]


def past_hours(who: str, now: float) -> tuple[str, list[str], int]:
    """Where prune keeps the union of ``who``'s hour buckets of the last 24 hours but this
    hour's, those buckets, and the union's TTL: until this hour is over (they no longer
    change, so a count of the 24 hours reads two HyperLogLogs, not 24)."""
    hour = int(now // HOUR)
    return (
        conf.past_hours_key(who, hour),
        hour_buckets(who, now)[:-1],
        _until((hour + 1) * HOUR, now),
    )


def hour_bucket(who: str, now: float) -> tuple[str, int]:
    """The hour bucket ``who`` ("guests" or "members") seen at ``now`` go into, and its TTL."""
    hour = int(now // HOUR)
    return conf.hour_key(who, hour), _until((hour + 24) * HOUR, now)


def local_date(now: float) -> date:
    """The day ``now`` falls on in the site's time zone (TIME_ZONE), as site owners count days."""
    return datetime.fromtimestamp(now, tz=timezone.get_default_timezone()).date()


def counters(who: str, now: float, site: bool, live: str = "") -> list[tuple[str, int]]:
    """The HyperLogLogs (key, TTL) ``who`` ("guests" or "members") seen at ``now`` go into:
    the live bucket of the guests set ``live`` in approximate mode; the hour's and the day's
    on the site (a room's visitors are on the site too; a logout takes nobody out of them).
    """
    found = [live_bucket(live, now)] if live and approximate() else []
    if site:
        found += [hour_bucket(who, now), (conf.day_key(who, local_date(now)), DAYS_KEPT * DAY)]
    return found


def counted_since(now: float) -> float:
    """Since when a visitor seen again at ``now`` is in every counter they would go into.

    The later of this hour's start and today's (the site's time zone: a day
    may start within an hour, as in India). A live bucket is never skipped: in
    approximate mode the guest has no score before.
    """
    zone = timezone.get_default_timezone()
    day_start = datetime.combine(local_date(now), datetime.min.time(), tzinfo=zone).timestamp()
    return max(int(now // HOUR) * HOUR, day_start)


def _until(moment: float, now: float) -> int:
    return max(math.ceil(moment - now), 1)
