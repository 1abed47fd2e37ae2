"""Rooms: "who is reading this thread", recorded by a view decorator, shown by a tag."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync
from django.core.checks import run_checks
from django.core.management import call_command
from django.http import HttpResponse
from django.test import RequestFactory

from tests import online_now
from tests.conftest import (
    BROWSER,
    NOW,
    BrowserAsyncClient,
    BrowserClient,
    names,
    socket_timeout,
    tab,
)
from tests.test_middleware import async_get
from whos_online import presence
from whos_online.conf import Settings, conf
from whos_online.middleware import WhosOnlineMiddleware
from whos_online.rooms.pages import in_room
from whos_online.store import addresses, recording, scripts, sockets
from whos_online.visitors import guests as guest_rooms

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
    # "now" is the window, as the site's block says too (idle members say so by name).
    assert '<p class="whos-here-window">Based on users active in the past 10 minutes.</p>' in html
    assert listed(html) == ["bob", "alice"] and "carol" not in html
    assert '<li class="whos-here-member whos-here-online"><bdi>bob</bdi></li>' in html
    assert names(online_now.online_users(room="thread:2")) == ["carol"]
    # the site-wide list still has everyone who browsed
    assert set(names(online_now.online_users())) == {"alice", "bob", "carol"}


def test_a_room_visit_costs_one_round_trip_and_the_list_one_more(
    redis_db: redis.Redis, round_trips: Any, people: Any
) -> None:
    client = logged_in(*people("alice"))
    client.get("/")  # the site-wide record, and its cookie
    round_trips.clear()
    client.get("/thread/7/")
    # alice into the room (and the room registered), then the list
    assert round_trips.commands == [["EVALSHA"], ["EVALSHA"]] and round_trips.records == 1


def test_a_move_to_another_room_of_its_kind_costs_one_round_trip_more(
    redis_db: redis.Redis, round_trips: Any, people: Any
) -> None:
    client = logged_in(*people("alice"))
    client.get("/thread/1/")
    round_trips.clear()
    client.get("/thread/1/")  # staying: the record, then the list
    assert round_trips.commands == [["EVALSHA"], ["EVALSHA"]] and round_trips.records == 1
    round_trips.clear()
    html = client.get("/thread/2/").content.decode()
    # The record names the room she left; only then are its keys known, to leave it.
    assert round_trips.commands == [["EVALSHA"]] * 3 and round_trips.ran(scripts.LEAVE_ROOM) == 1
    assert listed(html) == ["alice"] and online_now.online_users(room="thread:1") == []


def test_a_guest_is_in_one_thread_at_a_time_at_no_cost_and_without_a_key(
    redis_db: redis.Redis, round_trips: Any, settings: Any
) -> None:
    guest, other = (
        BrowserClient(REMOTE_ADDR="203.0.113.5"),
        BrowserClient(REMOTE_ADDR="203.0.113.6"),
    )
    guest.get("/thread/1/")
    guest.get("/lobby/")  # another kind of room: they stay in both
    assert "2 here now: 0 members, 2 guests" in other.get("/thread/1/").content.decode()
    notices = redis_db.pubsub()
    notices.subscribe(conf.notices_channel)
    assert notices.get_message(timeout=5)["type"] == "subscribe"
    round_trips.clear()
    html = guest.get("/thread/2/").content.decode()
    # One record puts them in thread 2 and takes them out of thread 1, which their
    # cookie named; then the list. The site's record is throttled: no round trip.
    assert round_trips.commands == [["EVALSHA"], ["EVALSHA"]] and round_trips.records == 1
    published = []
    while (message := notices.get_message(timeout=0.5)) is not None:
        published.append(message["data"])
    notices.close()
    assert b"thread:1" in published  # live blocks of thread 1 see it
    assert "1 here now: 0 members, 1 guest" in html
    assert "1 here now: 0 members, 1 guest" in other.get("/thread/1/").content.decode()
    assert online_now.guest_count(room="lobby") == 1
    guest.get("/thread/1/")  # and back
    assert online_now.guest_count(room="thread:2") == 0
    assert "2 here now: 0 members, 2 guests" in other.get("/thread/1/").content.decode()
    cookie = guest.cookies[f"{conf.cookie_name}_rooms"]
    assert cookie["httponly"] and cookie["max-age"] == 600  # the window: then in no room
    # No key per visitor (among this test's: another test may be running on the same Redis).
    assert not [key for key in redis_db.keys(f"{conf.key_prefix}:*") if b":member:" in key]


def test_a_rooms_cookie_not_signed_here_is_not_read(redis_db: redis.Redis) -> None:
    guest = BrowserClient(REMOTE_ADDR="203.0.113.5")
    guest.get("/thread/1/")
    cookie = guest.cookies[f"{conf.cookie_name}_rooms"]
    payload, _ = cookie.value.rsplit(":", 1)  # {"thread": "thread:1"}, and a forged signature
    guest.cookies[cookie.key] = f"{payload}:{'A' * 27}"
    guest.get("/thread/2/")
    assert online_now.guest_count(room="thread:1") == 1


def test_a_guest_s_rooms_cookie_keeps_the_most_recent_kinds_that_fit(
    redis_db: redis.Redis,
) -> None:
    """Browsers keep 4 KB a cookie: 30 kinds of long names still fit, the oldest let go."""

    @in_room(lambda request, kind, n: (kind, "x" * 190, n))
    def page(request: Any, kind: str, n: int) -> HttpResponse:
        return HttpResponse("ok")

    cookies: dict[str, str] = {}
    sizes = []
    for kind, n in [*((f"kind{k}", 1) for k in range(30)), ("kind20", 2)]:
        request = RequestFactory().get("/", HTTP_USER_AGENT=BROWSER)
        request.COOKIES = cookies
        response = WhosOnlineMiddleware(lambda request: page(request, kind, n))(request)
        cookies = {key: morsel.value for key, morsel in response.cookies.items()}
        sizes.append(len(cookies[f"{conf.cookie_name}_rooms"]))
    assert max(sizes) <= guest_rooms.MAX_ROOMS_VALUE
    x = "x" * 190
    assert online_now.guest_count(room=f"kind20:{x}:1") == 0  # left, named by the cookie
    assert online_now.guest_count(room=f"kind20:{x}:2") == 1
    assert online_now.guest_count(room=f"kind0:{x}:1") == 1  # let go: stays out its window


def test_a_room_over_the_cap_costs_one_round_trip_more_to_drop_the_oldest(
    redis_db: redis.Redis,
    settings: Any,
    round_trips: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "max_rooms", 1)
    with time_machine.travel(NOW, tick=False) as traveller:
        BrowserClient().get("/thread/1/")
        traveller.shift(1)
        round_trips.clear()
        BrowserClient().get("/thread/2/")
    # the site's record, the room's, the drop, the list
    assert round_trips.commands == [["EVALSHA"]] * 4 and round_trips.ran(scripts.DROP_ROOMS) == 1
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    assert sorted(room_keys(redis_db, settings)) == [f"{prefix}:room:thread:2:guests".encode()]


def test_async_views_can_be_rooms(redis_db: redis.Redis, people: Any) -> None:
    client = BrowserAsyncClient()
    client.force_login(*people("alice"))

    async def visit() -> Any:
        return await client.get("/lobby/")

    html = async_to_sync(visit)().content.decode()
    assert "1 here now: 1 member, 0 guests" in html and listed(html) == ["alice"]
    assert names(online_now.online_users(room="lobby")) == ["alice"]


def test_bots_do_not_enter_rooms(redis_db: redis.Redis) -> None:
    BrowserClient().get("/thread/1/", headers={"User-Agent": "Googlebot/2.1"})
    assert online_now.guest_count(room="thread:1") == 0


def test_a_room_has_its_own_shorter_window(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    """WHOS_ONLINE_ROOM_MAX_AGE: two minutes after her last view of the thread, alice is
    no longer reading it (the block, the counts and prune agree), while the site still
    lists her for its ten minutes; a socket open in the room keeps bob there."""
    settings.WHOS_ONLINE_ROOM_MAX_AGE = 120
    settings.WHOS_ONLINE_HEARTBEAT = 25  # a timeout of 60 s
    alice, bob, carol = people("alice", "bob", "carol")
    with time_machine.travel(NOW, tick=False) as traveller:
        logged_in(alice).get("/thread/1/")
        reading = tab(bob, "b", "thread:1")
        sockets.connect(reading)
        for _ in range(5):  # 125 s: bob's socket beats, alice only read
            traveller.shift(25)
            sockets.heartbeat([reading])
        html = logged_in(carol).get("/thread/1/").content.decode()
        assert listed(html) == ["carol", "bob"] and "2 here now: 2 members, 0 guests" in html
        assert "Based on users active in the past 2 minutes." in html
        assert online_now.user_count(room="thread:1") == 2
        assert set(names(online_now.online_users())) == {"alice", "bob", "carol"}
        call_command("whos_online_prune", stdout=StringIO())
        users = redis_db.zrange(conf.keys("thread:1").users, 0, -1)
        assert sorted(users) == sorted(str(user.pk).encode() for user in (bob, carol))
        assert "alice" in names(online_now.online_users())  # the site's window is 10 minutes


def test_a_room_lists_a_reader_idle_after_half_its_own_window(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_ROOM_MAX_AGE = 120  # idle after 60 s in the room, 300 s on the site
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.record_user(alice, room="thread:1")
        traveller.shift(61)
        [in_room] = online_now.online_users(room="thread:1")
        [on_site] = online_now.online_users()
        assert (in_room.status, on_site.status) == ("idle", "online")


def test_a_room_window_longer_than_the_site_s_is_the_site_s(settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 300
    settings.WHOS_ONLINE_ROOM_MAX_AGE = timedelta(minutes=10)
    assert conf.room_max_age == 300
    (warning,) = [m for m in run_checks() if m.id == "whos_online.W012"]
    assert "rooms use the site's window" in warning.msg


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
        presence.record_guest("203.0.113.6", room="thread:1")
        for key in redis_db.scan_iter(match=f"{prefix}:room*"):
            assert 0 < redis_db.ttl(key) <= 600, key
        room_guests = f"{prefix}:room:thread:1:guests"
        traveller.shift(300)  # alice and the first guest exactly at the window's start: kept
        call_command("whos_online_prune", stdout=StringIO())
        assert redis_db.zcard(room_guests) == 2
        traveller.shift(1)  # out of the window: pruned, the guest as the member
        call_command("whos_online_prune", stdout=StringIO())
        assert redis_db.zrange(f"{prefix}:room:thread:1:users", 0, -1) == [str(bob.pk).encode()]
        assert redis_db.zrange(room_guests, 0, -1) == [addresses.guest_id("203.0.113.6").encode()]


def room_keys(redis_db: redis.Redis, settings: Any) -> list[bytes]:
    return list(redis_db.scan_iter(match=f"{settings.WHOS_ONLINE_KEY_PREFIX}:room:*", count=1000))


@pytest.mark.parametrize("path", ["/thread/" + "9" * 250 + "/", "/topic/" + "x" * 10_000 + "/"])
def test_any_name_a_view_produces_is_a_room(
    redis_db: redis.Redis, settings: Any, path: str
) -> None:
    client = BrowserClient()
    response = client.get(path)
    assert response.status_code == 200
    assert "1 here now: 0 members, 1 guest" in response.content.decode()
    assert "1 here now" in client.get(path).content.decode()  # the same room again
    (guests,) = room_keys(redis_db, settings)  # the room's guests (no hub: no change mark)
    assert guests.endswith(b":guests")
    assert len(guests) < len(settings.WHOS_ONLINE_KEY_PREFIX) + 230  # a short, stable name
    other = path[:-2] + "8/"
    assert "1 here now" in BrowserClient().get(other, REMOTE_ADDR="203.0.113.9").content.decode()
    assert len(room_keys(redis_db, settings)) == 2  # a different long name is another room


def test_async_client_with_long_names(redis_db: redis.Redis) -> None:
    response = async_get(BrowserAsyncClient(), "/topic/" + "y" * 10_000 + "/")
    assert response.status_code == 200 and "1 here now" in response.content.decode()


def test_a_room_name_that_is_no_text_or_empty(redis_db: redis.Redis, settings: Any) -> None:
    assert "1 here now" in BrowserClient().get("/post/7/").content.decode()
    assert online_now.guest_count(room="7") == online_now.guest_count(room=7) == 1
    response = BrowserClient().get("/post/0/")  # the view's room is "": no room
    assert response.status_code == 200 and "whos-here" not in response.content.decode()
    assert len(room_keys(redis_db, settings)) == 1  # room 7's guests


@pytest.mark.parametrize("engine", ["django", "jinja2"])
def test_a_room_named_by_parts_in_the_template_is_the_views_room(
    redis_db: redis.Redis, people: Any, engine: str
) -> None:
    alice, bob = (logged_in(user) for user in people("alice", "bob"))
    alice.get(f"/forum/{engine}/42/")
    BrowserClient().get(f"/forum/{engine}/7/")  # another topic
    html = bob.get(f"/forum/{engine}/42/").content.decode()
    assert "<h1>Topic 42</h1>" in html
    assert "2 here now: 2 members, 0 guests" in html and listed(html) == ["bob", "alice"]
    assert names(online_now.online_users(room=("topic", 42))) == ["bob", "alice"]
    assert online_now.guest_count(room="topic:7") == 1


def test_a_model_instance_names_its_room_by_model_and_pk(
    redis_db: redis.Redis, people: Any
) -> None:
    carol, dave = people("carol", "dave")
    logged_in(dave).get(f"/people/{carol.pk}/")
    carol.username = "caroline"  # a rename is the same room
    carol.save()
    html = BrowserClient().get(f"/people/{carol.pk}/").content.decode()
    assert "<h1>caroline</h1>" in html and "2 here now: 1 member, 1 guest" in html
    assert names(online_now.online_users(room=f"auth.user:{carol.pk}")) == ["dave"]


def test_a_room_that_add_left_empty_is_an_error_under_debug(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.DEBUG = True
    with pytest.raises(ValueError) as raised:
        BrowserClient().get("/forum/add/42/")
    assert str(raised.value).startswith("whos_here: ('',) names no room: '' is empty.")
    assert '{% whos_here "topic" topic.pk %}' in str(raised.value)


def test_a_room_that_add_left_empty_is_a_warning_without_debug(
    redis_db: redis.Redis, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    response = BrowserClient().get("/forum/add/42/")
    html = response.content.decode()
    assert response.status_code == 200 and html == "<h1>Topic 42</h1>"  # never "Nobody is here"
    [warning] = [r for r in caplog.records if r.name == "whos_online.room_names"]
    assert warning.levelname == "WARNING"
    assert warning.getMessage().startswith("whos_here: ('',) names no room: '' is empty.")
    assert online_now.guest_count(room="topic:42") == 1  # the view's room is recorded still


@pytest.mark.parametrize("debug", [True, False])
def test_a_view_whose_room_has_an_empty_part(
    redis_db: redis.Redis, settings: Any, caplog: pytest.LogCaptureFixture, debug: bool
) -> None:
    settings.DEBUG = debug

    @in_room(lambda request, slug: ("tag", slug))
    def tag_page(request: Any, slug: str) -> HttpResponse:
        return HttpResponse("tagged")

    request = RequestFactory().get("/tag/", HTTP_USER_AGENT=BROWSER)
    message = (
        "@in_room on tests.test_rooms.test_a_view_whose_room_has_an_empty_part.<locals>."
        "tag_page: ('tag', '') names no room: '' is empty."
    )
    if debug:
        with pytest.raises(ValueError, match=re.escape(message)):
            tag_page(request, "")
    else:
        assert tag_page(request, "").content == b"tagged"
        assert [r.getMessage() for r in caplog.records if r.name == "whos_online.room_names"] == [
            message
        ]
    assert room_keys(redis_db, settings) == []


def test_a_room_view_that_fails_creates_no_room(redis_db: redis.Redis, settings: Any) -> None:
    assert BrowserClient().get("/post/404/").status_code == 404
    assert room_keys(redis_db, settings) == []
    assert redis_db.zcard(f"{settings.WHOS_ONLINE_KEY_PREFIX}:rooms") == 0


def test_live_rooms_are_capped_and_the_oldest_dropped(
    redis_db: redis.Redis, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Settings, "max_rooms", 3)
    with time_machine.travel(NOW, tick=False) as traveller:
        for pk in range(1, 6):
            BrowserClient().get(f"/thread/{pk}/")
            traveller.shift(1)
    rooms = redis_db.zrange(f"{settings.WHOS_ONLINE_KEY_PREFIX}:rooms", 0, -1)
    assert rooms == [b"thread:3", b"thread:4", b"thread:5"]
    assert sorted(room_keys(redis_db, settings)) == [
        f"{settings.WHOS_ONLINE_KEY_PREFIX}:room:thread:{pk}:{key}".encode()
        for pk in (3, 4, 5)
        for key in ("guests",)
    ]


def test_prune_walks_live_rooms_in_bounded_batches(
    redis_db: redis.Redis, settings: Any, round_trips: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False) as traveller:
        for room in range(250):
            presence.record_guest("203.0.113.5", room=f"r{room}")
            presence.record_guest("203.0.113.6", room=f"r{room}")
        traveller.shift(300)
        for room in range(250):
            presence.record_guest("203.0.113.6", room=f"r{room}")  # 203.0.113.5 goes stale
        traveller.shift(301)
        round_trips.clear()
        call_command("whos_online_prune", "--batch-size", "40", stdout=StringIO())
    prune_calls = [p for p in round_trips.payloads if scripts.PRUNE_ROOMS.sha.encode() in p]
    pages = [c for c in round_trips.commands if c == ["ZRANGE"]]
    assert len(pages) == 3  # 100 rooms a page
    # 250 stale members, at most 40 removed a call: 100 + 100 + 50 in 3 + 3 + 2 calls
    assert len(prune_calls) == 8
    assert all(p.count(b":room:") <= 700 for p in prune_calls)  # 7 keys a room
    assert all(online_now.guest_count(room=f"r{room}") == 1 for room in (0, 124, 249))
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:room:r7:guests"
    assert redis_db.zrange(key, 0, -1) == [addresses.guest_id("203.0.113.6").encode()]


class Queued:
    """A pipeline as RECORD's caller sees a client: the call is queued, its answer a stand-in."""

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe

    def evalsha(self, *args: Any) -> list[Any]:
        self.pipe.evalsha(*args)
        # no score before, not refused, no room left, none dropped
        return [None, 0, None, []]


def run_queued(pipe: Any, client: redis.Redis) -> None:
    """Run the queued records, then delete the keys of the rooms they dropped over the
    cap, as each record's caller does with its own reply (one call for the batch)."""
    dropped = [room.decode() for reply in pipe.execute() for room in reply[3]]
    if dropped:
        rooms = {room: conf.namespace_keys(room) for room in dropped}
        scripts.drop_rooms(client, rooms_key=conf.rooms_key, rooms=rooms)


@pytest.mark.slow  # 100,000 Lua calls, each key they touch checked (declared_keys_only)
@pytest.mark.parametrize("redis_db", ["real"], indirect=True)
def test_one_address_opening_100000_rooms(
    redis_db: redis.Redis, settings: Any, monkeypatch: pytest.MonkeyPatch, round_trips: Any
) -> None:
    # The rooms cap (10,000) bounds the keys; prune reads
    # only the live rooms, a page at a time. benchmarks/rooms.py times the same.
    socket_timeout(settings, 5)  # a shared, busy Redis: counts matter here, not time
    # The decorator's own call (presence.record_guest), pipelined 1,000 at a time
    # (the round_trips fixture loaded the scripts, so EVALSHA finds them).
    pipe = redis_db.pipeline(transaction=False)
    with monkeypatch.context() as patch:
        patch.setattr(recording, "get_client", lambda: Queued(pipe))
        for room in range(100_000):
            presence.record_guest("203.0.113.5", room=f"thread:{room}")
            if room % 1000 == 999:
                run_queued(pipe, redis_db)
    keys = room_keys(redis_db, settings)
    assert len(keys) == 10_000  # the rooms cap, the newest: their guests (no hub: no mark)
    assert redis_db.zcard(f"{settings.WHOS_ONLINE_KEY_PREFIX}:rooms") == 10_000
    round_trips.clear()
    call_command("whos_online_prune", stdout=StringIO())
    # 100 pages of 100 live rooms (and the empty one after), each pruned in one
    # call: nothing grows with the number of rooms.
    assert sum(c == ["ZRANGE"] for c in round_trips.commands) == 101
    assert sum(scripts.PRUNE_ROOMS.sha.encode() in p for p in round_trips.payloads) == 100
    for start in range(0, len(keys), 100):  # not one 10,000-key DEL on a shared Redis
        redis_db.unlink(*keys[start : start + 100])


def test_an_async_room_view_without_the_block_records_after_it_answers(
    redis_db: redis.Redis,
) -> None:
    from django.http import HttpResponse
    from django.test import AsyncRequestFactory

    from tests.conftest import BROWSER
    from whos_online.rooms.pages import in_room

    @in_room("kitchen")
    async def kitchen(request: Any) -> HttpResponse:
        return HttpResponse("no block here")

    request = AsyncRequestFactory().get("/kitchen/", headers={"User-Agent": BROWSER})
    assert async_to_sync(kitchen)(request).content == b"no block here"
    assert online_now.guest_count(room="kitchen") == 1


def test_a_reader_is_in_one_topic_at_a_time_and_a_logout_leaves_every_room(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    alice, bob = people("alice", "bob")
    reader, other = logged_in(alice), logged_in(bob)
    reader.get("/thread/1/")
    reader.get("/lobby/")  # another kind of room: she stays in both
    other.get("/thread/1/")
    reader.get("/thread/2/")  # she moved on: thread 1 no longer lists her
    assert names(online_now.online_users(room="thread:1")) == ["bob"]
    assert names(online_now.online_users(room="thread:2")) == ["alice"]
    assert names(online_now.online_users(room="lobby")) == ["alice"]
    html = other.get("/thread/1/").content.decode()
    assert listed(html) == ["bob"] and "1 here now: 1 member, 0 guests" in html

    reader.logout()  # at once, from every room: no "Member #pk" left behind
    for room in ("thread:2", "lobby"):
        assert online_now.online_users(room=room) == [] and online_now.user_count(room=room) == 0
    assert names(online_now.online_users()) == ["bob"]
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    assert not redis_db.exists(f"{prefix}:member:{alice.pk}:rooms")
