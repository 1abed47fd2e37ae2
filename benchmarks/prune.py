"""Removing a million stale members: whos_online_prune, the command it replaced, and the baselines.

Each run starts from freshly filled sets: the stale members (last seen before
whos_online's retention for members, its window for guests) plus ``KEPT``
online ones that must survive. Besides the wall time, what
matters on a Redis shared with the site's cache and sessions is the longest
single command, during which Redis serves nobody else. Two measures of it, both
read-only on the server: the longest round trip seen by the client (an upper
bound: it includes the loopback), and Redis's SLOWLOG entries for our keys
(every command slower than the server's ``slowlog-log-slower-than``, 10 ms by
default, is logged with its exact duration).
"""

from __future__ import annotations

import io
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import redis
from baselines import naive_keys
from bench_settings import PREFIX, SESSION_AND_AUTH
from bench_settings import WHOS_ONLINE_MAX_AGE as WINDOW
from cases import CACHE_DICT, NAIVE, Site, WsgiRunner
from django.core.cache import cache
from django.core.management import call_command
from django.test.utils import override_settings
from populations import (
    FRESH,
    GUEST_POOL,
    addresses,
    fill_sorted_set,
    hex_ids,
    online_dict,
    usernames,
    whos_online_keys,
)
from spy import Spy

KEPT = 1000  # online members per set that pruning must leave alone
TTL = 3 * WINDOW


def stale_ages(kept_for: float) -> tuple[float, float]:
    """Seen between one and two ``kept_for`` ago (plus a minute): due for pruning."""
    return kept_for + 60.0, 2.0 * kept_for + 60.0


def kept_for() -> tuple[float, float]:
    """How long whos_online keeps (members, guests): the retention and the window."""
    from whos_online.conf import conf

    return conf.retention, conf.max_age


FIRST_REQUEST = "the first request after they went stale (WSGI)"


@dataclass
class PruneRun:
    label: str
    implementation: str
    stale: int
    seconds: float
    removed: int
    trips_s: list[float]  # every round trip's duration
    slow: list[tuple[str, int]]  # (command, µs) of SLOWLOG entries on our keys during the run
    detail: str = ""

    @property
    def longest_trip_ms(self) -> float:
        return max(self.trips_s) * 1000

    @property
    def p99_trip_ms(self) -> float:
        """The 99th percentile round trip (the longest when there are fewer than 100)."""
        ordered = sorted(self.trips_s)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000

    @property
    def median_trip_ms(self) -> float:
        return statistics.median(self.trips_s) * 1000


@dataclass
class PruneResults:
    slowlog_threshold_us: int  # negative: the server's SLOWLOG is off
    runs: list[PruneRun] = field(default_factory=list)


def slowlog_newest(admin: redis.Redis) -> int:
    entries = admin.slowlog_get(1)
    return int(entries[0]["id"]) if entries else -1


def measured(
    admin: redis.Redis,
    label: str,
    implementation: str,
    stale: int,
    work: Callable[[], tuple[int, str]],
) -> PruneRun:
    """Time work() (which returns (members removed, detail)) with its round trips and slow commands."""
    newest = slowlog_newest(admin)
    with Spy() as spy:
        start = time.perf_counter()
        removed, detail = work()
        seconds = time.perf_counter() - start
    ours = PREFIX.encode()
    slow = [
        (entry["command"].split(b" ", 1)[0].decode().upper(), int(entry["duration"]))
        for entry in admin.slowlog_get(128)
        if int(entry["id"]) > newest and ours in entry["command"]
    ]
    return PruneRun(
        label, implementation, stale, seconds, removed, [t.seconds for t in spy.trips], slow, detail
    )


def fill_stale_sets(admin: redis.Redis, users_key: str, guests_key: str, count: int) -> None:
    users_kept_for, guests_kept_for = kept_for()
    fill_sorted_set(admin, users_key, usernames(count), stale_ages(users_kept_for), TTL)
    fill_sorted_set(admin, users_key, usernames(KEPT, start=count), FRESH, TTL)
    fill_sorted_set(admin, guests_key, hex_ids(KEPT, seed=1), stale_ages(guests_kept_for), TTL)
    fill_sorted_set(admin, guests_key, hex_ids(KEPT, seed=2), FRESH, TTL)


def check_kept(admin: redis.Redis, *keys: str) -> None:
    for key in keys:
        left = admin.zcard(key)
        if left != KEPT:
            raise RuntimeError(
                f"{key} holds {left} members after pruning, expected the {KEPT} online ones"
            )


def whos_online_prune() -> tuple[int, str]:
    out = io.StringIO()
    call_command("whos_online_prune", stdout=out)
    text = out.getvalue()
    found = re.search(
        r"Pruned (\d+) stale member\(s\) and (\d+) stale guest\(s\) in (\d+) batch", text
    )
    if found is None:
        raise RuntimeError(f"unexpected output from whos_online_prune: {text!r}")
    users, guests, batches = map(int, found.groups())
    return users + guests, f"{batches:,} batches"


def single_command_prune(client: redis.Redis, users_key: str, guests_key: str) -> tuple[int, str]:
    """What whos_online_prune did before batching: one ZREMRANGEBYSCORE per set, pipelined."""
    now = time.time()
    pipe = client.pipeline(transaction=False)
    for key, seconds in zip((users_key, guests_key), kept_for()):
        pipe.zremrangebyscore(key, "-inf", f"({now - seconds}")
    users, guests = pipe.execute()
    return int(users) + int(guests), "1 pipelined round trip"


def one_request(site: Site) -> tuple[int, str]:
    runner = WsgiRunner(site)
    runner.timed(runner.inputs(1))
    return 0, "one request"


def run(admin: redis.Redis, count: int, repeats: int) -> PruneResults:
    """whos_online_prune ``repeats`` times, then once each: the single command and the baselines.

    Those three hold Redis for about a second each at a million, which every other
    client of a shared server feels, so they run once.
    """
    setting = "slowlog-log-slower-than"
    threshold = int(
        str(admin.config_get(setting)[setting])
    )  # read only: CONFIG SET is not ours to run
    results = PruneResults(threshold)
    prefix = f"{PREFIX}:prune"
    users_key, guests_key = whos_online_keys(prefix)
    for _ in range(repeats):
        fill_stale_sets(admin, users_key, guests_key, count)
        with override_settings(WHOS_ONLINE_KEY_PREFIX=prefix):
            results.runs.append(
                measured(
                    admin, "`whos_online_prune`", "whos_online", count + KEPT, whos_online_prune
                )
            )
        check_kept(admin, users_key, guests_key)
    fill_stale_sets(admin, users_key, guests_key, count)
    results.runs.append(
        measured(
            admin,
            "one `ZREMRANGEBYSCORE` per set (the command before batching)",
            "whos_online",
            count + KEPT,
            lambda: single_command_prune(admin, users_key, guests_key),
        )
    )
    check_kept(admin, users_key, guests_key)
    admin.unlink(users_key, guests_key)

    naive = f"{PREFIX}:prune_naive"
    naive_guests = naive_keys(naive)[1]
    fill_sorted_set(admin, naive_guests, addresses(count), stale_ages(WINDOW), TTL)
    fill_sorted_set(admin, naive_guests, GUEST_POOL, FRESH, TTL)
    site = Site([*SESSION_AND_AUTH, NAIVE], {"BENCH_BASELINE_KEY": naive}, {}, False)
    first = measured(admin, FIRST_REQUEST, "naive sorted set", count, lambda: one_request(site))
    first.removed = count + len(GUEST_POOL) - admin.zcard(naive_guests)
    results.runs.append(first)
    admin.unlink(*naive_keys(naive))

    key = "prune_dict"
    cache.set(key, online_dict(0, stale_ages(WINDOW), addresses(count)), TTL)
    site = Site([*SESSION_AND_AUTH, CACHE_DICT], {"BENCH_BASELINE_KEY": key}, {}, False)
    first = measured(admin, FIRST_REQUEST, "cache dict", count, lambda: one_request(site))
    first.removed = count + 1 - len(cache.get(key)["guests"])  # the request's own address stays
    results.runs.append(first)
    cache.delete(key)
    return results
