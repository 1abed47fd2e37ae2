"""After Redis loses its data, everyone who keeps browsing is counted again within seconds.

A ``FLUSHDB``, a ``cache.clear()`` or a restart without persistence empties
Redis while visitors keep their "online" cookies. Here the loss is this test's
own keys deleted (the shared Redis is never flushed); a real restart is in
test_faults.py. Time is travelled, so each cookie is clearly older than the
data that follows the loss.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.test import Client
from django.utils.dateformat import format as format_date
from django.utils.timezone import localtime

from tests.conftest import NOW, BrowserClient, RoundTrips, names
from whos_online import presence
from whos_online.conf import conf

pytestmark = pytest.mark.django_db

ADMIN_PAGE = "/admin/whos_online/onlinenow/"


@pytest.fixture
def traveller() -> Iterator[Any]:
    with time_machine.travel(NOW, tick=False) as travelling:
        yield travelling


def browsing(redis_db: redis.Redis) -> list[Client]:
    """Two members and five guests, each recorded once and holding an "online" cookie."""
    visitors = []
    for name in ("alice", "bob"):
        member = BrowserClient()
        member.force_login(User.objects.create_user(name))
        visitors.append(member)
    visitors += [BrowserClient(REMOTE_ADDR=f"203.0.113.{n}") for n in range(5)]
    for visitor in visitors:
        assert "online" in visitor.get("/").cookies
    assert (presence.user_count(), presence.guest_count()) == (2, 5)
    return visitors


def lose_everything(redis_db: redis.Redis) -> None:
    """What a FLUSHDB does to whos_online's keys (here only this test's own)."""
    from django.conf import settings

    redis_db.delete(*redis_db.scan_iter(match=f"{settings.WHOS_ONLINE_KEY_PREFIX}:*"))
    assert (presence.user_count(), presence.guest_count()) == (0, 0)


def browsing_then_lost(redis_db: redis.Redis, traveller: Any) -> list[Client]:
    """``browsing``, then, 10 s later, every key lost."""
    visitors = browsing(redis_db)
    traveller.shift(10)
    lose_everything(redis_db)
    return visitors


@pytest.mark.parametrize("pause", [0.3, 1.2])
def test_everyone_recorded_just_before_a_flush_is_counted_again(
    redis_db: redis.Redis, traveller: Any, pause: float
) -> None:
    visitors = browsing(redis_db)  # recorded in the loss's own second, or the one before
    traveller.shift(pause)
    lose_everything(redis_db)
    traveller.shift(0.1)
    visitors[0].get("/block/")  # the read that finds the data gone
    for visitor in visitors:
        traveller.shift(0.05)
        visitor.get("/")
    assert (presence.user_count(), presence.guest_count()) == (2, 5)


def test_a_record_on_its_way_when_the_data_began_is_not_made_again(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    """Another process began Redis's data while this record was on its way: the record
    landed in that data, so its cookie holds until it expires."""
    redis_db.set(conf.generation_key, f"{NOW.timestamp() + 0.5:.6f}")
    guest = BrowserClient(REMOTE_ADDR="203.0.113.9")
    assert "online" in guest.get("/").cookies
    traveller.shift(1)
    round_trips.clear()
    guest.get("/")
    assert round_trips.records == 0


def test_everyone_browsing_is_counted_again_after_a_flush(
    redis_db: redis.Redis, traveller: Any
) -> None:
    visitors = browsing_then_lost(redis_db, traveller)
    # Nobody new arrives: one page with the block tells this process the data is gone.
    visitors[0].get("/block/")
    for visitor in visitors:
        visitor.get("/")
    assert (presence.user_count(), presence.guest_count()) == (2, 5)
    assert sorted(names(presence.online_users())) == ["alice", "bob"]


def test_a_newcomer_after_the_flush_is_enough_to_notice_it(
    redis_db: redis.Redis, traveller: Any
) -> None:
    visitors = browsing_then_lost(redis_db, traveller)
    BrowserClient(REMOTE_ADDR="198.51.100.1").get("/")  # their record starts the next data
    for visitor in visitors:
        visitor.get("/")
    assert (presence.user_count(), presence.guest_count()) == (2, 6)


def test_once_counted_again_their_pages_cost_no_redis_call(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    visitors = browsing_then_lost(redis_db, traveller)
    visitors[0].get("/block/")
    for visitor in visitors:
        assert "online" in visitor.get("/").cookies  # a fresh cookie: from the new data on
    round_trips.clear()
    traveller.shift(1)
    for visitor in visitors:
        visitor.get("/")
    assert round_trips.count == 0


def test_without_a_loss_the_cookie_holds_off_records_as_before(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    visitors = browsing(redis_db)
    traveller.shift(10)
    visitors[0].get("/block/")
    round_trips.clear()
    for visitor in visitors:
        visitor.get("/")
    assert round_trips.count == 0


def test_the_most_ever_online_survives_the_flush(redis_db: redis.Redis, traveller: Any) -> None:
    visitors = browsing(redis_db)
    page = visitors[0].get("/block/").content.decode()
    assert "Most ever online: 7" in page
    traveller.shift(10)
    lose_everything(redis_db)
    visitors[1].get("/block/")  # this process learns the loss
    visitors[1].get("/")  # bob is due: his record begins the next data
    peak = presence.peak()
    assert peak is not None and (peak.count, peak.at.timestamp()) == (7, NOW.timestamp())
    traveller.shift(1)
    assert "Most ever online: 7" in visitors[2].get("/block/").content.decode()


def test_the_admin_page_says_since_when_redis_holds_its_figures(
    redis_db: redis.Redis, traveller: Any
) -> None:
    visitors = browsing(redis_db)
    boss = BrowserClient()
    boss.force_login(User.objects.create_user("boss", is_staff=True))
    since = localtime(NOW)
    expected = f"since {format_date(since, 'N j, Y')} at {since:%H:%M}"
    assert expected in " ".join(boss.get(ADMIN_PAGE).content.decode().split())
    traveller.shift(3600)
    lose_everything(redis_db)
    assert "whos-online-since" not in boss.get(ADMIN_PAGE).content.decode()  # no data yet
    visitors[0].get("/")  # the next page recorded after the loss begins the next data
    html = " ".join(boss.get(ADMIN_PAGE).content.decode().split())
    later = localtime(NOW + timedelta(hours=1))
    assert f"since {format_date(later, 'N j, Y')} at {later:%H:%M}" in html


def test_a_member_reading_a_live_page_is_connected_again(
    redis_db: redis.Redis, traveller: Any
) -> None:
    """Their socket's heartbeats keep only members Redis holds: the hub records them again."""
    from asgiref.sync import async_to_sync, sync_to_async

    from tests.test_consumers import eventually, tab

    alice = User.objects.create_user("alice")
    guest = BrowserClient(REMOTE_ADDR="203.0.113.9")

    async def scenario() -> None:
        socket = await tab(alice)
        await eventually(lambda: names(presence.online_users()) == ["alice"])
        traveller.shift(3)  # (before a check is due: its reply, at the guest's frozen instant,
        lose_everything(redis_db)  # could teach the old generation as late as the guest's the new)
        await sync_to_async(guest.get)("/block/")  # this process learns the loss
        await eventually(lambda: names(presence.online_users()) == ["alice"])
        await eventually(lambda: presence.connected() == [str(alice.pk)])  # its first beat
        assert presence.status(alice) == "online"
        await socket.disconnect()

    async_to_sync(scenario)()


def test_a_clock_that_steps_back_does_not_make_every_page_record(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    """Cookies issued after an NTP step back predate the generation; no loss is behind them."""
    browsing(redis_db)  # the data began at NOW
    traveller.shift(-60)
    newcomers = [BrowserClient(REMOTE_ADDR=f"198.51.100.{n}") for n in range(3)]
    for newcomer in newcomers:
        assert "online" in newcomer.get("/").cookies  # issued at NOW - 60
    round_trips.clear()
    traveller.shift(10)
    for newcomer in newcomers:
        newcomer.get("/")
    assert round_trips.records == 0
