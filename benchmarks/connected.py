"""What members connected by WebSocket cost the block's read.

    cd benchmarks && python connected.py      # REDIS_URL, default redis://127.0.0.1:6379/13

Heartbeats never move a member's score (so lists never reorder); a member whom only
a socket keeps inside the window (connected longer than the window without a page
view) is found by the summary script joining the member set with the live set in
Redis (ZINTER). So a read costs a pass over the connected members: timed here with
N such members, against none, for ``presence.summary()`` (the block's read, one
round trip) and ``presence.user_count()``, in interleaved rounds (a ratio is taken
within each round, then the median). 100 members browse inside the window in every
case, so each block is full. Writes CONNECTED.md; only keys under this run's prefix
are written, and they are deleted at the end.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"

import django  # noqa: E402

django.setup()

from django.test.utils import override_settings  # noqa: E402
from runner import table  # noqa: E402

from whos_online import presence  # noqa: E402
from whos_online.conf import conf  # noqa: E402
from whos_online.store.connection import get_client  # noqa: E402

CONNECTED = (0, 1_000, 10_000)
BROWSING = 100
ROUNDS, CALLS = 7, 20
RESULTS = Path(__file__).resolve().parent / "CONNECTED.md"


def fill(prefix: str, connected: int, now: float) -> None:
    """``connected`` members beating, their page views an hour old, and BROWSING members
    seen in the last minute, under ``prefix``."""
    with override_settings(WHOS_ONLINE_KEY_PREFIX=prefix):
        keys, sockets = conf.keys(), conf.socket_keys()
    pipe = get_client().pipeline(transaction=False)
    for first in range(0, connected, 1000):
        pks = range(first, min(first + 1000, connected))
        pipe.zadd(keys.users, {f"c{pk}": now - 3600 - pk for pk in pks})
        pipe.zadd(sockets.live, {f"c{pk}": now for pk in pks})
        pipe.hset(keys.cards, mapping={f"c{pk}": f'{{"name": "c{pk}"}}' for pk in pks})
    pipe.zadd(keys.users, {f"b{pk}": now - pk / 2 for pk in range(BROWSING)})
    pipe.hset(keys.cards, mapping={f"b{pk}": f'{{"name": "b{pk}"}}' for pk in range(BROWSING)})
    pipe.execute()


def ms_per_call(prefix: str, call: Callable[[], object]) -> float:
    with override_settings(WHOS_ONLINE_KEY_PREFIX=prefix, WHOS_ONLINE_BLOCK_CACHE=0):
        started = time.perf_counter()
        for _ in range(CALLS):
            call()
        return (time.perf_counter() - started) / CALLS * 1000


def main() -> None:
    base = f"{conf.key_prefix}:connected"
    prefixes = {n: f"{base}:{n}" for n in CONNECTED}
    now = time.time()
    for n, prefix in prefixes.items():
        fill(prefix, n, now)
    calls = {"summary()": presence.summary, "user_count()": presence.user_count}
    times: dict[tuple[str, int], list[float]] = {(c, n): [] for c in calls for n in CONNECTED}
    try:
        with override_settings(WHOS_ONLINE_HEARTBEAT=3600):  # every beat stays live
            for n in CONNECTED:  # the scripts loaded, each case checked once
                with override_settings(WHOS_ONLINE_KEY_PREFIX=prefixes[n]):
                    assert presence.user_count() == n + BROWSING
                    assert len(presence.summary().members) == conf.list_limit
            for _ in range(ROUNDS):
                for name, call in calls.items():
                    for n in CONNECTED:
                        times[name, n].append(ms_per_call(prefixes[n], call))
    finally:
        client = get_client()
        own = list(client.scan_iter(match=f"{base}:*"))
        if own:
            client.delete(*own)
    rows = []
    for name in calls:
        for n in CONNECTED:
            ratios = [t / zero for t, zero in zip(times[name, n], times[name, 0])]
            median = statistics.median(times[name, n])
            rows.append(
                [f"`{name}`", f"{n:,}", f"{median:.2f}", f"{statistics.median(ratios):.1f}×"]
            )
    load = os.getloadavg()[0]
    lines = [
        "# Members connected by WebSocket and the block's read",
        "",
        f"{BROWSING} members browsing inside the window, and N members connected longer than "
        "the window without a page view (their sockets alone keep them inside it). "
        f"Median of {ROUNDS} interleaved rounds of {CALLS} calls, client round trip "
        f"included; load average {load:.1f} on {os.cpu_count()} cores while it ran. "
        "Written by `benchmarks/connected.py` (see its docstring).",
        "",
        *table(["Call", "Connected members (N)", "ms per call", "Against N = 0"], rows),
    ]
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
