"""The Lua scripts (whos_online/store/scripts.py), pinned through what they leave behind.

Each test drives the public presence API and checks what a site or an operator
sees: counts, lists, statuses, the peak, the keys and their TTLs. The scripts'
edges (a score exactly at the window's start, a beat exactly the timeout old)
are reached by time travel, never by sleeping.
"""

from __future__ import annotations

import hashlib
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import time_machine

from tests import online_now
from tests.conftest import (
    DECLARED_KEYS_ONLY,
    NOW,
    STAFF,
    BrowserClient,
    hiding,
    names,
    on_one_day,
    tab,
)
from whos_online import presence, push
from whos_online.conf import Settings, conf
from whos_online.contrib.admin import stats as admin_stats
from whos_online.store import counting, recording, scripts, sockets, stats
from whos_online.store.addresses import guest_id
from whos_online.store.sockets import Connection
from whos_online.store.stats import Peak

pytestmark = pytest.mark.django_db
TRAVELLED_TTLS = pytest.mark.parametrize("redis_db", ["fake"], indirect=True)

T = NOW.timestamp()


def shy(user: Any) -> bool:
    """Who asks to be hidden in these tests: members named shy…"""
    return bool(user.username.startswith("shy"))


shy_card = hiding(shy)


def at(seconds: float) -> datetime:
    """NOW plus ``seconds``, as the API reports times."""
    return NOW + timedelta(seconds=seconds)


def key(settings: Any, name: str) -> str:
    return f"{settings.WHOS_ONLINE_KEY_PREFIX}:{name}"


def sampled_peak() -> Peak | None:
    """The peak once prune (cron) sampled the counts: the one call that raises it."""
    presence.prune()
    return presence.peak()


def statuses(room: str | None = None) -> dict[str, str]:
    """What the block (staff view) lists: name -> status."""
    return {m.name: m.status for m in presence.summary(limit=-1, room=room, viewer=STAFF).members}


# --- The prune scripts called directly first: prune calls them again until they
# say "done", so a mutant that never does would loop there instead of failing.


def test_a_prune_batch_removes_at_most_its_size_and_says_how_many(
    redis_db: redis.Redis, settings: Any
) -> None:
    guests = key(settings, "guests")
    redis_db.zadd(guests, {"a": 1, "b": 2, "c": 3, "fresh": 10})
    # {removed, passed over, 1 if more remain below the bound}
    assert scripts.PRUNE_BATCH(redis_db, [guests] * 5, [10, 2, 0])[0] == 2
    assert scripts.PRUNE_BATCH(redis_db, [guests] * 5, [10, 2, 0])[0] == 1
    assert scripts.PRUNE_BATCH(redis_db, [guests] * 5, [10, 2, 0])[0] == 0
    assert redis_db.zrange(guests, 0, -1) == [b"fresh"]


def test_a_room_prune_call_stops_at_its_budget_and_says_so(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False) as traveller:
        for room in "abc":
            presence.record_guest("203.0.113.1", room=room)
        traveller.shift(300)
        for room in "abc":
            presence.record_guest("203.0.113.2", room=room)
        traveller.shift(301)
        keys = [k for room in "abc" for k in (*conf.keys(room)[:3], *conf.socket_keys(room))]
        cutoff = time.time() - 600
        # Called directly: {removed, 1 if it stopped at the limit}; prune calls
        # again while it says 1, so a wrong flag would loop there.
        assert scripts.PRUNE_ROOMS(redis_db, keys, [cutoff, 2]) == [2, 1]
        assert scripts.PRUNE_ROOMS(redis_db, keys, [cutoff, 2]) == [1, 0]
        assert scripts.PRUNE_ROOMS(redis_db, keys, [cutoff, 2]) == [0, 0]
        guest = guest_id("203.0.113.2").encode()
        assert [redis_db.zrange(conf.keys(r).guests, 0, -1) for r in "abc"] == [[guest]] * 3


def test_prune_takes_from_rooms_only_their_stale_members(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice, room="b")
        traveller.shift(300)
        presence.record_user(bob, room="b")
        presence.record_user(bob, room="c")  # nobody stale here
        traveller.shift(301)
        presence.prune(batch_size=1)
    bob_only = [str(bob.pk).encode()]
    assert [redis_db.zrange(conf.keys(room).users, 0, -1) for room in "bc"] == [bob_only] * 2


@pytest.mark.parametrize("batch_size", [1, 2, 1000])
def test_prune_passes_over_the_members_a_socket_keeps_inside_the_window(
    redis_db: redis.Redis, settings: Any, people: Any, batch_size: int
) -> None:
    """Connected for longer than the window without a page view, or gone less than a
    window ago: their scores are older than the window, but they stay, with their cards,
    on the site and in the room; everyone else that stale goes, whatever the batch."""
    settings.WHOS_ONLINE_MAX_AGE = 600  # sockets beat every 25 s by default: alive 60 s
    reading, closed, gone, stale = people("reading", "closed", "gone", "stale")
    tabs = {user: tab(user, user.username, "r") for user in (reading, closed, gone)}
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(stale)
        presence.record_user(stale, room="r")
        for opened in tabs.values():
            sockets.connect(opened)
        for second in range(25, 700, 25):  # gone's process died at once: gone at +60
            traveller.move_to(NOW + timedelta(seconds=second))
            sockets.heartbeat([tabs[reading]] + [tabs[closed]] * (second <= 500))
            if second == 500:
                sockets.disconnect(tabs[closed])  # inside until 1,100
        presence.prune(batch_size=batch_size)
        for room in (None, "r"):
            assert sorted(names(online_now.online_users(room=room))) == ["closed", "reading"]
            kept = {pk.decode() for pk in redis_db.zrange(conf.keys(room).users, 0, -1)}
            assert kept == {str(reading.pk), str(closed.pk)}
        cards = {pk.decode() for pk in redis_db.hkeys(key(settings, "cards"))}
        assert cards == {str(reading.pk), str(closed.pk)}


# --- PRUNE_BATCH


@pytest.mark.parametrize("stale", [0, 1, 1001])
def test_prune_takes_the_stale_members_with_their_cards_and_nothing_else(
    redis_db: redis.Redis, settings: Any, stale: int
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    users, cards, guests = (key(settings, name) for name in ("users", "cards", "guests"))
    with time_machine.travel(NOW, tick=False):
        old = {f"old{i}": T - 601 - i for i in range(stale)}
        redis_db.zadd(users, {**old, "fresh1": T - 599, "fresh2": T})
        redis_db.hset(cards, mapping={pk: "{}" for pk in [*old, "fresh1", "fresh2"]})
        # Guests go with the window, as members: one exactly at its start stays.
        gone = {f"gone{i}": T - 601 - i for i in range(stale)}
        redis_db.zadd(guests, {**gone, "edge": T - 600, "fresh": T})
        result = presence.prune(batch_size=2000)
    assert (result.users, result.guests) == (stale, stale)
    assert redis_db.zrange(users, 0, -1) == [b"fresh1", b"fresh2"]
    assert sorted(redis_db.hkeys(cards)) == [b"fresh1", b"fresh2"]
    assert redis_db.zrange(guests, 0, -1) == [b"edge", b"fresh"]


# --- Script: EVALSHA, and the text once to a server without it


def test_a_server_without_the_scripts_is_sent_their_text(redis_db: redis.Redis) -> None:
    with time_machine.travel(NOW, tick=False) as traveller:
        redis_db.script_flush()
        first = presence.record_guest("203.0.113.1")
        traveller.shift(5)
        redis_db.script_flush()
        assert presence.record_guest("203.0.113.1")[:4] == (T + 5, T, None, False)
        assert first.at == T


# --- Every key a script touches is one of its KEYS (on a real Redis, the whole
# suite's script calls are checked: tests/declared_keys.lua)

REAL = pytest.mark.parametrize("redis_db", ["real"], indirect=True)
SCRIPTS = [script for script in vars(scripts).values() if isinstance(script, scripts.Script)]


@REAL
def test_on_a_real_redis_a_script_fails_on_a_key_it_does_not_declare(
    redis_db: redis.Redis, settings: Any
) -> None:
    assert all(script.text.startswith(DECLARED_KEYS_ONLY) for script in SCRIPTS)
    declared = key(settings, "declared")
    touch = "redis.call('SET', KEYS[1], 1) return redis.call('GET', KEYS[1] .. ':other')"
    with pytest.raises(redis.ResponseError, match=f"undeclared key {declared}:other in GET"):
        redis_db.eval(DECLARED_KEYS_ONLY + touch, 1, declared)
    assert redis_db.eval(DECLARED_KEYS_ONLY + "return redis.call('PUBLISH', 'x', 1)", 0) == 0


@REAL
def test_a_read_script_that_writes_fails(
    redis_db: redis.Redis, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads run read-only (EVALSHA_RO): a write slipped into one is refused by Redis."""
    presence.record_guest("203.0.113.1")
    end = "\nreturn result"
    text = scripts.SUMMARY.text.replace(end, "\nredis.call('PEXPIRE', KEYS[3], 1000)" + end)
    monkeypatch.setattr(scripts.SUMMARY, "text", text)
    monkeypatch.setattr(scripts.SUMMARY, "sha", hashlib.sha1(text.encode()).hexdigest())
    with pytest.raises(redis.ResponseError, match="Write commands are not allowed"):
        presence.summary()
    assert redis_db.ttl(key(settings, "guests")) > 1


@REAL
def test_every_script_touches_only_the_keys_it_declares(
    redis_db: redis.Redis,
    settings: Any,
    people: Any,
    round_trips: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "max_rooms", 2)
    (alice,) = people("alice")
    start = on_one_day(NOW)
    with time_machine.travel(start, tick=False) as traveller:
        presence.record_user(alice, room="topic:1")
        presence.record_user(alice, room="topic:2")  # a move: she leaves topic:1
        traveller.shift(1)
        presence.record_guest("203.0.113.1", room="lobby")  # over the cap: topic:1 dropped
        assert redis_db.zrange(key(settings, "rooms"), 0, -1) == [b"topic:2", b"lobby"]
        assert redis_db.exists(*conf.namespace_keys("topic:1")) == 0
        connection = tab(alice, room="lobby")
        sockets.connect(connection)
        sockets.check([None, "lobby"])
        sockets.disconnect(connection)
        recording.unrecord((str(alice.pk), True), "topic:2")  # a view that showed no page
        assert presence.summary(day=True).peak == Peak(1, start + timedelta(seconds=1))
        traveller.shift(1)
        redis_db.delete(*redis_db.scan_iter(match=key(settings, "*")))  # a cache clear
        presence.record_guest("203.0.113.3")  # nothing remembers the peak Redis lost
        assert presence.peak() is None
        traveller.shift(299)
        presence.record_guest("203.0.113.2", room="lobby")
        traveller.shift(301)
        presence.prune()  # alice, stale, out of every set
        # the day's counters began again with the cache clear: one guest since
        assert [(day.members, day.guests) for day in admin_stats.daily_visitors(days=1)] == [(0, 1)]
        assert presence.forget_user(alice) is False  # pruned from the site already
        assert not recording.unrecord((str(alice.pk), True), "lobby")  # its guest keeps it
    assert [script.name for script in SCRIPTS if not round_trips.ran(script)] == []
    assert redis_db.exists(key(settings, f"member:{alice.pk}:rooms")) == 0


def test_a_move_announces_the_room_left_unless_they_are_back_in_it(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    (alice,) = people("alice")
    pk = str(alice.pk)
    notices = redis_db.pubsub()
    notices.subscribe(conf.notices_channel)
    assert notices.get_message(timeout=5)["type"] == "subscribe"  # listening from here
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice, room="topic:1")
        traveller.shift(5)
        presence.record_user(alice, room="topic:2")  # the record, then LEAVE_ROOM
        published = [notices.get_message(timeout=5)["data"] for _ in range(3)]
        assert published == [b"topic:1", b"topic:2", b"topic:1"]  # in 1, in 2, out of 1
        # A leave that comes late, after she went back: her rooms name topic:1 again.
        presence.record_user(alice, room="topic:1")
        keys = conf.keys("topic:1")
        member_rooms = conf.member_rooms_key(pk)
        late = (
            [member_rooms, keys.users, keys.hidden, *conf.socket_keys("topic:1")[2:]],
            [pk, "topic:1", "topic", "x"],
        )
        assert not scripts.LEAVE_ROOM(redis_db, *late)
        assert names(online_now.online_users(room="topic:1")) == ["alice"]
        redis_db.hset(member_rooms, "topic", "topic:2")  # now she is elsewhere: it applies
        assert scripts.LEAVE_ROOM(redis_db, *late)
        assert online_now.online_users(room="topic:1") == []
        assert not scripts.LEAVE_ROOM(redis_db, *late)
    notices.close()


def test_a_page_view_publishes_its_change_on_every_site(redis_db: redis.Redis) -> None:
    """Whether or not anyone listens (whos_online.push.notices), the recording script
    publishes the change itself: one message on the notices channel."""
    notices = redis_db.pubsub()
    notices.subscribe(conf.notices_channel)
    assert notices.get_message(timeout=5)["type"] == "subscribe"
    assert "online" in BrowserClient().get("/", REMOTE_ADDR="203.0.113.1").cookies
    got = []
    while (message := notices.get_message(timeout=0.5)) is not None:
        got.append(message["data"])
    notices.close()
    assert got == [b""]  # the site ('': no room)


def test_a_member_seen_again_is_announced_and_a_guest_only_when_new_to_the_window(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    (alice,) = people("alice")
    notices = redis_db.pubsub()
    notices.subscribe(conf.notices_channel)
    assert notices.get_message(timeout=5)["type"] == "subscribe"
    with time_machine.travel(NOW, tick=False) as traveller:
        for _ in range(2):
            presence.record_user(alice)
            presence.record_guest("203.0.113.1")
            traveller.shift(60)
        presence.record_user(alice, room="topic:1")
        published = []
        while (message := notices.get_message(timeout=0.5)) is not None:
            published.append(message["data"])
    # Her card may have changed (a name, an avatar): each record of hers may change the block;
    # the guest's second record, inside the window, changes no count.
    assert published == [b"", b"", b"", b"topic:1"]
    notices.close()


def test_a_dropped_room_keeps_its_keys_if_a_visitor_registered_it_again(
    redis_db: redis.Redis, settings: Any
) -> None:
    with time_machine.travel(NOW, tick=False):
        for room in ("a", "b"):
            presence.record_guest("203.0.113.1", room=room)
            redis_db.zadd(conf.keys(room).users, {"1": T})  # and a member: every set there
        redis_db.zrem(conf.rooms_key, "a", "b")  # both dropped over the cap by a record...
        presence.record_guest("203.0.113.1", room="b")  # ...and b visited again since
        rooms = {room: conf.namespace_keys(room) for room in ("a", "b")}
        assert scripts.drop_rooms(redis_db, rooms_key=conf.rooms_key, rooms=rooms) == 1
    assert redis_db.exists(*conf.namespace_keys("a")) == 0
    assert online_now.guest_count(room="b") == 1 and online_now.guest_count(room="a") == 0


def test_a_logout_leaves_the_rooms_it_read_and_not_one_joined_after(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")
    pk = str(alice.pk)
    with time_machine.travel(NOW, tick=False):
        presence.record_user(alice)
        for room in ("topic:1", "lobby"):
            presence.record_user(alice, room=room)
        site, topic = conf.keys(), conf.keys("topic:1")
        keys = [
            site.users,
            site.hidden,
            *conf.socket_keys()[2:],
            site.cards,
            conf.member_rooms_key(pk),
            # lobby joined after the logout read her rooms
            topic.users,
            topic.hidden,
            *conf.socket_keys("topic:1")[2:],
        ]
        args = [pk, conf.notices_channel, "topic:1"]
        assert scripts.FORGET(redis_db, keys, args) == 1
        assert scripts.FORGET(redis_db, keys, args) == 0  # not listed any more
    assert online_now.online_users() == [] and online_now.online_users(room="topic:1") == []
    assert online_now.user_count(room="lobby") == 1  # listed there still (her card went with her)
    assert redis_db.hgetall(conf.member_rooms_key(pk)) == {b"lobby": b"lobby"}
    assert redis_db.hget(site.cards, pk) is None


# --- RECORD


# TTLs counted down by travelled time: only fakeredis follows time_machine.
@TRAVELLED_TTLS
def test_a_visitor_first_seen_as_the_hour_began_is_counted_once_that_hour(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")
    hour = NOW.replace(minute=0, second=0)
    day = conf.day_key("members", counting.local_date(hour.timestamp()))
    with time_machine.travel(hour, tick=False) as traveller:
        presence.record_user(alice)
        traveller.shift(5)
        presence.record_user(alice)  # already in this hour's and day's counters: skipped
        assert redis_db.ttl(day) == counting.DAYS_KEPT * counting.DAY - 5


@TRAVELLED_TTLS
def test_a_record_writes_the_member_their_card_counters_and_ttls(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_RETENTION = 3600
    alice, bob = people("alice", "bob")
    start = on_one_day(NOW)
    t = start.timestamp()
    with time_machine.travel(start, tick=False) as traveller:
        assert presence.record_guest("203.0.113.1")[1:4] == (None, None, False)
        assert presence.record_guest("203.0.113.2").before is None
        visit = presence.record_user(alice, guest_ip="203.0.113.1")  # logging in
        assert (visit.before, visit.refused) == (None, False)
        presence.record_user(bob)
        assert online_now.guest_count() == 1  # alice is no longer a guest too
        traveller.shift(5)
        assert presence.record_user(alice).before == t
        assert presence.record_guest("203.0.113.2").before == t
        for name, ttl in (("users", 3600), ("cards", 3600), ("guests", 600)):
            assert redis_db.ttl(key(settings, name)) == ttl, name
        hour, ttl = counting.hour_bucket("guests", t + 5)
        assert redis_db.ttl(hour) == ttl
        for who in ("members", "guests"):
            # Set when first counted today, 5 s ago: a visitor counted already skips the counters.
            day = conf.day_key(who, counting.local_date(t))
            assert redis_db.ttl(day) == counting.DAYS_KEPT * counting.DAY - 5
        traveller.move_to(start + timedelta(seconds=2))  # an app server whose clock lags
        assert presence.record_user(alice).before == t + 5
        assert presence.last_seen(alice) == start + timedelta(seconds=5)
        assert names(online_now.online_users()) == ["alice", "bob"]
        # The day's unique visitors: two members, two guests (alice was one before logging in).
        (today,) = admin_stats.daily_visitors(days=1)
        assert (today.members, today.guests) == (2, 2)
        assert redis_db.hget(key(settings, "cards"), str(alice.pk)) == b'{"name":"alice"}'
        assert redis_db.exists(key(settings, "hidden"), key(settings, "rooms")) == 0


def test_a_member_who_hides_moves_between_the_sets(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    (member,) = people("shy")
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_scripts.shy_card"
    presence.record_user(member)
    assert redis_db.zcard(key(settings, "hidden")) == 1
    settings.WHOS_ONLINE_MEMBER_CARD = "whos_online.defaults.default_card"
    presence.record_user(member)
    assert redis_db.zcard(key(settings, "hidden")) == 0
    assert online_now.user_count() == 1 and names(online_now.online_users()) == ["shy"]


def test_at_the_cap_a_newcomer_waits_until_a_guest_leaves_the_window(
    redis_db: redis.Redis,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_guests", 2)
    guests, peak = key(settings, "guests"), key(settings, "peak")
    with time_machine.travel(NOW, tick=False) as traveller:
        for address in ("203.0.113.1", "203.0.113.2"):
            assert presence.record_guest(address).refused is False
        assert presence.record_guest("203.0.113.1").before == T  # one counted comes back
        traveller.shift(300)
        refused = presence.record_guest("198.51.100.1")
        assert (refused.before, refused.refused) == (None, True)
        assert (online_now.guest_count(), redis_db.zcard(guests)) == (2, 2)
        assert redis_db.ttl(peak) == 600  # a flood's mark, kept as long as the window
        assert presence.record_guest("203.0.113.1").refused is False
        traveller.shift(300)  # 203.0.113.2 exactly at the window's start: still counted
        assert presence.record_guest("198.51.100.1").refused is True
        traveller.shift(1)  # now out of it
        assert presence.record_guest("198.51.100.1").refused is False
        # The oldest guest made room: the set never grows past the cap.
        assert (online_now.guest_count(), redis_db.zcard(guests)) == (2, 2)


# TTLs counted down by travelled time: only fakeredis follows time_machine.
@TRAVELLED_TTLS
def test_a_count_of_nobody_leaves_a_flood_mark_to_expire(
    redis_db: redis.Redis,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_guests", 1)
    peak = key(settings, "peak")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_guest("203.0.113.1")
        traveller.shift(300)
        assert presence.record_guest("203.0.113.2").refused
        traveller.shift(301)
        assert presence.summary().total == 0
        assert redis_db.ttl(peak) == 299


def test_a_flood_puts_back_the_peak_from_before_its_window(
    redis_db: redis.Redis,
    settings: Any,
    people: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_guests", 3)
    alice, bob, carol = people("alice", "bob", "carol")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_guest("203.0.113.1")
        presence.record_guest("203.0.113.2")
        assert sampled_peak() == Peak(2, NOW)
        traveller.shift(700)
        presence.record_guest("203.0.113.3")
        presence.record_user(alice)
        assert sampled_peak() == Peak(2, NOW)  # as many, not more: the first stays
        traveller.shift(10)
        presence.record_guest("203.0.113.4")
        assert sampled_peak() == Peak(3, at(710))
        traveller.shift(10)
        presence.record_guest("203.0.113.5")
        assert presence.summary().guest_count == 3  # the cap: such a count raises nothing
        assert sampled_peak() == Peak(3, at(710))
        traveller.shift(10)
        assert presence.record_guest("198.51.100.1").refused  # a flood
        assert presence.peak() == Peak(2, NOW)
        traveller.shift(10)
        presence.forget_guest("203.0.113.3")
        presence.record_user(bob)
        assert presence.summary().total == 4  # below the cap, but within the flood's window
        assert sampled_peak() == Peak(2, NOW)
        traveller.move_to(at(730 + 600))  # the flood's window ends now
        for user in (alice, bob, carol):
            presence.record_user(user)
        assert sampled_peak() == Peak(2, NOW)
        assert presence.summary().peak is None  # no block shows a peak below its total
        traveller.shift(1)
        assert presence.summary().peak == Peak(3, at(1330))  # shown as reached, not written
        assert presence.peak() == Peak(2, NOW)
        assert sampled_peak() == Peak(3, at(1330))


def test_a_flood_that_goes_on_takes_no_peak_until_its_last_window_ends(
    redis_db: redis.Redis,
    settings: Any,
    people: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_guests", 1)
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_guest("203.0.113.1")
        assert presence.record_guest("203.0.113.2").refused  # no peak until NOW + 600
        traveller.shift(300)
        assert presence.record_guest("203.0.113.3").refused  # no peak until NOW + 900
        traveller.shift(301)
        presence.record_user(alice)
        presence.record_user(bob)
        assert presence.summary().peak is None
        traveller.move_to(at(901))
        assert presence.summary().peak == Peak(2, at(601))


def test_a_flood_keeps_a_peak_taken_before_its_window(
    redis_db: redis.Redis,
    settings: Any,
    people: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_guests", 1)
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.prune()
        traveller.shift(700)
        presence.record_guest("203.0.113.1")
        assert presence.record_guest("203.0.113.2").refused
        assert presence.peak() == Peak(1, NOW)


def test_a_flood_reverts_a_peak_taken_at_its_window_first_instant(
    redis_db: redis.Redis,
    settings: Any,
    people: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_guests", 1)
    alice, bob, carol = people("alice", "bob", "carol")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.prune()
        traveller.shift(700)  # a new window: the peak of 1 is kept aside
        presence.record_user(alice)
        presence.record_user(bob)
        assert sampled_peak() == Peak(2, at(700))
        traveller.shift(100)  # the same window: 2 is not kept aside
        for user in (alice, bob, carol):
            presence.record_user(user)
        assert sampled_peak() == Peak(3, at(800))
        traveller.move_to(at(1400))  # 3 was taken at this window's very start
        presence.record_guest("203.0.113.1")
        assert presence.record_guest("203.0.113.2").refused
        assert presence.peak() == Peak(1, NOW)


def test_a_flood_drops_a_first_peak_taken_within_its_window(
    redis_db: redis.Redis,
    settings: Any,
    people: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_guests", 1)
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.prune()
        traveller.shift(600)  # 1 was taken at this window's very start: not kept aside
        presence.record_user(alice)
        presence.record_user(bob)
        assert sampled_peak() == Peak(2, at(600))
        traveller.shift(1)
        presence.record_guest("203.0.113.1")
        assert presence.record_guest("203.0.113.2").refused
        assert presence.peak() is None


# TTLs counted down by travelled time: only fakeredis follows time_machine.
@TRAVELLED_TTLS
def test_a_room_is_registered_capped_and_dropped_with_its_sets(
    redis_db: redis.Redis,
    settings: Any,
    people: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    monkeypatch.setattr(Settings, "max_rooms", 4)
    (alice,) = people("alice")
    rooms = key(settings, "rooms")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.record_guest("203.0.113.1")
        assert redis_db.exists(rooms) == 0  # the site is no room
        for n in range(1, 6):
            presence.record_user(alice, room=f"thread:{n}")
            presence.record_guest("203.0.113.1", room=f"thread:{n}")
            traveller.shift(1)
        assert redis_db.zrange(rooms, 0, -1, withscores=True) == [
            (f"thread:{n}".encode(), T + n - 1) for n in range(2, 6)
        ]
        assert redis_db.ttl(rooms) == 599  # 600 from the last registration, a second ago
        monkeypatch.setattr(Settings, "max_rooms", 2)  # lowered: the next room drops three at once
        presence.record_guest("203.0.113.1", room="thread:6")
    assert redis_db.zrange(rooms, 0, -1) == [b"thread:5", b"thread:6"]
    left = sorted(redis_db.scan_iter(match=key(settings, "room:*"), count=1000))
    assert left == [
        key(settings, f"room:thread:{name}").encode()
        for name in ("5:guests", "5:users", "6:guests")
    ]


# --- COUNT_AND_RAISE_PEAK and SUMMARY


def test_the_block_counts_and_lists_the_window_only(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_RETENTION = 3600
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_scripts.shy_card"
    old, shy_old, alice, bob, shy_one, carol = people(
        "old", "shy_old", "alice", "bob", "shy_one", "carol"
    )
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(old)
        presence.record_user(shy_old)
        presence.record_guest("198.51.100.1")
        traveller.shift(300)
        presence.record_guest("203.0.113.1")
        traveller.shift(301)  # the first three have left the window (not pruned)
        for user in (alice, bob, shy_one, carol):
            presence.record_user(user)
            traveller.shift(1)
        presence.record_guest("203.0.113.2")
        traveller.shift(10)
        block = presence.summary()
        assert names(block.members) == ["carol", "bob", "alice"]
        assert {m.status for m in block.members} == {"online"}
        assert (block.user_count, block.hidden_count, block.guest_count) == (4, 1, 2)
        assert block.peak == Peak(6, at(605))  # the count now, when it was reached: not written
        assert (block.day_users, block.day_guests) == (None, None)
        staff = presence.summary(viewer=STAFF)
        assert names(staff.members) == ["carol", "shy_one", "bob", "alice"]
        assert names(presence.summary(limit=2).members) == ["carol", "bob"]
        presence.record_user(alice, room="thread:1")
        room = presence.summary(room="thread:1")
        assert (room.total, room.peak) == (1, None)
    assert redis_db.exists(key(settings, "room:thread:1:peak")) == 0  # rooms keep no peak


def test_the_peak_only_rises_and_lives_a_year_from_the_last_count(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    alice, bob = people("alice", "bob")
    peak = key(settings, "peak")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        assert sampled_peak() == Peak(1, NOW)
        assert redis_db.ttl(peak) == stats.PEAK_TTL
        traveller.shift(86400)
        assert presence.summary().total == 0
        presence.prune()
        assert redis_db.ttl(peak) == stats.PEAK_TTL  # counted again: a year from now
        presence.record_user(alice)
        presence.record_user(bob)
        assert sampled_peak() == Peak(2, at(86400))
        traveller.shift(60)
        presence.record_user(alice)
        presence.record_user(bob)
        presence.prune()
        assert presence.summary().peak == Peak(2, at(86400))  # as many: not moved
        traveller.shift(700)
        presence.record_user(alice)
        assert presence.summary().peak == Peak(2, at(86400))


@pytest.mark.parametrize("mode", ["exact", "approximate"])
def test_the_day_line_counts_the_past_24_hours(
    redis_db: redis.Redis, settings: Any, people: Any, mode: str
) -> None:
    settings.WHOS_ONLINE_GUESTS = mode
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_RETENTION = timedelta(days=2)
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_scripts.shy_card"
    old, shy_old, alice, bob, shy_one = people("old", "shy_old", "alice", "bob", "shy_one")
    hour = datetime.fromtimestamp(T // 3600 * 3600 + 3600, tz=timezone.utc)
    with time_machine.travel(hour, tick=False) as traveller:
        for user in (old, shy_old):
            presence.record_user(user)
        presence.record_guest("198.51.100.1")
        traveller.shift(3600 + 10)  # the oldest hour the day line counts
        presence.record_guest("203.0.113.1")
        traveller.move_to(hour + timedelta(hours=24, minutes=20))
        for user in (alice, bob, shy_one):
            presence.record_user(user)
        presence.record_guest("203.0.113.2")
        presence.record_guest("203.0.113.3")
        keys = set(redis_db.scan_iter(match=key(settings, "*")))
        block = presence.summary(day=True)
        assert (block.day_users, block.day_guests, block.day_total) == (3, 3, 6)
        assert set(redis_db.scan_iter(match=key(settings, "*"))) == keys  # a read makes no key
        presence.forget_user(alice)  # a logout unsees nobody of the past 24 hours
        assert presence.summary(day=True).day_total == 6
        presence.prune()  # merges the past hours: a read counts two HyperLogLogs each
        union = counting.past_hours("guests", time.time())[0]
        assert redis_db.pfcount(union) == 1 and 0 < redis_db.ttl(union) <= 3600  # this hour: 2 more
        redis_db.delete(*counting.past_hours("guests", time.time())[1])  # read from the union
        block = presence.summary(day=True)
        assert (block.day_users, block.day_guests, block.day_total) == (3, 3, 6)


def test_the_day_line_is_never_below_a_peak_of_the_past_24_hours(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    """Issue 50, slip 7: the 24 hours' figures are approximate; the total never shows
    fewer people than were online at once in those hours (a peak before them does not
    count)."""
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_RETENTION = timedelta(days=1)
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        for n in range(3):
            presence.record_guest(f"203.0.113.{n}")
        presence.prune()  # the peak: 4
        traveller.shift(3600)
        for who in ("guests", "members"):  # as if the HyperLogLogs counted fewer
            redis_db.delete(*counting.hour_buckets(who, time.time() - 3600))
        assert presence.summary(day=True).day_total == 4
        traveller.shift(24 * 3600)  # the peak is older than the past 24 hours
        assert presence.summary(day=True).day_total == 0


def test_approximate_guests_count_from_every_bucket_of_the_window(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_GUESTS = "approximate"
    (alice,) = people("alice")
    minute = datetime.fromtimestamp(T // 60 * 60 + 60, tz=timezone.utc)
    with time_machine.travel(minute, tick=False) as traveller:
        visit = presence.record_guest("203.0.113.1")  # the window's oldest bucket, at the end
        assert (visit.before, visit.refused) == (None, False)
        traveller.shift(540)
        presence.record_guest("203.0.113.2")  # the bucket before the newest
        assert presence.record_guest("203.0.113.2").before is None  # not known here
        traveller.shift(60)
        presence.record_user(alice)
        block = presence.summary()
        assert (block.guest_count, names(block.members)) == (2, ["alice"])
        assert block.peak == Peak(3, minute + timedelta(seconds=600))
        keys = {name: redis_db.pttl(name) for name in redis_db.scan_iter(match=key(settings, "*"))}
        assert presence.summary().guest_count == 2
        # A read makes no key and extends none.
        assert all(0 < redis_db.pttl(name) <= ttl for name, ttl in keys.items())
        assert set(redis_db.scan_iter(match=key(settings, "*"))) == set(keys)
        presence.prune()
        assert admin_stats.history()[-1].guests == 2
    assert redis_db.exists(key(settings, "guests")) == 0  # no sorted set in this mode


def test_approximate_guests_in_a_window_of_one_bucket(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 30
    settings.WHOS_ONLINE_GUESTS = "approximate"
    minute = datetime.fromtimestamp(T // 60 * 60 + 60 + 40, tz=timezone.utc)
    with time_machine.travel(minute, tick=False):
        presence.record_guest("203.0.113.1")
        assert presence.summary().guest_count == 1
        presence.prune()
        assert admin_stats.history()[-1].guests == 1


# --- HEARTBEAT, DISCONNECT, and the block's merge of them


def test_heartbeats_keep_members_in_the_window_and_move_a_dead_process_members_to_left(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600  # sockets beat every 25 s by default: alive 60 s
    alice, carol, bob = people("alice", "carol", "bob")
    tabs = {user: tab(user, f"tab-{user.username}", "r") for user in (alice, carol, bob)}
    with time_machine.travel(NOW, tick=False) as traveller:
        for opened in tabs.values():
            sockets.connect(opened)
        traveller.shift(10)
        sockets.heartbeat(tabs.values())
        traveller.move_to(at(71))
        sockets.heartbeat([tabs[bob]])  # alice's and carol's process died after +10
        for room in (None, "r"):
            live, left, *_ = conf.socket_keys(room)
            assert push.connected(room=room) == [str(bob.pk)]
            # When each is alive until: the last beat plus the timeout.
            assert redis_db.zrange(live, 0, -1, withscores=True) == [
                (str(bob.pk).encode(), T + 131)
            ]
            assert redis_db.zcard(left) == 2  # alice's and carol's timeouts
            assert redis_db.zmscore(left, [str(alice.pk), str(carol.pk)]) == [T + 70, T + 70]
            for name in (live, left, conf.keys(room).users):
                assert redis_db.ttl(name) == 600, name
            conns = conf.connections_key(room, str(bob.pk))
            assert (redis_db.hkeys(conns), redis_db.ttl(conns)) == ([b"tab-bob"], 60)
            # Their process died within their cookie's life: they may be browsing on.
            assert statuses(room) == {"alice": "online", "carol": "online", "bob": "online"}
        assert redis_db.ttl(key(settings, "cards")) == 600
        # Last seen is the newest sign: now for bob, alive; alice's timeout.
        assert (presence.last_seen(bob), presence.last_seen(alice)) == (at(71), at(70))
        # A beat never moves a score, so it never reorders a list: bob stays listed and
        # counted past the window by his beats alone, his score still his connect.
        traveller.move_to(at(400))
        sockets.heartbeat([tabs[bob]])
        traveller.move_to(at(680))  # alice's and carol's last signs left the window at 670
        sockets.heartbeat([tabs[bob]])
        for room in (None, "r"):
            assert redis_db.zscore(conf.keys(room).users, str(bob.pk)) == T
            assert names(online_now.online_users(room=room)) == ["bob"]
            assert online_now.user_count(room=room) == 1
            assert statuses(room) == {"bob": "online"}  # alice and carol are offline
        assert presence.last_seen(bob) == at(680)
        traveller.move_to(at(600))  # a process whose clock lags beats too: nothing goes back
        sockets.heartbeat([tabs[bob]])
        for room in (None, "r"):
            assert redis_db.zscore(conf.socket_keys(room).live, str(bob.pk)) == T + 740


def test_closing_tabs_keeps_a_member_live_at_their_newest_other_tab(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    alice, bob, carol = people("alice", "bob", "carol")
    a = [tab(alice, f"a{i}", "r") for i in range(3)]
    b = [tab(bob, f"b{i}", "r") for i in range(2)]
    c = tab(carol, "c", "r")
    pk = str(alice.pk).encode()
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(c)
        for i in range(3):  # alice's tabs beat at NOW, +10, +20; bob's at NOW, +10 (alive 60 s)
            sockets.connect(a[i])
            if i < 2:
                sockets.connect(b[i])
            traveller.shift(10)
        sockets.disconnect(a[2])
        for room in (None, "r"):
            assert redis_db.zscore(conf.socket_keys(room).live, pk) == T + 70
            conns = conf.connections_key(room, str(alice.pk))
            assert sorted(redis_db.hkeys(conns)) == [b"a0", b"a1"]
        traveller.move_to(at(70))
        sockets.disconnect(a[0])  # a1 beat exactly the timeout ago: still alive
        sockets.disconnect(b[1])  # b0 (NOW) is a dead process's: bob leaves
        for room in (None, "r"):
            live, left, *_ = conf.socket_keys(room)
            assert push.connected(room=room) == [str(alice.pk)]
            assert redis_db.zscore(left, str(bob.pk)) == T + 70
            assert redis_db.hkeys(conf.connections_key(room, str(bob.pk))) == []
            assert redis_db.ttl(left) == 600
            assert statuses(room)["bob"] == "online"  # within his cookie's life: browsing on
        traveller.move_to(at(650))
        # Nothing beat in room "r" since +20: prune takes it out of the registry with its
        # window, and closing its sockets writes none of its keys again.
        presence.prune()
        redis_db.delete(*conf.socket_keys("r"))  # what their TTL does on Redis's own clock
        sockets.disconnect(c)
        traveller.move_to(at(700))
        sockets.disconnect(a[1])
        presence.prune()  # left keeps the window's leavers only
        assert redis_db.zrange(conf.socket_keys().left, 0, -1) == [str(carol.pk).encode(), pk]
        assert redis_db.exists(*conf.socket_keys("r")) == 0


def test_the_socket_rule_at_its_edges(redis_db: redis.Redis, settings: Any, people: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 120  # idle after 60 s, the heartbeat timeout: both turn together
    alice, bob, carol, dave = people("alice", "bob", "carol", "dave")
    grace = conf.cookie_age  # 60 s: a close this long after the last page view is final
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(tab(alice, "a"))
        closed, replaced = tab(bob, "b"), tab(dave, "d")
        sockets.connect(closed)
        sockets.connect(replaced)
        presence.record_user(carol)  # no socket: the HTTP rule
        traveller.shift(grace - 1)
        sockets.disconnect(replaced)  # as a page that replaced it was just seen: not idle
        traveller.shift(1)
        sockets.disconnect(closed)  # a cookie's life after the last page: a closed tab, idle
        assert statuses() == {"alice": "online", "bob": "idle", "carol": "online", "dave": "online"}
        traveller.move_to(at(60))  # alice's beat is exactly the timeout old
        assert statuses() == {"alice": "online", "bob": "idle", "carol": "online", "dave": "online"}
        traveller.shift(1)
        assert set(statuses().values()) == {"idle"}


def test_an_open_socket_shows_when_the_window_is_one_guest_bucket(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    # Approximate counting, a 30 s window inside one minute's bucket: no bucket union is kept.
    settings.WHOS_ONLINE_GUESTS = "approximate"
    settings.WHOS_ONLINE_MAX_AGE = 30  # idle after 15 s
    (alice,) = people("alice")
    minute = NOW.replace(second=0)
    with time_machine.travel(minute + timedelta(seconds=35), tick=False) as traveller:
        sockets.connect(tab(alice, "a"))
        traveller.shift(20)  # idle by her last record, online by her open tab
        assert statuses() == {"alice": "online"}


def test_a_lagging_process_never_moves_a_leave_back(redis_db: redis.Redis, people: Any) -> None:
    alice, bob = people("alice", "bob")
    left = conf.socket_keys().left
    with time_machine.travel(NOW, tick=False) as traveller:
        opened = tab(alice, "a")
        sockets.connect(opened)
        traveller.shift(100)
        sockets.disconnect(opened)  # her last connection closed at NOW + 100
        traveller.move_to(at(30))  # a process whose clock lags beats for another tab of hers
        sockets.heartbeat([Connection(str(alice.pk), "z")])
        traveller.move_to(at(91))  # that process died: its timeout (+90) goes to left
        sockets.heartbeat([Connection(str(bob.pk), "b")])
        assert redis_db.zscore(left, str(alice.pk)) == T + 100
