"""Real servers under load: gunicorn (WSGI) and uvicorn (ASGI), two workers each.

For each server, locust (headless, one process, a subprocess of its own) plays
GUESTS distinct guests and MEMBERS distinct members against tests/load_site on
a loopback port, every visitor several pages with its own cookies, and then
quits by itself (see tests/load/locustfile.py for who does what). Afterwards,
read from this process against the same Redis and key prefix:

- every response was a 2xx page with the expected text;
- the "online" cookie was set exactly on each visitor's first page (and on a
  member's first page after login), so most requests were throttled;
- the counts are exactly GUESTS guests and MEMBERS members, the members in
  Redis are exactly the pks of those who logged in (listed by their names) and
  the guests exactly the simulated addresses. Members browse from addresses no guest uses and start as guests:
  the login takes their address off the guest count, so it must end at GUESTS.

Needs the real Redis in REDIS_URL (the servers are separate processes);
without it the tests are deselected, or fail when CI is set. Each run has a key prefix of
its own and deletes only its own keys.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import online_now
from tests.conftest import REAL_CACHE, REDIS_URL, names, require
from whos_online.conf import conf
from whos_online.store import addresses
from whos_online.store.connection import get_client

pytestmark = pytest.mark.load


ROOT = Path(__file__).resolve().parent.parent
LOCUSTFILE = ROOT / "tests" / "load" / "locustfile.py"
SITE_SECRET_KEY = "whos-online-load-site"  # tests/load_site/settings.py
PASSWORD = "load-test-password"

GUESTS = 2000
MEMBERS = 300
LOCUST_USERS = 20  # concurrent visitors; each plays many visitors one after another
RUN_TIME_LIMIT = 60  # seconds: locust stops by itself by then even if visitors remain
GUEST_PAGES = 2
MEMBER_PAGES = 4  # a page as a guest, the login, two pages as the member


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_command(server: str, port: int) -> list[str]:
    """gunicorn (threaded workers), gunicorn-sync (one request at a time each) or uvicorn."""
    if server.startswith("gunicorn"):
        workers = ["sync"] if server == "gunicorn-sync" else ["gthread", "--threads", "4"]
        return [
            sys.executable, "-m", "gunicorn",
            "--workers", "2", "--worker-class", *workers,
            "--bind", f"127.0.0.1:{port}", "--graceful-timeout", "5", "--log-level", "warning",
            "tests.load_site.wsgi:application",
        ]  # fmt: skip
    return [
        sys.executable, "-m", "uvicorn",
        "--workers", "2", "--host", "127.0.0.1", "--port", str(port),
        "--timeout-graceful-shutdown", "5", "--no-access-log", "--log-level", "warning",
        "tests.load_site.asgi:application",
    ]  # fmt: skip


def tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


@pytest.fixture(scope="module")
def site_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment the servers run in, with a migrated database holding MEMBERS users."""
    require("REDIS_URL")
    directory = tmp_path_factory.mktemp("load_site")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.load_site.settings",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "LOAD_SITE_DB": str(directory / "site.sqlite3"),
        "LOAD_SITE_KEY_PREFIX": "unset",
        "REDIS_URL": REDIS_URL,
    }
    setup = subprocess.run(
        [sys.executable, "-m", "tests.load_site.setup_db", str(MEMBERS), PASSWORD],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert setup.returncode == 0, setup.stdout + setup.stderr
    return env


@contextmanager
def serving(server: str, env: dict[str, str], logs: Path) -> Iterator[str]:
    """Run the server on a spare loopback port until the block ends; yield its URL."""
    port = free_port()
    with open(logs, "wb") as log:
        process = subprocess.Popen(
            server_command(server, port), cwd=ROOT, env=env,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the workers stop with it
        )  # fmt: skip
        try:
            wait_until_ready(process, port, logs)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(process)


def wait_until_ready(process: subprocess.Popen[bytes], port: int, logs: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited with {process.returncode}:\n{tail(logs)}")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request("GET", "/ready/")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.1)
    pytest.fail(f"the server did not answer within 30 s:\n{tail(logs)}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group (it and its workers); SIGKILL it if that hangs."""
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # workers that outlived their master
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def site_pks(env: dict[str, str]) -> dict[str, str]:
    """The load site's users, username -> pk as whos_online keeps it, from its own database."""
    with closing(sqlite3.connect(env["LOAD_SITE_DB"])) as db:
        return {name: str(pk) for pk, name in db.execute("SELECT id, username FROM auth_user")}


def run_locust(url: str, env: dict[str, str], out: Path) -> dict[str, Any]:
    """Play every visitor against url and return what the locustfile reported."""
    report = out / "report.json"
    command = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
        "-u", str(LOCUST_USERS), "-r", str(LOCUST_USERS), "--run-time", f"{RUN_TIME_LIMIT}s",
        "--stop-timeout", "5", "--host", url, "--exit-code-on-error", "1",
        "--only-summary", "--loglevel", "WARNING",
    ]  # fmt: skip
    locust_env = {
        **env,
        "LOAD_GUESTS": str(GUESTS),
        "LOAD_MEMBERS": str(MEMBERS),
        "LOAD_PASSWORD": PASSWORD,
        "LOAD_REPORT": str(report),
    }
    result = subprocess.run(
        command, cwd=ROOT, env=locust_env, capture_output=True, text=True,
        timeout=RUN_TIME_LIMIT + 30,
    )  # fmt: skip
    output = (result.stdout + result.stderr)[-4000:]
    assert report.exists(), f"locust wrote no report (exit {result.returncode}):\n{output}"
    played: dict[str, Any] = json.loads(report.read_text())
    assert played["bad"] == [], played["bad"][:10]
    assert result.returncode == 0, f"locust exited with {result.returncode}:\n{output}"
    return played


@pytest.mark.parametrize("server", ["gunicorn", "uvicorn"])
def test_thousands_of_visitors_are_counted_exactly(
    server: str, site_env: dict[str, str], settings: Any, tmp_path: Path
) -> None:
    prefix = f"whos_online_load:{uuid.uuid4().hex}"
    settings.CACHES = {"default": REAL_CACHE}
    settings.WHOS_ONLINE_KEY_PREFIX = prefix
    settings.SECRET_KEY = SITE_SECRET_KEY  # so guest_id() here matches the site's
    client = get_client()
    client.ping()
    env = {**site_env, "LOAD_SITE_KEY_PREFIX": prefix}
    try:
        with serving(server, env, tmp_path / "server.log") as url:
            played = run_locust(url, env, tmp_path)
        server_log = f"server log:\n{tail(tmp_path / 'server.log')}"
        visitors = GUESTS + MEMBERS
        assert played["finished"] == visitors, (
            f"{server} served only {played['finished']} of {visitors} visitors "
            f"within {RUN_TIME_LIMIT} s\n{server_log}"
        )
        requests = played["requests"]
        seconds = played["stopped"] - played["started"]
        print(
            f"\n{server}: {GUESTS} guests + {MEMBERS} members, {requests} requests "
            f"in {seconds:.1f} s = {requests / seconds:.0f} requests/s"
        )
        # Zero failures (non-2xx, connection errors, wrong pages), by locust's count and ours.
        assert played["locust_failures"] == 0
        expected_requests = GUESTS * GUEST_PAGES + MEMBERS * MEMBER_PAGES
        assert played["locust_requests"] == requests == expected_requests
        assert requests > visitors
        assert len(played["guests"]) == len(set(played["guests"])) == GUESTS
        assert len(played["members"]) == len(set(played["members"])) == MEMBERS
        # Throttled: one recording response per identity, none on the other pages.
        assert played["cookie_mismatches"] == [], (played["cookie_mismatches"][:10], server_log)

        assert online_now.user_count() == MEMBERS, server_log
        assert online_now.guest_count() == GUESTS, server_log
        listed = online_now.online_users()
        assert sorted(names(listed)) == sorted(played["members"])
        pks = site_pks(site_env)
        assert {member.pk for member in listed} == {pks[name] for name in played["members"]}
        stored = client.zrange(conf.keys().guests, 0, -1)
        guest_ids = {m.decode() if isinstance(m, bytes) else m for m in stored}
        assert guest_ids == {addresses.guest_id(address) for address in played["guests"]}
    finally:
        # Every key of this run's own prefix (users, guests and whatever else the app keeps).
        own_keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if own_keys:
            client.delete(*own_keys)
