"""What whos_online adds to a request, against the same site without it (WSGI and ASGI).

Controls, each a case of its own in the same rounds: bare Django twice (the
spread between two identical cases is the noise floor), bare Django receiving
the visitor's cookies (parsing them is the cookie's cost, not whos_online's), a
middleware that does nothing, bare + ``request.user`` (what a member's
recording pays anyway) and bare + one Redis PING (what one round trip costs in
a request). The baselines record on every request, as they are published.
"""

from __future__ import annotations

from typing import Any

from bench_settings import SESSION_AND_AUTH
from django.test.utils import override_settings
from runner import Case, extra, ratio, table, us, verdict

WHOS_ONLINE = "whos_online.middleware.WhosOnlineMiddleware"
INTERFACES = ("WSGI", "ASGI")
# whos_online's client with hiredis (the `hiredis` extra) instead of redis-py's own code.
HIREDIS = {"WHOS_ONLINE_REDIS_CLIENT": "benchsite.hiredis_client"}


def cases(setup: Any) -> list[Case]:
    made = []
    for interface in INTERFACES:

        def add(
            name: str,
            middleware: tuple[str, ...] = (),
            cookies: dict[str, str] = {},
            settings: dict[str, Any] = {},
            sets_cookie: bool = False,
        ) -> None:
            with override_settings(**settings):  # the middleware reads them when built
                driver = setup.driver(interface, [*SESSION_AND_AUTH, *middleware], cookies)
            check = setup.expect(driver, sets_cookie)
            made.append(Case(f"{interface}: {name}", driver, settings, check))

        add("bare")
        add("bare again")
        add("bare, a guest's cookies", cookies=setup.guest_cookies)
        add("bare, a member's cookies", cookies=setup.member_cookies)
        add("a do-nothing middleware", ("benchsite.PassThroughMiddleware",), setup.guest_cookies)
        add("bare + request.user", ("benchsite.TouchUserMiddleware",), setup.session)
        add("bare + one Redis PING", ("benchsite.PingMiddleware",))
        add("bare + one Redis PING, hiredis", ("benchsite.PingMiddleware",), settings=HIREDIS)
        add("bare + RECORD's Redis call alone", ("benchsite.RecordCallMiddleware",))
        add("throttled guest", (WHOS_ONLINE,), setup.guest_cookies)
        add("throttled member", (WHOS_ONLINE,), setup.member_cookies)
        add("recording member", (WHOS_ONLINE,), setup.session, setup.prefix(1000), True)
        for n in setup.onlines:
            add(f"recording guest, {n:,} online", (WHOS_ONLINE,), {}, setup.prefix(n), True)
        hiredis = {**setup.prefix(1000), **HIREDIS}
        add("recording guest, 1,000 online, hiredis", (WHOS_ONLINE,), {}, hiredis, True)
        for n in setup.baseline_onlines:
            base = {"BENCH_BASELINE_KEY": setup.base(n)}
            add(
                f"naive sorted set, {n:,} online", ("baselines.NaiveSortedSetMiddleware",), {}, base
            )
            add(f"cache dict, {n:,} online", ("baselines.CacheDictMiddleware",), {}, base)
    return made


def report(c: dict[str, Case]) -> tuple[list[list[str]], list[str]]:
    """(target rows, the section)."""
    whos = [(i, who) for i in INTERFACES for who in ("guest", "member")]
    throttled = {
        (i, who): ratio(c[f"{i}: throttled {who}"], c[f"{i}: bare, a {who}'s cookies"])
        for i, who in whos
    }
    noise = ", ".join(
        f"{i} {ratio(c[f'{i}: bare again'], c[f'{i}: bare']):.3f}" for i in INTERFACES
    )
    recording = {(i, who): trips_over(c, i, *RECORDING[who]) for i, who in whos}
    hiredis = {i: trips_over(c, i, *RECORDING["guest, hiredis"], ", hiredis") for i in INTERFACES}
    floor = {i: trips_over(c, i, *RECORDING["the call alone"]) for i in INTERFACES}
    targets = [
        [
            "Throttled path (valid cookie): ≤ 1.01 × bare Django receiving the same cookies",
            ", ".join(f"{i} {who} {r:.3f}" for (i, who), r in throttled.items())
            + f" (bare again ÷ bare, the noise: {noise})",
            verdict(all(r.median <= 1.01 for r in throttled.values())),
        ],
        [
            "Recording path: extra time ≤ 1.3 × what one PING adds to a request "
            "(a member's over bare + `request.user`)",
            ", ".join(f"{i} {who} {v:.2f}×" for (i, who), v in recording.items())
            + "; with hiredis (over its PING): "
            + ", ".join(f"{i} guest {v:.2f}×" for i, v in hiredis.items())
            + "; the floor, RECORD's EVALSHA alone through redis-py: "
            + ", ".join(f"{i} {v:.2f}×" for i, v in floor.items()),
            verdict(all(v <= 1.3 for v in recording.values())),
        ],
    ]
    rows = []
    for name in [name.split(": ", 1)[1] for name in c if name.startswith("WSGI: ")]:
        row = [name]
        for i in INTERFACES:
            row += [us(c[f"{i}: {name}"]), f"{ratio(c[f'{i}: {name}'], c[f'{i}: bare']):.2f}"]
        rows.append(row + [f"{c[f'WSGI: {name}'].trips:g}", f"{c[f'WSGI: {name}'].queries:g}"])
    header = ["Request", "WSGI µs", "× bare", "ASGI µs", "× bare", "Redis round trips", "SQL"]
    return targets, ["## Requests", "", *table(header, rows)]


RECORDING = {
    "guest": ("recording guest, 1,000 online", "bare"),
    "member": ("recording member", "bare + request.user"),
    "guest, hiredis": ("recording guest, 1,000 online, hiredis", "bare"),
    "the call alone": ("bare + RECORD's Redis call alone", "bare"),
}


def trips_over(c: dict[str, Case], interface: str, case: str, base: str, client: str = "") -> float:
    """The case's extra time over ``base``, in units of what one PING (by ``client``) adds."""
    ping = extra(c[f"{interface}: bare + one Redis PING{client}"], c[f"{interface}: bare"]).median
    return extra(c[f"{interface}: {case}"], c[f"{interface}: {base}"]).median / ping
