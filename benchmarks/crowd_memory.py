"""What a crowd of sockets holds in Redis, and what beating for them costs it.

    redis-server --port 6390 --save '' &          # a Redis of its own: its EVALSHA time
    cd benchmarks && REDIS_URL=redis://127.0.0.1:6390/0 python crowd_memory.py

Members connect through ``sockets.connect`` (the consumers' own call: a record
and a first heartbeat) under a key prefix of this run's own: SOCKETS on the site
alone, then SOCKETS in rooms of 1 and of 10 members. Memory is the sum of
``MEMORY USAGE`` (``SAMPLES 0``: every element) over the prefix's keys, per
socket and per room; a heartbeat for all the sockets is timed on the client (one
round trip per ``HEARTBEAT_BATCH`` connections) and by Redis's own EVALSHA time, so
run it on a Redis of its own; median of ROUNDS. Writes
CROWD_MEMORY.md; the prefix's keys are deleted at the end.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from pathlib import Path
from unittest import mock

os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"

import django  # noqa: E402

django.setup()

from django.test.utils import override_settings  # noqa: E402

from whos_online.conf import Settings  # noqa: E402
from whos_online.store import sockets  # noqa: E402
from whos_online.store.connection import get_client  # noqa: E402

SOCKETS = 2_000
ROUNDS = 5
RESULTS = Path(__file__).resolve().parent / "CROWD_MEMORY.md"


def memory(prefix: str) -> tuple[int, int]:
    """Bytes and keys under ``prefix``."""
    client, total, keys = get_client(), 0, 0
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        total += client.memory_usage(key, samples=0) or 0
        keys += 1
    return total, keys


def evalsha_usec() -> int:
    """Microseconds Redis has spent in EVALSHA (all clients': run it on a Redis of its own)."""
    stats = get_client().info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("usec", 0))


def crowd(room_size: int | None) -> dict[str, float]:
    """SOCKETS members connected, on the site alone (None) or in rooms of room_size."""
    prefix = f"whos_online_bench_crowd:{uuid.uuid4().hex[:8]}"
    rooms_cap = mock.patch.object(Settings, "max_rooms", 100_000)  # a prefix keeps 10,000
    with override_settings(WHOS_ONLINE_KEY_PREFIX=prefix), rooms_cap:
        try:
            connections = [
                sockets.Connection(
                    str(n),
                    uuid.uuid4().hex,
                    None if room_size is None else f"topic:{n // room_size}",
                    card=f'{{"name": "member{n}"}}',
                )
                for n in range(SOCKETS)
            ]
            for connection in connections:
                sockets.connect(connection)
            total, keys = memory(prefix)
            site, _ = memory(f"{prefix}:room") if room_size else (0, 0)
            beats, redis_us = [], []
            for _ in range(ROUNDS):
                before = evalsha_usec()
                started = time.perf_counter()
                sockets.heartbeat(connections)
                beats.append(time.perf_counter() - started)
                redis_us.append(evalsha_usec() - before)
            namespaces = 1 if room_size is None else 2
            return {
                "bytes": total,
                "keys": keys,
                "room_bytes": site,
                "beat_ms": statistics.median(beats) * 1000,
                "redis_ms": statistics.median(redis_us) / 1000,
                "calls": -(-SOCKETS * namespaces // sockets.HEARTBEAT_BATCH),
            }
        finally:
            client = get_client()
            for key in client.scan_iter(match=f"{prefix}:*", count=1000):
                client.delete(key)


def main() -> None:
    rows = []
    for label, size in (("site only", None), ("rooms of 1", 1), ("rooms of 10", 10)):
        result = crowd(size)
        print(label, result, flush=True)
        rooms = 0 if size is None else SOCKETS // size
        per_room = f"{result['room_bytes'] / rooms:,.0f} B" if rooms else "–"
        rows.append(
            f"| {label} | {result['keys']:,} | {result['bytes'] / SOCKETS:,.0f} B | {per_room} "
            f"| {result['calls']} | {result['beat_ms']:.1f} ms | {result['redis_ms']:.1f} ms "
            f"| {result['redis_ms'] * 1000 / SOCKETS:.1f} µs |"
        )
    RESULTS.write_text(
        f"# A crowd of sockets in Redis\n\n`python benchmarks/crowd_memory.py` "
        f"({time.strftime('%Y-%m-%d')}, Redis {get_client().info('server')['redis_version']} "
        f"shared with other work on a 2-core machine): {SOCKETS:,} members each with one "
        "socket, connected through `sockets.connect`. Memory: `MEMORY USAGE` summed over "
        "the run's keys (the site's and the rooms'), per socket; per room: the rooms' own "
        "keys (their sets, connections, mark) per room. A heartbeat for all the sockets: "
        f"EVALSHA round trips, client time and Redis's own time (`INFO commandstats`), median "
        f"of {ROUNDS}.\n\n"
        "| sockets | keys | memory per socket | memory per room | heartbeat calls "
        "| heartbeat, client | heartbeat, Redis | Redis per socket |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
    )


if __name__ == "__main__":
    main()
