"""The load site's WebSocket app (``ws_asgi``) served by uvicorn processes of its own,
or the site by ``runserver``.

Used by tests/test_realtime_load.py, tests/test_server_sent_events.py and
benchmarks/rooms_push.py: one worker a process, each on a spare loopback port,
stopped by its pid.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent.parent


def environment(redis_url: str, prefix: str, directory: Path, **extra: str) -> dict[str, str]:
    """The load site's settings for this Redis and key prefix; ``extra`` LOAD_SITE_* values."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.load_site.settings",
        "PYTHONPATH": str(ROOT),
        "LOAD_SITE_DB": str(directory / "unused.sqlite3"),
        "LOAD_SITE_KEY_PREFIX": prefix,
        "REDIS_URL": redis_url,
        **extra,
    }


def uvicorn(port: int) -> list[str]:
    return [
        sys.executable, "-m", "uvicorn", "--workers", "1", "--host", "127.0.0.1",
        "--port", str(port), "--ws", "websockets", "--lifespan", "off",
        "--no-access-log", "--log-level", "warning", "--backlog", "4096",
        "tests.load_site.ws_asgi:application",
    ]  # fmt: skip


def runserver(port: int) -> list[str]:
    """Django's own server (WSGI, a thread per request), without its reloader."""
    return [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload"]


@contextmanager
def serving(
    env: dict[str, str], log: IO[bytes] | None = None, server: Callable[[int], list[str]] = uvicorn
) -> Iterator[tuple[int, int]]:
    """One server process (uvicorn's, or ``runserver``); yields its port and pid once it
    listens."""
    port = free_port()
    process = subprocess.Popen(
        server(port),
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start on port {port}")
            time.sleep(0.1)
        yield port, process.pid
    finally:
        process.terminate()  # by its pid
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
