"""The block on a page and the live endpoint's poll, from 1e3 to 1e6 people online.

A template holding only ``{% whos_online %}`` is rendered with N members and N
guests online (and ``presence.summary()``, its data, read alone): on a miss (the summary read from Redis, one round trip) and at
steady state (from the per-process cache, ``WHOS_ONLINE_BLOCK_CACHE``, when
this build has it). A PING called directly is the round trip it is read
against; Redis's own time per summary (INFO commandstats) is what the server
spends of that budget before the reply leaves it. A poll is a guest's GET of the live endpoint, against a bare request
carrying the same cookies. The baselines fill whos_online's template from their
own data, so all render the same HTML.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench_settings import SESSION_AND_AUTH
from benchsite import LIVE_PATH
from django.template import engines
from django.test.utils import override_settings
from paths import HIREDIS, WHOS_ONLINE
from runner import Case, extra, ratio, table, us, verdict

from whos_online import presence
from whos_online.conf import Settings
from whos_online.settings_table import DEFAULTS
from whos_online.store.connection import get_client

# The resilience issue's per-process cache: a setting until issue 50 made it a fixed second.
SETTING = "WHOS_ONLINE_BLOCK_CACHE" in DEFAULTS
CACHED = SETTING or isinstance(vars(Settings).get("block_cache"), float)
MISS = {"WHOS_ONLINE_BLOCK_CACHE": 0} if SETTING else {}
TARGET_US = 300


def missing(run: Any) -> Any:
    """``run`` with every block read from Redis: the setting at 0, or the fixed period."""
    if SETTING or not CACHED:
        return run

    def each(n: int) -> None:
        kept, Settings.block_cache = Settings.block_cache, 0.0
        try:
            run(n)
        finally:
            Settings.block_cache = kept

    return each


class Render:
    """Renders a template holding one tag, as a page would; it must show ``online``."""

    def __init__(self, source: str, online: int) -> None:
        self.template = engines["django"].from_string(source)
        self.online = online

    def __call__(self, n: int) -> None:
        render = self.template.render
        for _ in range(n):
            render()

    def check(self) -> None:
        html = self.template.render()
        if str(self.online) not in html:
            raise RuntimeError(f"the block does not show {self.online} online: {html[:300]!r}")


def ping(n: int) -> None:
    client = get_client()
    for _ in range(n):
        client.ping()


def summary(n: int) -> None:
    for _ in range(n):
        presence.summary()


def cases(setup: Any) -> list[Case]:
    made = [Case("PING", ping)]
    for n in setup.onlines:
        made.append(Case(f"presence.summary(), {n:,} online", summary, setup.prefix(n)))
        block = Render("{% load whos_online %}{% whos_online %}", n)
        miss = setup.prefix(n) | MISS
        made.append(Case(f"whos_online, {n:,} online, miss", missing(block), miss, block.check))
        made.append(
            Case(
                f"whos_online, {n:,} online, miss, hiredis",
                missing(block),
                miss | HIREDIS,
                block.check,
            )
        )
        if CACHED:
            made.append(
                Case(f"whos_online, {n:,} online, cached", block, setup.prefix(n), block.check)
            )
    for n in setup.baseline_onlines:
        for name, tag in (
            ("naive sorted set", "naive_online"),
            ("cache dict", "cache_dict_online"),
        ):
            block = Render(f"{{% load baselines %}}{{% {tag} %}}", n)
            settings = {"BENCH_BASELINE_KEY": setup.base(n)}
            made.append(Case(f"{name}, {n:,} online", block, settings, block.check))
    poll = ("WSGI", [*SESSION_AND_AUTH, WHOS_ONLINE], setup.guest_cookies, LIVE_PATH)
    driver = setup.driver(*poll, {"X-Whos-Online": "poll"})
    check = setup.expect(driver, False, body=None)
    made.append(Case("live poll, miss", missing(driver), setup.prefix(1000) | MISS, check))
    if CACHED:
        made.append(Case("live poll, cached", driver, setup.prefix(1000), check))
    return made


def server_us(admin: Any, prefix: dict[str, Any], n: int = 200) -> float:
    """Redis's own time per summary (the script and the commands it runs), from INFO commandstats.

    The count is the server's, for every client: read while only this process calls EVALSHA.
    """

    def evalsha() -> tuple[int, int]:  # a read is an EVALSHA_RO where Redis has it
        info = admin.info("commandstats")
        stats = [info.get(f"cmdstat_{name}", {}) for name in ("evalsha", "evalsha_ro")]
        return sum(s.get("calls", 0) for s in stats), sum(s.get("usec", 0) for s in stats)

    with override_settings(**prefix, **MISS):
        presence.summary()  # the script loaded
        calls, usec = evalsha()
        for _ in range(n):
            presence.summary()
        after_calls, after_usec = evalsha()
    return (after_usec - usec) / (after_calls - calls)


def report(
    c: dict[str, Case], onlines: list[int], server: dict[int, float]
) -> tuple[list[list[str]], list[str]]:
    """(target rows, the section); ``server``: Redis's own µs per summary, by population."""
    first, last = onlines[0], onlines[-1]
    misses = {n: extra(c[f"whos_online, {n:,} online, miss"], c["PING"]) for n in onlines}
    hiredis = {n: extra(c[f"whos_online, {n:,} online, miss, hiredis"], c["PING"]) for n in onlines}
    data = {n: extra(c[f"presence.summary(), {n:,} online"], c["PING"]) for n in onlines}
    flat = ratio(
        c[f"whos_online, {last:,} online, miss"], c[f"whos_online, {first:,} online, miss"]
    )
    bare = c["WSGI: bare, a guest's cookies"]
    polls = {
        k: ratio(c[f"live poll, {k}"], bare) for k in ("miss", "cached") if f"live poll, {k}" in c
    }
    targets = [
        [
            f"Block on a miss: ≤ one round trip (PING) + {TARGET_US} µs, flat from "
            f"{first:,} to {last:,} online (≤ 1.1×)",
            ", ".join(f"{n:,}: PING + {m.median:,.0f} µs" for n, m in misses.items())
            + f"; {last:,} ÷ {first:,}: {flat:.2f}; with hiredis: "
            + ", ".join(f"{n:,}: PING + {m.median:,.0f} µs" for n, m in hiredis.items())
            + "; the data alone (`presence.summary()`): "
            + ", ".join(f"{n:,}: PING + {m.median:,.0f} µs" for n, m in data.items())
            + "; of which Redis's own time running the script (INFO commandstats): "
            + ", ".join(f"{n:,}: {server[n]:,.0f} µs" for n in onlines),
            verdict(all(m.median <= TARGET_US for m in misses.values()) and flat.median <= 1.1),
        ],
        [f"Block at steady state (per-process cache): ≤ {TARGET_US} µs", *steady(c, onlines)],
        [
            "Live endpoint: a poll from the block cache ≤ 2 × a bare request (the same cookies)",
            "; ".join(f"{name} {poll:.2f}×" for name, poll in polls.items()),
            verdict((polls.get("cached") or polls["miss"]).median <= 2),
        ],
    ]
    names = [name for name in c if "online" in name and ":" not in name] + ["PING"]
    rows = [[name, us(c[name]), f"{c[name].trips:g}"] for name in names]
    rows += [[name, us(c[name]), f"{c[name].trips:g}"] for name in c if name.startswith("live")]
    section = [
        "## The block and the live endpoint",
        "",
        *table(["Render", "µs", "Redis round trips"], rows),
    ]
    return targets, section


def steady(c: dict[str, Case], onlines: list[int]) -> list[str]:
    if not CACHED:
        return [
            "not measured: `WHOS_ONLINE_BLOCK_CACHE` is not in this build (row to fill after it lands)",
            "–",
        ]
    cached = {n: c[f"whos_online, {n:,} online, cached"] for n in onlines}
    return [
        ", ".join(f"{n:,}: {us(case)} µs" for n, case in cached.items()),
        verdict(all(statistics.median(case.us) <= TARGET_US for case in cached.values())),
    ]
