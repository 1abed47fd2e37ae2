"""A flood of new addresses: the guests already counted stay counted, and no false peak.

While the guest set is full of guests inside the window, a newcomer is refused
rather than an earlier guest evicted, and a count taken at the cap does not
raise "most ever online". ``whos_online_prune --reset-peak`` forgets a peak
pinned before (or by anything else).
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from django.core.management import call_command

from tests import online_now
from tests.conftest import NOW, BrowserClient
from whos_online import presence
from whos_online.conf import Settings, conf
from whos_online.contrib.admin import stats as admin_stats
from whos_online.store import addresses, stats

pytestmark = pytest.mark.django_db

REAL_GUESTS = [f"198.51.100.{i}" for i in range(1, 31)]


def visit(address: str, path: str = "/") -> Any:
    return BrowserClient().get(path, HTTP_X_FORWARDED_FOR=address)


def test_a_flood_keeps_the_guests_counted_before_it_and_pins_no_peak(
    redis_db: redis.Redis,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_PROXIES = 1
    monkeypatch.setattr(Settings, "max_guests", 100)
    settings.WHOS_ONLINE_MAX_AGE = 600
    guests_key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests"
    with time_machine.travel(NOW, tick=False) as traveller:
        for address in REAL_GUESTS:
            visit(address)
        assert "30 guests" in visit(REAL_GUESTS[0], "/block/").content.decode()
        call_command("whos_online_prune", stdout=StringIO())  # cron keeps the peak
        assert presence.peak() == stats.Peak(30, NOW)
        traveller.shift(540)
        for address in REAL_GUESTS:  # still browsing: recorded again
            visit(address)
        traveller.shift(120)
        # 400 fresh IPv4 addresses and 100 /64s of one IPv6 /48, each once.
        flood = [f"10.{i // 256}.{i % 256}.1" for i in range(400)]
        flood += [f"2001:db8:77:{i:x}::1" for i in range(100)]
        for address in flood:
            assert visit(address, "/block/").status_code == 200
        counted = {m.decode() for m in redis_db.zrange(guests_key, 0, -1)}
        assert {addresses.guest_id(a) for a in REAL_GUESTS} <= counted
        assert online_now.guest_count() == 100
        # The counts on the way up to the cap were the flood too: the peak is the
        # one from before the window the flood came in.
        assert presence.peak() == stats.Peak(30, NOW)
        traveller.shift(300)
        call_command("whos_online_prune", stdout=StringIO())
        assert presence.peak() == stats.Peak(30, NOW)
        # The flood leaves the window; newcomers are let in again.
        traveller.shift(301)
        visit("203.0.113.50")
        assert online_now.guest_count() == 1


def test_a_flood_within_the_window_of_a_first_peak_leaves_none(
    redis_db: redis.Redis,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "max_guests", 5)
    with time_machine.travel(NOW, tick=False):
        for i in range(10):
            BrowserClient().get("/block/", REMOTE_ADDR=f"10.0.0.{i}")
        assert online_now.guest_count() == 5
        assert presence.peak() is None
        assert "Most ever online" not in BrowserClient().get("/block/").content.decode()


def test_a_flood_in_a_room_leaves_the_sites_peak_alone_and_marks_nothing(
    redis_db: redis.Redis,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "max_guests", 3)
    with time_machine.travel(NOW, tick=False):
        presence.record_guest("203.0.113.1")
        presence.record_guest("203.0.113.2")
        presence.prune()  # cron raises the peak
        visits = [presence.record_guest(f"10.0.0.{i}", room="thread:1") for i in range(5)]
        assert [v.refused for v in visits] == [False, False, False, True, True]
        assert presence.peak() == stats.Peak(2, NOW)
    # Rooms keep no peak, so no flood mark either.
    assert redis_db.exists(conf.keys("thread:1").peak) == 0


def test_a_guest_refused_at_the_cap_is_no_error(
    redis_db: redis.Redis, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Settings, "max_guests", 1)
    visit_one = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.1")
    visit_two = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.2")
    assert visit_one.status_code == visit_two.status_code == 200
    assert "1 guest" in visit_two.content.decode()
    # Refused means not counted anywhere: not in the day's unique visitors either.
    assert admin_stats.daily_visitors(days=1)[0].guests == 1


def test_reset_peak_forgets_a_pinned_peak(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    peak_key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:peak"
    with time_machine.travel(NOW, tick=False):
        redis_db.hset(peak_key, mapping={"count": 50_000, "at": NOW.timestamp() - 86400})
        presence.record_guest("203.0.113.1")
        presence.record_guest("203.0.113.2")
        out = StringIO()
        call_command("whos_online_prune", "--reset-peak", stdout=out)
    yesterday = NOW - timedelta(days=1)
    assert out.getvalue().splitlines()[-1] == (
        f"Reset the peak (it was 50000 on {yesterday:%Y-%m-%d %H:%M} UTC)."
    )
    assert presence.peak() == stats.Peak(2, NOW)  # started again from those online


def test_reset_peak_without_a_peak(redis_db: redis.Redis) -> None:
    out = StringIO()
    call_command("whos_online_prune", "--reset-peak", stdout=out)
    assert out.getvalue().splitlines()[-1] == "Reset the peak (it was none)."
    assert presence.peak() is None
