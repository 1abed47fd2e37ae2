"""Poll or push: what 10,000 open tabs with a live block cost the server and Redis.

    cd benchmarks && python live_push.py      # REDIS_URL, default redis://127.0.0.1:6379/13

Poll: every tab asks the JSON endpoint every POLL seconds; one poll is timed in
process (the endpoint's Redis read, render and JSON; the server's own cost per
request, ~190 µs for bare Django under WSGI in RESULTS.md, comes on top).
Push: one process holds the tabs' sockets; its hub reads the block when a
notice says it changed (at most once a TICK) and sends what changed to every
subscriber (timed with TABS subscribers whose send only keeps the text, so
socket writes are not in it), checks once every hub.CHECK_EVERY seconds, and beats
for all its connections every WHOS_ONLINE_HEARTBEAT seconds (timed: the beat
for TABS connections, in EVALs of sockets.HEARTBEAT_BATCH). Writes LIVE_PUSH.md; only keys under this run's prefix are
written, and they are deleted at the end.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import AnonymousUser  # noqa: E402
from django.test import RequestFactory  # noqa: E402
from runner import table  # noqa: E402

from whos_online import presence, views  # noqa: E402
from whos_online.conf import conf  # noqa: E402
from whos_online.contrib.channels import hub  # noqa: E402
from whos_online.store import sockets  # noqa: E402
from whos_online.store.connection import get_client  # noqa: E402

TABS = 10_000
POLL = 30  # s: {% whos_online live=30 %}
MEMBERS, GUESTS = 100, 500  # online while it runs: a full block
RESULTS = Path(__file__).resolve().parent / "LIVE_PUSH.md"


class Member:
    is_authenticated = True

    def __init__(self, pk: int) -> None:
        self.pk = pk

    def get_username(self) -> str:
        return f"member{self.pk}"


class Tab:
    """A subscriber whose send only keeps the text: the ticker's own cost, not the socket's."""

    def __init__(self) -> None:
        self.received = 0

    async def presence_message(self, text: str) -> None:
        self.received += len(text)


class DrivenHub(hub.Hub):
    """A hub whose ticks and notices are driven by hand (no ticker task, no listener)."""

    def _start(self) -> None:
        pass


def median_ms(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def poll_ms() -> float:
    request = RequestFactory().get("/whos-online/", headers={"X-Whos-Online": "poll"})
    request.user = AnonymousUser()
    return median_ms(lambda: views.live(request), 200)


async def tick_ms() -> tuple[float, float]:
    """(a tick with no change, a tick whose diff goes to every subscriber), in ms."""
    hub.TICK = 0  # a notice is served at the next tick
    ticker = DrivenHub()
    view = hub.View(None, False)
    for _ in range(TABS):
        ticker.subscribe(view, Tab())
    await ticker.tick()  # everyone's first state
    quiet, changed = [], []
    for n in range(20):
        started = time.perf_counter()
        await ticker.tick()
        quiet.append(time.perf_counter() - started)
        presence.record_user(Member(MEMBERS + n + 1))  # a join: the next tick sends it to all
        ticker.changed(None)  # its notice
        started = time.perf_counter()
        await ticker.tick()
        changed.append(time.perf_counter() - started)
    return statistics.median(quiet) * 1000, statistics.median(changed) * 1000


def heartbeat_ms() -> float:
    tabs = [sockets.Connection(str(pk), f"tab{pk}") for pk in range(TABS)]
    return median_ms(lambda: sockets.heartbeat(tabs), 5)


def main() -> None:
    for pk in range(1, MEMBERS + 1):
        presence.record_user(Member(pk))
    for n in range(GUESTS):
        presence.record_guest(f"10.9.{n // 250}.{n % 250 + 1}")
    try:
        poll = poll_ms()
        quiet, changed = asyncio.run(tick_ms())
        beat = heartbeat_ms()
    finally:
        client = get_client()
        own = list(client.scan_iter(match=f"{conf.key_prefix}:*"))
        if own:
            client.delete(*own)
    polls = TABS / POLL
    ticks = 2  # a change every half second
    checks = 1 / hub.CHECK_EVERY
    beats = 1 / hub.heartbeat()
    beat_calls = -(-TABS // sockets.HEARTBEAT_BATCH)  # EVALs per beat
    rows = [
        (
            f"poll every {POLL} s",
            f"{polls:,.0f}",
            f"{polls:,.0f}",
            f"{polls * poll:,.0f} ({poll:.2f} ms a poll)",
        ),
        (
            "push, nothing changes",
            "0",
            f"{checks + beats * beat_calls:.2f}",
            f"{beats * beat:,.1f} ({quiet:.3f} ms a tick with nothing due)",
        ),
        (
            "push, a change every half second",
            "0",
            f"{ticks + checks + beats * beat_calls:.2f}",
            f"{ticks * changed + beats * beat:,.0f} ({changed:.1f} ms a tick to {TABS:,})",
        ),
    ]
    lines = [
        "# Live block: poll or push",
        "",
        f"{TABS:,} open tabs with a live block, {MEMBERS} members and {GUESTS} guests online, "
        f"one server process holding every socket; heartbeat {hub.heartbeat():g} s "
        f"({beat:.0f} ms for the {beat_calls} EVALs that beat {TABS:,} connections, "
        f"{sockets.HEARTBEAT_BATCH} each). Written by "
        "`benchmarks/live_push.py` (see its docstring for what is timed).",
        "",
        *table(
            [
                "Live block",
                "Requests/s to the server",
                "Redis round trips/s",
                "Server CPU ms per second",
            ],
            rows,
        ),  # fmt: skip
    ]
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
