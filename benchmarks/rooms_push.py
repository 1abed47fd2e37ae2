"""Live rooms at forum scale: 1,000 rooms, one subscriber each, on 4 worker processes.

    .venv/bin/python benchmarks/rooms_push.py [--rooms 1000] [--workers 4] [--steady 20]

Serves tests/load_site/ws_asgi.py as WORKERS uvicorn processes (one each, own
ports) against a redis-server of its own, so Redis's counters are this run's
alone; twice, side by side: as shipped (notices, checks, the data's own
expiries) and as the previous design (every view read every tick:
``LOAD_SITE_POLL=1``). Each time member n opens room n's block on worker
n % WORKERS; once all are pushed their state, nobody moves for STEADY seconds,
over which Redis's INFO gives script calls, commands and CPU, and psutil the
workers' CPU. Then JOINS members each join a room through another worker than
its subscriber's, timed until the subscriber is pushed the join. Memory per
socket is the workers' RSS growth over the sockets. Writes ROOMS_PUSH.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psutil
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.load_site import uvicorn  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "ROOMS_PUSH.md"
JOINS = 20


def start_workers(stack: ExitStack, redis_url: str, count: int, poll: bool) -> list[Any]:
    """``count`` uvicorn processes of the load site; returns (port, psutil.Process) pairs."""
    directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    prefix = f"whos_online_bench_push:{uuid.uuid4().hex}"
    env = uvicorn.environment(
        redis_url, prefix, directory, **({"LOAD_SITE_POLL": "1"} if poll else {})
    )
    workers = []
    for _ in range(count):
        port, pid = stack.enter_context(uvicorn.serving(env))
        workers.append((port, psutil.Process(pid)))
    return workers


def redis_counters(client: Any) -> tuple[float, int, int]:
    """Redis's CPU seconds, script calls and commands so far."""
    cpu, stats = client.info("cpu"), client.info("commandstats")
    calls = sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("eval", "evalsha")
    )
    total = client.info("stats")["total_commands_processed"]
    return cpu["used_cpu_user"] + cpu["used_cpu_sys"], calls, int(total)


async def measure(workers: list[Any], redis: Any, rooms: int, steady: float) -> dict[str, float]:
    url = "ws://127.0.0.1:{}/ws/whos-online/room:{}/?member={}"
    rss_before = sum(process.memory_info().rss for _, process in workers)
    users: dict[int, int] = {}
    pushed_at: dict[int, float] = {}

    async def read(room: int, socket: Any) -> None:
        async for raw in socket:
            users[room] = json.loads(raw)["users"]
            pushed_at[room] = time.monotonic()

    sockets, readers = [], []
    for first in range(0, rooms, 100):
        batch = range(first, min(first + 100, rooms))
        opened = await asyncio.gather(
            *(websockets.connect(url.format(workers[n % len(workers)][0], n, n)) for n in batch)
        )
        sockets += opened
        readers += [asyncio.create_task(read(n, s)) for n, s in zip(batch, opened)]
    deadline = time.monotonic() + 120
    while sum(count == 1 for count in users.values()) < rooms:
        assert time.monotonic() < deadline, "not every subscriber was pushed its state"
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)  # the first checks after subscribing are past
    rss = sum(process.memory_info().rss for _, process in workers)

    cpu_before = [sum(process.cpu_times()[:2]) for _, process in workers]
    redis_before = redis_counters(redis)
    await asyncio.sleep(steady)
    redis_after = redis_counters(redis)
    workers_cpu = sum(
        sum(process.cpu_times()[:2]) - before for (_, process), before in zip(workers, cpu_before)
    )

    delays = []
    for k in range(JOINS):
        room = k * (rooms // JOINS)
        port = workers[(room + 1) % len(workers)][0]
        started = time.monotonic()
        joiner = await websockets.connect(url.format(port, room, 1_000_000 + k))
        while users.get(room) != 2:
            assert time.monotonic() - started < 10, f"room {room}'s join was never pushed"
            await asyncio.sleep(0.005)
        delays.append(pushed_at[room] - started)
        await joiner.close()
    for socket in sockets:
        await socket.close()
    for reader in readers:
        reader.cancel()
    return {
        "calls_per_s": (redis_after[1] - redis_before[1]) / steady,
        "commands_per_s": (redis_after[2] - redis_before[2]) / steady,
        "redis_cpu": 100 * (redis_after[0] - redis_before[0]) / steady,
        "workers_cpu": 100 * workers_cpu / steady,
        "join_median": statistics.median(delays),
        "join_max": max(delays),
        "kb_per_socket": (rss - rss_before) / 1024 / rooms,
    }


def run(rooms: int, count: int, steady: float, poll: bool) -> dict[str, float]:
    with ExitStack() as stack, tempfile.TemporaryDirectory() as directory:
        server = stack.enter_context(RedisServer(directory=Path(directory)))
        redis = stack.enter_context(server.client())
        workers = start_workers(stack, server.url, count, poll)
        return asyncio.run(measure(workers, redis, rooms, steady))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--steady", type=float, default=20.0)
    args = parser.parse_args()
    rows = []
    for name, poll in (("notices (shipped)", False), ("every view each tick (before)", True)):
        result = run(args.rooms, args.workers, args.steady, poll)
        print(name, result, flush=True)
        rows.append(
            f"| {name} | {result['calls_per_s']:,.1f} | {result['commands_per_s']:,.0f} "
            f"| {result['redis_cpu']:.1f}% | {result['workers_cpu']:.0f}% "
            f"| {result['join_median'] * 1000:.0f} ms | {result['join_max'] * 1000:.0f} ms "
            f"| {result['kb_per_socket']:.0f} KB |"
        )
    RESULTS.write_text(
        f"# Live rooms: {args.rooms:,} rooms, one subscriber each, on {args.workers} workers\n\n"
        f"`python benchmarks/rooms_push.py` ({time.strftime('%Y-%m-%d')}, a 2-core machine "
        "that also runs the workers, Redis and the clients). Nobody moves for "
        f"{args.steady:.0f} s: script calls, commands and CPU per second of Redis (its own "
        f"INFO) and of all workers (psutil). Then {JOINS} joins, each through another worker "
        "than its room's subscriber: time until the subscriber is pushed it. Memory: the "
        "workers' RSS growth per socket.\n\n"
        "| design | script calls/s | commands/s | Redis CPU | workers' CPU | join, median "
        "| join, max | memory per socket |\n|---|---|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nTargets (issue 25): at most 1 Redis call a second and 1% of a Redis core "
        "with nobody moving; a join across processes in at most 1 s, median at most 0.3 s.\n"
    )


if __name__ == "__main__":
    main()
