"""Rooms: "who is reading this thread", recorded by a view decorator, shown by a tag."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync
from django.core.management import call_command

from tests.conftest import NOW, BrowserAsyncClient, BrowserClient, names
from whos_online import presence

pytestmark = pytest.mark.django_db


def logged_in(user: Any) -> BrowserClient:
    client = BrowserClient()
    client.force_login(user)
    return client


def listed(html: str) -> list[str]:
    """The display names the block lists, in order."""
    return re.findall(r"<bdi>(.*?)</bdi>", html)


def test_who_is_reading_each_thread(redis_db: redis.Redis, people: Any) -> None:
    alice, bob, carol = (logged_in(user) for user in people("alice", "bob", "carol"))
    alice.get("/thread/1/")
    carol.get("/thread/2/")
    BrowserClient().get("/thread/1/", REMOTE_ADDR="203.0.113.5")
    html = bob.get("/thread/1/").content.decode()
    assert "3 here now: 2 members, 1 guest" in html
    assert listed(html) == ["bob", "alice"] and "carol" not in html
    assert names(presence.online_users(room="thread:2")) == ["carol"]
    # the site-wide list still has everyone who browsed
    assert set(names(presence.online_users())) == {"alice", "bob", "carol"}


def test_a_room_visit_costs_one_round_trip_and_the_list_one_more(
    redis_db: redis.Redis, round_trips: Any, people: Any
) -> None:
    client = logged_in(*people("alice"))
    client.get("/")  # the site-wide record, and its cookie
    round_trips.clear()
    client.get("/thread/7/")
    # alice into the room (and the room registered), then the list
    assert round_trips.commands == [["EVALSHA"], ["EVALSHA"]] and round_trips.records == 1


def test_async_views_can_be_rooms(redis_db: redis.Redis, people: Any) -> None:
    client = BrowserAsyncClient()
    client.force_login(*people("alice"))

    async def visit() -> Any:
        return await client.get("/lobby/")

    html = async_to_sync(visit)().content.decode()
    assert "1 here now: 1 member, 0 guests" in html and listed(html) == ["alice"]
    assert names(presence.online_users(room="lobby")) == ["alice"]


def test_bots_do_not_enter_rooms(redis_db: redis.Redis) -> None:
    BrowserClient().get("/thread/1/", headers={"User-Agent": "Googlebot/2.1"})
    assert presence.guest_count(room="thread:1") == 0


def test_room_keys_expire_and_prune_clears_stale_room_members(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice, room="thread:1")
        presence.record_guest("203.0.113.5", room="thread:1")
        traveller.shift(300)
        presence.record_user(bob, room="thread:1")
        for key in redis_db.scan_iter(match=f"{prefix}:room*"):
            assert 0 < redis_db.ttl(key) <= 600, key
        traveller.shift(301)
        call_command("whos_online_prune", stdout=StringIO())
        assert redis_db.zrange(f"{prefix}:room:thread:1:users", 0, -1) == [str(bob.pk).encode()]
        assert redis_db.zcard(f"{prefix}:room:thread:1:guests") == 0


def test_room_names_are_bounded(redis_db: redis.Redis, people: Any) -> None:
    (alice,) = people("alice")
    with pytest.raises(ValueError, match="1 to 200 characters"):
        presence.record_user(alice, room="x" * 201)
    with pytest.raises(ValueError):
        presence.summary(10, room="")
