"""The breaker on real servers: does a slow Redis open it on a busy threaded worker, and
does a busy server with a healthy Redis leave it closed? Before (2d26913) and after.

    .venv/bin/python benchmarks/breaker.py [--before /work/wt/before]   # needs redis-server

Each tree's own site (tests/load_site) and whos_online run against a redis-server of
this script's own, on a spare port, behind tests/latency_proxy.py, with whos_online's
defaults (0.25 s socket timeout, so a 0.1 s slow-call budget). Three runs per tree:

- slow: gunicorn, one gthread worker of 8 threads, its CPU kept busy by CLIENTS
  clients asking for the home page (the block) in a loop, a quarter of them new
  visitors; HEALTHY s as they are, then the proxy holds each reply 150 ms for FAULT s.
  Reported: when the worker's first ERROR line came after the delay began, the
  worker's CPU, and the pages' p50/p99 healthy and over the fault's last half.
- busy: the same load for BUSY s with Redis healthy: the ERROR lines.
- storm: SOCKETS WebSockets connected at once (in batches of BATCH) to one uvicorn
  worker (tests/load_site/ws_asgi.py), Redis healthy: the ERROR lines.

Every process started here is stopped by its pid. Prints the table benchmarks/BREAKER.md
shows, each run's figure side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.latency_proxy import LatencyProxy  # noqa: E402
from tests.redis_server import RedisServer, spare_port  # noqa: E402

CLIENTS = 24
NEW_SHARE = 0.25  # of pages: a new visitor, whom the site records (busy)
FEW_NEW = 0.02  # (slow) so most threads burn CPU while the few recording wait on Redis
HEALTHY, FAULT, BUSY = 5.0, 10.0, 15.0  # seconds
DELAY = 0.15
SOCKETS, BATCH = 5000, 1000


def environment(root: Path, redis_port: int, directory: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.load_site.settings",
        "PYTHONPATH": str(root),
        "PYTHONDONTWRITEBYTECODE": "1",  # the other tree is only read
        "LOAD_SITE_DB": str(directory / "site.sqlite3"),
        "LOAD_SITE_KEY_PREFIX": f"whos_online_breaker:{uuid.uuid4().hex}",
        "LOAD_SITE_SOCKET_TIMEOUT": "0.25",
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
    }


@contextmanager
def serving(
    command: list[str], root: Path, env: dict[str, str], log: Path
) -> Iterator[tuple[int, int]]:
    """The server in a process group of its own until the block ends; yields its port, pid."""
    port = spare_port()
    command = [arg.replace("{port}", str(port)) for arg in command]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not listening(port):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield port, process.pid
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def errors(log: Path) -> list[str]:
    """whos_online's ERROR lines, each cut to the words that say which outage began."""
    lines = log.read_text(errors="replace").splitlines()
    return [line.split("failsafe ", 1)[-1][:60] for line in lines if " ERROR whos_online" in line]


def said(lines: list[str]) -> str:
    return f"{len(lines)}" + "".join(f"<br>{line}" for line in lines)


class Load:
    """CLIENTS threads asking for pages in a loop until stopped: (start, seconds) each."""

    def __init__(self, port: int) -> None:
        self.port, self.stop = port, threading.Event()
        self.pages: list[tuple[float, float]] = []
        self.failed = 0  # responses other than 200
        self.new_share = NEW_SHARE
        self.threads = [threading.Thread(target=self.client, args=(n,)) for n in range(CLIENTS)]

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)

    def client(self, n: int) -> None:
        os.nice(10)  # this thread only (Linux): the worker, not the generator, gets the CPU
        rng, cookies, serial = random.Random(n), [], 0
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop.is_set():
            if not cookies or rng.random() < self.new_share:
                serial += 1
                address, cookie = f"10.{n}.{serial >> 8 & 255}.{serial & 255}", ""
            else:
                address, cookie = rng.choice(cookies)
            headers = {"User-Agent": "Mozilla/5.0 Firefox/140.0", "X-Forwarded-For": address}
            if cookie:
                headers["Cookie"] = f"online={cookie}"
            started = time.monotonic()
            try:
                connection.request("GET", "/", headers=headers)
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                continue
            self.pages.append((started, time.monotonic() - started))
            self.failed += response.status != 200
            set_cookie = response.getheader("Set-Cookie") or ""
            if set_cookie.startswith("online="):
                cookies.append((address, set_cookie.split(";")[0].split("=", 1)[1]))

    def latencies(self, since: float, until: float) -> str:
        took = sorted(t for at, t in self.pages if since <= at < until)
        if not took:
            return "no pages"
        p50, p99 = (took[min(int(len(took) * p), len(took) - 1)] * 1000 for p in (0.5, 0.99))
        return f"{p50:.0f} / {p99:.0f} ms ({len(took) / (until - since):.0f}/s)"


GUNICORN = [
    sys.executable, "-m", "gunicorn", "--workers", "1", "--worker-class", "gthread",
    "--threads", "8", "--bind", "127.0.0.1:{port}", "--log-level", "warning",
    "tests.load_site.wsgi:application",
]  # fmt: skip
UVICORN = [
    sys.executable, "-m", "uvicorn", "--workers", "1", "--host", "127.0.0.1", "--port", "{port}",
    "--ws", "websockets", "--lifespan", "off", "--no-access-log", "--log-level", "warning",
    "--backlog", "8192", "tests.load_site.ws_asgi:application",
]  # fmt: skip


@contextmanager
def gunicorn(root: Path, redis_port: int, directory: Path) -> Iterator[tuple[Load, Path, Any]]:
    """The gthread worker under load; yields the load, the log and the worker process."""
    env = environment(root, redis_port, directory)
    setup = [sys.executable, "-m", "tests.load_site.setup_db", "0", "unused"]
    subprocess.run(setup, cwd=root, env=env, check=True, timeout=120)
    log = directory / f"gunicorn-{redis_port}.log"
    with serving(GUNICORN, root, env, log) as (port, pid), Load(port) as load:
        [worker] = psutil.Process(pid).children()
        time.sleep(1.0)  # warm-up: connections, returning visitors
        worker.cpu_percent()
        yield load, log, worker


def busy(root: Path, redis_port: int, directory: Path) -> dict[str, str]:
    """Redis healthy (no proxy between), NEW_SHARE new visitors, for BUSY s."""
    with gunicorn(root, redis_port, directory) as (load, log, worker):
        start = time.monotonic()
        time.sleep(BUSY)
        return {
            "busy_cpu": f"{worker.cpu_percent():.0f}%",
            "busy_errors": said(errors(log)),
            "busy_pages": load.latencies(start, start + BUSY),
            "busy_failed": str(load.failed),
        }


def slow(root: Path, proxy: LatencyProxy, directory: Path) -> dict[str, str]:
    """FEW_NEW new visitors, HEALTHY s, then each Redis reply DELAY s late for FAULT s."""
    with gunicorn(root, proxy.port, directory) as (load, log, worker):
        load.new_share = FEW_NEW
        healthy = time.monotonic()
        time.sleep(HEALTHY)
        before = len(errors(log))
        proxy.delay(DELAY)
        fault, opened = time.monotonic(), None
        while time.monotonic() < fault + FAULT:
            if opened is None and len(errors(log)) > before:
                opened = time.monotonic() - fault
            time.sleep(0.02)
        proxy.delay(0)
        return {
            "slow_cpu": f"{worker.cpu_percent():.0f}%",
            "slow_opened": "never" if opened is None else f"after {opened:.2f} s",
            "slow_errors": said(errors(log)[before:]),
            "slow_healthy_pages": load.latencies(healthy, fault),
            "slow_pages": load.latencies(fault + FAULT / 2, fault + FAULT),
            "slow_failed": str(load.failed),
        }


async def storm(port: int) -> float:
    import websockets

    started, sockets = time.monotonic(), []
    for first in range(0, SOCKETS, BATCH):
        urls = [
            f"ws://127.0.0.1:{port}/ws/chat/?member={n}"
            for n in range(first, min(first + BATCH, SOCKETS))
        ]
        sockets += await asyncio.gather(*(websockets.connect(url, open_timeout=60) for url in urls))
    took = time.monotonic() - started
    await asyncio.sleep(2)  # the connects' records and first beats
    await asyncio.gather(*(socket.close() for socket in sockets))
    return took


def storm_on_uvicorn(root: Path, redis_port: int, directory: Path) -> dict[str, str]:
    """Redis healthy (no proxy between): SOCKETS members connect at once."""
    env = environment(root, redis_port, directory)
    env["LOAD_SITE_WEBSOCKET_URL"] = "/ws/whos-online/"
    log = directory / "uvicorn.log"
    with serving(UVICORN, root, env, log) as (port, _):
        with ThreadPoolExecutor(1, initializer=os.nice, initargs=(10,)) as niced:
            took = niced.submit(asyncio.run, storm(port)).result()
        time.sleep(1)
    return {"storm_connect": f"{took:.1f} s", "storm_errors": said(errors(log))}


def run(root: Path, directory: Path) -> dict[str, str]:
    with RedisServer(directory=directory / "redis") as server:
        redis_port = server.require_port()
        proxy = LatencyProxy(redis_port)
        try:
            return {
                **slow(root, proxy, directory),
                **busy(root, redis_port, directory),
                **storm_on_uvicorn(root, redis_port, directory),
            }
        finally:
            proxy.close()


ROWS = [
    ("slow Redis (+150 ms), gthread 1×8 saturated, 2% new: first ERROR", "slow_opened"),
    ("  ERROR lines during the fault", "slow_errors"),
    ("  worker CPU during the fault", "slow_cpu"),
    ("  pages p50 / p99 before the fault", "slow_healthy_pages"),
    ("  pages p50 / p99, fault's last half", "slow_pages"),
    ("healthy Redis, same load at 25% new (15 s): ERROR lines", "busy_errors"),
    ("  worker CPU", "busy_cpu"),
    ("  pages p50 / p99", "busy_pages"),
    ("healthy Redis, 5,000-socket storm on uvicorn: ERROR lines", "storm_errors"),
    ("  time to connect them all", "storm_connect"),
    ("pages answered other than 200 (slow, busy)", "failed"),
]


ERRORS = ("slow_errors", "busy_errors", "storm_errors")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, help="a checkout of the tree to compare with")
    parser.add_argument("--runs", type=int, default=1, help="runs of each tree, alternated")
    args = parser.parse_args()
    trees = {"after (this tree)": HERE.parent}
    if args.before:
        trees = {f"before ({args.before})": args.before, **trees}
    results: dict[str, list[dict[str, str]]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, root in trees.items():
            with tempfile.TemporaryDirectory() as directory:
                found = run(root, Path(directory))
            found["failed"] = f"{found.pop('slow_failed')}, {found.pop('busy_failed')}"
            results[name].append(found)
            print(name, found, flush=True)
    lines = ["| | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for label, key in ROWS:
        cells = [" · ".join(run[key].split("<br>")[0] for run in runs) for runs in results.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    said = {
        line
        for runs in results.values()
        for run in runs
        for key in ERRORS
        for line in run[key].split("<br>")[1:]
    }
    table = "\n".join(
        lines + ["", "ERROR lines seen (cut):", *(f"- {line}" for line in sorted(said))]
    )
    print(table)


if __name__ == "__main__":
    main()
