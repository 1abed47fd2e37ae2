"""The benchmark suite: what whos_online costs, against bare Django and two common baselines.

    python3 dev.py bench            # ~3 minutes: rewrites benchmarks/RESULTS.md, docs/benchmarks.png
    python3 dev.py bench --quick    # under a minute, smaller populations, prints only

The method, in one screen:

1. One Django site (bench_settings.py, benchsite.py); a case adds middleware or
   settings to it, nothing else. Requests call Django's handlers directly.
2. Before timing, Redis gets N members and N guests online per N
   (populations.py), and each case is checked once (status 200, the ``online``
   cookie set exactly when recording, the block showing N) and its Redis round
   trips and SQL statements counted.
3. All cases are timed together in interleaved rounds (runner.py): a figure is
   a median over rounds; a ratio is taken within each round, then the median.
4. The questions, one module each: paths.py (a request, throttled and
   recording), block.py (the block, the live poll), populations.py (memory per
   visitor), prune.py (a million stale members). Each gives its table and its
   targets met or missed.

Needs a Redis 6.2+ at REDIS_URL (default redis://127.0.0.1:6379/13). It writes
only keys under ``whos_online_bench:<pid>:`` and deletes them at the end, also on
Ctrl-C; nothing else on the server is touched (no FLUSHDB, no CONFIG SET).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's whos_online, installed or not
os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"

import django  # noqa: E402
import redis  # noqa: E402
from bench_settings import DATABASE_FILE, PREFIX, REDIS_URL  # noqa: E402


@dataclass
class Setup:
    """What the questions build their cases from."""

    loop: asyncio.AbstractEventLoop
    session: dict[str, str]  # a logged-in member's session cookie
    guest_cookies: dict[str, str]  # a recorded guest's: the online cookie
    member_cookies: dict[str, str]  # a recorded member's: the session and online cookies
    onlines: list[int]
    baseline_onlines: list[int]

    @staticmethod
    def prefix(n: int) -> dict[str, Any]:
        return {"WHOS_ONLINE_KEY_PREFIX": f"{PREFIX}:wo{n}"}

    @staticmethod
    def base(n: int) -> str:
        return f"{PREFIX}:baseline{n}"

    def driver(
        self,
        interface: str,
        middleware: list[str],
        cookies: dict[str, str],
        *rest: Any,
        visitors: Any = None,
    ) -> Any:
        from benchsite import Asgi, Wsgi

        if interface == "WSGI":
            return Wsgi(middleware, cookies, *rest, visitors=visitors)
        return Asgi(self.loop, middleware, cookies, *(rest or ("/async/",)), visitors=visitors)

    @staticmethod
    def expect(driver: Any, sets_cookie: bool, body: bytes | None = b"ok") -> Any:
        def check() -> None:
            status, headers, content = driver.response()
            online = online_cookie(headers)
            if (
                status != 200
                or (body is not None and content != body)
                or (online is not None) != sets_cookie
            ):
                raise RuntimeError(
                    f"{status} {headers} {content[:200]!r}: not what the case measures"
                )

        return check


def online_cookie(headers: list[tuple[str, str]]) -> str | None:
    from whos_online.conf import conf

    for name, value in headers:
        if name.lower() == "set-cookie" and value.startswith(f"{conf.cookie_name}="):
            return value.split(";", 1)[0].split("=", 1)[1]
    return None


def prepare(admin: redis.Redis, onlines: list[int], baseline_onlines: list[int]) -> Setup:
    """The member and their session, N people online per N, and the cookies whos_online sets."""
    import paths
    import populations
    from bench_settings import SESSION_AND_AUTH
    from benchsite import Wsgi, create_member
    from django.conf import settings

    from whos_online.conf import conf

    session = {settings.SESSION_COOKIE_NAME: create_member()[0]}
    for n in onlines:
        log(f"filling {n:,} members and guests")
        populations.fill_whos_online(admin, Setup.prefix(n)["WHOS_ONLINE_KEY_PREFIX"], n)
        if n in baseline_onlines:
            populations.fill_baselines(admin, Setup.base(n), n)
    # The online cookie whos_online sets for a guest and for the member, under the key
    # prefix the throttled cases run with.
    cookies = {}
    for who, sent in (("guest", {}), ("member", session)):
        probe = Wsgi([*SESSION_AND_AUTH, paths.WHOS_ONLINE], sent)
        cookies[who] = {**sent, conf.cookie_name: str(online_cookie(probe.response()[1]))}
    loop = asyncio.new_event_loop()
    return Setup(loop, session, cookies["guest"], cookies["member"], onlines, baseline_onlines)


def clean_up(admin: redis.Redis) -> None:
    """Delete this process's keys and database file."""
    keys = list(admin.scan_iter(match=f"{PREFIX}:*", count=1000))
    for start in range(0, len(keys), 500):
        admin.unlink(*keys[start : start + 500])  # freed in the background
    DATABASE_FILE.unlink(missing_ok=True)
    log(f"deleted {len(keys)} keys under {PREFIX}:")


def measure(args: argparse.Namespace, admin: redis.Redis) -> tuple[str, dict[str, Any]]:
    import block
    import paths
    import populations
    import prune
    import runner

    started, load = datetime.now(timezone.utc), [os.getloadavg()[0]]
    onlines = [1_000, 10_000] + ([] if args.quick else [100_000, 1_000_000])
    setup = prepare(admin, onlines, [1_000, 10_000])
    cases = paths.cases(setup) + block.cases(setup)
    log(f"checking {len(cases)} cases and counting their round trips")
    for case in cases:
        runner.count(case)
    log(f"timing: {args.rounds} interleaved rounds of {args.slices} slices per case")
    failures = Failures()  # whos_online fails open: a Redis failure would flatter its figures
    logging.getLogger("whos_online").addHandler(failures)
    runner.run(cases, args.rounds, args.slices, args.slice_ms, args.seed)
    if failures.records:
        raise SystemExit(f"Redis failed during the timing, so run again: {failures.records[0]}")
    load.append(os.getloadavg()[0])
    c = {case.name: case for case in cases}
    memory_n = 1_000 if args.quick else 10_000
    log(f"recording {memory_n:,} guests and members for their memory")
    guest, member = populations.bytes_per_visitor(admin, f"{PREFIX}:memory", memory_n)
    log("pruning")
    pruned = prune.run(admin, f"{PREFIX}:prune", 100_000 if args.quick else 1_000_000)
    request_targets, requests = paths.report(c)
    server = {n: block.server_us(admin, Setup.prefix(n)) for n in onlines}
    block_targets, blocks = block.report(c, onlines, server)
    seconds = (datetime.now(timezone.utc) - started).total_seconds()
    memory_target = [
        "Memory per guest and per member reported",
        f"{guest:,.0f} B per guest, {member:,.0f} B per member (at {memory_n:,} each)",
        "met",
    ]
    text = "\n".join(
        [
            "# Benchmarks",
            "",
            "What whos_online costs, against the same Django site without it and two common ways of doing",
            '"who\'s online" (`baselines.py`), on a real Redis. Written by `benchmarks/run.py`',
            "(`python3 dev.py bench`); the method is its docstring.",
            "",
            f"## Results of {started:%Y-%m-%d %H:%M} UTC",
            "",
            f"{len(cases)} cases timed in {args.rounds} interleaved rounds of {args.slices} slices each "
            f"(about {args.slice_ms:g} ms per slice, seed {args.seed}); the run took {seconds / 60:.1f} minutes. "
            f"The machine is shared with other agents' jobs ({os.cpu_count()} vCPUs, 1-minute load "
            f"{load[0]:.1f} at the start, {load[-1]:.1f} after the timing): compare figures within this run, "
            "and trust the ratios, taken within each round, over absolute times. A case's figure "
            "in a round is its fastest slice; a ratio is the median over rounds, its range in brackets.",
            "",
            "## Targets",
            "",
            *runner.table(
                ["Target", "Measured", ""], request_targets + block_targets + [memory_target], "---"
            ),
            *requests,
            '*bare*: SessionMiddleware + AuthenticationMiddleware and a view returning "ok". '
            "*throttled*: with a valid `online` cookie. *recording*: without, so the visitor is written "
            "(a guest from an address already online: the population stays at N). "
            "The baselines have no throttle: every request pays the row's cost.",
            "",
            *blocks,
            "## Redis memory per visitor",
            "",
            f"{guest:,.0f} bytes per guest, {member:,.0f} bytes per member: `MEMORY USAGE` of every key "
            f"after {memory_n:,} of each were recorded by `presence.record_guest` / `record_user`, divided by {memory_n:,}.",
            "",
            *pruned,
            "## Measured apart",
            "",
            "[README.md](README.md) says which script answers which question; "
            "[BEFORE_AFTER.md](BEFORE_AFTER.md) (`compare.py`) times two checkouts side by "
            "side: a change's cost.",
            "",
            "## Machine",
            "",
            f"whos_online {commit()}, Python {platform.python_version()}, Django {django.get_version()}, "
            f"redis-py {redis.__version__} (hiredis {version('hiredis')} for the rows marked so), "
            f"Redis {admin.info('server')['redis_version']} at {REDIS_URL}, {platform.platform()}.",
            "",
        ]
    )
    return text, c


def commit() -> str:
    git = ["git", "-C", str(HERE), "describe", "--always", "--dirty"]
    return subprocess.run(git, capture_output=True, text=True).stdout.strip() or "(no git)"


class Failures(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="small populations, few rounds, prints only"
    )
    parser.add_argument(
        "--no-write", action="store_true", help="print, leave RESULTS.md and the plot alone"
    )
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--slices", type=int)
    parser.add_argument("--slice-ms", type=float)
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(1_000_000))
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (4 if args.quick else 15)
    args.slices = args.slices or (2 if args.quick else 8)
    args.slice_ms = args.slice_ms or (3.0 if args.quick else 8.0)
    django.setup()
    signal.signal(signal.SIGTERM, interrupted)  # both end the run through the clean-up below
    signal.signal(signal.SIGINT, interrupted)
    admin = redis.Redis.from_url(REDIS_URL, socket_timeout=120)
    try:
        text, cases = measure(args, admin)
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        clean_up(admin)
    print(text)
    if not (args.quick or args.no_write):
        from plot import plot

        (HERE / "RESULTS.md").write_text(text, encoding="utf-8")
        title = f"whos_online benchmarks, {datetime.now(timezone.utc):%Y-%m-%d}: medians of {args.rounds} interleaved rounds on a shared 2-vCPU machine"
        plot(cases, title, HERE.parent / "docs" / "benchmarks.png")
        log("wrote benchmarks/RESULTS.md and docs/benchmarks.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
