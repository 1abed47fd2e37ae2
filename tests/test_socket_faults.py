"""Open WebSockets through Redis faults: a Redis of the test's own is restarted empty,
frozen (SIGSTOP, then SIGCONT) or killed while real consumers hold sockets.

Nobody else visits: what a test sees comes from the sockets' own process (its
heartbeats and its hub's reads and sweeps). The wall clock is travelled; real time
only bounds a failure (``eventually``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import time_machine
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from tests import online_now
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
from whos_online import push
from whos_online.contrib.channels import hub
from whos_online.store import failsafe, sockets

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
    ticks (what it made due has run)."""

    def __init__(self, traveller: Any, ticks: list[Any]) -> None:
        self.traveller, self.ticks = traveller, ticks

    async def travel(self, seconds: float) -> None:
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


def test_after_redis_restarts_empty_open_sockets_count_again_at_the_next_heartbeat(
    own_redis: RedisServer, people: Any, clock: Clock, settings: Any
) -> None:
    """Issue 49: nothing keeps a generation; the sockets' own process's next beat puts
    their members back, cards included; ``connected()``, statuses, counts and the list
    agree."""
    settings.WHOS_ONLINE_HEARTBEAT = 20
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        tabs = [await tab(alice), await tab(bob)]
        await eventually(lambda: online_now.user_count() == 2)
        await clock.travel(5)
        own_redis.restart()  # empty
        with own_redis.client() as direct:
            assert direct.dbsize() == 0
        await clock.travel(15)  # the heartbeat is due
        # (the first call after the restart fails on its dead connection: a back-off)
        await clock.until(lambda: online_now.user_count() == 2, within=3)
        assert listed() == {"alice": "online", "bob": "online"}
        assert sorted(push.connected()) == sorted([str(alice.pk), str(bob.pk)])
        assert [status_of(alice.pk), status_of(bob.pk)] == ["online", "online"]
        for socket in tabs:
            await socket.disconnect()

    async_to_sync(scenario)()


@pytest.mark.usefixtures("public_rooms")
def test_a_sites_own_socket_in_a_room_counts_again_on_the_site_though_no_page_listens(
    own_redis: RedisServer, people: Any, clock: Clock, settings: Any
) -> None:
    """A consumer with the mixin alone (no live block): its heartbeat puts the member
    back on the site; the room, whose registry Redis lost, waits for its next visit."""
    settings.WHOS_ONLINE_HEARTBEAT = 20
    (alice,) = people("alice")

    async def scenario() -> None:
        socket = WebsocketCommunicator(chat, "/ws/chat/lobby/")
        socket.scope["user"] = alice
        assert (await socket.connect(timeout=5))[0]
        await eventually(lambda: listed("lobby") == {"alice": "online"})
        own_redis.restart()  # empty
        await clock.travel(20)
        await clock.until(lambda: online_now.user_count() == 1, within=3)
        assert listed() == {"alice": "online"} and listed("lobby") == {}
        assert push.connected() == [str(alice.pk)]
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
        assert push.connected() == [str(alice.pk)] and online_now.user_count() == 1
        assert [member.name for member in online_now.online_users()] == ["alice"]


def test_open_pages_are_told_the_outage_then_given_the_whole_state(
    own_redis: RedisServer, people: Any, clock: Clock
) -> None:
    """Issue 39: after UNAVAILABLE_AFTER seconds of failed reads a page is pushed what a page
    rendered then shows; once Redis answers (here empty) the whole state, its member put
    back by the next beat."""
    (alice,) = people("alice")

    async def scenario() -> None:
        watcher, alice_tab = await tab(None), await tab(alice)
        await until(watcher, lambda m: m["users"] == 1)
        own_redis.kill()
        # The notices' listener loses its subscription: every view is read, and fails.
        await eventually(lambda: hub.get_hub().failing_since is not None)
        await clock.travel(hub.UNAVAILABLE_AFTER - 1)
        assert await watcher.receive_nothing(timeout=1)  # a blip is not an outage
        await clock.travel(1)
        told = await until(watcher, lambda m: True)
        assert told["type"] == "presence_unavailable" and UNAVAILABLE in told["html"]
        assert "users" not in told
        own_redis.start()  # empty
        # (the breaker's longest back-off, 5 s, maybe twice: each pooled connection fails once;
        # then the heartbeat, due 25 s after the first)
        await clock.until(lambda: online_now.user_count() == 1, within=30)
        state = await until(watcher, lambda m: m["type"] == "presence_state")
        back = state if state["users"] else await until(watcher, lambda m: m["users"] == 1)
        assert list(back["joins"]) == [str(alice.pk)] and back["users"] == 1
        await alice_tab.disconnect()
        await watcher.disconnect()

    async_to_sync(scenario)()
