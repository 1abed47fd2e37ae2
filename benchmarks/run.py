"""The benchmark suite: whos_online against bare Django and two common baselines, in one run.

    python3 dev.py bench            # full run, 4-7 minutes: rewrites benchmarks/RESULTS.md
                                    # and docs/benchmarks.png
    python3 dev.py bench --quick    # smoke run, ~1 minute, smaller populations: prints only
    python3 dev.py bench --help     # rounds, slices, populations, ...

Needs a Redis 6.2+ at REDIS_URL (default redis://127.0.0.1:6379/13). Everything
it writes is under ``whos_online_bench:<pid>:`` and is deleted at the end, also
on Ctrl-C; nothing else on the server is touched (no FLUSHDB, no CONFIG SET).

Steps: fill the populations (N members and N guests online per implementation
and N) and read their memory; count round trips and check every case once;
warm up and size the slices; time all cases in interleaved rounds; then the
prune runs on a million stale members; then write the report and the plot.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import random
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Callable

os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"

import django  # noqa: E402
import harness  # noqa: E402
import prune  # noqa: E402
import redis  # noqa: E402
import report  # noqa: E402
from bench_settings import DATABASE_FILE, PREFIX, REDIS_URL, WHOS_ONLINE_MAX_AGE  # noqa: E402
from benchsite import create_member  # noqa: E402
from cases import (  # noqa: E402
    AsgiRunner,
    Site,
    WsgiRunner,
    cache_dict_key,
    naive_base,
    online_tokens,
    redis_cases,
    render_cases,
    request_cases,
    whos_online_prefix,
)
from django.conf import settings  # noqa: E402
from populations import Stored, fill_cache_dict, fill_naive, fill_whos_online  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS_FILE = HERE / "RESULTS.md"
PLOT_FILE = HERE.parent / "docs" / "benchmarks.png"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="small populations, few rounds; does not write files")
    add(
        "--no-write",
        action="store_true",
        help="print the report, leave RESULTS.md and the plot alone",
    )
    add("--rounds", type=int, help="interleaved rounds (default 15, quick 3)")
    add("--slices", type=int, help="slices per case per round (default 16, quick 4)")
    add("--slice-ms", type=float, default=8.0, help="target duration of one slice (default 8)")
    add(
        "--count",
        type=int,
        default=32,
        help="operations per case in the counting pass (default 32)",
    )
    add("--prune-stale", type=int, help="stale members to prune (default 1000000, quick 100000)")
    add("--prune-repeats", type=int, help="runs of whos_online_prune (default 3, quick 1)")
    add("--seed", type=int, help="shuffle seed (default: random)")
    args = parser.parse_args(argv)
    quick = args.quick
    args.rounds = args.rounds or (3 if quick else 15)
    args.slices = args.slices or (4 if quick else 16)
    args.prune_stale = args.prune_stale or (100_000 if quick else 1_000_000)
    args.prune_repeats = args.prune_repeats or (1 if quick else 3)
    args.seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    args.render_online = [1_000, 10_000, 100_000] + ([] if quick else [1_000_000])
    args.recording_online = [args.render_online[0], args.render_online[1], args.render_online[-1]]
    args.baseline_online = [1_000, 10_000]
    args.write = not (quick or args.no_write)
    for name in ("rounds", "slices", "count", "prune_stale", "prune_repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


class Failures(logging.Handler):
    """whos_online's failure log: a Redis failure means whos_online skipped Redis (fail-open)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        log(f"whos_online logged: {record.getMessage()}")

    def take(self) -> str | None:
        """The first failure since the last call, and a fresh start for whos_online."""
        from whos_online import failsafe

        if not self.records:
            return None
        message = self.records[0].getMessage()
        self.records.clear()
        failsafe.breaker.reset()
        return message


class LoadSampler(threading.Thread):
    """The 1-minute load average every few seconds: how busy the shared machine was meanwhile."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(5.0):
            self.samples.append(os.getloadavg()[0])


def measure(args: argparse.Namespace, admin: redis.Redis) -> report.Results:
    started, began = datetime.now(timezone.utc), time.perf_counter()
    load = LoadSampler()
    load.start()
    failures = Failures()
    logging.getLogger("whos_online").addHandler(failures)

    session_key, _ = create_member()
    ttl = 2 * WHOS_ONLINE_MAX_AGE
    stored: list[Stored] = []
    for n in args.render_online:
        log(f"filling whos_online with {n:,} members and guests")
        stored += fill_whos_online(admin, whos_online_prefix(n), n, ttl)
    for n in args.baseline_online:
        log(f"filling the baselines with {n:,} members and guests")
        stored += fill_naive(admin, naive_base(n), n, ttl)
        stored += fill_cache_dict(admin, cache_dict_key(n), n, ttl)

    session = {settings.SESSION_COOKIE_NAME: session_key}
    tokens = online_tokens(
        session, {"WHOS_ONLINE_KEY_PREFIX": whos_online_prefix(args.render_online[0])}
    )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    def requests(group: str, runner: Callable[[Site], harness.Runner]) -> list[harness.Case]:
        return request_cases(
            group, runner, session, tokens, args.recording_online, args.baseline_online
        )

    cases = [
        *requests("WSGI", WsgiRunner),
        *requests("ASGI", lambda site: AsgiRunner(site, loop)),
        *render_cases(args.render_online, args.baseline_online),
        *redis_cases(args.recording_online[1]),
    ]
    log(f"counting round trips and checking {len(cases)} cases")
    harness.count(cases, args.count)
    log("warming up")
    harness.calibrate(cases, args.slice_ms)
    if (failure := failures.take()) is not None:
        raise SystemExit(f"Redis failed while warming up: {failure}")
    # Everything built so far lives for the whole run: out of the collector's way, so the
    # collection before each slice is cheap and every slice starts alike.
    gc.collect()
    gc.freeze()
    log(f"timing {len(cases)} cases: {args.rounds} rounds of {args.slices} slices each")
    dropped = harness.run_rounds(cases, args.rounds, args.slices, args.seed, failures.take)
    gc.unfreeze()
    loop.close()
    log("deleting the populations")
    delete_keys(admin)
    log(f"pruning {args.prune_stale:,} stale members")
    pruned = prune.run(admin, args.prune_stale, args.prune_repeats)
    load.stopped.set()
    return report.Results(
        cases=cases,
        stored=stored,
        prune=pruned,
        started=started,
        seconds=time.perf_counter() - began,
        args=vars(args),
        dropped=dropped,
        machine=report.machine(admin),
        load=load.samples,
    )


def delete_keys(admin: redis.Redis) -> int:
    """UNLINK (freed in the background: a million-member set does not block Redis) our keys only."""
    deleted = 0
    batch: list[bytes] = []
    for key in admin.scan_iter(match=f"{PREFIX}:*", count=1000):
        batch.append(key)
        if len(batch) == 500:
            deleted += admin.unlink(*batch)
            batch.clear()
    if batch:
        deleted += admin.unlink(*batch)
    return deleted


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    django.setup()
    # Both end the run through the clean-up below (SIGINT too: a background job may inherit it ignored).
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    admin = redis.Redis.from_url(REDIS_URL, socket_timeout=120)
    version = str(admin.info("server")["redis_version"])
    if tuple(map(int, version.split(".")[:2])) < (6, 2):
        raise SystemExit(f"Redis {version} at {REDIS_URL}: whos_online needs 6.2 or later")
    try:
        results = measure(args, admin)
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        deleted = delete_keys(admin)
        DATABASE_FILE.unlink(missing_ok=True)
        log(f"deleted {deleted} keys under {PREFIX}: at {REDIS_URL}")
    text = report.render(results)
    print(text)
    if args.write:
        RESULTS_FILE.write_text(text, encoding="utf-8")
        report.plot(results, PLOT_FILE)
        log(f"wrote {RESULTS_FILE} and {PLOT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
