"""How far one Redis goes: records per second for whos_online's recording path, and what that means.

    .venv/bin/python benchmarks/scaling.py          # rewrites benchmarks/SCALING.md
    .venv/bin/python benchmarks/scaling.py --print  # prints only

(``python3 dev.py bench`` creates .venv.) Needs ``redis-benchmark`` (Debian's
redis-tools) and a Redis at REDIS_URL (default redis://127.0.0.1:6379/13).

A recorded guest is one ``EVAL`` of ``scripts.RECORD`` (ZADD GT, the cap's
trim, EXPIRE). What limits one Redis is the CPU time it spends on that, so it
is driven by redis-benchmark (C, pipelined, many connections: the server, not
the client, is the bottleneck) against a set of a million guests. A Python client calling ``presence.record_guest`` (one process per core)
shows what app servers would reach at most from this machine. Keys are under
``whos_online_scale:<pid>`` and deleted at the end.
"""

from __future__ import annotations

import argparse
import multiprocessing
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
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from whos_online import scripts  # noqa: E402
from whos_online.conf import DEFAULTS  # noqa: E402

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13")
PREFIX = f"whos_online_scale:{os.getpid()}"
GUESTS_KEY = f"{PREFIX}:guests"
POPULATION = 1_000_000
REQUESTS = 300_000
PYTHON_SECONDS = 10
COOKIE_AGE = DEFAULTS["WHOS_ONLINE_COOKIE_AGE"]
MAX_GUESTS = DEFAULTS["WHOS_ONLINE_MAX_GUESTS"]


def redis_benchmark(*command: str) -> float:
    """Requests per second redis-benchmark gets for ``command`` (pipelined, 16 connections)."""
    url = urlparse(REDIS_URL)
    args = [
        "redis-benchmark",
        "-h", url.hostname or "127.0.0.1",
        "-p", str(url.port or 6379),
        "--dbnum", (url.path or "/0").lstrip("/") or "0",
        "-c", "16", "-P", "32", "-n", str(REQUESTS), "-r", str(POPULATION), "-q",
        *command,
    ]  # fmt: skip
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=300).stdout
    # "-q" prints e.g. "ZADD ...: 412371.13 requests per second, p50=1.023 msec"
    found = re.findall(r"([\d.]+) requests per second", out)
    if not found:
        raise RuntimeError(f"redis-benchmark printed no rate: {out!r}")
    return float(found[-1])


def fill(client: redis.Redis) -> float:
    """A million guests, named as redis-benchmark's ``__rand_int__`` (12 digits), so its
    ZADDs update them like returning visitors; return the memory they take per member."""
    before = int(client.info("memory")["used_memory"])
    now = time.time()
    for start in range(0, POPULATION, 10_000):
        client.zadd(GUESTS_KEY, {f"{n:012d}": now - n * 1e-4 for n in range(start, start + 10_000)})
    return (int(client.info("memory")["used_memory"]) - before) / POPULATION


def python_worker(seconds: float, counter: multiprocessing.Value) -> None:  # type: ignore[type-arg]
    """One app-server process recording distinct guests as fast as it can."""
    import django
    from django.conf import settings

    settings.configure(
        SECRET_KEY="scaling",
        CACHES={"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL}},
        WHOS_ONLINE_KEY_PREFIX=PREFIX,
    )
    django.setup()
    from whos_online import presence

    done, deadline, pid = 0, time.monotonic() + seconds, os.getpid()
    while time.monotonic() < deadline:
        presence.record_guest(f"10.{pid % 250}.{done // 256 % 256}.{done % 256}")
        done += 1
    with counter.get_lock():
        counter.value += done


def python_rate() -> float:
    counter = multiprocessing.Value("q", 0)
    workers = [
        multiprocessing.Process(target=python_worker, args=(PYTHON_SECONDS, counter))
        for _ in range(os.cpu_count() or 1)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(PYTHON_SECONDS + 60)
    return float(counter.value) / PYTHON_SECONDS


def measure() -> dict[str, float]:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        bytes_per_member = fill(client)
        rates = {
            # KEYS: the guests, the set to drop from (itself: none), the room registry
            # (unused); ARGV: score, member, TTL, cap, trim per write, room, room TTL.
            "EVAL RECORD": redis_benchmark(
                "EVAL",
                scripts.RECORD,
                "3",
                GUESTS_KEY,
                GUESTS_KEY,
                f"{PREFIX}:rooms",
                "__rand_int__",
                "__rand_int__",
                "600",
                str(MAX_GUESTS * 20),
                "100",
                "",
                "600",
            ),  # fmt: skip
        }
        rates["python"] = python_rate()
        rates["bytes_per_member"] = bytes_per_member
    finally:
        client.delete(GUESTS_KEY)
        client.close()
    return rates


def report(rates: dict[str, float]) -> str:
    records = rates["EVAL RECORD"]
    bytes_per_member = rates["bytes_per_member"]
    lines = [
        "# How far one Redis goes",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by `benchmarks/scaling.py` "
        f"on this project's 2-vCPU machine, against Redis {redis_version()} on loopback "
        "(shared with other jobs: treat the figures as an order of magnitude).",
        "",
        "| What | Measured |",
        "|---|---|",
    ]
    lines += [
        "| Recorded visitors per second one Redis sustains (`EVAL` of the record script on "
        f"a set of 1M guests, redis-benchmark) | **{records:,.0f}** |",
        f"| `presence.record_guest` from Python, {os.cpu_count()} processes on this machine | "
        f"{rates['python']:,.0f} /s |",
        f"| Visitors online at once that one Redis keeps up with, each recorded once per "
        f"`WHOS_ONLINE_COOKIE_AGE` ({COOKIE_AGE} s) | **{records * COOKIE_AGE:,.0f}** |",
        f"| Redis memory per guest (`used_memory` growth over 1M guests) | "
        f"{bytes_per_member:,.0f} B |",
        f"| Memory at `WHOS_ONLINE_MAX_GUESTS` ({MAX_GUESTS:,}) guests | "
        f"{MAX_GUESTS * bytes_per_member / 1e6:,.0f} MB |",
        "",
    ]
    return "\n".join(lines)


def redis_version() -> str:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        return str(client.info("server")["redis_version"])
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print only, don't write SCALING.md")
    text = report(measure())
    print(text)
    if not parser.parse_args().print:
        (HERE / "SCALING.md").write_text(text)


if __name__ == "__main__":
    main()
