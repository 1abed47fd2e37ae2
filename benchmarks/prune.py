"""Removing a million stale members: ``whos_online_prune``'s batches against the command it replaced.

On a Redis shared with the site's cache and sessions, what matters is the
longest single command: Redis serves nobody else meanwhile. It is bounded from
above by the longest round trip the client sees (loopback included).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis
from django.core.management import call_command
from django.test.utils import override_settings
from populations import zadd
from redis.connection import AbstractConnection
from runner import table

from whos_online.conf import conf


@contextmanager
def longest_trip() -> Iterator[list[float]]:
    """Yields a list that ends up holding every round trip's duration (s)."""
    trips: list[float] = []
    send, read = AbstractConnection.send_packed_command, AbstractConnection.read_response
    started = 0.0

    def timed_send(conn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal started
        started = time.perf_counter()
        return send(conn, *args, **kwargs)

    def timed_read(conn: Any, *args: Any, **kwargs: Any) -> Any:
        response = read(conn, *args, **kwargs)
        trips.append(time.perf_counter() - started)
        return response

    AbstractConnection.send_packed_command = timed_send  # type: ignore[method-assign]
    AbstractConnection.read_response = timed_read  # type: ignore[method-assign, assignment]
    try:
        yield trips
    finally:
        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
        AbstractConnection.read_response = read  # type: ignore[method-assign]


def run(admin: redis.Redis, prefix: str, stale: int) -> list[str]:
    """The section: each way of pruning, on freshly filled sets."""

    def batched() -> None:
        call_command("whos_online_prune", stdout=io.StringIO())

    def one_command() -> None:
        pipe = admin.pipeline(transaction=False)
        pipe.zremrangebyscore(keys.users, "-inf", f"({time.time() - conf.retention}")
        pipe.execute()

    ways: dict[str, Callable[[], None]] = {
        "`whos_online_prune`": batched,
        "one `ZREMRANGEBYSCORE` (before batching)": one_command,
    }
    rows = []
    with override_settings(WHOS_ONLINE_KEY_PREFIX=prefix):
        keys = conf.keys()
        for name, prune in ways.items():
            zadd(admin, keys.users, (f"member_{i}" for i in range(stale)), ago=conf.retention + 60)
            with longest_trip() as trips:
                start = time.perf_counter()
                prune()
                seconds = time.perf_counter() - start
            if admin.zcard(keys.users):
                raise RuntimeError(f"{name} left stale members")
            rows.append([name, f"{stale:,}", f"{seconds * 1000:,.0f}", f"{len(trips):,}"])
            rows[-1].append(f"{max(trips) * 1000:,.1f}")
    header = ["Pruned by", "Stale members", "ms", "Round trips", "Longest round trip (ms)"]
    return ["## Pruning stale members", "", *table(header, rows)]
