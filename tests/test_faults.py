"""Fault injection against redis-server processes these tests start, kill, freeze and fill.

Every server here is our own, on a spare loopback port (see tests/redis_server.py);
the shared Redis on 6379 is never touched. Time-dependent behaviour (the back-off)
is driven with time_machine, never with sleeps. Requests run under a 10 s alarm
so that a regression hangs no longer than that.
"""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import AsyncClient, Client

from tests import online_now
from tests.conftest import (
    NOW,
    BrowserAsyncClient,
    BrowserClient,
    django_redis_cache,
    names,
    require,
    socket_timeout,
    tab,
)
from tests.counted import Wire
from tests.redis_server import RedisServer
from whos_online import presence
from whos_online.conf import Settings, conf
from whos_online.contrib.admin import stats as admin_stats
from whos_online.store import addresses, failsafe, sockets

pytestmark = pytest.mark.django_db

BACKOFF = 30
REQUEST_LIMIT = 10  # seconds; only a guard against hangs, never a speed assertion
UNAVAILABLE = "Who's online is unavailable right now."


# -- servers ------------------------------------------------------------------


@pytest.fixture
def redis_servers(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start own redis-server processes; every one is stopped (and woken first) afterwards."""
    require("redis-server")
    servers: list[RedisServer] = []

    def start(*args: str) -> RedisServer:
        server = RedisServer(*args, directory=tmp_path / f"redis-{len(servers)}")
        servers.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in reversed(servers):
            server.close()


@pytest.fixture
def prefix(settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    settings.WHOS_ONLINE_KEY_PREFIX = prefix = f"whos_online_faults:{uuid.uuid4().hex}"
    monkeypatch.setattr(Settings, "backoff", BACKOFF)
    return prefix


@pytest.fixture
def own_redis(redis_servers: Callable[..., RedisServer], settings: Any, prefix: str) -> RedisServer:
    """One own server, with the cache alias pointed at it."""
    server = redis_servers()
    settings.CACHES = {"default": django_redis_cache(server.url)}
    return server


# -- what goes over the wire ----------------------------------------------------


# -- requests and what a visitor sees -----------------------------------------------


@contextmanager
def hang_guard(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging the suite) if the block takes longer than ``seconds``."""

    def on_alarm(signum: int, frame: Any) -> None:
        pytest.fail(f"a request took more than {seconds} s", pytrace=False)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def get(client: Client | AsyncClient, path: str, **extra: Any) -> Any:
    """One GET through the sync or the ASGI handler (Django 4.2's AsyncClient.get is not async)."""
    with hang_guard(REQUEST_LIMIT):
        if isinstance(client, AsyncClient):

            async def fetch() -> Any:
                return await client.get(path, **extra)

            response = async_to_sync(fetch)()
        else:
            response = client.get(path, **extra)
    assert response.status_code == 200
    return response


def block(client: Client | AsyncClient, **extra: Any) -> str:
    html = str(get(client, "/block/", **extra).content.decode())
    assert '<section class="whos-online"' in html  # the block renders, whatever state it is in
    return html


def members(html: str) -> list[str]:
    """The display names the block lists, in order."""
    return re.findall(r"<bdi>(.*?)</bdi>", html)


def log_records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.name == "whos_online.store.failsafe" and r.levelno == level
    ]


def the_error(caplog: pytest.LogCaptureFixture) -> BaseException:
    """The outage's one ERROR record (one line, no traceback), and the exception it began with.

    The traceback is in a DEBUG record of its own (conftest captures DEBUG for the breaker).
    """
    [record] = log_records(caplog, logging.ERROR)
    assert record.exc_info is None and "\n" not in record.getMessage()
    [traceback] = [r for r in log_records(caplog, logging.DEBUG) if r.exc_info]
    assert traceback.exc_info is not None and traceback.exc_info[1] is not None
    assert type(traceback.exc_info[1]).__name__ in record.getMessage()
    return traceback.exc_info[1]


def answers_again(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in log_records(caplog, logging.WARNING) if "answers again" in r.getMessage()]


def writes_are_refused(
    bob: User, caplog: pytest.LogCaptureFixture, error: type[BaseException]
) -> None:
    """While Redis refuses writes: no cookie is set and a login fails open, but the
    block, the live endpoint and statuses are still read."""
    for n in range(10):
        response = get(BrowserClient(), "/", REMOTE_ADDR=f"203.0.113.{n}")
        assert "online" not in response.cookies
        assert UNAVAILABLE not in block(BrowserClient(), REMOTE_ADDR=f"203.0.113.{n}")
    live = get(BrowserClient(), "/whos-online/", HTTP_X_WHOS_ONLINE="poll").json()
    assert live["available"] is True
    assert failsafe.call(presence.statuses, [bob]) == {bob: "offline"}
    newcomer = BrowserClient()
    newcomer.force_login(bob)  # fails open
    assert "bob" not in members(block(newcomer))
    assert isinstance(the_error(caplog), error)
    assert "refuses writes" in log_records(caplog, logging.ERROR)[0].getMessage()


# -- 1. Redis killed mid-traffic ------------------------------------------------------


@pytest.mark.parametrize("handler", ["sync", "async"])
def test_redis_killed_mid_traffic_then_restarted_tracking_resumes_by_itself(
    handler: str,
    own_redis: RedisServer,
    wire: Wire,
    caplog: pytest.LogCaptureFixture,
    people: Any,
) -> None:
    make: type[Client] | type[AsyncClient] = (
        BrowserClient if handler == "sync" else BrowserAsyncClient
    )
    alice, bob = people("alice", "bob")
    # AsyncClient cannot choose its address: all its guests are 127.0.0.1.
    addr = (lambda n: {"REMOTE_ADDR": f"203.0.113.{n}"}) if handler == "sync" else (lambda n: {})

    with time_machine.travel(NOW, tick=False) as traveller:
        member, guest = make(), make()
        member.force_login(alice)
        assert "online" in get(member, "/").cookies
        html = block(guest, **addr(7))
        assert members(html) == ["alice"] and "1 member, 1 guest" in html

        own_redis.kill()
        wire.clear()
        late = make()
        late.force_login(bob)  # arrives during the outage; the login signal fails open
        for n in range(10):
            for visitor in (member, guest, late, make()):
                response = get(visitor, "/", **addr(n))
                assert "online" not in response.cookies  # not recorded, so retried later
                html = block(visitor, **addr(n))
                assert UNAVAILABLE in html and members(html) == []
        # Only the first failure reached for Redis; the rest were skipped.
        assert wire.connects == 1 and wire.payloads == []

        traveller.shift(BACKOFF + 1)  # back-off over, Redis still dead: tried again
        assert UNAVAILABLE in block(late)
        assert wire.connects == 2
        error = the_error(caplog)  # one record for the whole outage
        assert isinstance(error, redis.ConnectionError)

        own_redis.restart()  # same port, empty: the data went with the old process
        assert UNAVAILABLE in block(late)  # still inside the back-off the retry began
        traveller.shift(BACKOFF + 1)
        response = get(late, "/block/")  # recorded by the middleware, then listed by the tag
        assert "online" in response.cookies
        assert members(response.content.decode()) == ["bob"]
        assert len(answers_again(caplog)) == 1
        assert len(log_records(caplog, logging.ERROR)) == 1

        # Alice's entry died with the old server; her cookie still stands (nothing
        # remembers the loss): she is counted again once it expires.
        assert "online" not in get(member, "/").cookies
        assert members(block(guest)) == ["bob"]
        traveller.shift(conf.cookie_age)
        assert "online" in get(member, "/").cookies
        assert sorted(members(block(guest))) == ["alice", "bob"]


def scripts_sent(wire: Wire) -> list[str]:
    """EVAL and EVALSHA calls among the payloads, in order (not the connection's handshake)."""
    names = [re.match(rb"\*\d+\r\n\$\d+\r\n(\w+)", payload) for payload in wire.payloads]
    return [m.group(1).decode() for m in names if m and m.group(1).startswith(b"EVAL")]


def test_a_server_without_the_scripts_is_sent_their_text_once(
    own_redis: RedisServer, wire: Wire
) -> None:
    # A new server: the SHA1 alone is not enough, so the same call is made again with the
    # script's text, which the server runs and keeps.
    assert "online" in BrowserClient().get("/", REMOTE_ADDR="203.0.113.1").cookies
    assert scripts_sent(wire) == ["EVALSHA", "EVAL"]
    wire.clear()
    assert "online" in BrowserClient().get("/", REMOTE_ADDR="203.0.113.2").cookies
    assert scripts_sent(wire) == ["EVALSHA"]
    # A server that lost its scripts (a restart, a failover, SCRIPT FLUSH): the same again.
    own_redis.client().script_flush()
    wire.clear()
    assert "online" in BrowserClient().get("/", REMOTE_ADDR="203.0.113.3").cookies
    assert scripts_sent(wire) == ["EVALSHA", "EVAL"]
    assert online_now.guest_count() == 3


# -- 2. Redis frozen -------------------------------------------------------------------


@pytest.mark.parametrize(
    "cache_options",
    [{}, {"SOCKET_CONNECT_TIMEOUT": 30}],
    ids=["cache-without-a-connect-timeout", "cache-with-a-30s-connect-timeout"],
)
def test_frozen_redis_costs_one_timeout_then_is_left_alone(
    cache_options: dict[str, Any],
    redis_servers: Callable[..., RedisServer],
    prefix: str,
    settings: Any,
    wire: Wire,
    caplog: pytest.LogCaptureFixture,
    people: Any,
) -> None:
    server = redis_servers()
    settings.CACHES = {"default": django_redis_cache(server.url, **cache_options)}
    socket_timeout(settings, 0.2)
    (carol,) = people("carol")

    with time_machine.travel(NOW, tick=False) as traveller:
        assert "online" in get(BrowserClient(), "/", REMOTE_ADDR="203.0.113.1").cookies
        server.pause()  # SIGSTOP: connections are accepted, nothing is answered
        wire.clear()

        html = block(BrowserClient(), REMOTE_ADDR="203.0.113.2")
        assert UNAVAILABLE in html
        # The recording was sent on the live pooled connection, and its reply waited
        # for once: one socket timeout, not one per retry.
        assert wire.connects == 0 and len(wire.payloads) == 1
        assert wire.timeouts == [0.2]  # the cache's socket timeout, connecting or not
        assert isinstance(the_error(caplog), redis.TimeoutError)

        wire.clear()
        for n in range(20):
            response = get(BrowserClient(), "/", REMOTE_ADDR=f"198.51.100.{n}")
            assert "online" not in response.cookies
            assert UNAVAILABLE in block(BrowserClient(), REMOTE_ADDR=f"198.51.100.{n}")
        # 40 requests during the back-off: no connection, no byte sent, no wait.
        assert not wire.touched

        traveller.shift(BACKOFF + 1)  # still frozen: one more attempt, one more timeout
        assert UNAVAILABLE in block(BrowserClient(), REMOTE_ADDR="203.0.113.3")
        assert wire.connects == 1 and wire.timeouts == [0.2]
        assert len(log_records(caplog, logging.ERROR)) == 1

        server.resume()
        traveller.shift(BACKOFF + 1)
        visitor = BrowserClient()
        visitor.force_login(carol)
        response = get(visitor, "/block/")
        assert "online" in response.cookies
        assert members(response.content.decode()) == ["carol"]
        assert len(answers_again(caplog)) == 1


def test_a_slow_redis_opens_the_breaker_while_other_threads_burn_cpu(
    redis_servers: Callable[..., RedisServer],
    prefix: str,
    settings: Any,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 49: in a threaded worker, the other threads' CPU once cancelled each call's
    wait, so a Redis 150 ms away never opened the breaker while the threads were busy."""
    from tests.latency_proxy import LatencyProxy

    monkeypatch.setattr(failsafe, "FIRST_BACKOFF", BACKOFF)  # still open for the page below
    proxy = LatencyProxy(redis_servers().require_port())
    try:
        settings.CACHES = {"default": django_redis_cache(f"redis://127.0.0.1:{proxy.port}/0")}
        socket_timeout(settings, 0.25)  # the default: a slow-call budget of 0.1 s
        proxy.delay(0.15)
        done = threading.Event()

        def burn() -> None:
            while not done.is_set():
                sum(range(10_000))

        def requests() -> None:  # a worker thread's Redis calls, until Redis is skipped
            for _ in range(20):
                if failsafe.call(presence.last_seen, 1) is failsafe.UNAVAILABLE:
                    return

        burners = [threading.Thread(target=burn) for _ in range(2)]
        workers = [threading.Thread(target=requests) for _ in range(8)]
        for thread in burners + workers:
            thread.start()
        for thread in workers:
            thread.join(REQUEST_LIMIT)
        done.set()
        for thread in burners:
            thread.join(REQUEST_LIMIT)
        assert UNAVAILABLE in block(BrowserClient(), REMOTE_ADDR="203.0.113.1")
        [error] = log_records(caplog, logging.ERROR)
        assert error.getMessage().startswith("Redis is slow (")
    finally:
        proxy.close()


# -- 3. errors other than connection errors ------------------------------------------------


def fill_until_out_of_memory(server: RedisServer) -> None:
    """Junk keys until even a tiny write is refused with OOM."""
    with server.client() as direct:
        for size in (65536, 1024, 16):
            try:
                for n in range(100_000):
                    direct.set(f"junk:{size}:{n}", b"x" * size)
            except redis.exceptions.OutOfMemoryError:
                continue
        # Connections coming and going change used_memory by a few KB; keep the
        # server well over its limit, as more junk would, so every write is refused.
        used = int(direct.info("memory")["used_memory"])
        direct.config_set("maxmemory", used - 512 * 1024)
    with server.client() as direct:
        with pytest.raises(redis.exceptions.OutOfMemoryError, match="command not allowed"):
            direct.zadd("probe", {"member": 1})


def test_out_of_memory_pages_render_the_error_is_logged_once_and_reads_still_work(
    redis_servers: Callable[..., RedisServer],
    prefix: str,
    settings: Any,
    caplog: pytest.LogCaptureFixture,
    people: Any,
) -> None:
    server = redis_servers("--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
    settings.CACHES = {"default": django_redis_cache(server.url)}
    alice, bob = people("alice", "bob")

    with time_machine.travel(NOW, tick=False) as traveller:
        member = BrowserClient()
        member.force_login(alice)
        assert members(block(member)) == ["alice"]

        fill_until_out_of_memory(server)
        writes_are_refused(bob, caplog, redis.exceptions.OutOfMemoryError)

        # Past the back-off one write probes and is still refused: the same outage,
        # and the block keeps showing what Redis holds.
        traveller.shift(BACKOFF + 1)
        assert "online" not in get(BrowserClient(), "/", REMOTE_ADDR="203.0.113.99").cookies
        html = block(member)
        assert members(html) == ["alice"] and "1 member, 0 guests" in html
        assert len(log_records(caplog, logging.ERROR)) == 1 and answers_again(caplog) == []

        # Memory freed: the first write past the back-off is recorded, and the outage ends.
        with server.client() as direct:
            direct.config_set("maxmemory", 0)
        traveller.shift(BACKOFF + 1)
        assert "online" in get(BrowserClient(), "/", REMOTE_ADDR="203.0.113.100").cookies
        assert "1 member, 1 guest" in block(member)
        assert len(answers_again(caplog)) == 1
        assert len(log_records(caplog, logging.ERROR)) == 1


def test_a_full_redis_still_counts_approximate_guests_and_the_past_24_hours(
    redis_servers: Callable[..., RedisServer], prefix: str, settings: Any
) -> None:
    # The block keeps unions of older HyperLogLogs (a write); a full Redis, like
    # a replica, refuses it, and the block counts every bucket instead.
    server = redis_servers("--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
    settings.CACHES = {"default": django_redis_cache(server.url)}
    settings.WHOS_ONLINE_GUESTS = "approximate"
    settings.WHOS_ONLINE_RETENTION = timedelta(days=1)  # adds the day's total
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False) as traveller:
        for i in range(3):
            BrowserClient().get("/", REMOTE_ADDR=f"203.0.113.{i}")
        traveller.shift(120)  # a newer bucket: the older one is for the union
        guest = BrowserClient()
        guest.get("/", REMOTE_ADDR="203.0.113.9")
        fill_until_out_of_memory(server)
        html = block(guest)  # the guest's cookie is valid: no write, only the block's read
    assert "4 users online: 0 members, 4 guests" in " ".join(html.split())
    assert "In total there were 4 users online in the past 24 hours." in html
    with server.client() as direct:  # the window's buckets were counted, not merged
        assert not list(direct.scan_iter(match=f"{prefix}:guests:hll:past:*"))


def wait_for_replica(
    replica: RedisServer, key: str, member: str, score: float | None = None
) -> None:
    """Until the replica has synced ``member`` (with ``score``, if given): the real wait of
    a real replication."""
    deadline = time.monotonic() + 10
    with replica.client() as direct:
        while (found := direct.zscore(key, member)) is None or score not in (None, found):
            assert time.monotonic() < deadline, "the replica did not sync within 10 s"
            time.sleep(0.02)


def test_read_only_replica_pages_render_and_the_error_is_logged_once(
    redis_servers: Callable[..., RedisServer],
    prefix: str,
    settings: Any,
    caplog: pytest.LogCaptureFixture,
    people: Any,
) -> None:
    primary = redis_servers("--repl-diskless-sync-delay", "0")  # sync at once, not in 5 s
    replica = redis_servers("--replicaof", "127.0.0.1", str(primary.port))
    alice, bob = people("alice", "bob")

    with time_machine.travel(NOW, tick=False) as traveller:
        settings.CACHES = {"default": django_redis_cache(primary.url)}
        member = BrowserClient()
        member.force_login(alice)
        assert "online" in get(member, "/").cookies
        wait_for_replica(replica, f"{prefix}:users", str(alice.pk))

        # A failover that left the site pointing at a replica.
        settings.CACHES = {"default": django_redis_cache(replica.url)}
        writes_are_refused(bob, caplog, redis.exceptions.ReadOnlyError)

        # After the back-off Redis is tried again and still refuses: the same outage,
        # so no second record, and the pages still render.
        traveller.shift(BACKOFF + 1)
        assert "online" not in get(BrowserClient(), "/", REMOTE_ADDR="203.0.113.99").cookies
        block(member)
        assert len(log_records(caplog, logging.ERROR)) == 1

        # Reads never stopped: the block lists what the replica has (the peak
        # update inside the read is skipped).
        assert members(block(member)) == ["alice"]
        assert answers_again(caplog) == []


def test_on_a_replica_a_member_whose_socket_aged_out_is_not_counted(
    redis_servers: Callable[..., RedisServer], prefix: str, settings: Any, people: Any
) -> None:
    """Reads pass over the members whose socket signs aged out of the index (prune drops
    them): a replica's reads give the same counts and list."""
    settings.WHOS_ONLINE_MAX_AGE = 600
    primary = redis_servers("--repl-diskless-sync-delay", "0")
    replica = redis_servers("--replicaof", "127.0.0.1", str(primary.port))
    alice, bob = people("alice", "bob")
    tabs = {user: tab(user) for user in (alice, bob)}
    with time_machine.travel(NOW, tick=False) as traveller:
        settings.CACHES = {"default": django_redis_cache(primary.url)}
        for opened in tabs.values():
            sockets.connect(opened)
        traveller.shift(50)
        sockets.disconnect(tabs[alice])  # her last sign, at +50
        for _ in range(26):  # bob's tab beats on to +700: the window starts at +100
            traveller.shift(25)
            sockets.heartbeat([tabs[bob]])
        kept = conf.socket_keys().kept_users
        with primary.client() as direct:
            assert direct.zcard(kept) == 2  # no read since she aged out
        # His last beat, at +700, keeps him alive 60 s (the default timeout).
        wait_for_replica(replica, conf.socket_keys().live, str(bob.pk), NOW.timestamp() + 760)

        settings.CACHES = {"default": django_redis_cache(replica.url)}
        online = presence.summary()
        assert (online.user_count, names(online.members)) == (1, ["bob"])
        assert online_now.user_count() == 1
        with replica.client() as direct:
            assert direct.zcard(kept) == 2  # the replica kept her: the read passed over


def test_on_a_read_only_replica_every_read_reads(
    redis_servers: Callable[..., RedisServer], prefix: str, settings: Any, people: Any
) -> None:
    """The block's read, summary() (with the day's count too), the counts, statuses and
    last seen all answer from a replica, and leave its data as it was: no key made or
    extended by a read, nothing the replica must refuse."""
    settings.WHOS_ONLINE_RETENTION = timedelta(days=1)
    primary = redis_servers("--repl-diskless-sync-delay", "0")
    replica = redis_servers("--replicaof", "127.0.0.1", str(primary.port))
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False):
        settings.CACHES = {"default": django_redis_cache(primary.url)}
        presence.record_user(alice)
        presence.record_guest("203.0.113.1")
        sockets.connect(tab(bob))
        presence.prune()  # the peak: 3
        wait_for_replica(replica, conf.socket_keys().live, str(bob.pk))
        with replica.client() as direct:
            before = set(direct.scan_iter())

        settings.CACHES = {"default": django_redis_cache(replica.url)}
        online = presence.summary(day=True)
        assert (online.user_count, online.guest_count, online.day_total) == (2, 1, 3)
        assert names(online.members) == ["bob", "alice"] and online.peak.count == 3
        assert (online_now.user_count(), online_now.guest_count()) == (2, 1)
        assert presence.statuses([alice, bob]) == {alice: "online", bob: "online"}
        assert presence.last_seen(alice) == NOW
        assert [(day.members, day.guests) for day in admin_stats.daily_visitors(days=1)] == [(2, 1)]
        with replica.client() as direct:
            assert set(direct.scan_iter()) == before
            assert "errorstat_READONLY" not in direct.info("errorstats")  # nothing refused


# -- 4. prune while visitors keep being recorded --------------------------------------------


def zadd_many(direct: redis.Redis, key: str, scored: dict[str, float]) -> None:
    """ZADD in chunks of 10,000 members, pipelined."""
    items = list(scored.items())
    pipe = direct.pipeline(transaction=False)
    for start in range(0, len(items), 10_000):
        args: list[Any] = []
        for name, score in items[start : start + 10_000]:
            args += (score, name)
        pipe.execute_command("ZADD", key, *args)
    pipe.execute()


def hset_many(direct: redis.Redis, key: str, fields: dict[str, str]) -> None:
    """HSET in chunks of 10,000 fields, pipelined."""
    items = list(fields.items())
    pipe = direct.pipeline(transaction=False)
    for start in range(0, len(items), 10_000):
        pipe.hset(key, mapping=dict(items[start : start + 10_000]))
    pipe.execute()


# Pks of the members put straight into Redis: stale ones from STALE_PK on (the
# prune walks them in that order), the oldest live ones from BORDERLINE_PK on.
STALE_PK = 1_000_000
BORDERLINE_PK = 3_000_000


@pytest.mark.parametrize(
    "options", [{}, {"batch_size": 500}], ids=["default-batch-size", "batch-size-500"]
)
def test_prune_while_visitors_are_recorded_keeps_every_live_member(
    options: dict[str, Any], own_redis: RedisServer, prefix: str, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    users_key, guests_key = f"{prefix}:users", f"{prefix}:guests"
    cards_key = f"{prefix}:cards"
    now = time.time()
    # 200,000 stale members, oldest first (the order a prune walks them in).
    stale = {str(STALE_PK + n): now - 3600 + n / 1000 for n in range(200_000)}
    stale_guests = {f"{n:016x}": now - 3600 + n / 1000 for n in range(20_000)}
    # Live, but the oldest live ones: the first a prune that overshoots would take.
    borderline = {str(BORDERLINE_PK + n): now - 600 + 120 + n / 1000 for n in range(100)}
    live_users = people(*(f"live-{n}" for n in range(40)))
    live = [str(user.pk) for user in live_users]
    assert all(user.pk < STALE_PK for user in live_users)
    live_ips = [f"198.51.100.{n}" for n in range(20)]
    # Stale members who come back once each, just as the prune reaches them.
    returning = [
        person for n in range(0, 200_000, 2_000) for person in people(f"stale-{n}", id=STALE_PK + n)
    ]
    with own_redis.client() as direct:
        zadd_many(direct, users_key, {**stale, **borderline, **dict.fromkeys(live, now)})
        zadd_many(direct, guests_key, stale_guests)
        # Every member has a card: a prune must take each stale one's with them.
        hset_many(direct, cards_key, dict.fromkeys([*stale, *borderline, *live], '{"name":""}'))

    pruning, stop = threading.Event(), threading.Event()
    came_back: list[str] = []
    raced = [0]  # comebacks recorded while their stale entry was still in the set
    guests_recorded: set[str] = set()
    failures: list[BaseException] = []

    def regulars(users: list[Any], ips: list[str]) -> None:
        """Visitors who keep being recorded for as long as the prune runs."""
        pruning.wait(10)
        try:
            while not stop.is_set():
                for user in users:
                    presence.record_user(user)
                for ip in ips:
                    presence.record_guest(ip)
                    guests_recorded.add(addresses.guest_id(ip))
        except BaseException as exc:  # surfaced below rather than lost in the thread
            failures.append(exc)

    def comebacks() -> None:
        """Record each returning member once, when the prune's front is within 1,000 of it.

        That is one or two batches here, so many come back while the batch that
        holds their stale entry is being removed.
        """
        pending = list(returning)
        pruning.wait(10)
        try:
            with own_redis.client() as direct:
                while pending and not stop.is_set():
                    oldest = direct.zrange(users_key, 0, 0)
                    n = int(oldest[0]) - STALE_PK if oldest else -1
                    front = n if 0 <= n < len(stale) else len(stale)
                    while pending and pending[0].pk - STALE_PK < front + 1_000:
                        raced[0] += front <= pending[0].pk - STALE_PK
                        presence.record_user(pending[0])
                        came_back.append(str(pending.pop(0).pk))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=comebacks)] + [
        threading.Thread(target=regulars, args=(live_users[k::3], live_ips[k::3])) for k in range(3)
    ]
    for thread in threads:
        thread.start()
    out = StringIO()
    try:
        pruning.set()
        call_command("whos_online_prune", stdout=out, **options)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    # The comebacks really did race the prune: some arrived while their stale
    # entry was still in the set (most runs: 40 to 100 of them).
    assert raced[0] >= 5, raced[0]

    with own_redis.client() as direct:
        users = {m.decode() for m in direct.zrange(users_key, 0, -1)}
        kept_guests = {m.decode() for m in direct.zrange(guests_key, 0, -1)}
        cards = {m.decode() for m in direct.hkeys(cards_key)}
    # Every live member kept, including each comeback and the oldest live ones; stale gone.
    assert users == set(live) | set(borderline) | set(came_back)
    # and the cards with them: each kept member's (a comeback's fresh one), no stale one's
    assert cards == users
    assert kept_guests == guests_recorded
    match = re.search(r"(\d+) stale member\(s\) and (\d+) stale guest", out.getvalue())
    assert match, out.getvalue()
    # A comeback counts as pruned only if its stale entry went before it came back.
    assert len(stale) - len(came_back) <= int(match[1]) <= len(stale)
    assert int(match[2]) == len(stale_guests)


def test_a_restarted_redis_keeps_the_sockets_and_notices_resume(
    own_redis: RedisServer,
    people: Any,
    settings: Any,
    ticks: list[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Live blocks through an outage: no socket closed, nothing sent, and once Redis is
    back the hub listens again and a change reaches the page by its notice."""
    from tests.test_consumers import DEADLINE, eventually, run, tab, until
    from whos_online.contrib.channels import hub

    monkeypatch.setattr(Settings, "backoff", 1)
    (alice,) = people("alice")

    async def scenario() -> None:
        page = await tab(None)  # an anonymous page with the live block
        await until(page, lambda m: m["type"] == "presence_state")
        listener = hub.get_hub().listener
        assert listener is not None
        assert await asyncio.to_thread(listener.subscribed.wait, DEADLINE)
        own_redis.kill()
        await asyncio.to_thread(wait_until, lambda: not listener.subscribed.is_set())
        down = len(ticks)
        await eventually(lambda: len(ticks) >= down + 3)  # ticks ran while Redis was down
        assert await page.receive_nothing(timeout=0)  # still open; nothing pushed
        own_redis.restart()
        assert await asyncio.to_thread(listener.subscribed.wait, DEADLINE)  # listening again
        await asyncio.to_thread(presence.record_user, alice)
        joined = await until(page, lambda m: str(alice.pk) in m["joins"])  # before a check
        assert joined["users"] == 1
        await page.disconnect()

    run(scenario)


def wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + REQUEST_LIMIT
    while not check():
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.05)
