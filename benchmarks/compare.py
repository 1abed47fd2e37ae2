"""Before and after: two checkouts of whos_online timed side by side in one run.

    git worktree add --detach /work/wt/before 2d26913         # the checkout to compare against
    .venv/bin/python benchmarks/compare.py /work/wt/before          # ~2 minutes; writes BEFORE_AFTER.md
    .venv/bin/python benchmarks/compare.py /work/wt/before --print  # prints only
    .venv/bin/python benchmarks/compare.py /work/wt/before --clock cpu  # on a busy machine
    .venv/bin/python benchmarks/compare.py /work/wt/before --after ../other  # another "after"

It answers issue 49's questions of speed, against the other checkout:

- **The throttled request** (a visitor holding a valid "online" cookie) against a
  bare page (SessionMiddleware and AuthenticationMiddleware, a view returning "ok",
  no whos_online) receiving the same cookies: ≤ 1.05×.
- **A new visitor's record**, a guest from an address never seen and a member never
  recorded, each request another: no slower than before, by wall time.
- **The forum page** (forum.py) with the block against the same page without it, for
  the visitor's own pages: the 75/5/20 mix (a guest with the cookie, a member on a
  live page, newcomers in a burst) and a returning guest ≤ 1.10×; a newcomer's own
  page ≤ 2.5× (newcomers one by one, so each may read afresh).

The requests call Django's WSGIHandler directly (benchsite.py); the forum pages go
through the test client. whos_online is driven only through its middleware, its
template tag and ``whos_online.presence``, so any checkout that keeps those serves.

Two processes, one per checkout, each building the same site at 1,000 members and
1,000 guests online (REDIS_URL, default db 13, keys under ``whos_online_bench:<pid>:``,
deleted at the end). Each round shuffles every (checkout, case, slice) into one order
and has the process that owns a slice time it, so both checkouts see the same machine:
8 slices of about 8 ms per request case, one slice of 40 pages per forum case. A
case's figure in a round is its fastest slice; a ratio is taken within a round (×
bare within one process, after ÷ before across the two) and reported as the median
over rounds, its range in brackets. With ``--clock cpu`` a slice is timed by the
process's CPU time instead of the wall clock: other jobs preempting the process do not
count, nor does waiting for Redis (whose own time benchmarks/redis_time.py measures).
Two copies of one checkout agreed within 0.05 on every ratio at a load of 2-4 on two
cores; above that the forum rows' ranges widen past their targets' margins: wait for a
quiet machine, or give more ``--rounds``.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import time
from contextlib import nullcontext
from datetime import datetime, timezone
from logging.handlers import BufferingHandler
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROUNDS, SLICES, SLICE_MS = 15, 8, 8.0  # a request case's slices a round, of about SLICE_MS
PAGE_SLICES, PAGES = 1, 40  # a forum case's slices a round, of PAGES pages
COOKIE = "online"  # whos_online's cookie, by default
MIX = {"guest with the cookie": 75, "member on a live page": 5, "newcomers, 40 at a time": 20}
RETURNING = "returning guest (cookie expired, inside the window)"
NEWCOMER = "a newcomer's own page (one by one)"


# What a slice is timed by: wall time, or this process's CPU time (user and system), which
# other jobs on a busy machine do not change, but which leaves out waiting for Redis.
CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.process_time_ns}


def child(checkout: str, clock: str) -> None:
    """Build the cases on ``checkout``'s whos_online, then time the slices asked on stdin."""
    sys.path[:0] = [str(HERE), checkout]
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"
    import django

    django.setup()
    import whos_online

    if not str(whos_online.__file__).startswith(checkout):
        raise SystemExit(f"whos_online came from {whos_online.__file__}, not {checkout}")
    import forum
    import redis
    import runner
    from bench_settings import DATABASE_FILE, PREFIX, REDIS_URL
    from django.core.management import call_command
    from django.test.utils import override_settings

    override_settings(**forum.SITE).enable()
    warnings = BufferingHandler(capacity=10**6)  # whos_online fails open: a Redis
    warnings.setLevel(logging.WARNING)  # failure would flatter its figures
    logging.getLogger("whos_online").addHandler(warnings)
    admin = redis.Redis.from_url(REDIS_URL)
    try:
        call_command("migrate", verbosity=0)
        forum.populate()
        cases = request_cases() + page_cases()
        for case in cases:
            runner.count(case)
            if ": " not in case.name:  # a request case; a forum case's slice is PAGES pages
                runner.size(case, SLICE_MS)
        header = {
            "trips": {case.name: case.trips for case in cases},
            "slices": {case.name: PAGE_SLICES if ": " in case.name else SLICES for case in cases},
            "uncapped": forum.caps(),
        }
        print(json.dumps(header), flush=True)
        gc.collect()
        gc.freeze()
        for line in sys.stdin:
            case = cases[int(line)]
            ns = case.time(case.slice_size, CLOCKS[clock])
            print(ns / case.slice_size / 1000, flush=True)
        print(json.dumps([record.getMessage() for record in warnings.buffer]), flush=True)
    finally:
        keys = list(admin.scan_iter(match=f"{PREFIX}:*", count=1000))
        for start in range(0, len(keys), 500):
            admin.unlink(*keys[start : start + 500])
        DATABASE_FILE.unlink(missing_ok=True)


def request_cases() -> list[Any]:
    """Bare pages, throttled visitors and new visitors, through Django's WSGIHandler."""
    import forum
    from bench_settings import SESSION_AND_AUTH
    from benchsite import Wsgi, create_member, new_guests, new_members
    from django.conf import settings
    from runner import Case

    session = {settings.SESSION_COOKIE_NAME: create_member()[0]}
    guest = {COOKIE: online_cookie(Wsgi(forum.MIDDLEWARE).response())}
    member = {**session, COOKIE: online_cookie(Wsgi(forum.MIDDLEWARE, session).response())}

    def case(name: str, middleware: list[str], cookies: Any = {}, visitors: Any = None) -> Case:
        driver = Wsgi(middleware, cookies, visitors=visitors)

        def check() -> None:
            response = driver.response()
            recorded = online_cookie(response) is not None
            if response[:3:2] != (200, b"ok") or recorded != name.startswith("recording"):
                raise RuntimeError(f"{name}: {response}: not what the case measures")

        return Case(name, driver, check=check)

    bare, whos = SESSION_AND_AUTH, forum.MIDDLEWARE
    return [
        case("bare", bare),
        case("bare again", bare),
        case("bare, a guest's cookies", bare, guest),
        case("bare, a member's cookies", bare, member),
        case("throttled guest", whos, guest),
        case("throttled member", whos, member),
        case("recording a new guest", whos, visitors=new_guests()),
        case("recording a new member", whos, visitors=new_members(5_000)),
    ]


def online_cookie(response: tuple[int, list[tuple[str, str]], bytes]) -> str | None:
    for name, value in response[1]:
        if name == "Set-Cookie" and value.startswith(f"{COOKIE}="):
            return value.split(";", 1)[0].split("=", 1)[1]
    return None


def page_cases() -> list[Any]:
    """Each visitor's forum page without the block and with it, PAGES pages a slice."""
    import forum
    from runner import Case

    visitors = {
        "guest with the cookie": (forum.cookie_guest, nullcontext),
        "member on a live page": (forum.live_member, nullcontext),
        "newcomers, 40 at a time": (forum.newcomer, nullcontext),
        RETURNING: (forum.returning_guest, nullcontext),
        NEWCOMER: (forum.newcomer, forum.uncapped),
    }
    cases = []
    for visitor, (make, context) in visitors.items():
        page = make()
        for block, url in (("without", "/forum/"), ("with", "/forum/block/")):

            def run(n: int, page: Any = page, url: str = url, context: Any = context) -> None:
                with context():
                    for _ in range(n):
                        page(url)

            def check(page: Any = page, url: str = url) -> None:
                if page(url).status_code != 200:
                    raise RuntimeError(f"{url}: not a page")

            name = f"{visitor}: {block} the block"
            cases.append(Case(name, run, forum.PAGE_SETTINGS, check, slice_size=PAGES))
    return cases


class Checkout:
    """A child process timing one checkout's cases."""

    def __init__(self, label: str, path: Path, clock: str) -> None:
        self.label, self.commit = label, commit(path)
        command = [sys.executable, __file__, "--child", str(path), clock]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def start(self) -> None:
        """Wait until the child has built its cases."""
        header = json.loads(self.readline())
        self.trips: dict[str, float] = header["trips"]
        self.slices: dict[str, int] = header["slices"]
        self.uncapped: list[str] = header["uncapped"]
        self.names = list(self.trips)
        self.us: dict[str, list[float]] = {name: [] for name in self.names}

    def readline(self) -> str:
        return self.process.stdout.readline()  # type: ignore[union-attr]

    def time(self, name: str) -> float:
        self.process.stdin.write(f"{self.names.index(name)}\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return float(self.readline())

    def close(self) -> list[str]:
        """End the child; the warnings whos_online logged while it timed."""
        self.process.stdin.close()  # type: ignore[union-attr]
        last = self.readline()
        self.process.wait()
        return json.loads(last) if last else ["the child died"]


def figure(values: list[float], spec: str = ".3f") -> str:
    return f"{statistics.median(values):{spec}} ({min(values):{spec}}–{max(values):{spec}})"


def over(a: list[float], b: list[float]) -> list[float]:
    return [x / y for x, y in zip(a, b)]


def target(label: str, limit: float, values: list[float], spec: str = ".3f") -> list[str]:
    """A target's row: its figure before and after, and whether after meets it."""
    met = "met" if values[1] <= limit else "**missed**"
    return [f"{label} ≤ {limit:g}", *(f"{v:{spec}}" for v in values), met]


def report(before: Checkout, after: Checkout, header: str) -> str:
    sides = (before, after)

    def median(side: Checkout, name: str) -> float:
        return statistics.median(side.us[name])

    def page(side: Checkout, visitor: str) -> list[float]:
        return over(side.us[f"{visitor}: with the block"], side.us[f"{visitor}: without the block"])

    def mix(side: Checkout) -> float:
        with_ = sum(w * median(side, f"{v}: with the block") for v, w in MIX.items())
        return with_ / sum(w * median(side, f"{v}: without the block") for v, w in MIX.items())

    targets = []
    for who in ("guest", "member"):
        throttled, bare = f"throttled {who}", f"bare, a {who}'s cookies"
        values = [statistics.median(over(s.us[throttled], s.us[bare])) for s in sides]
        targets.append(target(f"Throttled {who} ÷ bare with the same cookies", 1.05, values))
    for who in ("guest", "member"):
        name = f"recording a new {who}"
        ratio = statistics.median(over(after.us[name], before.us[name]))
        targets.append(
            target(f"A new {who}'s record, after ÷ before (noise: 2%)", 1.02, [1, ratio])
        )
    label = "Forum page with ÷ without the block"
    targets.append(target(f"{label}, the 75/5/20 mix", 1.10, [mix(s) for s in sides], ".2f"))
    for visitor, limit in ((RETURNING, 1.10), (NEWCOMER, 2.5)):
        values = [statistics.median(page(s, visitor)) for s in sides]
        targets.append(target(f"{label}, {visitor}", limit, values, ".2f"))

    requests = []
    for name in [n for n in after.names if ": " not in n]:
        row = [name]
        for side in sides:
            row += [f"{median(side, name):,.0f}", figure(over(side.us[name], side.us["bare"]))]
        row.append(figure(over(after.us[name], before.us[name])))
        requests.append(row + [" / ".join(f"{s.trips[name]:g}" for s in sides)])
    pages = []
    for visitor in [n.split(": ")[0] for n in after.names if n.endswith(": with the block")]:
        row = [visitor]
        for side in sides:
            without, with_ = (f"{visitor}: {w} the block" for w in ("without", "with"))
            row += [f"{median(side, without):,.0f}", f"{median(side, with_):,.0f}"]
            row += [figure(page(side, visitor), ".2f")]
            row += [f"{side.trips[without]:.3g} / {side.trips[with_]:.3g}"]
        pages.append(row)
    lifted = "; ".join(f"{s.label}: {', '.join(s.uncapped) or 'no cap found'}" for s in sides)
    return "\n".join([
        "# Before and after, timed side by side",
        "",
        header,
        "",
        *table(["Target", f"before ({before.commit})", f"after ({after.commit})", ""], targets, "---"),
        "## Requests",
        "",
        *table(["Request", "before µs", "before × bare", "after µs", "after × bare",
                "after ÷ before", "Redis round trips before / after"], requests),
        '*bare*: SessionMiddleware and AuthenticationMiddleware, a view returning "ok", no '
        "whos_online. *throttled*: with a valid `online` cookie. *recording a new guest / "
        "member*: each request another visitor, never recorded before.",
        "",
        "## The forum page, with the block ÷ without it",
        "",
        *table(["Visitor", "before without µs", "before with µs", "before ratio",
                "before round trips a page, without / with", "after without µs",
                "after with µs", "after ratio", "after round trips a page, without / with"], pages),
        "The mix weighs the medians of its three visitors' pages 75/5/20. For a newcomer's own "
        f"page, `forum.uncapped` lifts the cap on a process's fresh reads a second in {lifted}.",
        "",
    ])  # fmt: skip


def table(header: list[str], rows: list[list[str]], align: str = "---:") -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|---" + f"|{align}" * (len(header) - 1) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows] + [""]


def commit(path: Path) -> str:
    """The checkout's commit, or its directory's name if it is no git checkout."""
    git = ["git", "-C", str(path), "describe", "--always", "--dirty"]
    return subprocess.run(git, capture_output=True, text=True).stdout.strip() or path.name


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("before", type=Path, help="the other checkout (its root)")
    parser.add_argument("--after", type=Path, default=HERE.parent, help="default: this one")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--clock", choices=CLOCKS, default="wall", help="see CLOCKS")
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(1_000_000))
    parser.add_argument("--print", action="store_true", help="print, leave BEFORE_AFTER.md alone")
    args = parser.parse_args()
    started, load = time.monotonic(), [os.getloadavg()[0]]
    if load[0] > (os.cpu_count() or 1):
        print(f"Load {load[0]:.1f}: a few percent is noise now (try --clock cpu)", file=sys.stderr)
    before = Checkout("before", args.before.resolve(), args.clock)
    after = Checkout("after", args.after.resolve(), args.clock)
    sides = (before, after)
    try:
        for side in sides:
            side.start()
        if before.names != after.names:
            raise SystemExit(f"the checkouts' cases differ: {before.names} / {after.names}")
        rng = random.Random(args.seed)
        for number in range(1, args.rounds + 1):
            order = [(s, n) for s in sides for n in s.names for _ in range(s.slices[n])]
            rng.shuffle(order)
            sliced: dict[tuple[str, str], list[float]] = {}
            for side, name in order:
                sliced.setdefault((side.label, name), []).append(side.time(name))
            for side in sides:
                for name in side.names:
                    side.us[name].append(min(sliced[side.label, name]))
            print(f"round {number}/{args.rounds}", file=sys.stderr, flush=True, end="\r")
    finally:
        warnings = [w for side in sides for w in side.close()]
    if warnings:
        raise SystemExit(f"whos_online logged {len(warnings)} warnings; run again: {warnings[:3]}")
    load.append(os.getloadavg()[0])
    header = (
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by "
        f"`python benchmarks/compare.py <checkout of {before.commit}>` (its docstring has the "
        f"method): before is {before.commit}, after is {after.commit}; {args.rounds} rounds, "
        f"seed {args.seed}, timed by {args.clock} clock (`--clock`), at 1,000 members and "
        "1,000 guests online; the run took "
        f"{(time.monotonic() - started) / 60:.1f} minutes, 1-minute load {load[0]:.1f} at the "
        f"start and {load[1]:.1f} at the end ({os.cpu_count()} vCPUs shared with other jobs: "
        "trust the ratios, taken within each round, over the absolute times)."
    )
    text = report(before, after, header)
    print(text)
    if not args.print:
        (HERE / "BEFORE_AFTER.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(str(Path(sys.argv[2]).resolve()), sys.argv[3])
    else:
        main()
