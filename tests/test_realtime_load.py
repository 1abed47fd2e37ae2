"""WebSocket presence under load: 2,000 concurrent sockets on one uvicorn worker, bounded.

One uvicorn worker serves tests/load_site/ws_asgi.py against a redis-server of
this test's own (so its command counts are ours alone). CONNECTIONS members
connect from this process: most to a chat consumer with the presence mixin,
SUBSCRIBERS of them to whos_online's consumer. Then:

- every connection is recorded and its heartbeats land (each live score moves
  past a mark taken after everyone connected), with a heartbeat every
  HEARTBEAT seconds for the whole process;
- every subscriber is pushed the whole picture (CONNECTIONS members);
- Redis's EVAL calls in a steady window are bounded by the ticks and beats of
  one process, not by the sockets (measured: commands/s);
- the worker's memory per connection is measured;
- closing every socket takes every member off at once.

The numbers are printed (``-s``) and not asserted as speed: the machine is shared.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import django_redis_cache, require, socket_timeout
from tests.load_site import uvicorn
from tests.redis_server import RedisServer
from whos_online import push
from whos_online.conf import conf
from whos_online.store import sockets
from whos_online.store.sockets import BEATS_TO_TIMEOUT

pytestmark = pytest.mark.load

CONNECTIONS = 2000
SUBSCRIBERS = 50
HEARTBEAT = 2.0  # s, here and in the worker; a connection is gone after 2.4 beats
STEADY = 6.0  # s of steady state in which Redis commands are counted
TICK = 0.1  # whos_online.contrib.channels.hub.TICK
MAX_AGE = 10  # s, the two workers' window: a close past half of it is no navigation
CONNECT_BATCH = 100  # connects in flight at once (the listen backlog is finite)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    require("redis-server")
    with RedisServer(directory=tmp_path) as server:
        yield server


@pytest.fixture
def worker(own_redis: RedisServer, tmp_path: Path, settings: Any) -> Iterator[tuple[str, int]]:
    """One uvicorn worker on a spare port; yields its ws:// base and pid."""
    prefix = f"whos_online_realtime_load:{uuid.uuid4().hex}"
    settings.CACHES = {"default": django_redis_cache(own_redis.url)}
    settings.WHOS_ONLINE_KEY_PREFIX = prefix
    socket_timeout(settings, 5)
    env = uvicorn.environment(own_redis.url, prefix, tmp_path, LOAD_SITE_HEARTBEAT=str(HEARTBEAT))
    log = tmp_path / "uvicorn.log"
    with open(log, "wb") as out, uvicorn.serving(env, out) as (port, pid):
        yield f"ws://127.0.0.1:{port}", pid


def wait(check: Callable[[], bool], seconds: float, what: str) -> float:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, what
        time.sleep(0.1)
    return time.monotonic() - started


def eval_calls(stats: dict[str, Any]) -> int:
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("eval", "evalsha")
    )


def test_two_thousand_sockets_on_one_worker(
    worker: tuple[str, int], own_redis: RedisServer
) -> None:
    # The load extra's; imported here so the matrix cells (no load extra) still collect.
    import psutil
    import websockets

    base, pid = worker
    redis_client = own_redis.client()
    rss_before = psutil.Process(pid).memory_info().rss
    users_seen = [0] * SUBSCRIBERS  # the latest member count each subscriber was pushed
    report: dict[str, float] = {}

    async def subscriber(i: int, socket: Any) -> None:
        async for raw in socket:
            users_seen[i] = json.loads(raw)["users"]

    async def scenario() -> None:
        started = time.monotonic()
        sockets: list[Any] = []
        for first in range(0, CONNECTIONS, CONNECT_BATCH):
            batch = range(first, min(first + CONNECT_BATCH, CONNECTIONS))
            urls = [
                f"{base}/ws/whos-online/?member={n}"
                if n < SUBSCRIBERS
                else f"{base}/ws/chat/?member={n}"
                for n in batch
            ]
            sockets += await asyncio.gather(
                *(websockets.connect(url, open_timeout=30, max_size=None) for url in urls)
            )
        report["connect_s"] = time.monotonic() - started
        readers = [asyncio.create_task(subscriber(i, sockets[i])) for i in range(SUBSCRIBERS)]

        await asyncio.to_thread(
            wait,
            lambda: len(push.connected()) == CONNECTIONS,
            30,
            "not every connection was recorded",
        )
        report["rss_mb"] = psutil.Process(pid).memory_info().rss / 2**20
        report["all_pushed_s"] = await asyncio.to_thread(
            wait,
            lambda: min(users_seen) == CONNECTIONS,
            10,
            f"subscribers saw {sorted(set(users_seen))} members, not {CONNECTIONS}",
        )

        # Steady state: count Redis's commands while nothing but beats and ticks happen.
        mark = time.time()
        before, commands_before = (
            redis_client.info("commandstats"),
            redis_client.info("stats")["total_commands_processed"],
        )
        await asyncio.sleep(STEADY)
        after, commands_after = (
            redis_client.info("commandstats"),
            redis_client.info("stats")["total_commands_processed"],
        )
        report["evals"] = eval_calls(after) - eval_calls(before)
        report["commands_per_s"] = (commands_after - commands_before) / STEADY
        live = redis_client.zrange(f"{conf.socket_keys().live}", 0, -1, withscores=True)
        # A live score is when the connection is alive until: its beat plus the timeout.
        timeout = BEATS_TO_TIMEOUT * HEARTBEAT
        report["beaten"] = sum(score - timeout >= mark for _, score in live)

        closing = time.monotonic()
        await asyncio.gather(*(socket.close() for socket in sockets))
        for reader in readers:
            reader.cancel()
        report["all_gone_s"] = await asyncio.to_thread(
            wait, lambda: not push.connected(), 20, "closed sockets still connected"
        )
        report["close_s"] = time.monotonic() - closing

    asyncio.run(scenario())
    report["rss_before_mb"] = rss_before / 2**20
    per_connection_kb = (report["rss_mb"] - report["rss_before_mb"]) * 1024 / CONNECTIONS
    print(
        f"\n{CONNECTIONS} sockets on one worker: connected in {report['connect_s']:.1f} s; "
        f"all {SUBSCRIBERS} subscribers pushed the full count after {report['all_pushed_s']:.1f} s; "
        f"worker RSS {report['rss_before_mb']:.0f} -> {report['rss_mb']:.0f} MB "
        f"({per_connection_kb:.0f} KB per connection); steady {STEADY:.0f} s: "
        f"{report['evals']} EVAL round trips, {report['commands_per_s']:.0f} Redis commands/s "
        "(counting those the scripts run); "
        f"{report['beaten']} of {CONNECTIONS} beaten in the window; "
        f"all gone {report['all_gone_s']:.1f} s after the closes finished"
    )
    assert report["beaten"] == CONNECTIONS  # every connection's heartbeat was recorded
    assert report["evals"] >= STEADY / HEARTBEAT - 1  # the beats and reads are counted
    # One process: a beat (an EVAL per HEARTBEAT_BATCH sockets) per HEARTBEAT and a read
    # per TICK for its one view (x2 leaves room for a busy machine); beating each socket
    # would be thousands.
    batches = -(-CONNECTIONS // sockets.HEARTBEAT_BATCH)
    assert report["evals"] <= 2 * (STEADY / HEARTBEAT * batches + STEADY / TICK + 2)


def test_a_join_and_a_leave_on_one_worker_reach_a_subscriber_on_another(
    own_redis: RedisServer, tmp_path: Path
) -> None:
    """Two uvicorn processes: the other's notice, not a check (10 s), brings the change."""
    import websockets

    prefix = f"whos_online_two:{uuid.uuid4().hex}"
    env = uvicorn.environment(own_redis.url, prefix, tmp_path, LOAD_SITE_MAX_AGE=str(MAX_AGE))
    room = "/ws/whos-online/topic:1/?member={}"

    async def until(socket: Any, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            message: dict[str, Any] = json.loads(await asyncio.wait_for(socket.recv(), 5))
            if wanted(message):
                return message

    async def scenario(first: int, second: int) -> None:
        async with websockets.connect(f"ws://127.0.0.1:{first}" + room.format(1)) as watcher:
            await until(watcher, lambda m: m["type"] == "presence_state")
            for junk in ("not json", b"\x00\xff", "[]" * 10_000):  # ignored on a real server
                await watcher.send(junk)
            async with websockets.connect(f"ws://127.0.0.1:{second}" + room.format(2)) as joiner:
                joined = await until(watcher, lambda m: "2" in m["joins"])
                assert joined["joins"]["2"]["status"] == "online" and joined["users"] == 2
                # He reads past his cookie's life (a real clock): his close is no navigation.
                await asyncio.sleep(MAX_AGE / 2 + 0.5)
                await joiner.close()
            left = await until(watcher, lambda m: "2" in m["leaves"])
            assert left["joins"]["2"]["status"] == "idle"

    with uvicorn.serving(env) as (first, _), uvicorn.serving(env) as (second, _):
        asyncio.run(scenario(first, second))
