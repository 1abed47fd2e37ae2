"""benchmarks/RESULTS.md and docs/benchmarks.png, written from one run's measurements.

Every figure in them comes from the run being reported: times are medians over
the rounds, ratios are medians of ratios taken within a round (two cases timed
side by side), with the smallest and largest per-round ratio in brackets.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import textwrap
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any, Iterable, Literal

import django
import redis
from harness import Case, per_round, per_round_extra
from populations import MEMORY_SAMPLES, Stored
from prune import KEPT, PruneResults, PruneRun

THROTTLED_TARGET = 1.02
RENDER_TARGET = 1.5
COMMAND_TARGET_MS = 10.0


@dataclass
class Results:
    cases: list[Case]
    stored: list[Stored]
    prune: PruneResults
    started: datetime
    seconds: float
    args: dict[str, Any]
    dropped: list[str]
    machine: dict[str, str]
    load: list[float]  # 1-minute load average, sampled during the run

    def case(self, group: str, label: str, online: int | None = None) -> Case:
        for case in self.cases:
            if (
                case.group == group
                and case.label == label
                and (online is None or case.online == online)
            ):
                return case
        raise KeyError(f"{group} {label} {online}")

    def series(self, group: str, label: str) -> list[Case]:
        """The cases of one label at each population, smallest first."""
        found = [c for c in self.cases if c.group == group and c.label == label]
        return sorted(found, key=lambda c: c.online or 0)

    @property
    def interfaces(self) -> list[str]:
        return ["WSGI", "ASGI"]


def machine(admin: redis.Redis) -> dict[str, str]:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "whos_online": source_version(),
        "Python": platform.python_version(),
        "Django": django.get_version(),
        "redis-py": redis.__version__,
        "django-redis": version("django-redis"),
        "Redis server": f"{admin.info('server')['redis_version']} on loopback",
        "CPUs": f"{cpus} vCPUs ({cpu_model()}), shared with other jobs",
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
    }


def source_version() -> str:
    """The commit measured, and whether the working tree differed from it."""
    root = Path(__file__).resolve().parent.parent
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    commit = described.removesuffix("-dirty")
    return f"commit {commit}" + (" with uncommitted changes" if commit != described else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


# --- formatting -------------------------------------------------------------------------


def load_summary(samples: list[float]) -> str:
    if not samples:
        return "not sampled"
    return f"{min(samples):.1f} to {max(samples):.1f} (median {statistics.median(samples):.1f})"


def people(n: int | None) -> str:
    if n is None:
        return "–"
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size and n % size == 0:
            return f"{n // size}{suffix}"
    return f"{n:,}"


def us(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms"


def times(values: list[float]) -> str:
    """Median ratio and the per-round range."""
    return f"{statistics.median(values):.2f}× ({min(values):.2f}–{max(values):.2f})"


def percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def signed_us(value: float) -> str:
    return f"{value:+,.0f} µs" if abs(value) >= 100 else f"{value:+.1f} µs"


def trips(case: Case) -> str:
    """Round trips per operation and what they sent, e.g. ``1 (`ZADD+EXPIRE`)``."""
    value = f"{case.trips:g}"
    sent = ", ".join(f"`{c}`" for c in case.commands)
    return f"{value} ({sent})" if sent else value


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def table(header: list[str], rows: Iterable[list[str]], align: str) -> list[str]:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
    ]
    return lines + ["| " + " | ".join(row) + " |" for row in rows] + [""]


# --- derived figures ----------------------------------------------------------------------


def bare(results: Results, group: str) -> Case:
    return results.case(group, "bare")


def one_trip(results: Results, group: str) -> float:
    """What one Redis round trip adds to a request: bare + one PING, minus bare, per round."""
    return statistics.median(
        per_round_extra(results.case(group, "bare + one Redis PING"), bare(results, group))
    )


def throttled(results: Results, group: str, who: str) -> tuple[float, float]:
    """(against bare Django receiving the same cookies, against bare Django without cookies)."""
    case = results.case(group, f"throttled {who}")
    control = results.case(
        group, f"bare, throttled {who}'s cookie" + ("s" if who == "member" else "")
    )
    return (
        statistics.median(per_round(case, control)),
        statistics.median(per_round(case, bare(results, group))),
    )


def pass_through(results: Results, group: str) -> float:
    """What a middleware that does nothing costs, against bare Django receiving the same cookie."""
    case = results.case(group, "bare + a do-nothing middleware, throttled guest's cookie")
    return statistics.median(per_round(case, results.case(group, "bare, throttled guest's cookie")))


def recording_extra(results: Results, group: str, case: Case) -> float:
    """µs a recording request adds over the same request to bare Django (per-round median)."""
    control = "bare + request.user" if "member" in case.label else "bare"
    return statistics.median(per_round_extra(case, results.case(group, control)))


def render_growth(results: Results) -> list[float]:
    series = results.series("render", "{% whos_online %}")
    return per_round(series[-1], series[0])


def prune_runs(results: Results) -> list[tuple[PruneRun, list[PruneRun]]]:
    """Runs of the same prune grouped: (first, all)."""
    groups: dict[tuple[str, str], list[PruneRun]] = {}
    for run in results.prune.runs:
        groups.setdefault((run.implementation, run.label), []).append(run)
    return [(runs[0], runs) for runs in groups.values()]


def longest_ms(runs: list[PruneRun]) -> float:
    return max(run.longest_trip_ms for run in runs)


def trip_spread(runs: list[PruneRun]) -> str:
    """Median, 99th percentile and longest round trip of the runs pooled."""
    pooled = PruneRun("", "", 0, 0.0, 0, [t for run in runs for t in run.trips_s], [])
    return (
        f"{pooled.median_trip_ms:.1f} / {pooled.p99_trip_ms:.1f} / {pooled.longest_trip_ms:,.1f} ms"
    )


def slow_commands(runs: list[PruneRun], threshold_us: int) -> str:
    if threshold_us < 0:
        return "SLOWLOG is off on this server"
    slow = [entry for run in runs for entry in run.slow]
    if not slow:
        return f"none ≥ {threshold_us / 1000:g} ms"
    names = ", ".join(sorted({name for name, _ in slow}))
    return f"{len(slow)} in {len(runs)} run(s) ({names}), longest {max(d for _, d in slow) / 1000:,.0f} ms"


# --- the report ---------------------------------------------------------------------------


def render(results: Results) -> str:
    args = results.args
    lines = [
        "# Benchmarks",
        "",
        "What whos_online costs, measured in one run against the same Django app without it and",
        'against two common ways of doing "who\'s online", on a real Redis. Written by',
        "`benchmarks/run.py`; regenerate it and `docs/benchmarks.png` with",
        "",
        "```sh",
        f"python3 dev.py bench            # this run: {results.seconds / 60:.0f} minutes; REDIS_URL defaults to redis://127.0.0.1:6379/13",
        "python3 dev.py bench --quick    # a smoke run with smaller populations, prints only",
        "```",
        "",
        "The suite writes only keys under `whos_online_bench:<pid>:` and deletes them at the end.",
        "",
        f"## Results of {results.started:%Y-%m-%d %H:%M} UTC",
        "",
        f"{len(results.cases)} cases timed in {args['rounds']} interleaved rounds of "
        f"{args['slices']} slices each (about {args['slice_ms']:g} ms per slice, shuffle seed "
        f"{args['seed']}); the whole run took {results.seconds / 60:.1f} minutes. "
        + (
            f"Rounds dropped because Redis failed during them: {'; '.join(results.dropped)}."
            if results.dropped
            else "No round was dropped."
        ),
        "",
        f"The machine is noisy: {results.machine['CPUs']}; the 1-minute load average during "
        f"the run was {load_summary(results.load)}. Interleaving shares the noise out among "
        "the cases, so compare figures within this run, not across runs.",
        "",
        "### Targets",
        "",
        *targets(results),
        "### Requests",
        "",
        *requests_table(results),
        *request_notes(results),
        "### Rendering the block",
        "",
        *render_table(results),
        "### Pruning stale members",
        "",
        *prune_table(results),
        "### Redis memory per member",
        "",
        *memory_table(results),
        "### Machine",
        "",
        *[f"- {key}: {value}" for key, value in results.machine.items()],
        "",
        *method(results),
        *readme_section(results),
    ]
    return "\n".join(lines).rstrip() + "\n"


def targets(results: Results) -> list[str]:
    rows = []
    throttled_cells, throttled_ok = [], True
    for group in results.interfaces:
        for who in ("guest", "member"):
            same, _ = throttled(results, group, who)
            throttled_ok &= same <= THROTTLED_TARGET
            throttled_cells.append(f"{group} {who} {percent(same)}")
    floor = ", ".join(
        f"{group} {percent(pass_through(results, group))}" for group in results.interfaces
    )
    rows.append(
        [
            "Throttled path (valid cookie) within 2% of bare Django receiving the same cookies",
            ", ".join(throttled_cells) + f" (a middleware that does nothing: {floor})",
            verdict(throttled_ok),
        ]
    )
    recording_cells, recording_ok = [], True
    for group in results.interfaces:
        trip = one_trip(results, group)
        for case in results.series(group, "recording guest")[:1] + [
            results.case(group, "recording member")
        ]:
            extra = recording_extra(results, group, case)
            recording_ok &= extra <= trip
            recording_cells.append(f"{group} {case.label.split()[-1]} {extra / trip:.2f}×")
    rows.append(
        [
            "Recording path costs no more than one Redis round trip over bare Django "
            "(extra time ÷ the time one PING adds to a request)",
            ", ".join(recording_cells),
            verdict(recording_ok),
        ]
    )
    recorded = [c for c in results.cases if c.label.startswith("recording")]
    blocks = results.series("render", "{% whos_online %}")
    rows.append(
        [
            "Exactly one Redis round trip per recorded request and per rendered block",
            f"recorded requests: {', '.join(sorted({f'{c.trips:g}' for c in recorded}))}; "
            f"blocks: {', '.join(sorted({f'{c.trips:g}' for c in blocks}))}",
            verdict(all(c.trips == 1 for c in recorded + blocks)),
        ]
    )
    growth = statistics.median(render_growth(results))
    rows.append(
        [
            f"Render time at {people(blocks[-1].online)} online within 1.5× of {people(blocks[0].online)}",
            f"{growth:.2f}× ({us(blocks[0].median_us)} → {us(blocks[-1].median_us)} µs)",
            verdict(growth <= RENDER_TARGET),
        ]
    )
    _, runs = prune_runs(results)[0]
    longest = longest_ms(runs)
    slow = [entry for run in runs for entry in run.slow]
    rows.append(
        [
            f"Pruning {people(results.args['prune_stale'])} stale members: no single Redis command "
            "over ~10 ms",
            f"{len(runs)} run(s): round trips median / p99 / longest {trip_spread(runs)}; "
            f"SLOWLOG: {slow_commands(runs, results.prune.slowlog_threshold_us)}",
            verdict(longest <= COMMAND_TARGET_MS and not slow),
        ]
    )
    return table(["Target", "Measured", ""], rows, "llc")


def requests_table(results: Results) -> list[str]:
    rows = []
    for wsgi in (c for c in results.cases if c.group == "WSGI"):
        asgi = results.case("ASGI", wsgi.label, wsgi.online)
        cells = [
            wsgi.implementation,
            wsgi.label,
            people(wsgi.online),
            trips(wsgi),
            f"{wsgi.queries:g}",
        ]
        for case in (wsgi, asgi):
            ratios = per_round(case, bare(results, case.group))
            cells += [us(case.median_us), "1" if case.label == "bare" else times(ratios)]
        rows.append(cells)
    header = [
        "Implementation",
        "Request",
        "Online",
        "Redis round trips (commands)",
        "SQL",
        "WSGI µs",
        "WSGI × bare",
        "ASGI µs",
        "ASGI × bare",
    ]
    return table(header, rows, "lllrrrrrr")


def request_notes(results: Results) -> list[str]:
    ping = results.case("Redis", "PING")
    record = results.case("Redis", "presence.record_guest()")
    lines = [
        '- **bare**: SessionMiddleware + AuthenticationMiddleware and a view returning "ok", no '
        "cookies. The *bare, … cookie(s)* rows receive the same cookie header as the throttled rows "
        "(parsing a longer header is a cost of the cookie, not of whos_online); *bare + a "
        "do-nothing middleware* is the floor any middleware costs. *bare + "
        "request.user* loads the member's session and user, as any page that looks at the user "
        "does. *bare + one Redis PING* adds one round trip on whos_online's client (under ASGI "
        "through `sync_to_async`, as whos_online's record goes).",
        "- **throttled**: whos_online with a valid `online` cookie. **recording**: no cookie, so "
        "the visitor is written to Redis (a guest's address is already in the set: the population "
        "stays at N). The baselines have no throttle: every request pays the row's cost.",
        f"- Redis alone: a PING takes {us(ping.median_us)} µs, `presence.record_guest()` called "
        f"directly {us(record.median_us)} µs (median of {len(ping.us_per_op)} rounds).",
    ]
    for group in results.interfaces:
        trip = one_trip(results, group)
        parts = [
            f"one round trip adds {signed_us(trip)} to a request",
            f"a middleware that does nothing {percent(pass_through(results, group))}",
        ]
        for who in ("guest", "member"):
            same, without = throttled(results, group, who)
            parts.append(
                f"throttled {who} {percent(same)} against bare Django receiving the same cookies "
                f"({percent(without)} against bare without cookies)"
            )
        for case in [
            *results.series(group, "recording guest"),
            results.case(group, "recording member"),
        ]:
            control = "bare + request.user" if "member" in case.label else "bare"
            extra = recording_extra(results, group, case)
            parts.append(
                f"{case.label} at {people(case.online)} online {signed_us(extra)} over {control} "
                f"= {extra / trip:.2f} round trips"
            )
        lines.append(f"- {group}: " + "; ".join(parts) + ".")
    return lines + [""]


def render_table(results: Results) -> list[str]:
    reference = results.series("render", "{% whos_online %}")[0]
    rows = [
        [
            case.implementation,
            f"`{case.label}`",
            people(case.online),
            us(case.median_us),
            times(per_round(case, reference)),
            trips(case),
        ]
        for case in sorted(
            (c for c in results.cases if c.group == "render"),
            key=lambda c: (c.implementation != "whos_online", c.implementation, c.online or 0),
        )
    ]
    header = [
        "Implementation",
        "Tag",
        "Online",
        "µs per block",
        f"× whos_online at {people(reference.online)}",
        "Redis round trips (commands)",
    ]
    return table(header, rows, "lllrrl") + [
        "A template holding only the tag, rendered with N members and N guests online "
        "(whos_online keeps at most `WHOS_ONLINE_MAX_GUESTS` = 100,000 guests). All three "
        "fill whos_online's template with at most 100 names, so the HTML is the same.",
        "",
    ]


def prune_table(results: Results) -> list[str]:
    threshold = results.prune.slowlog_threshold_us
    rows = []
    for first, runs in prune_runs(results):
        rows.append(
            [
                first.implementation,
                first.label,
                f"{first.stale:,}",
                f"{first.removed:,}",
                ms(statistics.median(run.seconds for run in runs))
                + (f" (median of {len(runs)})" if len(runs) > 1 else ""),
                f"{len(first.trips_s):,}" + (f" ({first.detail})" if first.detail else ""),
                trip_spread(runs),
                slow_commands(runs, threshold),
            ]
        )
    header = [
        "Implementation",
        "Pruned by",
        "Stale members",
        "Removed",
        "Time",
        "Round trips",
        "Round trip: median / p99 / longest",
        "Commands on our keys in SLOWLOG",
    ]
    return table(header, rows, "llrrrrrl") + [
        f"Each run starts from freshly filled sets. whos_online: the stale members (last seen "
        f"before `WHOS_ONLINE_RETENTION`) and {KEPT:,} stale guests (before the window), plus "
        f"{KEPT:,} online members and {KEPT:,} online guests that must survive. Baselines: the "
        f"stale guests and the request's own. Redis logs every command slower than "
        f"`slowlog-log-slower-than` ({threshold:,} µs on this server) in its SLOWLOG, read "
        f"without changing any setting. Round trips are timed by the client: each includes the "
        f"loopback, so it bounds its command's time from above. Both are wall times: when the "
        f"machine is overloaded, Redis waits for a CPU in the middle of a command and the wait "
        f"counts.",
        "",
    ]


def memory_table(results: Results) -> list[str]:
    rows = [
        [s.implementation, s.what, f"{s.members:,}", f"{s.bytes:,}", f"{s.per_member:.0f}"]
        for s in results.stored
    ]
    return table(
        ["Implementation", "Key", "Members", "MEMORY USAGE (bytes)", "Bytes per member"],
        rows,
        "llrrr",
    ) + [
        f"`MEMORY USAGE <key> SAMPLES {MEMORY_SAMPLES}` divided by the members in the key: exact up "
        f"to {MEMORY_SAMPLES:,} members, extrapolated from {MEMORY_SAMPLES:,} of them above (reading "
        "every element of a million blocks a shared Redis for a quarter of a second).",
        "",
    ]


def method(results: Results) -> list[str]:
    args = results.args
    return [
        "## Method",
        "",
        "- **One site, many variants.** `bench_settings.py` is the benchmarked Django app: "
        "SessionMiddleware, AuthenticationMiddleware, database sessions in SQLite, one member, a "
        'view that returns "ok" (sync under WSGI, async under ASGI). A variant adds middleware '
        "and settings (`override_settings`), nothing else.",
        "- **No server.** WSGI requests call `django.core.handlers.wsgi.WSGIHandler` directly; ASGI "
        "requests call `django.core.handlers.asgi.ASGIHandler` with a scope and receive/send "
        "callables, all requests of a slice in one event loop. So the figures are Django's "
        "handler and the middleware alone, without HTTP parsing or sockets (except Redis's).",
        "- **Interleaved.** Each round gives every case the same number of slices, sized to "
        f"about {args['slice_ms']:g} ms each, and runs the slices of all cases in one shuffled "
        "order, so drift of the machine is shared out. A slice switches to its case's settings, "
        "runs one untimed operation (the switch empties Django's settings cache), collects "
        "garbage (the objects built during setup are frozen) and builds its inputs before the "
        "clock starts. A case's figure is the median over rounds; a ratio is the median of the ratios "
        "of two cases in the same round, with the smallest and largest in brackets.",
        "- **Round trips** are calls of redis-py's `send_packed_command` (a pipeline or a script "
        "call is one), counted with SQL statements in one untimed pass that also checks each case "
        "does what it claims: status 200, the `online` cookie set exactly when recording, the "
        "member logged in, the block showing its N members.",
        "- **Populations.** N members (typical usernames) and N guests online per implementation "
        "and N, filled with pipelined ZADDs (or one `cache.set`) before timing; the window is an "
        "hour so nobody goes stale during the run. Recording requests come from 256 addresses "
        "already in the population, so it stays at N.",
        "- **Baselines** (`baselines.py`), as usually published, without a throttle: the *naive "
        "sorted set* does ZADD + ZREMRANGEBYSCORE + ZCOUNT as three calls on every request and "
        "reads every online member to render the block; the *cache dict* keeps the whole "
        "`{who: last seen}` dict in one django-redis cache key, read, updated, filtered and "
        "written back (pickled) on every request.",
        "",
    ]


def stored(results: Results, implementation: str, what: str, online: int) -> Stored:
    """The memory figure of one key kind at one population."""
    return next(
        s
        for s in results.stored
        if s.implementation == implementation and s.what.startswith(what) and s.online == online
    )


def readme_section(results: Results) -> list[str]:
    """The paragraph and table for README.md's "Measured cost", with this run's figures."""

    def ratio(case: Case) -> str:
        return f"{statistics.median(per_round(case, bare(results, case.group))):.1f}×"

    def at_each(series: list[Case], figure: Any) -> str:
        return " / ".join(f"{figure(c)} at {people(c.online)}" for c in series)

    def both(figure: Any) -> str:
        return f"{figure('WSGI')} ({figure('ASGI')} under ASGI)"

    def throttled_cost(group: str) -> str:
        return percent(throttled(results, group, "guest")[0])

    def recording_cost(group: str) -> str:
        first = results.series(group, "recording guest")[0]
        return f"{recording_extra(results, group, first) / one_trip(results, group):.1f}"

    def against_naive(group: str) -> str:
        ours = results.series(group, "recording guest")[0]
        naive = results.case(group, "naive sorted set, every request", ours.online)
        return f"{statistics.median(per_round(ours, naive)):.2f}×"

    def block_ms(case: Case) -> str:
        return ms(case.median_us / 1e6)

    def per_member(implementation: str, what: str, online: int) -> str:
        return f"{stored(results, implementation, what, online).per_member:.0f} B"

    blocks = results.series("render", "{% whos_online %}")
    naive = results.series("WSGI", "naive sorted set, every request")
    cache_dict = results.series("WSGI", "cache dict, every request")
    (_, our_runs), (_, before_runs), *baseline_prunes = prune_runs(results)
    naive_prune, dict_prune = (first for first, _ in baseline_prunes)
    pruned = people(results.args["prune_stale"])
    common = max(results.args["baseline_online"])  # the largest N all three were filled with
    rows = [
        [
            "Redis round trips per request",
            "0 with a valid `online` cookie (most requests), 1 when recording",
            f"{naive[0].trips:g} on every request",
            f"{cache_dict[0].trips:g} on every request",
        ],
        [
            "Request cost, × bare Django (WSGI)",
            f"{throttled_cost('WSGI')} with the cookie, "
            f"{ratio(results.series('WSGI', 'recording guest')[0])} recording",
            at_each(naive, ratio),
            at_each(cache_dict, ratio),
        ],
        [
            "Rendering the block",
            at_each(blocks, block_ms),
            at_each(results.series("render", "{% naive_online %}"), block_ms),
            at_each(results.series("render", "{% cache_dict_online %}"), block_ms),
        ],
        [
            f"Pruning {pruned} stale members",
            f"{ms(statistics.median(r.seconds for r in our_runs))} in {our_runs[0].detail}, "
            f"each ≤ {longest_ms(our_runs):.1f} ms",
            f"inside one request: {ms(naive_prune.seconds)}, Redis blocked {ms(max(naive_prune.trips_s))}",
            f"inside one request: {ms(dict_prune.seconds)}",
        ],
        [
            f"Redis memory per member at {people(common)}",
            f"{per_member('whos_online', 'users', common)} (usernames), "
            f"{per_member('whos_online', 'guests', common)} (guests)",
            f"{per_member('naive sorted set', 'users', common)} (usernames), "
            f"{per_member('naive sorted set', 'guests', common)} (addresses)",
            f"{per_member('cache dict', '', common)}, all of it read and rewritten on every request",
        ],
    ]
    header = ["", "whos_online", "naive sorted set (blog posts)", "whole dict in one cache key"]
    paragraph = (
        "**Measured cost.** `python3 dev.py bench` measures whos_online against the same Django "
        "app without it and against the two usual implementations, on a real Redis, in one "
        "interleaved run; [benchmarks/RESULTS.md](benchmarks/RESULTS.md) has the method and every "
        "figure. On this project's noisy 2-core machine, with Django's handlers called directly: "
        f"a request with a valid `online` cookie costs {both(throttled_cost)} against bare Django "
        "receiving the same cookies, with no Redis call and no query. A recording request makes "
        f"one round trip, yet costs {both(recording_cost)} times what a PING adds to a request: "
        "on loopback, redis-py's work on the call, the guest's keyed hash and the cookie cost more than "
        f"the network, and a recording request costs {both(against_naive)} a request making the "
        "blog posts' three plain calls. The single round trip pays off when Redis is across a "
        "network, and the cookie makes recording rare. The block is one round trip whose cost "
        f"does not grow with the number online ({block_ms(blocks[0])} at {people(blocks[0].online)}, "
        f"{block_ms(blocks[-1])} at {people(blocks[-1].online)}), and `whos_online_prune` removes "
        f"{pruned} stale members in batches of at most {longest_ms(our_runs):.1f} ms, where the "
        f"single `ZREMRANGEBYSCORE` it replaced held Redis for "
        f"{ms(max(max(r.trips_s) for r in before_runs))}."
    )
    return [
        '## For the README ("Measured cost")',
        "",
        'Paste below the "Reading" paragraph of README.md; the figures are this run\'s.',
        "",
        "```markdown",
        textwrap.fill(paragraph, width=92, break_on_hyphens=False),
        "",
        *table(header, rows, "llll"),
        "![Cost per request and render time against the number of people online](docs/benchmarks.png)",
        "```",
        "",
    ]


# --- the plot -----------------------------------------------------------------------------


def plot(results: Results, path: Path) -> None:
    """Left: cost per request against N, as a ratio to bare Django; right: render time against N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, LogLocator

    colors = {"whos_online": "tab:green", "naive sorted set": "tab:orange", "cache dict": "tab:red"}
    styles: dict[str, Literal["-", "--"]] = {"WSGI": "-", "ASGI": "--"}
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 5), constrained_layout=True)
    onlines = [c.online for c in results.cases if c.online]
    span = (min(onlines) / 1.5, max(onlines) * 1.5)
    plain = FuncFormatter(lambda value, _: f"{value:g}")

    for group, style in styles.items():
        reference = bare(results, group)
        for label, implementation in (
            ("recording guest", "whos_online"),
            ("naive sorted set, every request", "naive sorted set"),
            ("cache dict, every request", "cache dict"),
        ):
            series = results.series(group, label)
            ratios = [statistics.median(per_round(c, reference)) for c in series]
            left.plot(
                [c.online for c in series], ratios, style, marker="o", color=colors[implementation]
            )
        cookie = statistics.median(per_round(results.case(group, "throttled guest"), reference))
        left.plot(span, [cookie, cookie], style, color="tab:blue")
    left.axhline(1.0, color="grey", linewidth=0.8)
    left.legend(
        handles=[
            Line2D([], [], color="tab:blue", label="whos_online, valid cookie (most requests)"),
            Line2D(
                [], [], color="tab:green", marker="o", label="whos_online, recording (no cookie)"
            ),
            Line2D([], [], color="tab:orange", marker="o", label="naive sorted set, every request"),
            Line2D([], [], color="tab:red", marker="o", label="cache dict, every request"),
            Line2D([], [], color="grey", linewidth=0.8, label="bare Django"),
            *(Line2D([], [], color="black", linestyle=s, label=g) for g, s in styles.items()),
        ],
        fontsize=8,
    )
    left.set(
        xscale="log",
        yscale="log",
        xlim=span,
        ylabel="time per request ÷ bare Django",
        title="Cost per request",
    )

    for label, implementation in (
        ("{% whos_online %}", "whos_online"),
        ("{% naive_online %}", "naive sorted set"),
        ("{% cache_dict_online %}", "cache dict"),
    ):
        series = results.series("render", label)
        right.plot(
            [c.online for c in series],
            [c.median_us / 1000 for c in series],
            marker="o",
            color=colors[implementation],
            label=implementation,
        )
    right.legend(fontsize=8)
    right.set(
        xscale="log",
        yscale="log",
        xlim=span,
        ylabel="ms per rendered block",
        title="Rendering the block",
    )

    for axes in (left, right):
        axes.set_xlabel("people online: N members and N guests")
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: people(round(value))))
        axes.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
        axes.yaxis.set_major_formatter(plain)
        axes.yaxis.set_minor_formatter(FuncFormatter(lambda value, _: ""))
        axes.grid(True, which="major", linewidth=0.3)
    rounds = len(bare(results, "WSGI").us_per_op)
    figure.suptitle(
        f"whos_online benchmarks, {results.started:%Y-%m-%d}: medians of {rounds} interleaved rounds "
        "on a shared 2-vCPU machine",
        fontsize=10,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
