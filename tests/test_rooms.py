"""Rooms: "who is reading this thread", recorded by a view decorator, shown by a tag."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.management import call_command

from tests.conftest import NOW, BrowserAsyncClient, BrowserClient
from whos_online import presence

pytestmark = pytest.mark.django_db


def member(name: str) -> BrowserClient:
    client = BrowserClient()
    client.force_login(User.objects.create_user(name))
    return client


def test_who_is_reading_each_thread(redis_db: redis.Redis) -> None:
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    alice.get("/thread/1/")
    carol.get("/thread/2/")
    BrowserClient().get("/thread/1/", REMOTE_ADDR="203.0.113.5")
    html = bob.get("/thread/1/").content.decode()
    assert "3 here now: 2 members, 1 guest" in html
    assert "<li>bob</li><li>alice</li>" in html and "carol" not in html
    assert presence.online_users(room="thread:2") == ["carol"]
    # the site-wide list still has everyone who browsed
    assert set(presence.online_users()) == {"alice", "bob", "carol"}


def test_a_room_visit_costs_one_round_trip_and_the_list_one_more(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    client = member("alice")
    client.get("/")  # the site-wide record, and its cookie
    round_trips.clear()
    client.get("/thread/7/")
    # alice into the room (and the room registered), then the list
    assert round_trips.commands == [["EVAL"], ["EVAL"]] and round_trips.records == 1


def test_async_views_can_be_rooms(redis_db: redis.Redis) -> None:
    client = BrowserAsyncClient()
    client.force_login(User.objects.create_user("alice"))

    async def visit() -> Any:
        return await client.get("/lobby/")

    html = async_to_sync(visit)().content.decode()
    assert "1 here now: 1 member, 0 guests" in html and "<li>alice</li>" in html
    assert presence.online_users(room="lobby") == ["alice"]


def test_bots_do_not_enter_rooms(redis_db: redis.Redis) -> None:
    BrowserClient().get("/thread/1/", headers={"User-Agent": "Googlebot/2.1"})
    assert presence.guest_count(room="thread:1") == 0


def test_room_keys_expire_and_prune_clears_stale_room_members(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user("alice", room="thread:1")
        presence.record_guest("203.0.113.5", room="thread:1")
        traveller.shift(300)
        presence.record_user("bob", room="thread:1")
        for key in redis_db.scan_iter(match=f"{prefix}:room*"):
            assert 0 < redis_db.ttl(key) <= 600, key
        traveller.shift(301)
        call_command("whos_online_prune", stdout=StringIO())
        assert redis_db.zrange(f"{prefix}:room:thread:1:users", 0, -1) == [b"bob"]
        assert redis_db.zcard(f"{prefix}:room:thread:1:guests") == 0


def test_room_names_are_bounded(redis_db: redis.Redis) -> None:
    with pytest.raises(ValueError, match="1 to 200 characters"):
        presence.record_user("alice", room="x" * 201)
    with pytest.raises(ValueError):
        presence.summary(10, room="")
