"""What the admin page reads beside who is online: the counts ``whos_online_prune``
samples (the chart) and the unique visitors of each day (the table).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from whos_online.conf import conf
from whos_online.store import counting, scripts
from whos_online.store.connection import get_client, text

DAY = 24 * 3600  # the chart's span; prune keeps the samples that long


@dataclass(frozen=True)
class Sample:
    """The counts at one moment, as ``whos_online_prune`` sampled them."""

    at: datetime
    users: int
    guests: int


def history() -> list[Sample]:
    """The samples of the last day, oldest first: one round trip."""
    raw = get_client().zrange(conf.history_key, time.time() - DAY, "+inf", byscore=True)
    samples = []
    for member in raw:
        at, users, guests = text(member).split(":")
        moment = datetime.fromtimestamp(float(at), tz=timezone.utc)
        samples.append(Sample(moment, int(users), int(guests)))
    return samples


@dataclass(frozen=True)
class DayVisitors:
    """Unique members and guests seen on one day (the site's time zone); both approximate."""

    day: date
    members: int
    guests: int

    @property
    def total(self) -> int:
        return self.members + self.guests


def daily_visitors(*, days: int = 30) -> list[DayVisitors]:
    """Unique visitors of each of the last ``days`` days (at most 30), today first: one round trip."""
    today = counting.local_date(time.time())
    dates = [today - timedelta(days=back) for back in range(min(days, counting.DAYS_KEPT - 2))]
    keys = [conf.day_key(who, day) for day in dates for who in ("members", "guests")]
    counts = iter(scripts.COUNT_EACH(get_client(), keys, []))
    return [
        DayVisitors(day, int(members), int(guests))
        for day, members, guests in zip(dates, counts, counts)
    ]
