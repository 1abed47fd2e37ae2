"""Guest counting at 1e5, 1e6 and 1e7 guests: Redis memory and count error, exact against approximate.

    .venv/bin/python benchmarks/counting.py          # rewrites benchmarks/COUNTING.md
    .venv/bin/python benchmarks/counting.py --print  # prints only
    .venv/bin/python benchmarks/counting.py --max 1000000   # leave out the 1e7 case

Needs a Redis at REDIS_URL (default redis://127.0.0.1:6379/13). Synthetic
guests (16 hex digits, as guest ids are) are made and stored by a script in
Redis, 10,000 per call, as the record script would leave them: the exact
mode's sorted set (scored across the window, uncapped, to show what the cap
saves), the approximate mode's minute buckets (each guest in one minute of
the window and, as a cookie-throttled re-record, five minutes later too).
Each figure is then read through ``presence.summary`` in that mode, so the
count, and its cost, are the block's. A sweep of small populations finds where
HyperLogLog's error first shows. Keys are under ``whos_online_counting:<pid>``
and unlinked at the end (also on Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import django
import redis
import time_machine
from django.conf import settings

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13")
PREFIX = f"whos_online_counting:{os.getpid()}"
SIZES = (100_000, 1_000_000, 10_000_000)
BATCH = 10_000
# Blocks timed per size.
BLOCKS = 100
# The small-population sweep: trials per size, and the sizes.
TRIALS = 20
SWEEP = (10, 20, 30, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000)

settings.configure(
    SECRET_KEY="counting",
    CACHES={
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"SOCKET_TIMEOUT": 30},  # the 1e7 sorted set's count is no web request
        }
    },
    WHOS_ONLINE_KEY_PREFIX=PREFIX,
)
django.setup()

from django.test import override_settings  # noqa: E402

from whos_online import presence  # noqa: E402
from whos_online.conf import Settings, conf  # noqa: E402
from whos_online.store import counting  # noqa: E402
from whos_online.store.connection import get_client  # noqa: E402

# The guests are made in Redis, ARGV[2] of them from number ARGV[1]: a guest's
# id is 16 hex digits of SHA-1(ARGV[3] .. number), as random as guest ids are.
# Making them in Python cost more CPU than Redis spent storing them, on a
# machine whose 2 cores are shared. Scripts flush every 1,000 ids (unpack's limit).
_IDS = """
local function each_guest(visit)
  local from = tonumber(ARGV[1])
  for number = from, from + tonumber(ARGV[2]) - 1 do
    visit(number, string.sub(redis.sha1hex(ARGV[3] .. number), 1, 16))
  end
end
local function batched(command, key, width)
  local pending = {}
  local function flush()
    if #pending > 0 then redis.call(command, key, unpack(pending)) end
    pending = {}
  end
  return function(...)
    for _, value in ipairs({...}) do pending[#pending + 1] = value end
    if #pending >= 1000 * width then flush() end
  end, flush
end
"""
# The exact mode's sorted set KEYS[1], scored across the window (ARGV[4] = now,
# ARGV[5] = the window).
FILL_EXACT = (
    _IDS
    + """
local add, flush = batched('ZADD', KEYS[1], 2)
each_guest(function(number, id) add(ARGV[4] - number * 7919 % ARGV[5], id) end)
flush()
"""
)
# The window's buckets KEYS[1..]: each guest in one and, as the re-record once
# its cookie expired, in the one five minutes later if the window holds it.
FILL_BUCKETS = (
    _IDS
    + """
local adds, flushes = {}, {}
for i = 1, #KEYS do adds[i], flushes[i] = batched('PFADD', KEYS[i], 1) end
each_guest(function(number, id)
  local first = number * 7919 % #KEYS + 1
  adds[first](id)
  if first + 5 <= #KEYS then adds[first + 5](id) end
end)
for i = 1, #KEYS do flushes[i]() end
"""
)


def fill(
    client: redis.Redis,
    script: str,
    keys: list[str],
    seed: str,
    first: int,
    last: int,
    *args: float,
) -> None:
    """Guests ``first`` to ``last`` - 1 of ``seed``, BATCH per script call and round trip.

    Not several calls a round trip: Redis runs a client's pipelined commands
    back to back, and other jobs share this Redis with 0.25 s timeouts.
    """
    for start in range(first, last, BATCH):
        client.eval(script, len(keys), *keys, start, min(BATCH, last - start), seed, *args)


def fill_exact(client: redis.Redis, n: int, now: float) -> None:
    fill(client, FILL_EXACT, [conf.keys().guests], f"{n}:", 0, n, now, conf.max_age)


def fill_buckets(client: redis.Redis, now: float, seed: str, first: int, last: int) -> None:
    fill(client, FILL_BUCKETS, counting.window_buckets(conf.keys().guests, now), seed, first, last)


def count_at(now: float) -> tuple[int, float]:
    """The block's guest count as of ``now`` (filling 1e7 takes a while: nobody may age out
    meanwhile), and the median time of its one round trip over BLOCKS blocks, in µs."""
    spent = []
    with time_machine.travel(now, tick=False):  # time.time() only: perf_counter still runs
        count = presence.summary(limit=0).guest_count
        for _ in range(BLOCKS):
            start = time.perf_counter()
            presence.summary(limit=0)
            spent.append((time.perf_counter() - start) * 1e6)
    return count, statistics.median(spent)


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def wipe(client: redis.Redis) -> None:
    # UNLINK: Redis frees a 1e7-member set in the background instead of blocking for seconds.
    for keys in _chunks(list(client.scan_iter(match=f"{PREFIX}:*", count=1000))):
        client.unlink(*keys)


def _chunks(keys: list[bytes]) -> Iterator[list[bytes]]:
    for start in range(0, len(keys), 1000):
        yield keys[start : start + 1000]


def measure_size(client: redis.Redis, n: int) -> dict[str, float]:
    now = time.time()
    row: dict[str, float] = {"n": n}
    before = used_memory(client)
    fill_exact(client, n, now)
    row["exact_bytes"] = used_memory(client) - before
    with override_settings(WHOS_ONLINE_GUESTS="exact"):
        row["exact_count"], row["exact_us"] = count_at(now)
    wipe(client)
    with override_settings(WHOS_ONLINE_GUESTS="approximate"):
        fill_buckets(client, now, f"{n}:", 0, n)
        row["approx_count"], row["approx_us"] = count_at(now)
        # The window's buckets and the block's union of the older ones.
        hlls = client.scan_iter(match=f"{conf.keys().guests}:hll:*", count=1000)
        row["approx_bytes"] = sum(client.memory_usage(key, samples=0) or 0 for key in hlls)
    wipe(client)
    return row


def sweep(client: redis.Redis) -> list[tuple[int, int, float, float]]:
    """(n, trials exact, median |error| %, worst |error| %) over TRIALS populations per size."""
    errors: dict[int, list[float]] = {n: [] for n in SWEEP}
    with override_settings(WHOS_ONLINE_GUESTS="approximate"):
        for trial in range(TRIALS):
            now = time.time()
            done = 0
            for n in SWEEP:
                fill_buckets(client, now, f"trial {trial}:", done, n)
                done = n
                with time_machine.travel(now, tick=False):
                    errors[n].append(presence.summary(limit=0).guest_count - n)
            wipe(client)
    return [
        (
            n,
            sum(e == 0 for e in found),
            statistics.median(abs(e) for e in found) / n * 100,
            max(abs(e) for e in found) / n * 100,
        )
        for n, found in errors.items()
    ]


def report(rows: list[dict[str, float]], small: list[tuple[int, int, float, float]]) -> str:
    cap = Settings.max_guests
    version = get_client().info("server")["redis_version"]
    lines = [
        "# Counting guests: exact against approximate",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by `benchmarks/counting.py` "
        f"on this project's 2-vCPU machine, Redis {version} on loopback (shared with other "
        "jobs), a 10-minute window (`WHOS_ONLINE_MAX_AGE` = 600: 11 one-minute buckets). "
        "Memory of the sorted set is `used_memory` growth (others' keys add noise at 1e5); "
        "of the buckets, `MEMORY USAGE`. A count is the block's (`presence.summary()`, one script) in that "
        f"mode, its time the median round trip of the whole script over {BLOCKS} blocks.",
        "",
        "| Guests online | Exact: memory | Exact: count (error) | Exact as shown with the "
        f"default cap ({cap:,}) | Approximate: memory | Approximate: count (error) | "
        "Block's round trip, exact / approximate |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        n = int(row["n"])
        shown = min(n, cap)
        lines.append(
            f"| {n:,} | {row['exact_bytes'] / 1e6:,.1f} MB | {int(row['exact_count']):,} "
            f"({_error(row['exact_count'], n)}) | {shown:,} ({_error(shown, n)}) | "
            f"{row['approx_bytes'] / 1e3:,.0f} KB | {int(row['approx_count']):,} "
            f"({_error(row['approx_count'], n)}) | "
            f"{row['exact_us']:,.0f} µs / {row['approx_us']:,.0f} µs |"
        )
    lines += [
        "",
        f"Where HyperLogLog's error shows: {TRIALS} random populations per size, each counted "
        "over the window's buckets as the block counts them.",
        "",
        "| Guests | Counted exactly | Median error | Worst error |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {n:,} | {exact}/{TRIALS} | {median:.2f}% | {worst:.2f}% |"
        for n, exact, median, worst in small
    ]
    return "\n".join(lines) + "\n"


def _error(count: float, n: int) -> str:
    return f"{(count - n) / n * 100:+.2f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print only, don't write COUNTING.md")
    parser.add_argument("--max", type=int, default=SIZES[-1], help="largest population")
    args = parser.parse_args()
    client = get_client()
    # Ctrl-C or SIGTERM still end through the clean-up below.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        rows = []
        for n in (n for n in SIZES if n <= args.max):
            print(f"{n:,} guests …", file=sys.stderr)
            rows.append(measure_size(client, n))
        print("small populations …", file=sys.stderr)
        text = report(rows, sweep(client))
    finally:
        wipe(client)
    print(text)
    if not args.print:
        (HERE / "COUNTING.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
