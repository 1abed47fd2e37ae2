"""How far one Redis goes: guests recorded per second, and what that means in people online.

    .venv/bin/python benchmarks/scaling.py          # rewrites benchmarks/SCALING.md
    .venv/bin/python benchmarks/scaling.py --print  # prints only

Needs ``redis-benchmark`` (Debian's redis-tools) and a Redis at REDIS_URL
(default redis://127.0.0.1:6379/13). A recorded guest is one EVALSHA of
``scripts.RECORD``; what limits one Redis is the CPU it spends on that, so
redis-benchmark (C, pipelined, 16 connections: the server is the bottleneck)
drives it against a set of a million guests. Keys are under
``whos_online_scale:<pid>`` and deleted at the end.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlparse

import redis

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from whos_online.conf import Settings, conf  # noqa: E402
from whos_online.store import scripts  # noqa: E402

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13")
KEY = f"whos_online_scale:{os.getpid()}"
POPULATION = 1_000_000
COOKIE_AGE = conf.cookie_age  # at the default window
MAX_GUESTS = Settings.max_guests


def records_per_second() -> float:
    """redis-benchmark's rate for the record script, each call a random one of the million."""
    url = urlparse(REDIS_URL)
    # As presence.record_guest for the site's guest, exact counting, on a site without
    # WebSockets (see whos_online/store/lua/record.lua): KEYS: the guests, then the
    # guests again for each key a guest's record does not use but the peak (KEYS[5]),
    # the hour's and the day's HyperLogLogs; ARGV: score, member, TTL, window, no
    # notices channel, counted since, cap, trim per write, '' for what a guest's
    # record does not use, '1' (the guests written), the HyperLogLogs' TTLs.
    keys = [KEY] * 4 + [f"{KEY}:peak"] + [KEY] * 5 + [f"{KEY}:hour", f"{KEY}:day"]
    argv = ["__rand_int__", "__rand_int__", "600", "600", "", "0", str(MAX_GUESTS * 20), "100"]
    argv += ["", "", "", "", "", "", "1", "90000", "2764800"]
    out = subprocess.run(
        ["redis-benchmark", "-h", url.hostname or "127.0.0.1", "-p", str(url.port or 6379)]
        + ["--dbnum", (url.path or "/0").lstrip("/") or "0", "-c", "16", "-P", "32", "-q"]
        + [
            "-n",
            "300000",
            "-r",
            str(POPULATION),
            "EVALSHA",
            scripts.RECORD.sha,
            str(len(keys)),
            *keys,
            *argv,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    return float(re.findall(r"([\d.]+) requests per second", out)[-1])


def measure(client: redis.Redis) -> tuple[float, float]:
    """(records per second, bytes per guest) over a million guests named as ``__rand_int__``."""
    client.script_load(scripts.RECORD.text)
    before, now = int(client.info("memory")["used_memory"]), time.time()
    for start in range(0, POPULATION, 10_000):
        client.zadd(KEY, {f"{n:012d}": now - n * 1e-4 for n in range(start, start + 10_000)})
    per_guest = (int(client.info("memory")["used_memory"]) - before) / POPULATION
    return records_per_second(), per_guest


def main() -> None:
    client = redis.Redis.from_url(REDIS_URL)
    load = os.getloadavg()[0]
    try:
        records, per_guest = measure(client)
    finally:
        client.delete(KEY, f"{KEY}:changed", f"{KEY}:peak", f"{KEY}:hour")
        client.delete(f"{KEY}:day")
    text = "\n".join(
        [
            "# How far one Redis goes",
            "",
            f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by `benchmarks/scaling.py` on "
            f"this project's 2-vCPU machine, against Redis {client.info('server')['redis_version']} on "
            f"loopback (shared with other jobs, 1-minute load {load:.1f} at the start: treat the "
            "figures as an order of magnitude).",
            "",
            "| What | Measured |",
            "|---|---|",
            "| Guests recorded per second by one Redis (EVALSHA of the record script on a set "
            f"of 1M guests, redis-benchmark) | **{records:,.0f}** |",
            "| People online at once one Redis keeps up with, each recorded once per "
            f"half window ({COOKIE_AGE} s) | **{records * COOKIE_AGE:,.0f}** |",
            f"| Redis memory per guest (`used_memory` growth over 1M) | {per_guest:,.0f} B |",
            f"| Memory at the guests cap ({MAX_GUESTS:,}) | "
            f"{MAX_GUESTS * per_guest / 1e6:,.0f} MB |",
            "",
        ]
    )
    print(text)
    if "--print" not in sys.argv:
        (HERE / "SCALING.md").write_text(text)


if __name__ == "__main__":
    main()
