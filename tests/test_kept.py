"""The index of the members a socket keeps (lua/lib/kept.lua), through what a site sees.

A member connected longer than the window without a page view is inside it by
their socket alone: the reads find them in their set's index rather than by
walking every connected member. These tests pin what the index must keep exact:
the counts, the order (by page view), hidden members, rooms, prune and a Redis
that lost its data; and that a sign which aged out leaves the index.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Iterable

import pytest
import redis
import time_machine

from tests import online_now
from tests.conftest import NOW, STAFF, hiding, names, tab
from whos_online import presence
from whos_online.conf import conf
from whos_online.store import scripts, sockets
from whos_online.store.sockets import Connection

pytestmark = pytest.mark.django_db

T = NOW.timestamp()


def private(user: Any) -> bool:
    return bool(user.email == "hidden")


private_card = hiding(private)


@pytest.fixture(autouse=True)
def _window(settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_kept.private_card"


def beat(traveller: Any, tabs: Iterable[Connection], start: int, stop: int) -> None:
    """Heartbeats of ``tabs`` every 25 s (the default: alive 60 s) from NOW + ``start`` up
    to NOW + ``stop``."""
    for second in range(start, stop + 1, 25):
        traveller.move_to(NOW + timedelta(seconds=second))
        sockets.heartbeat(tabs)


def indexed(redis_db: redis.Redis, room: str | None = None) -> dict[str, list[str]]:
    """The pks in the namespace's two indexes, oldest score first."""
    socket = conf.socket_keys(room)
    return {
        name: [pk.decode() for pk in redis_db.zrange(key, 0, -1)]
        for name, key in (("users", socket.kept_users), ("hidden", socket.kept_hidden))
    }


def test_a_page_view_moves_a_kept_members_place(redis_db: redis.Redis, people: Any) -> None:
    """Kept by their sockets, alice and bob are counted once and listed by their page
    views: alice's view at +700 puts her first at once (before any beat), counted by
    her score alone while it is inside the window."""
    alice, bob = people("alice", "bob")
    tabs = [tab(alice), tab(bob)]
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(tabs[1])
        traveller.shift(10)
        sockets.connect(tabs[0])
        beat(traveller, tabs, 25, 700)  # the window starts at +100: both by their sockets
        assert names(online_now.online_users()) == ["alice", "bob"]
        before = presence.summary(limit=1)
        presence.record_user(bob)
        assert online_now.user_count() == 2
        assert names(online_now.online_users()) == ["bob", "alice"]
        beat(traveller, tabs, 725, 1400)  # the window starts at +800: by their sockets again
        block = presence.summary(limit=1)
        assert (names(block.members), block.user_count, block.more) == (["bob"], 2, 1)
        assert names(online_now.online_users()) == ["bob", "alice"]
        assert presence.statuses([alice, bob]) == {alice: "online", bob: "online"}
    assert names(before.members) == ["alice"]
    assert redis_db.zscore(conf.socket_keys().kept_users, str(bob.pk)) == T + 700


def test_a_sign_that_aged_out_leaves_the_index(redis_db: redis.Redis, people: Any) -> None:
    """A dead process's socket (swept to the left set when its timeout passed) and a closed one
    keep their members inside the window, then nobody: reads pass over them, and prune
    drops them from the index and the left set."""
    alice, bob, carol = people("alice", "bob", "carol")
    tabs = {user: tab(user) for user in (alice, bob, carol)}
    with time_machine.travel(NOW, tick=False) as traveller:
        for opened in tabs.values():
            sockets.connect(opened)  # at +0, +1, +2
            traveller.shift(1)
        beat(traveller, tabs.values(), 25, 50)
        sockets.disconnect(tabs[carol])  # at +50
        beat(traveller, [tabs[bob]], 75, 125)  # alice's process died after +50
        sockets.check([None])  # swept: alice's close is at +110 (her last beat's timeout)
        beat(traveller, [tabs[bob]], 150, 625)
        assert online_now.user_count() == 3
        assert names(online_now.online_users()) == ["carol", "bob", "alice"]
        assert indexed(redis_db) == {
            "users": [str(u.pk) for u in (alice, bob, carol)],
            "hidden": [],
        }
        beat(traveller, [tabs[bob]], 650, 700)  # the window starts at +100: alice is in
        assert names(online_now.online_users()) == ["bob", "alice"]
        beat(traveller, [tabs[bob]], 725, 725)  # the window starts at +125
        assert names(online_now.online_users()) == ["bob"] and online_now.user_count() == 1
        assert len(indexed(redis_db)["users"]) == 3  # a read writes nothing
        presence.prune()
        assert indexed(redis_db) == {"users": [str(bob.pk)], "hidden": []}
        assert redis_db.zcard(conf.socket_keys().left) == 0
        assert presence.status(alice) == presence.status(carol) == "offline"


def test_a_hidden_member_is_kept_and_moves_with_their_set(
    redis_db: redis.Redis, people: Any
) -> None:
    """Hidden, shy is counted and listed to staff alone by their socket; once they stop
    hiding (a page view), their index entry moves with them and everyone sees them."""
    (shy,) = people("shy", email="hidden")
    connection = tab(shy)
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(connection)
        beat(traveller, [connection], 25, 700)
        block, staff = presence.summary(), presence.summary(viewer=STAFF)
        assert (block.user_count, block.hidden_count, names(block.members)) == (1, 1, [])
        assert names(staff.members) == ["shy"]
        assert indexed(redis_db) == {"users": [], "hidden": [str(shy.pk)]}
        shy.email = ""
        shy.save()
        presence.record_user(shy)  # at +700: listed now
        beat(traveller, [connection], 725, 1400)  # its beats still name the hidden set
        block = presence.summary()
        assert (block.user_count, block.hidden_count, names(block.members)) == (1, 0, ["shy"])
        assert indexed(redis_db) == {"users": [str(shy.pk)], "hidden": []}


def test_a_room_keeps_members_by_its_own_window_and_a_move_takes_them_out(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_ROOM_MAX_AGE = 300
    alice, bob = people("alice", "bob")
    tabs = [tab(alice, room="topic:1"), tab(bob, room="topic:1")]
    with time_machine.travel(NOW, tick=False) as traveller:
        for opened in tabs:
            sockets.connect(opened)
            traveller.shift(1)
        beat(traveller, tabs, 25, 400)  # inside the site's window by their connect, not the room's
        assert online_now.user_count(room="topic:1") == online_now.user_count() == 2
        assert names(online_now.online_users(room="topic:1")) == ["bob", "alice"]
        presence.record_user(alice, room="topic:2")  # she moved on: out of topic:1
        assert names(online_now.online_users(room="topic:1")) == ["bob"]
        beat(traveller, tabs, 425, 450)  # her topic:1 socket beats, but she is not listed there
        assert online_now.user_count(room="topic:1") == 1
        assert indexed(redis_db, "topic:1") == {"users": [str(bob.pk)], "hidden": []}


def test_prune_takes_a_stale_member_out_of_the_index_and_passes_over_a_kept_one(
    redis_db: redis.Redis, people: Any
) -> None:
    alice, bob = people("alice", "bob")
    tabs = [tab(alice), tab(bob)]
    with time_machine.travel(NOW, tick=False) as traveller:
        for opened in tabs:
            sockets.connect(opened)
        beat(traveller, tabs, 25, 100)
        sockets.disconnect(tabs[0])  # at +100
        beat(traveller, [tabs[1]], 125, 800)  # the retention (the window) starts at +200
        live, left, kept, _ = conf.socket_keys()
        users = conf.keys().users
        below, signs = T + 200, (live, left, kept)
        pruned = scripts.PRUNE_BATCH(redis_db, [users, users, *signs], [below, 5, 0])
        assert pruned == [1, 1, 0] and indexed(redis_db) == {
            "users": [str(bob.pk)],
            "hidden": [],
        }
        presence.prune()
        assert names(online_now.online_users()) == ["bob"] and presence.last_seen(alice) is None


def test_after_a_loss_a_connected_member_is_kept_again(redis_db: redis.Redis, people: Any) -> None:
    (alice,) = people("alice")
    connection = tab(alice)
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(connection)
        traveller.shift(10)
        redis_db.delete(*redis_db.scan_iter(match=f"{conf.key_prefix}:*"))  # a cache clear
        traveller.shift(15)
        sockets.heartbeat([connection])  # at +25: she is back, her card with her
        assert indexed(redis_db) == {"users": [str(alice.pk)], "hidden": []}
        beat(traveller, [connection], 50, 1000)
        assert names(online_now.online_users()) == ["alice"] and online_now.user_count() == 1
        assert redis_db.zscore(conf.socket_keys().kept_users, str(alice.pk)) == T + 25


@pytest.mark.parametrize("redis_db", ["fake"], indirect=True)  # TTLs on the travelled clock
def test_the_index_expires_with_the_signs_that_put_members_in(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    """A close renews the socket keys for the window, a beat for the retention: the four
    always together, so no index outlives the signs behind its members."""
    settings.WHOS_ONLINE_RETENTION = 3600
    alice, shy = people("alice", "shy")
    shy.email = "hidden"
    shy.save()
    tabs = [tab(alice), tab(shy)]
    with time_machine.travel(NOW, tick=False) as traveller:
        for opened in tabs:
            sockets.connect(opened)
        socket = conf.socket_keys()
        traveller.shift(10)
        sockets.heartbeat(tabs)
        sockets.disconnect(tabs[0])
        assert [redis_db.ttl(name) for name in socket] == [600] * 4
        traveller.shift(10)
        sockets.heartbeat(tabs[1:])
        assert [redis_db.ttl(name) for name in socket] == [3600] * 4


def test_a_member_logged_out_and_back_is_kept_by_the_socket_still_open(
    redis_db: redis.Redis, people: Any
) -> None:
    """A logout takes alice out of the index with her set; back at +10, her open
    socket's next beat puts her in again, so it keeps her past her page view."""
    (alice,) = people("alice")
    connection = tab(alice)
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(connection)
        presence.forget_user(alice)
        assert indexed(redis_db)["users"] == []
        traveller.shift(10)
        presence.record_user(alice)
        beat(traveller, [connection], 25, 700)
        assert names(online_now.online_users()) == ["alice"] and online_now.user_count() == 1
