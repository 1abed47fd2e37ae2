"""Live rooms at forum scale: 1,000 rooms, one subscriber each, on 4 worker processes.

    .venv/bin/python benchmarks/rooms_push.py [--rooms 1000] [--workers 4] [--steady 20]

Serves tests/load_site/ws_asgi.py as WORKERS uvicorn processes (one each, own
ports) against a redis-server of its own, so Redis's counters are this run's
alone: as shipped (notices, checks, the data's own expiries) and, with
``--poll``, also as the previous design (every view read every tick:
``LOAD_SITE_POLL=1``). Member n opens room n's block on worker n % WORKERS;
once all are pushed their state, nobody moves for STEADY seconds, over which
Redis's INFO gives script calls, commands and CPU, and psutil the workers' CPU.
Then joins and leaves in quiet rooms (one member) and busy ones (BUSY_JOINS
members BUSY_GAP s apart), each timed at two subscribers of the room, one on
the joiner's worker and one on another, until they are pushed the new count.
Memory per socket is the workers' RSS growth over the sockets. Writes
ROOMS_PUSH.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
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
JOINS = 20  # quiet rooms: one member joins, then leaves
BUSY, BUSY_JOINS, BUSY_GAP = 5, 5, 0.15  # busy rooms: five join 0.15 s apart, then leave
SOCKET_GRACE_PAST = 6  # s: a socket closed sooner after its connect leaves its member online


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


def percentile(values: list[float], share: float) -> float:
    """The value ``share`` of ``values`` are at or below (nearest rank)."""
    ranked = sorted(values)
    return ranked[max(0, math.ceil(share * len(ranked)) - 1)]


async def measure(workers: list[Any], redis: Any, rooms: int, steady: float) -> dict[str, Any]:
    url = "ws://127.0.0.1:{}/ws/whos-online/room:{}/?member={}"
    rss_before = sum(process.memory_info().rss for _, process in workers)
    # Each subscriber's pushes: (when, the room's member count, pk -> status of the cards
    # pushed: a joiner online, then idle once their socket closed).
    pushes: dict[str, list[tuple[float, int, dict[str, str]]]] = {}

    async def read(name: str, socket: Any) -> None:
        async for raw in socket:
            message = json.loads(raw)
            cards = {pk: card["status"] for pk, card in message["joins"].items()}
            pushes[name].append((time.monotonic(), message["users"], cards))

    def subscribe(name: str, socket: Any) -> None:
        pushes[name] = []
        readers.append(asyncio.create_task(read(name, socket)))

    sockets, readers = [], []  # type: ignore[var-annotated]
    for first in range(0, rooms, 100):
        batch = range(first, min(first + 100, rooms))
        opened = await asyncio.gather(
            *(websockets.connect(url.format(workers[n % len(workers)][0], n, n)) for n in batch)
        )
        sockets += opened
        for n, socket in zip(batch, opened):
            subscribe(f"room{n}", socket)
    deadline = time.monotonic() + 120
    while sum(bool(p) and p[-1][1] == 1 for p in pushes.values()) < rooms:
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

    # Each room a change is timed in gets a second subscriber, on the worker its joiners
    # use (the first is on another): a change must reach both.
    timed = [k * (rooms // (JOINS + BUSY)) for k in range(JOINS + BUSY)]
    for k, room in enumerate(timed):
        port = workers[(room + 1) % len(workers)][0]
        watcher = await websockets.connect(url.format(port, room, 2_000_000 + k))
        sockets.append(watcher)
        subscribe(f"own{room}", watcher)
    for room in timed:
        while not (pushes[f"room{room}"] and pushes[f"room{room}"][-1][1] == 2):
            await asyncio.sleep(0.01)
    changes: dict[str, list[float]] = {"quiet": [], "busy": []}

    async def change(kind: str, room: int, events: list[tuple[float, str, str]]) -> None:
        """Wait until both subscribers of ``room`` are pushed each (start, pk, status)
        event, the member's card in that status; its delay counts from its start."""
        for started, pk, status in events:
            for name in (f"room{room}", f"own{room}"):
                deadline = time.monotonic() + 10
                while True:
                    at = [
                        t
                        for t, _, cards in pushes[name]
                        if t >= started and cards.get(pk) == status
                    ]
                    if at:
                        changes[kind].append(at[0] - started)
                        break
                    assert time.monotonic() < deadline, f"{name} was never pushed {pk} {status}"
                    await asyncio.sleep(0.005)

    joined: dict[int, list[tuple[Any, tuple[float, str, str]]]] = {}
    for k, room in enumerate(timed):
        port = workers[(room + 1) % len(workers)][0]
        kind, n = ("quiet", 1) if k < JOINS else ("busy", BUSY_JOINS)
        joined[room] = []
        for j in range(n):  # busy: a join every BUSY_GAP s, quicker than the old TICK
            started, pk = time.monotonic(), str(3_000_000 + 100 * k + j)
            socket = await websockets.connect(url.format(port, room, pk))
            joined[room].append((socket, (started, pk, "online")))
            await asyncio.sleep(BUSY_GAP if kind == "busy" else 0)
        await change(kind, room, [event for _, event in joined[room]])
    # Each leaves once a close makes them idle (a reload's close does not: SOCKET_GRACE).
    await asyncio.sleep(SOCKET_GRACE_PAST)
    for k, room in enumerate(timed):
        kind, left = ("quiet" if k < JOINS else "busy"), []
        for socket, (_, pk, _) in joined[room]:
            started = time.monotonic()
            await socket.close()
            left.append((started, pk, "idle"))  # in the window still, not online
            await asyncio.sleep(BUSY_GAP if kind == "busy" else 0)
        await change(kind, room, left)
    for socket in sockets:
        await socket.close()
    for reader in readers:
        reader.cancel()
    return {
        "calls_per_s": (redis_after[1] - redis_before[1]) / steady,
        "commands_per_s": (redis_after[2] - redis_before[2]) / steady,
        "redis_cpu": 100 * (redis_after[0] - redis_before[0]) / steady,
        "workers_cpu": 100 * workers_cpu / steady,
        "changes": changes,
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
    parser.add_argument("--poll", action="store_true", help="also the design before notices")
    args = parser.parse_args()
    rows, timings = [], []
    designs = [("notices (shipped)", False)]
    if args.poll:
        designs.append(("every view each tick (before)", True))
    for name, poll in designs:
        result = run(args.rooms, args.workers, args.steady, poll)
        print(name, result, flush=True)
        rows.append(
            f"| {name} | {result['calls_per_s']:,.1f} | {result['commands_per_s']:,.0f} "
            f"| {result['redis_cpu']:.1f}% | {result['workers_cpu']:.0f}% "
            f"| {result['kb_per_socket']:.0f} KB |"
        )
        for kind, delays in result["changes"].items():
            timings.append(
                f"| {name} | {kind} | {len(delays)} | {statistics.median(delays) * 1000:.0f} ms "
                f"| {percentile(delays, 0.99) * 1000:.0f} ms | {max(delays) * 1000:.0f} ms |"
            )
    RESULTS.write_text(
        f"# Live rooms: {args.rooms:,} rooms, one subscriber each, on {args.workers} workers\n\n"
        f"`python benchmarks/rooms_push.py` ({time.strftime('%Y-%m-%d')}, a 2-core machine "
        f"that also runs the workers, Redis and the clients; load {os.getloadavg()[0]:.1f} at "
        "the end). Nobody moves for "
        f"{args.steady:.0f} s: script calls, commands and CPU per second of Redis (its own "
        "INFO) and of all workers (psutil). Memory: the workers' RSS growth per socket.\n\n"
        "| design | script calls/s | commands/s | Redis CPU | workers' CPU "
        "| memory per socket |\n|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\nThen changes, each timed at two subscribers of its room, one on another "
        "worker than the joiner's and one on the joiner's own, from the join's connect (or "
        f"the leave's close, {SOCKET_GRACE_PAST} s after the join) until the subscriber is pushed "
        f"the joiner's card online (then idle): {JOINS} quiet "
        f"rooms where one member joins, then leaves; {BUSY} busy rooms where {BUSY_JOINS} "
        f"join {BUSY_GAP} s apart, then leave as quickly.\n\n"
        "| design | rooms | changes timed | median | p99 | max |\n|---|---|---|---|---|---|\n"
        + "\n".join(timings)
        + "\n\nTargets (issue 25): at most 1 Redis call a second and 1% of a Redis core "
        "with nobody moving. Issue 38: a join or leave reaches every subscriber, on any "
        "worker including the joiner's own, within 100 ms at p99.\n"
    )


if __name__ == "__main__":
    main()
