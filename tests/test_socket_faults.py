"""Open WebSockets through Redis faults: a Redis of the test's own is restarted empty,
frozen (SIGSTOP, then SIGCONT) or killed while real consumers hold sockets.

Nobody else visits: what a test sees comes from the sockets' own process (its
heartbeats, its hub's checks and retries). The wall clock is travelled; real
time only bounds a failure (``eventually``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import time_machine
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from tests.conftest import NOW, django_redis_cache, require
from tests.redis_server import RedisServer
from tests.test_consumers import (  # noqa: F401 (public_rooms, websockets: fixtures)
    chat,
    eventually,
    listed,
    public_rooms,
    status_of,
    tab,
    until,
    websockets,
)
from whos_online import presence
from whos_online.conf import conf
from whos_online.realtime import hub
from whos_online.rendering.blockcache import STALE_IF_ERROR
from whos_online.store import failsafe, sockets, status

pytestmark = pytest.mark.django_db

UNAVAILABLE = "Who's online is unavailable right now."


@pytest.fixture
def own_redis(tmp_path: Path, settings: Any) -> Iterator[RedisServer]:
    """A Redis of this test's own, the cache alias pointed at it."""
    require("redis-server")
    settings.WHOS_ONLINE_KEY_PREFIX = f"whos_online_sockets:{uuid.uuid4().hex}"
    with RedisServer(directory=tmp_path / "redis") as server:
        settings.CACHES = {"default": django_redis_cache(server.url)}
        yield server


@pytest.fixture
def traveller() -> Iterator[Any]:
    with time_machine.travel(NOW, tick=False) as travelling:
        yield travelling


class Clock:
    """The travelled wall clock and the hub's ticks: each move is followed by two whole
    ticks (what it made due has run), with no Redis call in flight across it (under a
    frozen clock such a call would look stuck on Redis for the whole move)."""

    def __init__(self, traveller: Any, ticks: list[Any]) -> None:
        self.traveller, self.ticks = traveller, ticks

    async def travel(self, seconds: float) -> None:
        await eventually(lambda: not failsafe.breaker.in_flight)
        self.traveller.shift(seconds)
        done = len(self.ticks)
        await eventually(lambda: len(self.ticks) >= done + 2)

    async def until(self, check: Callable[[], bool], within: float) -> None:
        """Travel a back-off (the breaker's first) at a time until ``check()`` holds,
        ``within`` travelled seconds."""
        travelled = 0.0
        while not check():
            assert travelled < within, f"not within {within} s"
            await self.travel(failsafe.FIRST_BACKOFF)
            travelled += failsafe.FIRST_BACKOFF


@pytest.fixture
def clock(traveller: Any, ticks: list[Any]) -> Clock:
    return Clock(traveller, ticks)


def test_after_redis_restarts_empty_open_sockets_count_again_with_nobody_visiting(
    own_redis: RedisServer, people: Any, clock: Clock
) -> None:
    """Issue 49: their process's next heartbeat puts the sockets' members back, cards
    included; ``connected()``, statuses, counts and the list agree."""
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        tabs = [await tab(alice), await tab(bob)]
        await eventually(lambda: presence.user_count() == 2)
        await clock.travel(5)
        own_redis.restart()  # empty
        with own_redis.client() as direct:
            assert direct.dbsize() == 0
        await clock.travel(conf.heartbeat)  # a heartbeat is due: it puts them back
        # (the first call after the restart fails on its dead connection: a back-off)
        await clock.until(lambda: presence.user_count() == 2, within=3)
        assert listed() == {"alice": "online", "bob": "online"}
        assert sorted(presence.connected()) == sorted([str(alice.pk), str(bob.pk)])
        assert [status_of(alice.pk), status_of(bob.pk)] == ["online", "online"]
        for socket in tabs:
            await socket.disconnect()

    async_to_sync(scenario)()


@pytest.mark.usefixtures("public_rooms")
def test_a_sites_own_socket_in_a_room_counts_again_on_the_site_though_no_page_listens(
    own_redis: RedisServer, people: Any, clock: Clock
) -> None:
    """A consumer with the mixin alone (no live block): its heartbeat puts the member
    back on the site; the room, whose registry Redis lost, waits for its next visit."""
    (alice,) = people("alice")

    async def scenario() -> None:
        socket = WebsocketCommunicator(chat, "/ws/chat/lobby/")
        socket.scope["user"] = alice
        assert (await socket.connect(timeout=5))[0]
        await eventually(lambda: listed("lobby") == {"alice": "online"})
        own_redis.restart()  # empty
        await clock.travel(conf.heartbeat)
        await clock.until(lambda: presence.user_count() == 1, within=3)
        assert listed() == {"alice": "online"} and listed("lobby") == {}
        assert presence.connected() == [str(alice.pk)]
        await socket.disconnect()

    async_to_sync(scenario)()


def test_a_heartbeat_into_an_emptied_redis_puts_its_members_back(
    own_redis: RedisServer, people: Any
) -> None:
    """Nothing remembers that Redis lost its data: the heartbeat finds the connection
    gone from Redis, and its member out of the set, and puts them back with their card."""
    (alice,) = people("alice")
    connection = sockets.open_connection(alice)
    sockets.connect(connection)
    with own_redis.client() as direct:
        direct.flushdb()
        sockets.heartbeat([connection])
        assert presence.connected() == [str(alice.pk)] and presence.user_count() == 1
        assert [member.name for member in presence.online_users()] == ["alice"]


def test_a_close_redis_could_not_take_is_written_once_it_answers(
    own_redis: RedisServer, people: Any, clock: Clock
) -> None:
    """Issue 39: a member whose only socket closed while Redis was frozen is not
    "online" once it answers (the close is kept, then written)."""
    (alice,) = people("alice")
    pk = str(alice.pk)

    async def scenario() -> None:
        watcher, alice_tab = await tab(None), await tab(alice)
        await eventually(lambda: status_of(pk) == "online")
        await clock.travel(status.SOCKET_GRACE + 1)
        own_redis.pause()
        try:
            # Its close waits on the frozen Redis; the server gives up on the consumer
            # (cancels its task) meanwhile, as the communicator does after its timeout.
            await alice_tab.disconnect(timeout=0.01)
            await eventually(lambda: pk in {c.pk for c, _ in hub.get_hub().unleft.values()})
        finally:
            own_redis.resume()
        await clock.until(lambda: not hub.get_hub().unleft, within=10)
        assert status_of(pk) == "idle" and presence.connected() == []
        assert listed() == {"alice": "idle"}
        await watcher.disconnect()

    async_to_sync(scenario)()


def test_pending_closes_are_capped_the_oldest_going_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub, "MAX_PENDING_LEAVES", 2)
    closes = [sockets.Connection(str(n), f"tab{n}") for n in range(3)]

    async def scenario() -> None:
        ticker = hub.get_hub()
        for connection in closes:
            ticker.leave_later(connection, 0.0)
        assert list(ticker.unleft) == ["tab1", "tab2"]
        ticker.unleft.clear()

    async_to_sync(scenario)()


def test_open_pages_are_told_the_outage_then_given_the_whole_state(
    own_redis: RedisServer, people: Any, clock: Clock
) -> None:
    """Issue 39: past the block's stale limit a page is pushed what a page rendered then
    shows; once Redis answers (here empty) the whole state; issue 49: its member is
    counted again at their process's next heartbeat, and the page told."""
    (alice,) = people("alice")

    async def scenario() -> None:
        watcher, alice_tab = await tab(None), await tab(alice)
        await until(watcher, lambda m: m["users"] == 1)
        own_redis.kill()
        await clock.travel(STALE_IF_ERROR - 1)
        assert await watcher.receive_nothing(timeout=1)  # as a block shows its last read
        await clock.travel(1)
        told = await until(watcher, lambda m: True)
        assert told["type"] == "presence_unavailable" and UNAVAILABLE in told["html"]
        assert "users" not in told
        own_redis.start()  # empty
        # (the breaker's longest back-off, 5 s, maybe twice: each pooled connection fails once)
        await clock.until(lambda: not watcher.output_queue.empty(), within=15)
        state = await until(watcher, lambda m: m["type"] == "presence_state")
        assert state["users"] == 0  # what Redis holds: nothing remembers the loss
        await clock.travel(conf.heartbeat)  # the next heartbeat puts alice back
        joined = await until(watcher, lambda m: m["type"] == "presence_diff")
        assert list(joined["joins"]) == [str(alice.pk)] and joined["users"] == 1
        await alice_tab.disconnect()
        await watcher.disconnect()

    async_to_sync(scenario)()


def test_a_close_written_late_says_when_the_page_went(
    redis_db: Any, people: Any, traveller: Any
) -> None:
    """A tab closed in the second its member opened another page (so they are browsing on),
    written by the hub 30 s later: still online, as if written at once."""
    (alice,) = people("alice")
    tab = sockets.Connection(str(alice.pk), "tab")
    sockets.connect(tab)
    traveller.shift(60)
    presence.record_user(alice)  # the next page, without a live block

    async def scenario() -> None:
        ticker = hub.get_hub()
        ticker.leave_later(tab, time.time())  # Redis did not take it then
        traveller.shift(30)
        await ticker._retry()
        assert ticker.unleft == {}

    async_to_sync(scenario)()
    assert presence.status(alice) == "online"
