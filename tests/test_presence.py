"""The Python API, against fakeredis and a real Redis."""

from __future__ import annotations

import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
import redis
import time_machine

from tests import online_now
from tests.conftest import NOW, django_redis_cache, names, require, tab
from tests.redis_server import RedisServer
from whos_online import presence, push
from whos_online.conf import Settings, conf
from whos_online.contrib.admin import stats as admin_stats
from whos_online.store import sockets, stats


def test_keys_are_prefix_users_by_pk_and_prefix_guests(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    (alice,) = people("alice")
    presence.record_user(alice)
    presence.record_guest("203.0.113.7")
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    assert redis_db.zrange(f"{prefix}:users", 0, -1) == [str(alice.pk).encode()]
    assert redis_db.hget(f"{prefix}:cards", str(alice.pk)) == b'{"name":"alice"}'
    assert redis_db.zcard(f"{prefix}:guests") == 1


def test_online_users_most_recent_first_with_limit(redis_db: redis.Redis, people: Any) -> None:
    with time_machine.travel(NOW, tick=False) as traveller:
        for user in people("alice", "bob", "carol"):
            presence.record_user(user)
            traveller.shift(10)
        assert names(online_now.online_users()) == ["carol", "bob", "alice"]
        assert names(online_now.online_users(limit=2)) == ["carol", "bob"]
        assert online_now.user_count() == 3


def test_members_leave_the_window_without_pruning(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = timedelta(minutes=10)
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.record_guest("203.0.113.7")
        traveller.shift(timedelta(minutes=9))
        presence.record_user(bob)
        assert names(online_now.online_users()) == ["bob", "alice"]
        traveller.shift(timedelta(minutes=1, seconds=1))
        assert names(online_now.online_users()) == ["bob"]
        assert names(presence.summary().members) == ["bob"]
        assert (online_now.user_count(), online_now.guest_count()) == (1, 0)


def test_score_is_last_seen_and_never_moves_backwards(redis_db: redis.Redis, people: Any) -> None:
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False):
        presence.record_user(alice)
    assert presence.last_seen(alice) == NOW
    with time_machine.travel(NOW - timedelta(seconds=30), tick=False):
        presence.record_user(alice)  # an app server whose clock lags
    seen = presence.last_seen(alice.pk)
    assert seen == NOW and seen.tzinfo is not None
    assert presence.last_seen(10_000) is None


def test_forget_user_takes_the_member_and_the_card(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    (alice,) = people("alice")
    presence.record_user(alice)
    assert presence.forget_user(alice) is True
    assert online_now.online_users() == []
    assert redis_db.hlen(f"{settings.WHOS_ONLINE_KEY_PREFIX}:cards") == 0
    assert presence.forget_user(alice.pk) is False


def test_forget_guest_takes_the_guest_off_the_count(redis_db: redis.Redis) -> None:
    presence.record_guest("203.0.113.7")
    presence.record_guest("203.0.113.8")
    assert presence.forget_guest("203.0.113.7") is True
    assert online_now.guest_count() == 1
    assert presence.forget_guest("203.0.113.7") is False


@pytest.mark.parametrize(
    "call, commands",
    [
        # A logout reads the member's rooms first: the script is given their keys.
        (lambda: presence.forget_user(1), [["HVALS"], ["EVALSHA"]]),
        (lambda: online_now.user_count(), [["EVALSHA"]]),
        (lambda: stats.reset_peak(), [["HMGET", "DEL"]]),
    ],
    ids=["forget_user", "user_count", "reset_peak"],
)
def test_each_call_is_one_round_trip_or_two_for_a_logout(
    redis_db: redis.Redis, round_trips: Any, call: Any, commands: list[list[str]]
) -> None:
    # No MULTI/EXEC: a pipeline or a script a round trip, nothing Redis Cluster refuses.
    round_trips.clear()
    call()
    assert round_trips.commands == commands


def test_prune_samples_the_counts_in_one_plain_pipeline(
    redis_db: redis.Redis, round_trips: Any, people: Any
) -> None:
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_guest("203.0.113.1")
        presence.record_user(alice)
        traveller.shift(3600)  # their hour is a past one now
        round_trips.clear()
        presence.prune()
        commands = round_trips.commands
        round_trips.clear()
        presence.prune()
    sample = [
        ["EVALSHA"],  # count, and raise the peak
        ["ZADD", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "EXPIRE"],
        ["EXISTS"],  # the past hours' unions the 24 hours' total reads: made once an hour
    ]
    # call by call: Redis Cluster refuses PFMERGE in a pipeline
    assert commands[-7:] == [*sample, ["PFMERGE"], ["EXPIRE"], ["PFMERGE"], ["EXPIRE"]]
    assert round_trips.commands[-3:] == sample


def test_prune_removes_only_stale_members_and_their_cards(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    old, recent = people("old", "recent")
    cards = f"{settings.WHOS_ONLINE_KEY_PREFIX}:cards"
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(old)
        presence.record_guest("203.0.113.1")
        presence.record_guest("203.0.113.2")
        traveller.shift(300)
        presence.record_user(recent)
        presence.record_guest("203.0.113.3")
        traveller.shift(301)  # guests leave with the window, as members
        users, guests, _ = presence.prune()
        assert (users, guests) == (1, 2)
        assert online_now.guest_count() == 1
        users = redis_db.zrange(f"{settings.WHOS_ONLINE_KEY_PREFIX}:users", 0, -1)
        assert users == [str(recent.pk).encode()]
        assert redis_db.hkeys(cards) == [str(recent.pk).encode()]
        assert presence.prune() == stats.PruneResult(users=0, guests=0, batches=4)


def test_prune_removes_in_batches_oldest_first(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    users_key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:users"
    with time_machine.travel(NOW, tick=False):
        now = time.time()
        redis_db.zadd(users_key, {f"stale{i}": now - 700 - i for i in range(25)})
        redis_db.zadd(users_key, {f"fresh{i}": now - 599 + i for i in range(3)})
        result = presence.prune(batch_size=10)
    # users: 10 + 10 + 5 (a short batch ends the key); hidden, guests, rooms: one empty batch each
    assert (result.users, result.guests, result.batches) == (25, 0, 6)
    assert sorted(redis_db.zrange(users_key, 0, -1)) == [b"fresh0", b"fresh1", b"fresh2"]


@pytest.mark.parametrize("stale, batches", [(999, 4), (1000, 5)])
def test_prune_removes_a_thousand_per_batch_by_default(
    redis_db: redis.Redis, settings: Any, stale: int, batches: int
) -> None:
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests"
    with time_machine.travel(NOW, tick=False):
        redis_db.zadd(key, {f"guest{i}": NOW.timestamp() - 3600 for i in range(stale)})
        # users, hidden, the rooms' registry: one empty batch each; exactly
        # 1,000 stale guests fill a batch, so an empty one follows
        assert presence.prune() == stats.PruneResult(users=0, guests=stale, batches=batches)


def test_prune_rejects_a_batch_size_below_one(redis_db: redis.Redis) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        presence.prune(batch_size=0)


def test_record_is_one_round_trip_that_also_sets_ttls(
    redis_db: redis.Redis, round_trips: Any, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    (alice,) = people("alice")
    round_trips.clear()
    presence.record_user(alice)
    assert round_trips.commands == [["EVALSHA"]]
    for key in ("users", "cards"):
        assert 590 <= redis_db.ttl(f"{settings.WHOS_ONLINE_KEY_PREFIX}:{key}") <= 600


def test_summary_is_one_round_trip(redis_db: redis.Redis, round_trips: Any, people: Any) -> None:
    for user in people("alice", "bob", "carol"):
        presence.record_user(user)
    presence.record_guest("203.0.113.7")
    round_trips.clear()
    summary = presence.summary(limit=2)
    assert round_trips.count == 1
    assert names(summary.members) == ["carol", "bob"]
    assert (summary.user_count, summary.guest_count, summary.total, summary.more) == (3, 1, 4, 1)


def test_a_pk_of_any_characters_comes_back_whole(redis_db: redis.Redis) -> None:
    presence.record_user(SimpleNamespace(pk="team|7|1.5", get_username=lambda: "Ann"))
    (member,) = presence.summary().members
    assert (member.pk, member.name, member.status) == ("team|7|1.5", "Ann", "online")


def test_names_round_trip_as_utf8(redis_db: redis.Redis, people: Any) -> None:
    name = "Zoë <b>&\"' evil \U0001f600" + "x" * 100
    (user,) = people(name)
    presence.record_user(user)
    assert names(online_now.online_users()) == [name]


@pytest.mark.parametrize(
    "same, other",
    [
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("fe80::1%eth0", "fe80::1"),
        ("2001:DB8::1", "2001:db8::1"),
    ],
)
def test_one_address_spelled_two_ways_is_one_guest(
    redis_db: redis.Redis, same: str, other: str
) -> None:
    presence.record_guest(same)
    presence.record_guest(other)
    assert online_now.guest_count() == 1


def test_no_raw_ip_is_stored(redis_db: redis.Redis, settings: Any) -> None:
    presence.record_guest("203.0.113.7")
    members = redis_db.zrange(f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests", 0, -1)
    assert len(members) == 1
    assert b"203.0.113" not in members[0]
    assert len(members[0]) == 16


def test_record_guest_rejects_what_is_not_an_address(redis_db: redis.Redis) -> None:
    with pytest.raises(ValueError):
        presence.record_guest("not-an-ip")


@pytest.mark.parametrize("count, trips", [(200, 1), (201, 2)])
def test_a_heartbeat_carries_200_connections_per_round_trip(
    redis_db: redis.Redis, round_trips: Any, count: int, trips: int
) -> None:
    connections = [sockets.Connection(str(pk), f"c{pk}") for pk in range(count)]
    sockets.heartbeat(connections)
    assert round_trips.commands == [["EVALSHA"]] * trips
    assert len(push.connected()) == count


def test_heartbeats_keep_members_inside_the_window_and_never_reorder_the_list(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    """Members a socket keeps inside the window are listed after those inside it by
    their page views, in the order of their scores, however the two processes' beats
    fall: the list changes only when someone's last sign leaves the window."""
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_HEARTBEAT = 25  # a timeout of 60 s (2.4 beats)
    alice, bob, carol = people("alice", "bob", "carol")
    on_a, on_b = tab(alice, "a"), tab(bob, "b")  # two processes
    lists, counts = [], []
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(on_a)
        traveller.shift(1)
        sockets.connect(on_b)
        traveller.shift(1)
        presence.record_user(carol)  # no socket: her page view alone keeps her inside
        for step in range(1, 50):  # 25 s apart, each process beating every 50 s
            traveller.move_to(NOW + timedelta(seconds=25 * step))
            sockets.heartbeat([on_a if step % 2 else on_b])
            lists.append(names(online_now.online_users()))
            counts.append(online_now.user_count())
    inside = 600 // 25  # carol's page view leaves the window after 602 s
    assert lists == [["carol", "bob", "alice"]] * inside + [["bob", "alice"]] * (49 - inside)
    assert counts == [3] * inside + [2] * (49 - inside)


@pytest.mark.parametrize("room", [None, "thread:1"])
def test_connect_records_the_member_and_returns_when(
    redis_db: redis.Redis, people: Any, room: str | None
) -> None:
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False):
        at = sockets.connect(tab(alice, room=room))
        assert at == NOW.timestamp()
        assert names(online_now.online_users()) == ["alice"]
        assert names(online_now.online_users(room=room)) == ["alice"]
        assert push.connected(room=room) == [str(alice.pk)]


def test_a_member_leaves_when_their_last_connection_closes(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")
    pk = str(alice.pk)
    tabs = [tab(alice, name, "thread:1") for name in ("one", "two")]
    with time_machine.travel(NOW, tick=False) as traveller:
        for opened in tabs:
            sockets.connect(opened)
        traveller.shift(conf.cookie_age)  # open past their cookie's life
        sockets.heartbeat(tabs)
        sockets.disconnect(tabs[0])
        assert push.connected() == push.connected(room="thread:1") == [pk]
        assert presence.status(alice) == "online"
        sockets.disconnect(tabs[1])
        assert push.connected() == push.connected(room="thread:1") == []
        assert presence.status(alice) == "idle"  # a closed tab is not "online" for the window


def test_prune_counts_stale_hidden_members_with_the_others(
    redis_db: redis.Redis, settings: Any
) -> None:
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    with time_machine.travel(NOW, tick=False):
        stale = NOW.timestamp() - 3600
        redis_db.zadd(f"{prefix}:users", {"1": stale, "2": stale})
        redis_db.zadd(f"{prefix}:hidden", {"3": stale})
        assert presence.prune().users == 3


def test_rooms_keep_no_peak(redis_db: redis.Redis, settings: Any, people: Any) -> None:
    (alice,) = people("alice")
    presence.record_user(alice, room="thread:1")
    assert presence.summary(room="thread:1").peak is None
    assert redis_db.keys(f"{settings.WHOS_ONLINE_KEY_PREFIX}:room:*:peak") == []
    presence.record_user(alice)
    site = presence.summary().peak
    assert site is not None and site.count == 1


@pytest.mark.parametrize("days, listed", [(2, 2), (30, 30), (40, 30)])
def test_daily_visitors_lists_at_most_30_days(
    redis_db: redis.Redis, days: int, listed: int
) -> None:
    assert len(admin_stats.daily_visitors(days=days)) == listed


def test_record_user_returns_the_visit_and_the_members_card(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        first = presence.record_user(alice)
        traveller.shift(10)
        again = presence.record_user(alice)
    assert (first.at, first.before, first.refused) == (NOW.timestamp(), None, False)
    assert (again.before, again.refused) == (NOW.timestamp(), False)
    assert again.member is not None
    assert (again.member.name, again.member.status) == ("alice", "online")


def test_a_summary_made_without_counts_of_hidden_members_has_none() -> None:
    # As a site's own code may build one (an override's test, say).
    empty = presence.Summary(members=[], user_count=0, guest_count=0)
    assert empty.hidden_count == 0 and not empty.hidden_listed
    assert (empty.peak, empty.day_total, empty.total, empty.more) == (None, None, 0, 0)


def test_history_keeps_the_samples_of_the_last_24_hours(
    redis_db: redis.Redis, settings: Any
) -> None:
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:history"
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.prune()
        traveller.shift(1)
        presence.prune()
        traveller.shift(24 * 3600)  # the first sample is a day and a second old
        presence.prune()
        assert [s.at for s in admin_stats.history()] == [
            NOW + timedelta(seconds=1),
            NOW + timedelta(seconds=24 * 3600 + 1),
        ]
        assert redis_db.zcard(key) == 2  # the older one is gone from Redis too
        assert 24 * 3600 - 1 <= redis_db.ttl(key) <= 24 * 3600


def test_the_peak_is_kept_366_days(redis_db: redis.Redis, settings: Any) -> None:
    presence.record_guest("203.0.113.7")
    presence.prune()
    ttl = redis_db.ttl(f"{settings.WHOS_ONLINE_KEY_PREFIX}:peak")
    assert 366 * 86400 - 1 <= ttl <= 366 * 86400


def test_a_write_drops_at_most_100_stale_guests_over_the_cap(
    redis_db: redis.Redis,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests"
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_guests", 10)
    with time_machine.travel(NOW, tick=False):
        redis_db.zadd(key, {f"old{i}": NOW.timestamp() - 700 for i in range(300)})
        assert presence.record_guest("203.0.113.1").refused
        assert redis_db.zcard(key) == 200


@pytest.mark.parametrize("rooms, batches", [(100, 5), (101, 6)])
def test_prune_reads_the_live_rooms_100_a_page(
    redis_db: redis.Redis, settings: Any, rooms: int, batches: int
) -> None:
    registry = f"{settings.WHOS_ONLINE_KEY_PREFIX}:rooms"
    with time_machine.travel(NOW, tick=False):
        redis_db.zadd(registry, {f"r{i}": NOW.timestamp() - i for i in range(rooms)})
        # users, hidden, guests, the registry: a batch each; then one per page of rooms
        assert presence.prune().batches == batches


def test_history_holds_2880_samples_at_most(redis_db: redis.Redis, settings: Any) -> None:
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:history"
    with time_machine.travel(NOW, tick=False):
        now = NOW.timestamp()
        redis_db.zadd(key, {f"{now - 20 * i:.3f}:0:0": now - 20 * i for i in range(1, 2881)})
        presence.prune()
        assert redis_db.zcard(key) == 2880  # the oldest made room for this one
        assert admin_stats.history()[-1].at == NOW


def test_the_public_api_is_what_all_names_and_its_options_are_keywords() -> None:
    import inspect

    assert all(hasattr(presence, name) for name in presence.__all__)
    assert len(presence.__all__) <= 15
    # The one thing a call is about may be positional; every option is a keyword.
    about = {"record_user": "user", "record_guest": "ip", "forget_user": "user"}
    about |= {"forget_guest": "ip", "in_room": "room", "status": "user", "last_seen": "user"}
    about |= {"statuses": "users", "last_seen_many": "users"}
    for name in set(presence.__all__) - {"fail_open"}:  # (func, /, *args, **kwargs): func's own
        function = getattr(presence, name)
        if not inspect.isfunction(function):
            continue  # UNAVAILABLE
        positional = [
            parameter.name
            for parameter in inspect.signature(function).parameters.values()
            if parameter.kind is not inspect.Parameter.KEYWORD_ONLY
        ]
        assert positional == ([about[name]] if name in about else []), name
    # One way to ask for the staff view.
    for name in ("summary", "status", "statuses", "last_seen", "last_seen_many"):
        options = inspect.signature(getattr(presence, name)).parameters
        assert "viewer" in options and "include_hidden" not in options, name


def test_fail_open_skips_the_writes_a_read_only_redis_refuses_and_still_reads(
    tmp_path: Any, settings: Any, people: Any, closed_port: int
) -> None:
    """One wrapper for both: presence's writes go behind the write circuit, so a replica
    that refuses them (READONLY) still answers every read, which goes behind the read one."""
    require("redis-server")
    (alice,) = people("alice")
    server = RedisServer(directory=tmp_path / "primary").start()
    try:
        settings.CACHES = {"default": django_redis_cache(server.url)}
        presence.record_user(alice)
        with server.client() as direct:
            direct.replicaof("127.0.0.1", closed_port)  # a replica of a lost primary
        assert presence.fail_open(presence.record_user, alice) is presence.UNAVAILABLE
        assert names(presence.fail_open(presence.summary).members) == ["alice"]
        assert presence.fail_open(presence.forget_user, alice) is presence.UNAVAILABLE
        assert presence.fail_open(presence.status, alice) == "online"
    finally:
        server.close()
