"""What members connected by WebSocket cost the reads, and the socket writes.

    cd benchmarks && python connected.py [--before /path/to/a/checkout]

N members connected longer than the window without a page view (their sockets
alone keep them inside it), for N from none to 100,000, plus 100 members browsing
inside the window, so each block is full. Members are connected as a process
connects them: their scores written as a connect writes them, then beaten by
``sockets.heartbeat`` in its batches (so each version of the code writes what its
own reads need). Timed: ``presence.summary()`` (the block's read),
``presence.summary(limit=0).user_count`` and ``stats.count()`` (the count prune samples, which
raises the peak); Redis's own time per call (``INFO commandstats``'s EVALSHA
µs, on a ``redis-server`` this script starts on a spare port and stops) and the
client's. Then, at 100,000 connected, Redis's time per socket for a heartbeat
(batches of ``HEARTBEAT_BATCH``), a connect (record and first beat) and a close.

With ``--before``, the same is measured with that checkout's ``whos_online`` in the
same run (each side in a process of its own, alternated round by round), and
CONNECTED.md shows both. Each side's process runs this file with ``--side``.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CONNECTED = (0, 100, 1_000, 10_000, 100_000)
BROWSING = 50
ROUNDS, CALLS, SOCKETS = 5, 20, 200
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "CONNECTED.md"
BEFORE = ""  # the commit --before names
CALLED = ("summary()", "user_count()", "count and peak")
WRITES = {
    "heartbeat": "heartbeat, µs per socket",
    "connect": "connect, µs per socket",
    "close": "close, µs per socket",
    "prune": "`prune()`, µs",
    "prune call": "`prune()`'s longest call, µs (client: its calls)",
    "index bytes": "the index, bytes per member",
}


def side(action: str) -> None:
    """In a process whose PYTHONPATH picks the code: fill Redis, or time one round."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"
    import django

    django.setup()
    from benchsite import store  # either layout: --before may name a checkout from before store/
    from django.test.utils import override_settings

    from whos_online import presence
    from whos_online.conf import Settings, conf

    sockets, stats = store("sockets"), store("stats")
    get_client, record_member = store("connection").get_client, store("recording").record_member

    client = get_client()
    out: dict[str, Any] = {}
    # Every beat stays live for the whole run: only the sockets' number changes.
    Settings.block_cache = 0.0  # every block read from Redis
    with override_settings(WHOS_ONLINE_HEARTBEAT=3600):
        for n in CONNECTED:
            with override_settings(WHOS_ONLINE_KEY_PREFIX=f"connected:{os.environ['SIDE']}:{n}"):
                keys, now = conf.keys(), time.time()
                tabs = [sockets.Connection(f"c{pk}", f"t{pk}") for pk in range(n)]
                if action == "fill":
                    for pk in range(BROWSING):  # the first record also begins Redis's data
                        record_member(f"b{pk}", False, "{}", None)
                    # Connected before the window, by a connect's record then beats since.
                    for first in range(0, n, 1000):
                        pks = range(first, min(first + 1000, n))
                        client.zadd(
                            keys.users, {f"c{pk}": now - 2 * conf.max_age - pk for pk in pks}
                        )
                        client.hset(keys.cards, mapping={f"c{pk}": "{}" for pk in pks})
                    sockets.heartbeat(tabs)
                    assert presence.summary(limit=0).user_count == n + BROWSING
                    continue
                reads = {
                    "summary()": presence.summary,
                    "summary(limit=0)": lambda: presence.summary(limit=0),
                    "count and peak": lambda: stats.count(client, time.time()),
                }
                if n == 0:  # each script loaded (a first EVALSHA falls back to EVAL)
                    for call in reads.values():
                        call()
                    sockets.connect(warm := sockets.Connection("warm", "warm"))
                    sockets.disconnect(warm)
                for name, call in reads.items():
                    out[f"{name} {n}"] = timed(
                        client, lambda: [call() for _ in range(CALLS)], CALLS
                    )
                if n == CONNECTED[-1]:
                    new = [sockets.Connection(f"n{pk}", f"n{pk}") for pk in range(SOCKETS)]
                    out["heartbeat"] = timed(
                        client, lambda: sockets.heartbeat(tabs[:SOCKETS]), SOCKETS
                    )
                    out["connect"] = timed(
                        client, lambda: [sockets.connect(t) for t in new], SOCKETS
                    )
                    out["close"] = timed(
                        client, lambda: [sockets.disconnect(t) for t in new], SOCKETS
                    )
                    client.config_set("slowlog-max-len", 100_000)
                    client.config_set("slowlog-log-slower-than", 0)  # every call, its µs
                    client.slowlog_reset()
                    out["prune"] = timed(client, stats.prune, 1)
                    calls = [
                        e for e in client.slowlog_get(100_000) if "EVALSHA" in str(e["command"])
                    ]
                    out["prune call"] = (max(e["duration"] for e in calls), len(calls))
                    index = conf.socket_keys()[2:3]  # none before the index
                    size = client.memory_usage(index[0]) if index else 0
                    out["index bytes"] = (size / n, 0)
    print(json.dumps(out))


def timed(client: Any, run: Any, per: int) -> tuple[float, float]:
    """(Redis's EVALSHA µs, client µs) per ``per`` of ``run()``."""
    client.config_resetstat()
    started = time.perf_counter()
    run()
    elapsed = time.perf_counter() - started
    stats = client.info("commandstats").get("cmdstat_evalsha", {"usec": 0})
    return stats["usec"] / per, elapsed * 1e6 / per


def spare_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    global BEFORE
    trees = {"after": HERE.parent}
    if "--before" in sys.argv:
        trees = {"before": Path(sys.argv[sys.argv.index("--before") + 1]).resolve(), **trees}
        commit = ["git", "-C", str(trees["before"]), "rev-parse", "--short", "HEAD"]
        BEFORE = subprocess.run(commit, capture_output=True, text=True).stdout.strip()
    port = spare_port()
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)  # the server starts listening (a one-off wait, not a measurement)

        def run(tree: str, action: str) -> str:
            env = {
                **os.environ,
                "PYTHONPATH": str(trees[tree]),
                "REDIS_URL": f"redis://127.0.0.1:{port}/0",
                "SIDE": tree,
            }
            script = [sys.executable, __file__, "--side", action]
            return subprocess.run(
                script, env=env, cwd=HERE, check=True, capture_output=True, text=True
            ).stdout

        for tree in trees:
            run(tree, "fill")
        rounds: dict[str, list[dict[str, list[float]]]] = {tree: [] for tree in trees}
        for _ in range(ROUNDS):
            for tree in trees:
                rounds[tree].append(json.loads(run(tree, "time")))
    finally:
        server.terminate()
        server.wait()
    write(rounds)


def median(rounds: list[dict[str, list[float]]], name: str, which: int) -> float:
    return statistics.median(r[name][which] for r in rounds)


def write(rounds: dict[str, list[dict[str, list[float]]]]) -> None:
    sys.path.insert(0, str(HERE))
    from runner import table

    sides = list(rounds)
    header = ["Read", "Connected members"]
    for tree in sides:
        header += [f"Redis µs ({tree})", f"client µs ({tree})"]
    rows = []
    for name in CALLED:
        for n in CONNECTED:
            cells = [f"{median(rounds[t], f'{name} {n}', i):,.0f}" for t in sides for i in (0, 1)]
            rows.append([f"`{name}`", f"{n:,}", *cells])
    writes = []
    for name, label in WRITES.items():
        cells = [f"{median(rounds[t], name, i):,.1f}" for t in sides for i in (0, 1)]
        writes.append([label, *cells])
    write_header = ["At 100,000 connected"]
    for tree in sides:
        write_header += [f"Redis ({tree})", f"client ({tree})"]
    lines = [
        "# Members connected by WebSocket: the reads and the socket writes",
        "",
        f"{BROWSING} members browsing inside the window, and N members connected longer than "
        "the window without a page view (their sockets alone keep them inside it): the block "
        f"lists 100 (`WHOS_ONLINE_LIST_LIMIT`), {BROWSING} of them kept by a socket from "
        f"N = {BROWSING} on. Redis µs: "
        "Redis's own time per call (`INFO commandstats`, EVALSHA), on a `redis-server` of the "
        "benchmark's own; client µs: the call's time in Python, round trip included. "
        f"Median of {ROUNDS} rounds of {CALLS} calls"
        + (
            f", the two sides alternated round by round (before: {BEFORE})"
            if len(sides) > 1
            else ""
        )
        + f"; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores while it ran. "
        "Written by `benchmarks/connected.py` (see its docstring).",
        "",
        *table(header, rows),
        "",
        "At 100 connected the live set, the index and the cards hash are small enough for "
        "Redis's compact encoding (a listpack, up to 128 entries), whose lookups scan them: "
        "why the row at 100 costs more than the one at 1,000 after the index.",
        f"The socket writes at 100,000 connected, per socket: a heartbeat of {SOCKETS} "
        f"connections (one call), {SOCKETS} connects (a record and a first beat each), "
        f"{SOCKETS} closes; then one `prune()` (nothing stale: everyone is kept), "
        "and the index's memory per connected member (`MEMORY USAGE`).",
        "",
        *table(write_header, writes),
    ]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if "--side" in sys.argv:
        side(sys.argv[sys.argv.index("--side") + 1])
    else:
        main()
