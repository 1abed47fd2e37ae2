"""WebSocket presence through the real consumer and router (channels' WebsocketCommunicator).

Each scenario runs in an event loop of its own (``run``), as a server process
would; the database is reached from the test's thread, so the test transaction
holds. Messages are awaited with a deadline, never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from tests.conftest import NOW, RoundTrips, names
from whos_online import hub, presence
from whos_online.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db

application = URLRouter(websocket_urlpatterns)
DEADLINE = 5  # s: a push is due within a tick (0.5 s); this only bounds a failure


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async_to_sync(scenario)()


async def tab(user: Any, path: str = "/ws/whos-online/") -> WebsocketCommunicator:
    """A browser tab with the live block open, connected."""
    communicator = WebsocketCommunicator(application, path)
    communicator.scope["user"] = user if user is not None else AnonymousUser()
    connected, _ = await communicator.connect(timeout=DEADLINE)
    assert connected
    return communicator


async def until(
    communicator: WebsocketCommunicator, wanted: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The first message ``wanted`` accepts (earlier ones are skipped)."""
    while True:
        message: dict[str, Any] = await communicator.receive_json_from(timeout=DEADLINE)
        if wanted(message):
            return message


async def eventually(check: Callable[[], bool]) -> None:
    """Wait (on the real clock: time travel stops only the wall clock) until ``check()``."""
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "not within the deadline"
        await asyncio.sleep(0.05)


def status_of(pk: Any) -> str:
    return presence.statuses([str(pk)], include_hidden=True)[str(pk)]


def listed(room: str | None = None) -> dict[str, str]:
    """What the block lists (staff view): name -> status."""
    return {m.name: m.status for m in presence.summary(None, room, include_hidden=True).members}


def test_a_connected_member_is_online_and_subscribers_get_their_card(
    redis_db: redis.Redis, people: Any
) -> None:
    alice, bob = people("alice", "bob", first_name="Ann")

    async def scenario() -> None:
        watcher = await tab(bob)
        state = await until(watcher, lambda m: m["type"] == "presence_state")
        assert list(state["joins"]) in ([str(bob.pk)], [])
        alice_tab = await tab(alice)
        diff = await until(watcher, lambda m: str(alice.pk) in m["joins"])
        assert diff["type"] == "presence_diff"
        assert diff["joins"][str(alice.pk)] == {
            "pk": str(alice.pk),
            "name": "Ann",
            "url": None,
            "avatar": None,
            "status": "online",
            "hidden": False,
        }
        assert diff["users"] == 2 and diff["leaves"] == {}
        assert "<bdi>Ann</bdi>" in diff["html"]
        assert set(presence.connected()) == {str(alice.pk), str(bob.pk)}
        await alice_tab.disconnect()
        await watcher.disconnect()

    run(scenario)


def test_five_tabs_are_one_member_and_the_last_to_close_takes_them_off_at_once(
    redis_db: redis.Redis, people: Any
) -> None:
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        watcher = await tab(bob)
        tabs = [await tab(alice) for _ in range(5)]
        await until(watcher, lambda m: str(alice.pk) in m["joins"])
        assert presence.user_count() == 2 and listed()["alice"] == "online"
        for closed in tabs[:4]:
            await closed.disconnect()
        assert status_of(alice.pk) == "online" and str(alice.pk) in presence.connected()
        await tabs[4].disconnect()
        # At once: the next read, with no tick and no timeout in between.
        assert status_of(alice.pk) == "idle" and listed()["alice"] == "idle"
        assert presence.connected() == [str(bob.pk)]
        diff = await until(watcher, lambda m: str(alice.pk) in m["leaves"])
        assert diff["leaves"][str(alice.pk)]["status"] == "online"
        assert diff["joins"][str(alice.pk)]["status"] == "idle"
        await watcher.disconnect()

    run(scenario)


def test_a_page_view_after_leaving_is_the_http_rule_again(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        alice_tab = await tab(alice)
        await alice_tab.disconnect()

    with time_machine.travel(NOW, tick=False) as traveller:
        run(scenario)
        assert status_of(alice.pk) == "idle"
        traveller.shift(1)
        presence.record_user(alice)
        assert status_of(alice.pk) == "online"


def test_heartbeats_keep_a_connection_and_a_dead_process_drops_out_after_the_timeout(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_HEARTBEAT = 20
    settings.WHOS_ONLINE_HEARTBEAT_TIMEOUT = 45
    alice, bob = people("alice", "bob")
    pk = str(alice.pk)
    live_key = presence.conf.socket_keys().live

    async def scenario() -> None:
        with time_machine.travel(NOW, tick=False) as traveller:
            watcher = await tab(bob)
            alice_tab = await tab(alice)
            await until(watcher, lambda m: pk in m["joins"])
            for step in range(1, 5):  # 4 x 30 s: far past the timeout, but a beat is due each time
                traveller.shift(30)
                due = NOW.timestamp() + 30 * step
                await eventually(lambda: (redis_db.zscore(live_key, pk) or 0) >= due)
                assert status_of(pk) == "online" and pk in presence.connected()
            # The process dies: nothing beats for alice any more, nothing disconnects her.
            ticker = hub.get_hub()
            for connection in [c for c in ticker.connections.values() if c.pk == pk]:
                ticker.untrack(connection)
            traveller.move_to(NOW + timedelta(seconds=120 + 44))
            assert status_of(pk) == "online"  # still inside the timeout
            traveller.move_to(NOW + timedelta(seconds=120 + 46))
            assert pk not in presence.connected() and status_of(pk) == "idle"
            assert listed()["alice"] == "idle"
            diff = await until(watcher, lambda m: pk in m["leaves"])
            assert diff["joins"][pk]["status"] == "idle"
            await alice_tab.disconnect()
            await watcher.disconnect()

    run(scenario)


def test_a_member_forgotten_at_logout_is_not_brought_back_by_their_open_socket(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_HEARTBEAT = 20
    (alice,) = people("alice")
    pk = str(alice.pk)
    live_key = presence.conf.socket_keys().live

    async def scenario() -> None:
        with time_machine.travel(NOW, tick=False) as traveller:
            alice_tab = await tab(alice)
            await eventually(lambda: pk in presence.connected())
            presence.forget_user(alice)  # what the logout signal does
            traveller.shift(30)  # a heartbeat is due
            due = NOW.timestamp() + 30
            await eventually(lambda: (redis_db.zscore(live_key, pk) or 0) >= due)
            assert listed() == {} and status_of(pk) == "offline"
            await alice_tab.disconnect()

    run(scenario)


def test_one_heartbeat_round_trip_per_batch_of_a_process_connections(
    redis_db: redis.Redis, round_trips: RoundTrips, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(presence, "HEARTBEAT_BATCH", 20)
    connections = [presence.Connection(str(pk), f"c{pk}", "thread:1") for pk in range(50)]
    round_trips.clear()
    presence.heartbeat(connections)
    assert round_trips.commands == [["EVALSHA"]] * 3  # 20 + 20 + 10
    assert len(presence.connected()) == 50 and len(presence.connected("thread:1")) == 50


def test_hidden_members_reach_staff_subscribers_alone(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_IS_HIDDEN = "tests.test_hidden.wants_privacy"
    (shy,) = people("shy", first_name="Shy", email="hidden")
    (visitor,) = people("visitor")
    (admin,) = people("admin", is_staff=True)
    pk = str(shy.pk)

    async def scenario() -> None:
        public, staff = await tab(visitor), await tab(admin)
        shy_tab = await tab(shy)
        seen = await until(staff, lambda m: pk in m["joins"])
        assert seen["joins"][pk]["hidden"] is True and seen["hidden"] == 1
        counted = await until(public, lambda m: m["hidden"] == 1)
        assert pk not in counted["joins"] and "Shy" not in str(counted)
        await shy_tab.disconnect()
        await until(staff, lambda m: pk in m["leaves"])
        await public.disconnect()
        await staff.disconnect()

    run(scenario)
    assert sorted(names(presence.online_users())) == ["admin", "visitor"]


def test_a_room_connection_is_in_the_room_and_on_the_site(
    redis_db: redis.Redis, people: Any
) -> None:
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        watcher = await tab(bob, "/ws/whos-online/thread:1/")
        alice_tab = await tab(alice, "/ws/whos-online/thread:1/")
        diff = await until(watcher, lambda m: str(alice.pk) in m["joins"])
        assert diff["room"] == "thread:1" and 'class="whos-here"' in diff["html"]
        assert listed("thread:1") == {"alice": "online", "bob": "online"}
        assert listed() == {"alice": "online", "bob": "online"}
        await alice_tab.disconnect()
        assert listed("thread:1")["alice"] == "idle" and listed()["alice"] == "idle"
        await watcher.disconnect()

    run(scenario)


def test_anonymous_sockets_subscribe_but_are_not_counted(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        anonymous = await tab(None)
        alice_tab = await tab(alice)
        diff = await until(anonymous, lambda m: str(alice.pk) in m["joins"])
        assert (diff["users"], diff["guests"]) == (1, 0)
        await anonymous.disconnect()
        assert presence.connected() == [str(alice.pk)]
        await alice_tab.disconnect()

    run(scenario)


def test_a_connect_redis_skipped_is_recorded_by_the_ticker_once_it_answers(
    redis_db: redis.Redis, people: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (alice,) = people("alice")
    record = presence.record_user
    failures = [redis.ConnectionError("a blip")]

    def blip(*args: Any, **kwargs: Any) -> presence.Visit:
        if failures:
            raise failures.pop()
        return record(*args, **kwargs)

    monkeypatch.setattr(presence, "record_user", blip)

    async def scenario() -> None:
        alice_tab = await tab(alice)
        await eventually(lambda: not failures)
        assert listed() == {}  # heartbeats alone never add a member
        await eventually(lambda: listed() == {"alice": "online"})  # after the breaker's back-off
        await alice_tab.disconnect()

    run(scenario)


def test_redis_down_never_closes_a_socket_or_raises(
    dead_redis: None, people: Any, caplog: pytest.LogCaptureFixture
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        alice_tab = await tab(alice)
        await alice_tab.send_json_to({"ping": 1})
        assert await alice_tab.receive_nothing(timeout=1.5)  # ticks ran; nothing pushed, open
        await alice_tab.disconnect()

    with caplog.at_level(logging.ERROR, logger="whos_online"):
        run(scenario)
    assert [r.name for r in caplog.records] == ["whos_online.failsafe"]  # logged once


def test_the_merge_holds_with_approximate_counting_and_the_day_total(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    """The block's script then has more KEYS (buckets, hours): the socket keys are its last two."""
    settings.WHOS_ONLINE_GUEST_COUNTING = "approximate"
    settings.WHOS_ONLINE_SHOW_DAY_TOTAL = True
    (alice,) = people("alice")
    connection = presence.Connection(str(alice.pk), "tab")
    presence.connect(alice, connection)
    presence.record_guest("203.0.113.7")
    assert listed() == {"alice": "online"}
    presence.disconnect(connection)
    online = presence.summary(None, None, include_hidden=True)
    assert [(m.name, m.status) for m in online.members] == [("alice", "idle")]
    assert (online.user_count, online.guest_count, online.day_total) == (1, 1, 2)
