"""Per-request cost of WhosOnlineMiddleware, as ratios to bare Django measured in the same run.

Run from the repository root:

    .venv/bin/python benchmarks/request_overhead.py            # print the results
    .venv/bin/python benchmarks/request_overhead.py --write    # and put them in benchmarks/RESULTS.md

Every variant serves the same tiny view through its own ``WSGIHandler`` (no
server, no sockets besides Redis), with SessionMiddleware and
AuthenticationMiddleware, with or without WhosOnlineMiddleware. The variants are
timed in interleaved rounds: each round runs every variant for ``--requests``
requests, cut into ``--slices`` slices, and the slices of all variants run in one
shuffled order, so drift of the machine hits all variants alike. The garbage
collector stays on (objects from the setup are frozen, and a collection runs
before each slice). The report gives the median per-request time of each
variant over the rounds and its ratio to the median of bare Django, plus the
median of the per-round ratios.

Redis round trips and SQL queries per request are counted in one extra, untimed
pass, which also checks that each variant does what it claims (the online cookie
set or not, request.user logged in, status 200).

Needs a Redis on 127.0.0.1:6379. Only database 13 and keys under
``whos_online_bench:<pid>:`` are touched, and those keys are deleted at the end.
"""

from __future__ import annotations

import argparse
import collections
import gc
import itertools
import logging
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

import django
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.urls import path

REDIS_URL = "redis://127.0.0.1:6379/13"
PREFIX = f"whos_online_bench:{os.getpid()}"
RESULTS_FILE = Path(__file__).resolve().with_name("RESULTS.md")
BEGIN_MARK = "<!-- results:begin (written by request_overhead.py --write) -->"
END_MARK = "<!-- results:end -->"

SESSION_AND_AUTH = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
WHOS_ONLINE = "whos_online.middleware.WhosOnlineMiddleware"
TOUCH_USER = f"{__name__}.TouchUserMiddleware"
PING = f"{__name__}.PingMiddleware"


# --- the site under test ------------------------------------------------------------


def ok_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


urlpatterns = [path("", ok_view)]


class TouchUserMiddleware:
    """Resolves ``request.user``, as any site whose pages look at the user does."""

    authenticated = 0  # how many requests it saw logged in (checked in the counting pass)

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.user.is_authenticated:
            TouchUserMiddleware.authenticated += 1
        return self.get_response(request)


class PingMiddleware:
    """One Redis round trip per request (a PING on whos_online's client): the yardstick."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        from whos_online.connection import get_client

        self.get_response = get_response
        self.client = get_client()

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        self.client.ping()
        return self.get_response(request)


def configure() -> None:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="whos-online-benchmark-not-a-secret",
        ALLOWED_HOSTS=["testserver"],
        USE_TZ=True,
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=[
            "django.contrib.contenttypes",
            "django.contrib.auth",
            "django.contrib.sessions",
            "whos_online",
        ],
        MIDDLEWARE=SESSION_AND_AUTH,
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        DEFAULT_AUTO_FIELD="django.db.models.AutoField",
        CACHES={
            "default": {
                "BACKEND": "django_redis.cache.RedisCache",
                "LOCATION": REDIS_URL,
                "KEY_PREFIX": PREFIX,
            }
        },
        WHOS_ONLINE_KEY_PREFIX=PREFIX,
    )
    django.setup()


# --- variants -----------------------------------------------------------------------

_addresses = itertools.count(1)


def fresh_address() -> str:
    n = next(_addresses)
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def online_cookie_name() -> str:
    from whos_online.conf import conf

    return conf.cookie_name


def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
    return lambda data: None


@dataclass
class Variant:
    name: str
    middleware: list[str]
    cookies: dict[str, str] = field(default_factory=dict)
    distinct_addresses: bool = False
    sets_online_cookie: bool = False  # what a correct run of this variant does
    redis_target: int | None = None  # round trips per request the README promises
    handler: Any = None
    base_environ: dict[str, Any] = field(default_factory=dict)
    times_us: list[float] = field(default_factory=list)  # per-request time, one per round
    redis_round_trips: float = 0.0
    db_queries: float = 0.0
    commands: collections.Counter[str] = field(default_factory=collections.Counter)

    def build_handler(self) -> None:
        from django.core.handlers.wsgi import WSGIHandler
        from django.test.utils import override_settings

        # WSGIHandler() builds its middleware chain from settings.MIDDLEWARE right now.
        with override_settings(MIDDLEWARE=self.middleware):
            self.handler = WSGIHandler()

    def set_environ(self, template: dict[str, Any]) -> None:
        self.base_environ = dict(template)
        if self.cookies:
            self.base_environ["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    def environs(self, n: int) -> list[dict[str, Any]]:
        """n independent environs (built before timing starts)."""
        if self.distinct_addresses:
            return [{**self.base_environ, "REMOTE_ADDR": fresh_address()} for _ in range(n)]
        return [dict(self.base_environ) for _ in range(n)]


def serve(variant: Variant, environ: dict[str, Any]) -> HttpResponseBase:
    response = variant.handler(environ, start_response)
    for _chunk in response:
        pass
    response.close()
    return response  # type: ignore[no-any-return]


def time_batch(variant: Variant, n: int) -> int:
    """Serve n requests; return the time they took, in ns (environs are built beforehand)."""
    environs = variant.environs(n)
    handler = variant.handler
    gc.collect()
    start = time.perf_counter_ns()
    for environ in environs:
        response = handler(environ, start_response)
        for _chunk in response:
            pass
        response.close()
    return time.perf_counter_ns() - start


def split(items: range, parts: int) -> list[range]:
    """items cut into at most ``parts`` consecutive, nearly equal, non-empty pieces."""
    parts = min(parts, len(items))
    step, extra = divmod(len(items), parts)
    bounds = [i * step + min(i, extra) for i in range(parts + 1)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:])]


# --- counting Redis round trips and queries ----------------------------------------


def command_names(packed: Any) -> list[str]:
    """Names of the commands in one packed send (RESP arrays of bulk strings)."""
    chunks = [packed] if isinstance(packed, (bytes, str, memoryview)) else packed
    data = b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)
    names, pos = [], 0
    while pos < len(data) and data[pos : pos + 1] == b"*":
        end = data.index(b"\r\n", pos)
        count, pos = int(data[pos + 1 : end]), end + 2
        for i in range(count):
            end = data.index(b"\r\n", pos)
            length, start = int(data[pos + 1 : end]), end + 2
            if i == 0:
                names.append(data[start : start + length].decode("ascii", "replace").upper())
            pos = start + length + 2
    return names


class RoundTripCounter:
    """Wraps ``AbstractConnection.send_packed_command``: one call is one round trip."""

    def __init__(self) -> None:
        self.sends: list[list[str]] = []

    def __enter__(self) -> RoundTripCounter:
        from redis.connection import AbstractConnection

        self._cls = AbstractConnection
        self._original = AbstractConnection.send_packed_command
        original: Callable[..., Any] = self._original
        sends = self.sends

        def counting(conn: Any, command: Any, check_health: bool = True) -> Any:
            sends.append(command_names(command))
            return original(conn, command, check_health)

        AbstractConnection.send_packed_command = counting  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        self._cls.send_packed_command = self._original  # type: ignore[method-assign]


def counting_pass(variants: list[Variant], n: int) -> None:
    """One untimed pass: Redis round trips and SQL queries per request, and sanity checks."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for v in variants:
        TouchUserMiddleware.authenticated = 0
        with RoundTripCounter() as counter, CaptureQueriesContext(connection) as queries:
            for environ in v.environs(n):
                response = serve(v, environ)
                if response.status_code != 200 or response.content != b"ok":  # type: ignore[attr-defined]
                    raise SystemExit(f"{v.name}: unexpected response {response.status_code}")
                has_cookie = online_cookie_name() in response.cookies
                if has_cookie != v.sets_online_cookie:
                    raise SystemExit(
                        f"{v.name}: the online cookie was {'set' if has_cookie else 'not set'}, "
                        "so this variant does not measure what it claims to "
                        "(a Redis failure, or a throttle cookie that is not recognised)."
                    )
        if TOUCH_USER in v.middleware and TouchUserMiddleware.authenticated != n:
            raise SystemExit(f"{v.name}: request.user was not the logged-in user")
        v.redis_round_trips = len(counter.sends) / n
        v.db_queries = len(queries.captured_queries) / n
        v.commands = collections.Counter("+".join(names) for names in counter.sends)


# --- Redis-only timings ------------------------------------------------------------


def time_calls(func: Callable[[], Any], n: int) -> list[float]:
    """Each call timed on its own, in µs."""
    out = []
    for _ in range(n):
        start = time.perf_counter_ns()
        func()
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


# --- report -------------------------------------------------------------------------


def versions() -> dict[str, str]:
    from importlib.metadata import version

    import redis

    from whos_online.connection import get_client

    server = get_client().info("server").get("redis_version", "?")
    return {
        "Python": platform.python_version(),
        "Django": django.get_version(),
        "redis-py": redis.__version__,
        "django-redis": version("django-redis"),
        "Redis server": str(server),
        "nproc": str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()),
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "CPU": cpu_model(),
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def fmt_trips(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.2f}"


def report(
    variants: list[Variant],
    ping_us: list[float],
    record_us: list[float],
    args: argparse.Namespace,
    seed: int,
    elapsed_s: float,
) -> str:
    by_name = {v.name: v for v in variants}
    bare = by_name["bare"]
    bare_median = statistics.median(bare.times_us)
    ping = statistics.median(ping_us)
    record = statistics.median(record_us)

    lines = [
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC: {args.rounds} interleaved rounds "
        f"of {args.requests} requests per variant, each served in {args.slices} slices "
        f"(shuffle seed {seed}); {elapsed_s:.0f} s in all.",
        "",
        "| Variant | Median µs/request | Ratio to bare | Per-round ratio: median (min–max) "
        "| Redis round trips/request (target) | SQL queries/request |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for v in variants:
        median = statistics.median(v.times_us)
        per_round = [t / b for t, b in zip(v.times_us, bare.times_us)]
        target = "" if v.redis_target is None else f" ({v.redis_target})"
        flag = "" if v.redis_target is None or v.redis_round_trips == v.redis_target else " **!**"
        lines.append(
            f"| {v.name} | {median:.1f} | {median / bare_median:.3f} "
            f"| {statistics.median(per_round):.3f} ({min(per_round):.3f}–{max(per_round):.3f}) "
            f"| {fmt_trips(v.redis_round_trips)}{target}{flag} | {fmt_trips(v.db_queries)} |"
        )
    lines += [
        "",
        f"- Redis round trip, loopback: median PING {ping:.1f} µs "
        f"({len(ping_us)} PINGs through `whos_online.connection.get_client()`).",
        f"- `presence.record_guest()` called directly (HMAC + pipelined `ZADD GT` + `EXPIRE`): "
        f"median {record:.1f} µs ({len(record_us)} calls).",
    ]
    cookies_only = by_name["bare, member's cookies sent"]
    for name, control in (("throttled member", cookies_only), ("throttled guest", None)):
        v = by_name[name]
        over = statistics.median(v.times_us) / bare_median - 1
        paired = statistics.median(t / b for t, b in zip(v.times_us, bare.times_us)) - 1
        verdict = "within" if over <= 0.02 else "**not** within"
        line = (
            f"- {name}: {over * 100:+.1f}% against bare Django ({paired * 100:+.1f}% as the "
            f"median of per-round ratios), {verdict} the 2% target"
        )
        if control is not None:
            against = statistics.median(v.times_us) / statistics.median(control.times_us) - 1
            line += f"; {against * 100:+.1f}% against bare Django receiving the same cookies"
        lines.append(line + ".")
    one_trip = statistics.median(by_name["bare + one Redis PING"].times_us) - bare_median
    lines.append(
        f"- One Redis round trip inside a request (bare + one Redis PING, minus bare): "
        f"{one_trip:+.1f} µs."
    )
    for name, baseline in (
        ("recording guest (real Redis)", "bare"),
        ("recording member (real Redis)", "bare + request.user"),
    ):
        extra = statistics.median(by_name[name].times_us) - statistics.median(
            by_name[baseline].times_us
        )
        lines.append(
            f"- {name}: {extra:+.1f} µs over {baseline} = {extra / one_trip:.2f}× the cost of one "
            f"round trip inside a request ({extra / ping:.2f}× a PING timed on its own), with "
            f"{fmt_trips(by_name[name].redis_round_trips)} Redis round trip(s) per request."
        )
    sent = [
        f"{v.name}: " + ", ".join(f"`{c}` ×{k}" for c, k in v.commands.most_common())
        for v in variants
        if v.commands
    ]
    if sent:
        lines.append("- Commands sent in the counting pass: " + "; ".join(sent) + ".")
    lines += ["", "Machine:", ""]
    lines += [f"- {k}: {v}" for k, v in versions().items()]
    return "\n".join(lines)


def write_results(text: str) -> None:
    current = RESULTS_FILE.read_text(encoding="utf-8")
    if BEGIN_MARK not in current or END_MARK not in current:
        raise SystemExit(f"{RESULTS_FILE} has no results markers; not touching it")
    head, rest = current.split(BEGIN_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    RESULTS_FILE.write_text(f"{head}{BEGIN_MARK}\n{text}\n{END_MARK}{tail}", encoding="utf-8")


# --- main ---------------------------------------------------------------------------


class ErrorCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def setup_site() -> tuple[str, str]:
    """Create the tables, one user and a logged-in session; return (user's session key, username)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    user = User.objects.create_user("bench_member", password=None)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    assert session.session_key is not None
    return session.session_key, user.get_username()


def online_cookie(environ: dict[str, Any], cookies: dict[str, str]) -> str:
    """The value the middleware sets for a request with these cookies (one real request)."""
    probe = Variant("probe", SESSION_AND_AUTH + [WHOS_ONLINE], cookies=cookies)
    probe.build_handler()
    probe.set_environ(environ)
    response = serve(probe, probe.environs(1)[0])
    return response.cookies[online_cookie_name()].value


def run(args: argparse.Namespace, seed: int) -> str:
    from django.test import RequestFactory

    from whos_online import failsafe, presence
    from whos_online.connection import get_client

    began = time.perf_counter()
    session_key, username = setup_site()
    template = RequestFactory().get("/").environ
    session = {settings.SESSION_COOKIE_NAME: session_key}
    cookie_name = online_cookie_name()
    member_token = online_cookie(template, session)
    guest_token = online_cookie(template, {})

    full = SESSION_AND_AUTH + [WHOS_ONLINE]
    variants = [
        Variant("bare", SESSION_AND_AUTH),
        Variant("bare + request.user", SESSION_AND_AUTH + [TOUCH_USER], cookies=session),
        Variant(
            "throttled member",
            full,
            cookies={**session, cookie_name: member_token},
            redis_target=0,
        ),
        Variant("throttled guest", full, cookies={cookie_name: guest_token}, redis_target=0),
        # Not one of the targets: bare Django receiving the throttled member's cookie header,
        # to tell the cost of parsing that header from whos_online's own cost.
        Variant("bare, member's cookies sent", SESSION_AND_AUTH, cookies={**session, cookie_name: member_token}),
        # Not one of the targets either: what one loopback round trip costs inside a request.
        Variant("bare + one Redis PING", SESSION_AND_AUTH + [PING]),
        Variant(
            "recording guest (real Redis)",
            full,
            distinct_addresses=True,
            sets_online_cookie=True,
            redis_target=1,
        ),
        Variant(
            "recording member (real Redis)",
            full,
            cookies=session,
            sets_online_cookie=True,
            redis_target=1,
        ),
    ]
    for v in variants:
        v.build_handler()
        v.set_environ(template)

    client = get_client()
    counting_pass(variants, args.count_requests)
    if get_client().zscore(f"{PREFIX}:users", username) is None:
        raise SystemExit("the recording member variant wrote nothing to Redis")

    warmup = max(args.requests // 5, 50)
    for v in variants:
        time_batch(v, warmup)
    time_calls(client.ping, 200)
    # Everything built so far lives for the whole run: move it out of the collector's way,
    # so the gc.collect() before each slice is cheap and every slice starts alike.
    gc.collect()
    gc.freeze()

    rng = random.Random(seed)
    ping_us: list[float] = []
    record_us: list[float] = []
    # A round is --requests requests per variant, served in --slices slices; the slices of
    # all variants run in one shuffled order, so a slow patch of the machine is shared out.
    sizes = [len(part) for part in split(range(args.requests), args.slices)]
    for round_no in range(args.rounds):
        order = [(v, size) for v in variants for size in sizes]
        rng.shuffle(order)
        spent = dict.fromkeys(range(len(variants)), 0)
        for v, size in order:
            spent[variants.index(v)] += time_batch(v, size)
        for i, v in enumerate(variants):
            v.times_us.append(spent[i] / args.requests / 1000)
        ping_us += time_calls(client.ping, args.pings)
        record_us += time_calls(lambda: presence.record_guest(fresh_address()), args.pings)
        print(
            f"round {round_no + 1}/{args.rounds}: "
            + ", ".join(f"{v.name} {v.times_us[-1]:.1f}" for v in variants)
            + " µs",
            file=sys.stderr,
        )
    if failsafe.outage.failed_at is not None:
        raise SystemExit("Redis failed during the run; the recording timings are meaningless")
    return report(variants, ping_us, record_us, args, seed, time.perf_counter() - began)


def delete_bench_keys() -> int:
    import redis

    raw = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(itertools.islice(raw.scan_iter(match=f"{PREFIX}:*", count=1000), 100_000))
        if keys:
            raw.delete(*keys)
        left = sum(1 for _ in raw.scan_iter(match=f"{PREFIX}:*", count=1000))
    finally:
        raw.close()
    if left:
        print(f"warning: {left} keys under {PREFIX}: are still in Redis db 13", file=sys.stderr)
    return len(keys)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    add = parser.add_argument
    add("--write", action="store_true", help=f"replace the results in {RESULTS_FILE.name}")
    add("--rounds", type=int, default=7)
    add("--requests", type=int, default=4000, help="requests per variant per round")
    add("--slices", type=int, default=40, help="slices a variant's requests are cut into")
    add("--count-requests", type=int, default=200, help="requests per variant, counting pass")
    add("--pings", type=int, default=300, help="PINGs (and record_guest calls) per round")
    add("--seed", type=int, default=None)
    args = parser.parse_args(None if argv is None else list(argv))
    for name in ("rounds", "requests", "slices", "count_requests", "pings"):
        if not 1 <= getattr(args, name) <= 100_000:
            parser.error(f"--{name.replace('_', '-')} must be between 1 and 100000")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)

    configure()
    errors = ErrorCounter()
    logging.getLogger("whos_online").addHandler(errors)
    try:
        text = run(args, seed)
    finally:
        deleted = delete_bench_keys()
        print(f"deleted {deleted} benchmark keys under {PREFIX}: in Redis db 13", file=sys.stderr)
    if errors.records:
        print(
            f"whos_online logged {len(errors.records)} warnings/errors; results not trusted",
            file=sys.stderr,
        )
        return 1
    print(text)
    if args.write:
        write_results(text)
        print(f"\nwrote {RESULTS_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
