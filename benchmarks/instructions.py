"""Instructions per request, counted by callgrind: the throttled path without the machine's noise.

    .venv/bin/python benchmarks/instructions.py   # about 10 minutes; rewrites benchmarks/INSTRUCTIONS.md
    .venv/bin/python benchmarks/instructions.py --before ../other-checkout   # twice as long

On a shared machine timing cannot tell 1% apart: two identical bare cases land
±10% from each other within one round (RESULTS.md). valgrind's callgrind counts
the instructions a process runs, the same on every run whatever else the machine
does. Each case runs in two fresh processes under callgrind, one making 0 and one
N requests after the same set-up and warm-up; the difference ÷ N is the case's
instructions per request. Every process first records one guest, so each loads
the same modules (a larger heap makes each garbage collection dearer), and runs
with PYTHONHASHSEED=0: with its own hash seed each laid dicts out differently,
and counts wandered by a few thousand from run to run. After the warm-up the
heap is frozen (``gc.freeze()``): a full collection walks every object of the
process, so whether one fell within the N requests moved a case by thousands of
instructions per request; young-object collections still count.

With ``--before`` every case is also counted on another checkout's whos_online
(the same benchmark code, the other package), in columns of its own: a change's
cost before and after, in instructions.

Needs valgrind, the bench's packages (after ``python3 dev.py bench``) and a Redis
at REDIS_URL (as run.py); each process deletes its keys and database file.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from paths import HIREDIS, WHOS_ONLINE

HERE = Path(__file__).resolve().parent
REQUESTS = 1000
BARE = "bare, a guest's cookies"
CASES = {
    # name: (middleware after SessionMiddleware + AuthenticationMiddleware, cookies, settings)
    BARE: ([], "guest", {}),
    "a do-nothing middleware": (["benchsite.PassThroughMiddleware"], "guest", {}),
    "throttled guest": ([WHOS_ONLINE], "guest", {}),
    "bare + one Redis PING": (["benchsite.PingMiddleware"], None, {}),
    "bare + RECORD's Redis call alone": (["benchsite.RecordCallMiddleware"], None, {}),
    "recording guest": ([WHOS_ONLINE], None, {}),
    "bare + one Redis PING, hiredis": (["benchsite.PingMiddleware"], None, HIREDIS),
    "recording guest, hiredis": ([WHOS_ONLINE], None, HIREDIS),
}


def child(case: str, n: int, checkout: str) -> None:
    """Set up as every case does, then make n requests of ``case`` on ``checkout``'s whos_online."""
    sys.path.insert(0, checkout)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"
    import django

    django.setup()
    import redis

    import whos_online

    if not str(whos_online.__file__).startswith(checkout):
        raise SystemExit(f"whos_online came from {whos_online.__file__}, not {checkout}")
    from bench_settings import DATABASE_FILE, PREFIX, REDIS_URL, SESSION_AND_AUTH
    from benchsite import Wsgi, create_member
    from django.test.utils import override_settings

    create_member()
    try:
        _, headers, _ = Wsgi([*SESSION_AND_AUTH, WHOS_ONLINE]).response()
        online = next(v for k, v in headers if k == "Set-Cookie").split(";")[0].split("=", 1)
        middleware, cookies, settings = CASES[case]
        override_settings(**settings).enable()
        send = Wsgi([*SESSION_AND_AUTH, *middleware], dict([online]) if cookies else {})
        send(300)
        gc.collect()
        gc.freeze()
        send(n)
    finally:
        admin = redis.Redis.from_url(REDIS_URL)
        for key in admin.scan_iter(f"{PREFIX}:*"):
            admin.delete(key)
        DATABASE_FILE.unlink(missing_ok=True)


def collected(case: str, n: int, checkout: Path) -> int:
    """The instructions a process running ``child(case, n, checkout)`` executes in all."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
        + [sys.executable, __file__, "--child", case, str(n), str(checkout)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts in every process
    )
    return int(re.search(r"Collected : (\d+)", done.stderr)[1])  # type: ignore[index]


def per_request(case: str, checkout: Path) -> float:
    return (collected(case, REQUESTS, checkout) - collected(case, 0, checkout)) / REQUESTS


def counted(checkout: Path, cases: list[str]) -> dict[str, float]:
    """Each of ``cases``' instructions per request on ``checkout``'s whos_online."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(cases, pool.map(per_request, cases, [checkout] * len(cases))))


def describe(checkout: Path) -> str:
    git = ["git", "-C", str(checkout), "describe", "--always", "--dirty"]
    return subprocess.run(git, capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("--before", type=Path, help="another checkout to count beside this one")
    parser.add_argument(
        "--only", nargs="+", choices=CASES, help="count these cases (and bare) and print, no file"
    )
    args = parser.parse_args()
    started, load = datetime.now(timezone.utc), os.getloadavg()[0]
    cases = list(CASES) if args.only is None else list(dict.fromkeys([BARE, *args.only]))
    counts = counted(HERE.parent, cases)
    bare = counts[BARE]
    header, rows = ["Request", "Instructions", "× bare"], []
    for case, count in counts.items():
        rows.append([case, f"{count:,.0f}", f"{count / bare:.3f}"])
    if args.before:
        args.before = args.before.resolve()
        before = counted(args.before, cases)
        header = [
            "Request",
            f"Instructions ({describe(HERE.parent)})",
            "× bare",
            f"Before ({describe(args.before)})",
            "× bare",
            "After ÷ before",
        ]
        for row, case in zip(rows, cases):
            old = before[case]
            row += [f"{old:,.0f}", f"{old / before[BARE]:.3f}", f"{counts[case] / old:.3f}"]
    text = "\n".join(
        [
            "# Instructions per request",
            "",
            f"Counted {started:%Y-%m-%d %H:%M} UTC by callgrind (`{Path(__file__).name}`, its "
            f"docstring has the method; 1-minute load {load:.1f}, which counts do not depend on): "
            f"{REQUESTS:,} WSGI requests per case. The throttled guest sends a valid "
            "`online` cookie; the bare site and the do-nothing middleware get the same cookies. "
            "Redis commands are packed and replies parsed by redis-py's own code, by hiredis's "
            "in the rows marked so."
            + (
                " Before: the same benchmark, counted on the other checkout's whos_online."
                if args.before
                else ""
            ),
            "",
            "| " + " | ".join(header) + " |",
            "|---" + "|---:" * (len(header) - 1) + "|",
            *("| " + " | ".join(row) + " |" for row in rows),
            "",
        ]
    )
    if args.only is None:
        (HERE / "INSTRUCTIONS.md").write_text(text)
    print(text)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
