"""The most ever online: raised atomically by the prune command (cron), the one call that
writes it; a block shows the higher of it and the count now, and writes nothing."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from django.core.cache import cache
from django.core.management import call_command
from django.template import engines
from fakeredis import FakeRedisConnection

from tests import online_now
from tests.conftest import NOW, BrowserClient, django_redis_cache
from whos_online import presence
from whos_online.contrib.admin import stats as admin_stats
from whos_online.store import stats

pytestmark = pytest.mark.django_db

BLOCK = "{% load whos_online %}{% whos_online %}"


def render() -> str:
    return engines["django"].from_string(BLOCK).render({})


def test_no_peak_before_anyone_is_counted(redis_db: redis.Redis) -> None:
    assert presence.peak() is None
    assert "Most ever online" not in render()


def test_counting_members_alone_raises_no_peak(redis_db: redis.Redis, people: Any) -> None:
    """``user_count()`` leaves guests out, so its total is no peak (the block's read is)."""
    presence.record_user(*people("alice"))
    assert online_now.user_count() == 1
    assert presence.peak() is None


def three_online(alice: Any) -> str:
    """A member and two guests view pages; the block as the last of them sees it."""
    member = BrowserClient()
    member.force_login(alice)
    member.get("/")
    BrowserClient().get("/", REMOTE_ADDR="203.0.113.1")
    return BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.2").content.decode()


def test_a_page_shows_the_count_as_the_most_ever_and_writes_no_peak(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False):
        html = three_online(alice)
    assert "3 users online" in html and "Most ever online: 3 users on " in html
    assert not redis_db.exists(f"{settings.WHOS_ONLINE_KEY_PREFIX}:peak")  # a read reads


def test_prune_keeps_the_peak_a_block_showed_and_it_never_drops(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        three_online(alice)
        traveller.shift(60)
        call_command("whos_online_prune", stdout=StringIO())  # cron, a minute later
        traveller.shift(700)  # everyone left the window
        member = BrowserClient()
        member.force_login(bob)
        html = member.get("/block/").content.decode()
    assert "1 user online" in html
    assert "Most ever online: 3 users on " in html
    assert presence.peak() == stats.Peak(3, NOW)  # when the three were there


def test_summary_carries_the_peak_in_its_one_round_trip(
    redis_db: redis.Redis, round_trips: Any, people: Any
) -> None:
    (alice,) = people("alice")
    presence.record_user(alice)
    round_trips.clear()
    summary = presence.summary(limit=10)
    assert round_trips.commands == [["EVALSHA"]]
    assert summary.peak is not None and summary.peak.count == 1


def test_pruning_samples_the_peak_when_no_page_is_rendered(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False):
        for i in range(5):
            presence.record_guest(f"203.0.113.{i}")
        call_command("whos_online_prune", stdout=StringIO())
    assert presence.peak() == stats.Peak(5, NOW)


def test_a_lower_count_read_later_never_overwrites_a_higher_one(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    # Two app servers: one read 4 online, one read 2 a moment later. With a
    # read-then-write the second would store 2; the script compares in Redis.
    peak_key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:peak"
    redis_db.hset(peak_key, mapping={"count": 4, "at": NOW.timestamp()})
    for user in people("alice", "bob"):
        presence.record_user(user)
    assert presence.summary(limit=10).peak == stats.Peak(4, NOW)


def test_a_cache_clear_on_another_database_keeps_the_peak_and_the_history(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    """Set up as the tutorial says (W010's hint): the site's own cache.clear() spares us."""
    whos_online = settings.CACHES["default"]
    other_database = django_redis_cache(
        "redis://fakeredis-tests:6379/1",
        CONNECTION_POOL_KWARGS={"connection_class": FakeRedisConnection},
    )
    settings.CACHES = {"default": other_database, "whos_online": whos_online}
    settings.WHOS_ONLINE_CACHE_ALIAS = "whos_online"
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False):
        presence.record_user(alice)
        render()
        call_command("whos_online_prune", stdout=StringIO())
        cache.set("the site's", "own")
        cache.clear()
        assert cache.get("the site's") is None  # the clear did clear
        assert presence.peak() == stats.Peak(1, NOW)
        assert [(s.users, s.guests) for s in admin_stats.history()] == [(1, 0)]
