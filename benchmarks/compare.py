"""Before and after: the request rows of two checkouts of whos_online, timed in one run.

    git worktree add ../before c56ff5b                   # the checkout to compare against
    # or an export named by its commit: mkdir ../c56ff5b && git archive c56ff5b | tar -x -C ../c56ff5b
    .venv/bin/python benchmarks/compare.py ../before     # ~2 minutes; rewrites BEFORE_AFTER.md
    .venv/bin/python benchmarks/compare.py ../before --print   # prints only

Two processes, each running this checkout's benchmark (run.py's set-up, paths.py's
request cases at 1,000 online) on one checkout's whos_online: ``before`` (the
checkout given) and ``after`` (this one). Each round shuffles the slices of every
case of both into one order and has the process that owns a slice time it, as
runner.py does within one process, so both checkouts see the same machine slice
by slice. A figure is a case's fastest slice in a round, median over rounds;
"× bare" is taken within each process and round, "after ÷ before" between the
two processes within each round. Besides paths.py's rows, a new guest and a new
member per request (``paths.new_visitor_cases``). An older checkout works as long
as it serves this benchmark site: c56ff5b, from before the ``store`` package, does
(``benchsite.store`` finds its modules at the top). Needs what run.py needs; each
process writes only its own keys and deletes them at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

HERE = Path(__file__).resolve().parent
ROUNDS, SLICES, SLICE_MS = 15, 8, 8.0


def child(checkout: str) -> None:
    """Build the cases on ``checkout``'s whos_online, then time the slices asked on stdin."""
    import gc

    import run  # this checkout's benchmark; it puts this checkout first on sys.path
    import runner

    sys.path.insert(0, checkout)  # ...and the whos_online timed comes from ``checkout``
    run.django.setup()
    import paths

    import whos_online

    if not whos_online.__file__ or not whos_online.__file__.startswith(checkout):
        raise SystemExit(f"whos_online came from {whos_online.__file__}, not {checkout}")
    admin = run.redis.Redis.from_url(run.REDIS_URL, socket_timeout=120)
    try:
        setup = run.prepare(admin, [1_000], [])
        cases = paths.cases(setup) + paths.new_visitor_cases(setup)
        for case in cases:
            runner.count(case)
            runner.size(case, SLICE_MS)
        print(json.dumps({c.name: [c.trips, c.queries] for c in cases}), flush=True)
        gc.collect()
        gc.freeze()
        for line in sys.stdin:
            case = cases[int(line)]
            print(case.time(case.slice_size) / case.slice_size / 1000, flush=True)
    finally:
        run.clean_up(admin)


class Checkout:
    """A child process timing one checkout's cases."""

    def __init__(self, label: str, path: Path) -> None:
        self.label = label
        command = [sys.executable, __file__, "--child", str(path)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        self.stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        self.counts: dict[str, list[float]] = json.loads(self.stdout.readline())
        self.names = list(self.counts)
        self.us: dict[str, list[float]] = {name: [] for name in self.names}

    def time(self, name: str) -> float:
        self.stdin.write(f"{self.names.index(name)}\n")
        self.stdin.flush()
        return float(self.stdout.readline())

    def close(self) -> None:
        self.stdin.close()
        self.process.wait()


def figure(values: list[float], spec: str) -> str:
    return f"{statistics.median(values):{spec}} ({min(values):{spec}}–{max(values):{spec}})"


def over(a: list[float], b: list[float]) -> list[float]:
    return [x / y for x, y in zip(a, b)]


def report(before: Checkout, after: Checkout, seed: int, load: list[float], base: str) -> str:
    """The table, and each checkout's throttled-path ratios against bare with the same cookies."""
    rows = []
    for name in before.names:
        interface = name.split(": ", 1)[0]
        bare = f"{interface}: bare"
        row = [name]
        for side in (before, after):
            row += [
                f"{statistics.median(side.us[name]):,.0f}",
                figure(over(side.us[name], side.us[bare]), ".3f"),
            ]
        row.append(figure(over(after.us[name], before.us[name]), ".3f"))
        row.append(" / ".join(f"{side.counts[name][0]:g}" for side in (before, after)))
        rows.append("| " + " | ".join(row) + " |")
    throttled = []
    for side in (before, after):
        parts = [
            f"{i} {who} "
            + figure(
                over(side.us[f"{i}: throttled {who}"], side.us[f"{i}: bare, a {who}'s cookies"]),
                ".3f",
            )
            for i in ("WSGI", "ASGI")
            for who in ("guest", "member")
        ]
        throttled.append(f"- {side.label}: " + ", ".join(parts))
    return "\n".join(
        [
            "# Before and after, timed side by side",
            "",
            f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by "
            f"`python benchmarks/compare.py <checkout of {base}>` (its docstring has the method, "
            f"and how to make the checkout): before is {base}, after is "
            f"{commit()}; {len(before.names)} cases each, timed in {ROUNDS} rounds of {SLICES} slices "
            f"per case and checkout, all in one shuffled order per round (about {SLICE_MS:g} ms a "
            f"slice, seed {seed}), at 1,000 online. 1-minute load {load[0]:.1f} at the start, "
            f"{load[1]:.1f} at the end. A figure is a median over rounds, its range in brackets.",
            "",
            "| Request | before µs | before × bare | after µs | after × bare | after ÷ before "
            "| Redis round trips before / after |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            "Throttled ÷ bare receiving the same cookies:",
            "",
            *throttled,
            "",
        ]
    )


def commit(path: Path = HERE) -> str:
    """The checkout's commit, or its directory's name if it is no git checkout (an export)."""
    git = ["git", "-C", str(path), "describe", "--always", "--dirty"]
    return subprocess.run(git, capture_output=True, text=True).stdout.strip() or path.name


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("before", type=Path, help="the other checkout (its root)")
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(1_000_000))
    parser.add_argument("--print", action="store_true", help="print, leave BEFORE_AFTER.md alone")
    args = parser.parse_args()
    load = [os.getloadavg()[0]]
    before = Checkout("before", args.before.resolve())
    after = Checkout("after", HERE.parent)
    try:
        if before.names != after.names:
            raise SystemExit(f"the checkouts' cases differ: {before.names} / {after.names}")
        rng = random.Random(args.seed)
        for number in range(1, ROUNDS + 1):
            order = [(side, name) for side in (before, after) for name in side.names] * SLICES
            rng.shuffle(order)
            sliced: dict[tuple[str, str], list[float]] = {}
            for side, name in order:
                sliced.setdefault((side.label, name), []).append(side.time(name))
            for side in (before, after):
                for name in side.names:
                    side.us[name].append(min(sliced[side.label, name]))
            print(f"round {number}/{ROUNDS}", file=sys.stderr, flush=True, end="\r")
    finally:
        before.close()
        after.close()
    load.append(os.getloadavg()[0])
    text = report(before, after, args.seed, load, commit(args.before.resolve()))
    print(text)
    if not args.print:
        (HERE / "BEFORE_AFTER.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
