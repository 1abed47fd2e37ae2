"""Counting at any scale and over a day: approximate guests, the past 24 hours, days.

Every test runs on fakeredis and the real Redis; most in both guest counting
modes. The counts are small, so a HyperLogLog gives them exactly (benchmarks/
counting.py measures where its error starts to show).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.core.management import call_command

from tests import online_now
from tests.conftest import NOW, BrowserClient
from whos_online import presence
from whos_online.checks import settings as settings_checks
from whos_online.conf import Settings
from whos_online.contrib.admin import stats as admin_stats
from whos_online.store import counting, stats

pytestmark = pytest.mark.django_db

PAGE = "/admin/whos_online/onlinenow/"
T0 = NOW.timestamp()


@pytest.fixture(params=["exact", "approximate"])
def mode(request: pytest.FixtureRequest, settings: Any, redis_db: redis.Redis) -> str:
    settings.WHOS_ONLINE_GUESTS = request.param
    settings.WHOS_ONLINE_MAX_AGE = 600
    return str(request.param)


def visit(ip: str, path: str = "/") -> str:
    """A new visitor (no cookie yet) at ``ip``; the page's HTML."""
    return BrowserClient().get(path, REMOTE_ADDR=ip).content.decode()


def member_visit(username: str, path: str = "/") -> str:
    client = BrowserClient()
    client.force_login(User.objects.get_or_create(username=username)[0])
    return client.get(path, REMOTE_ADDR="198.51.100.1").content.decode()


def summary_line(html: str) -> str:
    match = re.search(r'whos-online-summary">(.*?)</p>', html, re.S)
    assert match is not None
    return " ".join(match.group(1).split())


def test_approximate_guests_leave_the_window_with_their_bucket(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_GUESTS = "approximate"
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False) as traveller:
        for i in range(3):
            visit(f"203.0.113.{i}")
        traveller.shift(300)
        for i in range(3, 5):
            visit(f"203.0.113.{i}")
        traveller.shift(299)  # the first three were seen 599 s ago: still in the window
        assert (
            summary_line(visit("198.51.100.9", "/block/")) == "6 users online: 0 members, 6 guests"
        )
        traveller.shift(61 + 60)  # one bucket past the window for them
        assert summary_line(member_visit("alice", "/block/")) == (
            "4 users online: 1 member, 3 guests"
        )
        assert online_now.guest_count() == 3
    # Nothing in the sorted set: the guests are only in HyperLogLogs.
    assert not redis_db.exists(f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests")


def test_approximate_room_guests_leave_with_the_room_s_shorter_window(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_GUESTS = "approximate"
    settings.WHOS_ONLINE_MAX_AGE, settings.WHOS_ONLINE_ROOM_MAX_AGE = 600, 120
    with time_machine.travel(NOW, tick=False) as traveller:
        visit("203.0.113.1", "/thread/1/")
        traveller.shift(119)
        assert online_now.guest_count(room="thread:1") == 1
        assert presence.summary(room="thread:1").guest_count == 1
        traveller.shift(61 + 60)  # one bucket past the room's window
        assert online_now.guest_count(room="thread:1") == 0
        assert presence.summary(room="thread:1").guest_count == 0
        assert online_now.guest_count() == 1  # the site's window is ten minutes


def test_approximate_guests_are_not_capped(
    redis_db: redis.Redis, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.WHOS_ONLINE_GUESTS = "approximate"
    monkeypatch.setattr(Settings, "max_guests", 5)
    for i in range(20):
        visit(f"203.0.113.{i}")
    assert online_now.guest_count() == 20
    # Nobody was refused, so this is no flood: the peak is taken past the exact mode's cap.
    html = visit("203.0.113.20", "/block/")
    assert summary_line(html) == "21 users online: 0 members, 21 guests"
    presence.prune()  # cron keeps the peak
    peak = presence.peak()
    assert peak is not None and peak.count == 21


def test_one_round_trip_per_record_and_per_block(
    mode: str, settings: Any, round_trips: Any
) -> None:
    settings.WHOS_ONLINE_RETENTION = timedelta(days=1)  # adds the day's total
    visit("203.0.113.1")
    assert round_trips.commands == [["EVALSHA"]]
    member = BrowserClient()
    member.force_login(User.objects.create_user("alice"))
    round_trips.clear()
    member.get("/", REMOTE_ADDR="198.51.100.1")
    assert round_trips.commands == [["EVALSHA"]]
    round_trips.clear()
    html = visit("203.0.113.2", "/block/")
    assert round_trips.commands == [["EVALSHA"], ["EVALSHA"]]  # the visitor's record, the block
    assert "In total there were 3 users online in the past 24 hours." in html


def test_every_counter_carries_a_ttl_that_ends_when_no_count_reads_it(
    mode: str, settings: Any, redis_db: redis.Redis
) -> None:
    settings.WHOS_ONLINE_RETENTION = timedelta(days=1)  # adds the day's total
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    # Guests an hour and two minutes ago, so the block's unions of older buckets are not empty.
    with time_machine.travel(NOW - timedelta(hours=1), tick=False) as traveller:
        visit("203.0.113.8")
        traveller.shift(3600 - 120)
        visit("203.0.113.9")
        traveller.shift(120)
        visit("203.0.113.1")
        member_visit("alice", "/block/")
        ttls = {
            key.decode().removeprefix(f"{prefix}:"): redis_db.ttl(key)
            for key in redis_db.scan_iter(match=f"{prefix}:*")
        }
    minute, hour = int(T0 // 60), int(T0 // 3600)
    day = counting.local_date(T0).isoformat()
    window_end = (minute + 1) * 60 + 600 - T0  # the bucket's last second in any window
    expected = {
        f"guests:hour:{hour}": (hour + 24) * 3600 - T0,
        f"members:hour:{hour}": (hour + 24) * 3600 - T0,
    }
    if mode == "approximate":
        expected[f"guests:hll:{minute}"] = window_end
    for key, seconds in expected.items():
        assert seconds - 2 <= ttls[key] <= seconds, key
    for key in (f"guests:day:{day}", f"members:day:{day}"):
        assert 31 * 86400 < ttls[key] <= 32 * 86400
    assert ("guests" in ttls) is (mode == "exact")
    assert all(ttl > 0 for ttl in ttls.values()), ttls


def test_the_window_needs_at_most_eleven_buckets_however_long_it_is(settings: Any) -> None:
    settings.WHOS_ONLINE_GUESTS = "approximate"
    for window in (60, 600, 3600, 86400):
        settings.WHOS_ONLINE_MAX_AGE = window
        buckets = counting.window_buckets("p:guests", T0)
        assert len(buckets) <= 11
        assert counting.bucket_seconds() * (len(buckets) - 1) >= window


def test_the_peak_counts_guests_in_both_modes(mode: str) -> None:
    with time_machine.travel(NOW, tick=False) as traveller:
        for i in range(4):
            visit(f"203.0.113.{i}")
        assert "Most ever online: 5 users on " in member_visit("alice", "/block/")
        presence.prune()  # cron keeps the peak
        assert presence.peak() == stats.Peak(5, NOW)
        traveller.shift(3600)
        html = member_visit("bob", "/block/")
    assert summary_line(html) == "1 user online: 1 member, 0 guests"
    assert "Most ever online: 5 users on " in html
    assert presence.peak() == stats.Peak(5, NOW)


def test_prune_samples_guests_in_both_modes(mode: str) -> None:
    with time_machine.travel(NOW, tick=False):
        for i in range(3):
            visit(f"203.0.113.{i}")
        call_command("whos_online_prune", stdout=StringIO())
        assert [(s.users, s.guests) for s in admin_stats.history()] == [(0, 3)]
    assert presence.peak() == stats.Peak(3, NOW)


def test_the_day_line_is_off_by_default(mode: str) -> None:
    visit("203.0.113.1")
    html = member_visit("alice", "/block/")
    assert "in the past 24 hours" not in html
    assert presence.summary().day_total is None


def test_the_day_line_counts_everyone_of_the_past_24_hours(mode: str, settings: Any) -> None:
    settings.WHOS_ONLINE_RETENTION = timedelta(days=1)
    with time_machine.travel(NOW, tick=False) as traveller:
        member_visit("alice")
        visit("203.0.113.1")
        visit("203.0.113.2")
        traveller.shift(12 * 3600)
        visit("203.0.113.3")
        html = member_visit("bob", "/block/")
        assert summary_line(html) == "2 users online: 1 member, 1 guest"
        assert "In total there were 5 users online in the past 24 hours." in html
        traveller.shift(13 * 3600)  # alice and the first guests were 25 hours ago
        html = member_visit("bob", "/block/")
        assert "In total there were 2 users online in the past 24 hours." in html
        assert presence.summary().day_guests == 1


def test_the_admin_shows_the_past_24_hours_and_each_day_since_the_first_visitor(
    mode: str, settings: Any
) -> None:
    settings.WHOS_ONLINE_RETENTION = timedelta(days=2)
    with time_machine.travel(NOW, tick=False) as traveller:
        for i in range(3):
            visit(f"203.0.113.{i}")
        member_visit("alice")
        traveller.shift(86400)
        visit("203.0.113.1")
        member_visit("bob")
        boss = BrowserClient()
        boss.force_login(User.objects.create_user("boss", is_staff=True))
        html = " ".join(boss.get(PAGE, REMOTE_ADDR="198.51.100.2").content.decode().split())
    # boss's own page view records boss: a member of today too.
    assert "Active in the last 24 hours: 3 (members: 2, guests: 1)." in html
    rows = re.findall(r"<tr><td>([^<]+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td></tr>", html)
    today, yesterday = counting.local_date(T0 + 86400), counting.local_date(T0)
    assert rows == [  # from the first day anyone came
        (today.strftime("%a %-d %b %Y"), "2", "1", "3"),
        (yesterday.strftime("%a %-d %b %Y"), "1", "3", "4"),
    ]
    assert ("Guests are counted approximately" in html) is (mode == "approximate")


def test_a_login_cannot_take_an_approximate_guest_off_the_count(
    redis_db: redis.Redis, settings: Any
) -> None:
    # What approximate mode gives up: a HyperLogLog cannot remove anyone.
    settings.WHOS_ONLINE_GUESTS = "approximate"
    client = BrowserClient()
    client.get("/", REMOTE_ADDR="203.0.113.7")
    client.force_login(User.objects.create_user("alice"))
    html = client.get("/block/", REMOTE_ADDR="203.0.113.7").content.decode()
    assert summary_line(html) == "2 users online: 1 member, 1 guest"
    assert presence.forget_guest("203.0.113.7") is False


def test_rooms_count_approximate_guests_too(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_GUESTS = "approximate"
    for i in range(3):
        visit(f"203.0.113.{i}", "/thread/7/")
    assert online_now.guest_count(room="thread:7") == 3
    assert presence.summary(room="thread:7").guest_count == 3


def test_checks_reject_an_unknown_mode(settings: Any) -> None:
    settings.WHOS_ONLINE_GUESTS = "hyperloglog"
    assert [m.id for m in settings_checks.check_settings()] == ["whos_online.E005"]
    settings.WHOS_ONLINE_GUESTS = "approximate"
    assert settings_checks.check_settings() == []


def test_a_visitor_seen_again_counts_in_each_new_hour_and_each_new_day(
    mode: str, settings: Any
) -> None:
    """Records skip the counters that hold the visitor already: never one they are missing from."""
    settings.TIME_ZONE = "Asia/Kolkata"  # UTC+5:30: the day starts within an hour, at 18:30 UTC
    settings.WHOS_ONLINE_RETENTION = timedelta(days=2)
    alice = User.objects.create_user("alice")

    def at(hour: int, minute: int, day: int = 3) -> Any:
        return time_machine.travel(datetime(2026, 3, day, hour, minute, tzinfo=dt_timezone.utc))

    def seen_every_5_minutes(hour: int, minutes: range) -> None:  # inside the 10-minute window
        for minute in minutes:
            with at(hour, minute):
                presence.record_guest("203.0.113.9")
                presence.record_user(alice)

    seen_every_5_minutes(18, range(25, 51, 5))  # 23:55 to 00:20 local
    with at(18, 52):
        assert [
            (d.day.isoformat(), d.members, d.guests) for d in admin_stats.daily_visitors(days=2)
        ] == [
            ("2026-03-04", 1, 1),
            ("2026-03-03", 1, 1),
        ]
    seen_every_5_minutes(18, range(55, 60, 5))
    seen_every_5_minutes(19, range(0, 6, 5))
    # The past 24 hours begin at 19:00 UTC the day before: only the last visits are in them.
    with at(18, 50, day=4):
        assert presence.summary(day=True).day_guests == 1


# -- where each moment's count goes, at the edges ----------------------------------------------

# A moment that starts a minute, an hour and each bucket width used below.
T = 1_700_006_400.0


@pytest.mark.parametrize(
    ("window", "width", "buckets"),
    [(60, 60, 2), (600, 60, 11), (660, 120, 7), (3600, 360, 11), (86400, 8640, 11)],
)
def test_the_live_buckets_a_window_reads(
    settings: Any, window: int, width: int, buckets: int
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = window
    settings.WHOS_ONLINE_KEY_PREFIX = "p"
    keys = counting.window_buckets("p:guests", T)
    assert counting.bucket_seconds() == width and len(keys) == buckets
    assert keys[0] == f"p:guests:hll:{int(T - window) // width}"
    assert keys[-1] == f"p:guests:hll:{int(T) // width}"
    assert counting.live_bucket("p:guests", T) == (keys[-1], width + window)


@pytest.mark.parametrize("who", ["guests", "members"])
def test_the_hour_buckets_of_the_past_24_hours(settings: Any, who: str) -> None:
    settings.WHOS_ONLINE_KEY_PREFIX = "p"
    hour = int(T) // 3600
    keys = counting.hour_buckets(who, T)
    assert len(keys) == 24
    assert (keys[0], keys[-1]) == (f"p:{who}:hour:{hour - 23}", f"p:{who}:hour:{hour}")
    assert counting.hour_bucket(who, T + 1) == (keys[-1], 24 * 3600 - 1)


def test_the_past_24_hours_are_the_hour_23_hours_ago_onwards(mode: str, settings: Any) -> None:
    settings.WHOS_ONLINE_RETENTION = timedelta(days=2)
    hour = NOW.replace(minute=0, second=0)
    with time_machine.travel(hour + timedelta(minutes=30), tick=False) as traveller:
        member_visit("alice")
        visit("203.0.113.1")
        traveller.move_to(hour + timedelta(hours=24, seconds=-1))
        assert (presence.summary().day_users, presence.summary().day_guests) == (1, 1)
        traveller.move_to(hour + timedelta(hours=24))
        assert (presence.summary().day_users, presence.summary().day_guests) == (0, 0)
