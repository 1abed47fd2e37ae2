"""Fixtures: every test that uses ``redis_db`` runs against fakeredis and a real Redis.

The real run needs ``REDIS_URL`` (e.g. ``redis://127.0.0.1:6379/15``). Each test
gets its own key prefix and deletes only its own keys afterwards, so the suite
can share a Redis with anything else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from django.test import AsyncClient, Client
from django.utils.timezone import get_default_timezone

from tests import online_now
from tests.counted import CountedConnection, CountedFakeConnection, Wire, listening
from tests.redis_server import REDIS_CLI, REDIS_SERVER
from whos_online import testing
from whos_online.conf import Settings
from whos_online.store import scripts, sockets
from whos_online.store.connection import get_client
from whos_online.store.members import default_card

REDIS_URL = os.environ.get("REDIS_URL", "")

# Time-travel tests start near the real clock: fakeredis expires keys by the
# travelled clock, a real Redis by its own, and both must agree.
NOW = datetime.now(timezone.utc).replace(microsecond=0)


# A staff viewer, for the API's ``viewer=``: staff see hidden members.
STAFF = SimpleNamespace(is_staff=True)


def on_one_day(moment: datetime) -> datetime:
    """``moment``, or the next local day's first minute if its own (``TIME_ZONE``) ends
    within the hour: the start for a test that travels on from it and counts one day."""
    local = moment.astimezone(get_default_timezone())
    if local.hour < 23:
        return moment
    return (local + timedelta(hours=1)).replace(minute=1, second=0).astimezone(timezone.utc)


# The default bot filter ignores requests without a User-Agent, as Django's
# test clients send them; these clients look like a browser instead.
BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"


class _BrowserHeaders:
    # Per request, because AsyncClient drops headers given to its constructor.
    def generic(self, *args: Any, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
        headers = {"User-Agent": BROWSER, **(headers or {})}
        return super().generic(*args, headers=headers, **kwargs)  # type: ignore[misc]


class BrowserClient(_BrowserHeaders, Client):
    pass


class BrowserAsyncClient(_BrowserHeaders, AsyncClient):
    pass


@pytest.fixture
def client() -> BrowserClient:
    """pytest-django's ``client``, sending a browser User-Agent."""
    return BrowserClient()


@pytest.fixture
def async_client() -> BrowserAsyncClient:
    """pytest-django's ``async_client``, sending a browser User-Agent."""
    return BrowserAsyncClient()


# A process waiting for a CPU on a busy machine is, to whos_online, a process waiting
# for Redis: with the default 0.25 s (a slow-call budget of 0.1 s) a loaded run skips
# Redis now and then, and a test of what was recorded turns red. The tests of
# timeouts and slowness set their own; tests/test_conf.py checks the default.
SUITE_SOCKET_TIMEOUT = 2


def django_redis_cache(location: str, **options: Any) -> dict[str, Any]:
    """A django-redis cache whose connections tell the ``wire`` and ``round_trips`` fixtures."""
    options.setdefault("SOCKET_TIMEOUT", SUITE_SOCKET_TIMEOUT)
    pool = {"connection_class": CountedConnection, **options.get("CONNECTION_POOL_KWARGS", {})}
    options["CONNECTION_POOL_KWARGS"] = pool
    return {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": location, "OPTIONS": options}


def socket_timeout(settings: Any, seconds: float) -> None:
    """Give whos_online's cache alias ``seconds`` of socket timeout, in its OPTIONS as a
    site does (django-redis's ``SOCKET_TIMEOUT``, Django's ``socket_timeout``)."""
    alias = getattr(settings, "WHOS_ONLINE_CACHE_ALIAS", "default")
    cache = settings.CACHES[alias]
    django_backend = cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    options = {
        **cache.get("OPTIONS", {}),
        ("socket_timeout" if django_backend else "SOCKET_TIMEOUT"): seconds,
    }
    settings.CACHES = {**settings.CACHES, alias: {**cache, "OPTIONS": options}}


FAKE_CACHE = django_redis_cache(
    "redis://fakeredis-tests:6379/0",
    CONNECTION_POOL_KWARGS={"connection_class": CountedFakeConnection},
)
# Every in-process alias on REDIS_URL is this one (see tests/counted.py).
REAL_CACHE = django_redis_cache(REDIS_URL)


# What some tests need beyond Python. A test whose needs are missing is never
# skipped: locally it is deselected before the run (the header says what is
# missing, the summary how many); in CI nothing is deselected, so it fails in
# require().
AVAILABLE = {
    "REDIS_URL": bool(REDIS_URL),
    "redis-server": bool(REDIS_SERVER),
    "redis-cli": bool(REDIS_CLI),
    "chromium": shutil.which("chromium") is not None,
    "playwright": importlib.util.find_spec("playwright") is not None,
    "gettext": all(shutil.which(tool) for tool in ("xgettext", "msgmerge", "msgfmt")),
    "nginx": shutil.which("nginx") is not None,
}
NEEDS_BY_MODULE = {
    "test_load.py": ("REDIS_URL",),
    "test_hostile_http.py": ("REDIS_URL",),
    "test_browser.py": ("REDIS_URL", "chromium", "playwright"),
    "test_realtime_browser.py": ("REDIS_URL", "chromium", "playwright"),
    "test_look.py": ("chromium", "playwright"),
    "test_forum_look.py": ("chromium", "playwright"),
    "test_realtime_load.py": ("redis-server",),
    "test_faults.py": ("redis-server",),
    "test_resilience.py": ("redis-server",),
    "test_sentinel.py": ("redis-server",),
    "test_cluster.py": ("redis-server", "redis-cli"),
    "test_catalogs.py": ("gettext",),
    "test_nginx_cache.py": ("nginx",),
}
HOW_TO_GET = {
    "REDIS_URL": "set REDIS_URL, e.g. redis://127.0.0.1:6379/15, or install redis-server "
    "and `python3 dev.py test` starts one",
    "redis-server": "`python3 dev.py setup`, or apt-get install redis-server",
    "redis-cli": "`python3 dev.py setup`, or apt-get install redis-tools",
    "chromium": "`python3 dev.py setup`, or apt-get install chromium",
    "playwright": "pip install --group browser",
    "gettext": "`python3 dev.py setup`, or apt-get install gettext",
    "nginx": "`python3 dev.py setup`, or apt-get install nginx-light",
}


def require(*needs: str) -> None:
    """Fail, with what to install, unless everything in ``needs`` is here."""
    missing = [need for need in needs if not AVAILABLE[need]]
    if missing:
        pytest.fail("missing: " + "; ".join(f"{m} ({HOW_TO_GET[m]})" for m in missing))


def _needs(item: pytest.Item) -> tuple[str, ...]:
    needs = NEEDS_BY_MODULE.get(item.path.name, ())
    if item.get_closest_marker("browser"):
        needs += ("chromium", "playwright")
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("redis_db") == "real":
        needs += ("REDIS_URL",)
    return needs


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("CI"):
        return
    left_out = [item for item in items if not all(AVAILABLE[n] for n in _needs(item))]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in set(left_out)]


# What a whole run covers, as pytest's header (and so `dev.py test`) says: each half with
# what it needs. fakeredis needs nothing; the others are deselected where their needs are
# missing (in CI they fail instead).
HALVES = (
    ("fakeredis: every Redis test, in process", ()),
    (
        f"the real Redis at REDIS_URL ({REDIS_URL or 'unset'}): every Redis test again, and the "
        "load and hostile-HTTP tests' app servers on it",
        ("REDIS_URL",),
    ),
    (
        "redis-servers of their own on spare ports (the fault, resilience, Sentinel, Cluster and "
        "live-load tests; minutes, even without REDIS_URL)",
        ("redis-server",),
    ),
    ("the browser tests, in Chromium", ("chromium", "playwright")),
)


def pytest_report_header(config: pytest.Config) -> list[str]:
    ci = bool(os.environ.get("CI"))  # in CI every half runs, or fails
    lines = [
        f"{'runs' if ci or all(AVAILABLE[n] for n in needs) else 'OFF '}: {half}"
        for half, needs in HALVES
    ]
    if config.option.markexpr:  # `dev.py test`'s quick half leaves the slow markers to --all
        lines.append(f"and of those, only the tests -m {config.option.markexpr!r} selects")
    missing = [f"{need} ({HOW_TO_GET[need]})" for need, ok in AVAILABLE.items() if not ok]
    if missing:
        said = "CI: the tests that need these fail" if ci else "not here, so deselected"
        lines.append(f"{said}: " + "; ".join(missing))
    return lines


def passes_on_its_own_settings(settings_module: str, test_module: str) -> str:
    """Run ``test_module`` under ``settings_module`` in a process of its own; its summary line.

    For modules that need another user model or other installed apps (a process
    has one set): under tests.settings they collect nothing (``__test__``). The
    run gets this one's environment: REDIS_URL adds its real-Redis half, CI
    turns deselection into failure.
    """
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "--ds", settings_module, test_module,
        ],
        cwd=Path(__file__).resolve().parent.parent, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    summary = output.strip().splitlines()[-1]
    # Deselected: the real-Redis half, where this run has no REDIS_URL either.
    deselected = "" if REDIS_URL else "(, \\d+ deselected)?"
    assert re.fullmatch(rf"=* ?\d+ passed{deselected} in [\d.]+s( \(.*\))? ?=*", summary), output
    return summary


@pytest.fixture
def people(db: None, django_user_model: Any) -> Callable[..., list[Any]]:
    """Make users by username: ``alice, bob = people("alice", "bob")``.

    Keyword arguments (``first_name="Alice"``, ``is_staff=True``) apply to each.
    """

    def make(*usernames: str, **fields: Any) -> list[Any]:
        return [django_user_model.objects.create(username=name, **fields) for name in usernames]

    return make


def tab(user: Any, id: str = "tab", room: str | None = None) -> Any:
    """An open WebSocket connection of ``user`` (with their card) named ``id``."""
    return dataclasses.replace(sockets.open_connection(user, room), id=id)


def hiding(rule: Callable[[Any], bool]) -> Callable[[Any], dict[str, Any]]:
    """A WHOS_ONLINE_MEMBER_CARD: the default card, asking to be hidden where ``rule`` says."""
    return lambda user: {**default_card(user), "hidden": rule(user)}


def names(members: Any) -> list[str]:
    """The display names of listed members, e.g. ``names(online_now.online_users())``."""
    return [member.name for member in members]


@pytest.fixture(autouse=True)
def _failsafe_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    """Capture the breaker's DEBUG record too: it carries the exception an outage began with."""
    caplog.set_level(logging.DEBUG, logger="whos_online.store.failsafe")


@pytest.fixture(autouse=True)
def kept_block_reads(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """Each block read afresh: tests read the block right after recording someone, which
    a process's kept read (1 s) would not show yet. A test of the kept reads calls this
    with the seconds they are kept."""

    def keep(seconds: float) -> None:
        monkeypatch.setattr(Settings, "block_cache", seconds)

    keep(0)
    return keep


@pytest.fixture(autouse=True)
def _fresh_outage() -> Iterator[None]:
    """The breaker and the kept block reads are per process; no test
    inherits another's (as the how-to tells a site's tests)."""
    testing.reset()
    yield
    testing.reset()


DECLARED_KEYS_ONLY = (Path(__file__).parent / "declared_keys.lua").read_text()


def declared_keys_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every script fail on a key it touches but does not declare (a real Redis:
    the check asks it for each command's keys; see declared_keys.lua)."""
    for script in vars(scripts).values():
        if isinstance(script, scripts.Script):
            text = DECLARED_KEYS_ONLY + script.text
            monkeypatch.setattr(script, "text", text)
            monkeypatch.setattr(script, "sha", hashlib.sha1(text.encode()).hexdigest())


@pytest.fixture(params=["fake", "real"])
def redis_db(
    request: pytest.FixtureRequest, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[redis.Redis]:
    """The Redis whos_online talks to, namespaced for this test and cleaned afterwards.

    On the real one every script runs with ``declared_keys_only``.
    """
    if request.param == "real":
        require("REDIS_URL")
        settings.CACHES = {"default": REAL_CACHE}
        declared_keys_only(monkeypatch)
    else:
        settings.CACHES = {"default": FAKE_CACHE}
    prefix = f"whos_online_test:{uuid.uuid4().hex}"
    settings.WHOS_ONLINE_KEY_PREFIX = prefix
    client = get_client()
    client.ping()  # fail (not skip) here if REDIS_URL is set but unreachable
    yield client
    own = list(client.scan_iter(match=f"{prefix}:*"))
    if own:
        client.delete(*own)


class RoundTrips(Wire):
    """The payloads counted connections send while the fixture listens: one per round trip."""

    @property
    def count(self) -> int:
        return len(self.payloads)

    @property
    def commands(self) -> list[list[str]]:
        """Command names per round trip, e.g. [["EVALSHA"]]; a read script's EVALSHA_RO
        counts as EVALSHA (that reads run read-only: test_scripts, test_faults)."""
        return [
            [
                name.decode().upper().removesuffix("_RO")
                for name in re.findall(rb"\*\d+\r\n\$\d+\r\n(\w+)\r\n", p)
            ]
            for p in self.payloads
        ]

    @property
    def records(self) -> int:
        """Round trips that recorded a visitor."""
        return self.ran(scripts.RECORD)

    def ran(self, script: scripts.Script) -> int:
        """Round trips that ran ``script`` (they carry its SHA1)."""
        return sum(script.sha.encode() in payload for payload in self.payloads)


@pytest.fixture
def round_trips(redis_db: redis.Redis) -> Iterator[RoundTrips]:
    """Counts network round trips: a pipeline is one, a single command is one.

    The scripts are loaded first, as on a server that has run them before, so
    the counts are the steady state's (the NOSCRIPT fallback: test_faults).
    """
    for script in vars(scripts).values():
        if isinstance(script, scripts.Script):
            redis_db.script_load(script.text)
    online_now.user_count()  # a read: the client knows whether its server has EVALSHA_RO
    with listening(RoundTrips()) as trips:
        yield trips


@pytest.fixture
def ticks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The real-time hubs' ticks, one entry as each ends: a test waits for ticks, not time."""
    from whos_online.contrib.channels import hub

    ended: list[Any] = []
    tick = hub.Hub.tick

    async def counted(self: hub.Hub) -> None:
        try:
            await tick(self)
        finally:
            ended.append(self)

    monkeypatch.setattr(hub.Hub, "tick", counted)
    return ended


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def dead_redis(settings: Any, closed_port: int) -> None:
    """Point the cache alias at a port where no Redis answers."""
    settings.CACHES = {"default": django_redis_cache(f"redis://127.0.0.1:{closed_port}/0")}


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield int(sock.getsockname()[1])


@pytest.fixture
def wire() -> Iterator[Wire]:
    """What the counted connections (tests/counted.py) connect, send and wait for in the test."""
    with listening(Wire()) as seen:
        yield seen
