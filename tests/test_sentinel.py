"""whos_online behind Redis Sentinel: a master, a replica and three sentinels started here.

whos_online reaches Redis through redis-py's Sentinel client, named in
WHOS_ONLINE_REDIS_CLIENT as docs/howto/scaling.md shows. The master is killed mid-traffic:
pages stay up while the sentinels fail over, tracking resumes on the promoted
replica by itself, and the list is whole again once visitors come back. A
master that hangs instead costs one socket timeout, then the back-off.

The servers are our own, on spare loopback ports (tests/redis_server.py); the
shared Redis on 6379 is never touched. The failover is real time, polled with a
deadline; whos_online's back-off is moved with time_machine.
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from redis.sentinel import Sentinel

from tests.conftest import NOW, BrowserClient, require
from tests.counted import CountedSentinelConnection, Wire
from tests.redis_server import RedisServer, RedisServerError, wait_for
from tests.test_docs import install_recipe
from tests.test_faults import (
    UNAVAILABLE,
    answers_again,
    block,
    get,
    log_records,
    members,
    the_error,
)
from whos_online.conf import Settings, conf
from whos_online.store.connection import get_client

pytestmark = [pytest.mark.topology, pytest.mark.django_db]

SENTINELS = 3
# Sentinel timings (ms): the master is down after half a second without an
# answer; a failover that stalls is retried soon. A failover takes a few seconds.
DOWN_AFTER = 500
FAILOVER_TIMEOUT = 2000
FAILOVER_LIMIT = 30.0  # seconds; only a guard, never a speed assertion
# Short, so that the rounds polling the failover each move past it without
# moving the clock out of the 10-minute window.
BACKOFF = 5
ROUND = 0.25  # real seconds between two rounds of requests during the failover


class SentinelSetup:
    """A master, one replica and ``SENTINELS`` sentinels monitoring them as ``service``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.service = "mymaster"  # the scaling guide's name: its snippet runs as written
        self.master = RedisServer("--repl-diskless-sync-delay", "0", directory=directory / "master")
        self.replica: RedisServer | None = None
        self.sentinels: list[RedisServer] = []

    def start(self) -> SentinelSetup:
        master_port = self.master.start().require_port()
        self.replica = RedisServer(
            "--replicaof", "127.0.0.1", str(master_port),
            "--repl-diskless-sync-delay", "0",
            directory=self.directory / "replica",
        )  # fmt: skip
        self.replica.start()
        wait_for(self._replica_synced, timeout=10, what="the replica syncing")
        config = (
            f"sentinel monitor {self.service} 127.0.0.1 {master_port} 2\n"
            f"sentinel down-after-milliseconds {self.service} {DOWN_AFTER}\n"
            f"sentinel failover-timeout {self.service} {FAILOVER_TIMEOUT}\n"
        )
        for n in range(SENTINELS):
            directory = self.directory / f"sentinel-{n}"
            sentinel = RedisServer("--sentinel", directory=directory, config=config)
            self.sentinels.append(sentinel)
            sentinel.start()
        # A failover needs a majority of sentinels that know each other and the replica.
        wait_for(self._sentinels_ready, timeout=15, what="the sentinels finding each other")
        return self

    @property
    def promoted(self) -> RedisServer:
        assert self.replica is not None
        return self.replica

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", sentinel.require_port()) for sentinel in self.sentinels]

    def _replica_synced(self) -> bool:
        with self.promoted.client() as direct:
            return bool(direct.info("replication").get("master_link_status") == "up")

    def _sentinels_ready(self) -> bool:
        for sentinel in self.sentinels:
            with sentinel.client() as direct:
                state = direct.sentinel_master(self.service)
            if state["num-other-sentinels"] != SENTINELS - 1 or state["num-slaves"] != 1:
                return False
        return True

    def master_port(self) -> int | None:
        """The port every sentinel names as the master, or None while they disagree."""
        ports = set()
        for sentinel in self.sentinels:
            with sentinel.client(socket_timeout=1) as direct:
                address = direct.sentinel_get_master_addr_by_name(self.service)
            ports.add(int(address[1]) if address else None)
        return ports.pop() if len(ports) == 1 else None

    def close(self) -> None:
        for server in (*self.sentinels, self.replica, self.master):
            if server is not None:
                server.close()


@pytest.fixture
def sentinel_setup(tmp_path: Path, settings: Any) -> Iterator[SentinelSetup]:
    require("redis-server")
    setup = SentinelSetup(tmp_path)
    try:
        yield setup.start()
    finally:
        # The test's CACHES still name the service (``settings`` is undone after this):
        # whos_online's connections to its servers are closed before the servers are.
        get_client().connection_pool.disconnect()
        setup.close()


SENTINEL_TIMEOUT = 0.25  # as the scaling guide gives them
# The setup ``sentinel_client`` connects to; the fixture sets it.
SETUP: SentinelSetup | None = None


def sentinel_client() -> redis.Redis:
    """The scaling guide's WHOS_ONLINE_REDIS_CLIENT, on this test's sentinels, its
    connections counted."""
    assert SETUP is not None
    sentinel = Sentinel(
        SETUP.addresses,
        socket_timeout=SENTINEL_TIMEOUT,
        socket_connect_timeout=SENTINEL_TIMEOUT,
    )
    return sentinel.master_for(SETUP.service, connection_class=CountedSentinelConnection)


def use_sentinels(setup: SentinelSetup, settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "SETUP", setup)
    settings.WHOS_ONLINE_REDIS_CLIENT = "tests.test_sentinel.sentinel_client"


@pytest.fixture
def prefix(settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    settings.WHOS_ONLINE_KEY_PREFIX = prefix = f"whos_online_sentinel:{uuid.uuid4().hex}"
    monkeypatch.setattr(Settings, "backoff", BACKOFF)
    return prefix


def test_failover_pages_stay_up_tracking_resumes_on_the_new_master_and_the_list_heals(
    sentinel_setup: SentinelSetup,
    settings: Any,
    prefix: str,
    wire: Wire,
    caplog: pytest.LogCaptureFixture,
    people: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_sentinels(sentinel_setup, settings, monkeypatch)
    master, replica = sentinel_setup.master, sentinel_setup.promoted
    alice, bob = people("alice", "bob")

    with time_machine.travel(NOW, tick=False) as traveller:
        member = BrowserClient()
        member.force_login(alice)
        assert "online" in get(member, "/").cookies
        html = block(BrowserClient(), REMOTE_ADDR="203.0.113.7")
        assert members(html) == ["alice"] and "1 member, 1 guest" in html

        def replicated() -> bool:
            with replica.client() as direct:
                return bool(direct.zscore(f"{prefix}:users", str(alice.pk))) and bool(
                    direct.zcard(f"{prefix}:guests")
                )

        wait_for(replicated, timeout=10, what="the replica receiving the visitors")

        master.kill()
        wire.clear()
        # Visitors during the failover: bob logs in, a new guest arrives. Neither
        # can be recorded, so neither gets the cookie: both are retried later.
        late = BrowserClient()
        late.force_login(bob)  # the login signal fails open
        assert "online" not in get(late, "/").cookies
        assert "online" not in get(BrowserClient(), "/", REMOTE_ADDR="198.51.100.1").cookies
        assert isinstance(the_error(caplog), redis.ConnectionError)
        # Inside the back-off nothing goes to Redis or to the sentinels.
        wire.clear()
        for n in range(10):
            assert UNAVAILABLE in block(BrowserClient(), REMOTE_ADDR=f"198.51.100.{n}")
        assert not wire.touched

        # Until the sentinels agree on the promoted replica, each round moves past
        # the back-off, so a request really goes to Redis at every stage of the
        # failover (master refused, master down, election, promotion): all 200s.
        rounds = unavailable = 0
        deadline = time.monotonic() + FAILOVER_LIMIT
        while True:
            traveller.shift(BACKOFF + 1)
            html = block(member)  # alice's cookie is valid: a read, no write
            unavailable += UNAVAILABLE in html
            rounds += 1
            if sentinel_setup.master_port() == replica.port:
                break
            if time.monotonic() > deadline:
                raise RedisServerError(f"no failover within {FAILOVER_LIMIT} s")
            time.sleep(ROUND)
        assert unavailable >= 1  # the outage was seen, not slept through
        assert rounds * (BACKOFF + 1) < 300  # still inside everyone's window

        # Tracking resumes on the new master, in the same process, by itself.
        traveller.shift(BACKOFF + 1)
        response = get(late, "/")  # bob, whose visit fell in the failover, comes back
        assert "online" in response.cookies
        assert "online" in get(BrowserClient(), "/", REMOTE_ADDR="198.51.100.1").cookies
        html = block(member)
        # alice and the first guest came through on the replica; bob and the
        # second guest are recorded now: the list is whole again.
        assert members(html) == ["bob", "alice"] and "2 members, 2 guests" in html
        assert len(answers_again(caplog)) == 1
        assert len(log_records(caplog, logging.ERROR)) == 1  # one outage, logged once

        with replica.client() as direct:
            assert direct.info("replication")["role"] == "master"
            assert direct.zscore(f"{prefix}:users", str(bob.pk)) is not None


def test_a_frozen_master_costs_one_socket_timeout_then_is_left_alone(
    sentinel_setup: SentinelSetup,
    settings: Any,
    prefix: str,
    wire: Wire,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A master that hangs costs one request one of the client's short timeouts; the
    back-off then spares the others."""
    use_sentinels(sentinel_setup, settings, monkeypatch)
    with time_machine.travel(NOW, tick=False):
        assert "online" in get(BrowserClient(), "/", REMOTE_ADDR="203.0.113.1").cookies
        sentinel_setup.master.pause()  # SIGSTOP: connections are accepted, nothing is answered
        wire.clear()
        html = block(BrowserClient(), REMOTE_ADDR="203.0.113.2")
        assert UNAVAILABLE in html
        assert wire.timeouts == [SENTINEL_TIMEOUT]  # one wait, bounded by the client's timeout
        assert isinstance(the_error(caplog), redis.TimeoutError)

        wire.clear()
        for n in range(10):
            assert "online" not in get(BrowserClient(), "/", REMOTE_ADDR=f"198.51.100.{n}").cookies
            assert UNAVAILABLE in block(BrowserClient(), REMOTE_ADDR=f"198.51.100.{n}")
        assert not wire.touched  # 20 requests during the back-off: no connection, no wait


def test_the_scaling_guides_settings_record_and_list_a_member(
    sentinel_setup: SentinelSetup, settings: Any, people: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/howto/scaling.md's Sentinel settings and mysite/redis.py, word for word but for
    what it says to put in: these sentinels' addresses and the name they monitor the
    master by."""
    ports = [port for _, port in sentinel_setup.addresses]
    install_recipe("howto/scaling.md", monkeypatch, settings, ports)
    (alice,) = people("alice")
    member = BrowserClient()
    member.force_login(alice)
    assert "online" in get(member, "/").cookies
    html = block(BrowserClient())
    assert members(html) == ["alice"] and "1 member, 1 guest" in html
    with sentinel_setup.master.client() as direct:
        assert direct.zscore(conf.keys().users, str(alice.pk)) is not None
