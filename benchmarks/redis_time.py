"""Redis's own time per record of a new guest and per block read, by checkout and crowd.

    .venv/bin/python benchmarks/redis_time.py . /work/wt/before

For each crowd (100, 20,000 and 100,000 guests online) and each checkout given,
in turn (``--rounds`` times, alternated), a child process fills a redis-server of
this script's own (and prunes once, as cron would: the peak), records
``--records`` guests never seen before through that checkout's
``presence.record_guest``, reads the block (``presence.summary()``) ``--reads``
times, then records ten members and reads it again (a list of ten to send), and
last reads it with the past 24 hours' total (``summary(day=True)``), the crowd
spread over the 24 guest hour HyperLogLogs. Redis's time is INFO commandstats'
microseconds per script call (EVALSHA and EVALSHA_RO), reset with CONFIG RESETSTAT
before each. The server is started here and stopped by its PID: never a shared one.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

HERE = Path(__file__).resolve().parent
CROWDS = (100, 20_000, 100_000)
MEMBERS = 10
ROWS = {
    "record": "record of a new guest",
    "read": "block read",
    "listed": "block read, 10 members listed",
    "day": "block read, 10 listed, with the 24-hour total",
}
SCRIPT_CALLS = ("cmdstat_evalsha", "cmdstat_evalsha_ro")


def script_usec(admin: redis.Redis) -> tuple[int, int]:
    """Calls and microseconds of every script call since the last CONFIG RESETSTAT."""
    stats = admin.info("commandstats")
    found = [stats.get(name, {}) for name in SCRIPT_CALLS]
    return sum(s.get("calls", 0) for s in found), sum(s.get("usec", 0) for s in found)


def child(checkout: str, crowd: int, records: int, reads: int) -> None:
    """Measure one checkout at one crowd; print µs per call of each of ROWS as JSON."""
    sys.path[:0] = [checkout, str(HERE)]
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from whos_online import presence
    from whos_online.conf import Settings, conf

    try:
        from whos_online.store import counting
    except ImportError:  # a checkout from before the store package (c56ff5b)
        from whos_online import counting  # type: ignore[no-redef]

    call_command("migrate", verbosity=0)
    Settings.max_guests = 2 * crowd + records  # records into the crowd, never a flood
    admin = redis.Redis.from_url(os.environ["REDIS_URL"])
    admin.flushdb()  # this script's own server
    now, guests = time.time(), crowd
    pipe = admin.pipeline(transaction=False)
    for first in range(0, guests, 10_000):
        scored = {f"crowd{i:012d}": now for i in range(first, min(first + 10_000, guests))}
        pipe.zadd(conf.keys().guests, scored)
    pipe.execute()
    presence.prune()  # the peak, as cron keeps it
    for i in range(50):  # the scripts loaded
        presence.record_guest(f"10.200.0.{i}")
        presence.summary()

    def per_call(run: object, times: int) -> float:
        admin.config_resetstat()
        for i in range(times):
            run(i)  # type: ignore[operator]
        calls, usec = script_usec(admin)
        return usec / calls

    record = per_call(
        lambda i: presence.record_guest(f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}"), records
    )
    read = per_call(lambda i: presence.summary(), reads)
    for i in range(MEMBERS):
        presence.record_user(User.objects.get_or_create(username=f"member{i}")[0])
    listed = per_call(lambda i: presence.summary(), reads)
    try:
        hours = counting.hour_buckets("guests", now)
    except TypeError:  # a checkout whose hour buckets are the guests' only
        hours = counting.hour_buckets(now)
    for n, hour in enumerate(hours):  # the crowd spread over the 24 hours
        ids = [f"crowd{i:012d}" for i in range(n, guests, len(hours))]
        for first in range(0, len(ids), 10_000):
            pipe.pfadd(hour, *ids[first : first + 10_000])
    pipe.execute()
    presence.prune()  # as cron would (this branch's prune merges the past hours)
    presence.summary(day=True)
    day = per_call(lambda i: presence.summary(day=True), reads)
    print(json.dumps({"record": record, "read": read, "listed": listed, "day": day}))


def spare_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("checkouts", nargs="+", type=Path)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    port = spare_port()
    directory = tempfile.mkdtemp(prefix="redis_time_")
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", directory],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{port}/0"}
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    try:
        time.sleep(0.5)
        for _ in range(args.rounds):
            for crowd in CROWDS:
                for checkout in args.checkouts:
                    command = [sys.executable, __file__, "--child", str(checkout.resolve()),
                               str(crowd), str(args.records), str(args.reads)]  # fmt: skip
                    out = subprocess.run(command, capture_output=True, text=True, env=env)
                    if out.returncode:
                        sys.exit(out.stderr)
                    measured = json.loads(out.stdout.strip().splitlines()[-1])
                    results.setdefault((str(checkout), crowd), []).append(measured)
    finally:
        server.terminate()  # by its PID: the server this script started
        server.wait()
    print("| Redis time per call (µs, median of rounds; range) | "
          + " | ".join(f"{c:,} online" for c in CROWDS) + " |")  # fmt: skip
    print("|---|" + "---|" * len(CROWDS))
    for what, row in ROWS.items():
        for checkout in args.checkouts:
            cells = []
            for crowd in CROWDS:
                values = [r[what] for r in results[(str(checkout), crowd)]]
                cells.append(
                    f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"
                )
            print(f"| {row}, {checkout} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
