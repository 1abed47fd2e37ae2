"""whos_online on a real Redis Cluster: three masters started here, on spare loopback ports.

django-redis has no Cluster client, so the site hands whos_online a
``redis.cluster.RedisCluster`` through ``WHOS_ONLINE_REDIS_CLIENT`` (the
``cluster_client`` factory below) and gives its prefix a hash tag, so every key
of a namespace, rooms included, lives in one slot.

1. The core suite (record, list, counts, prune, peak, rooms, the middleware and
   the block) runs again here, unchanged, against the cluster.
2. One master is killed: the site whose slot it served keeps serving 200s
   (fail-open), and a site whose slot lives on another master keeps recording,
   listing and pruning as if nothing happened.

The servers are our own (tests/redis_server.py); the shared Redis on 6379 is
never touched. Waiting for the cluster is real time, polled with a deadline;
whos_online's back-off is moved with time_machine.
"""

from __future__ import annotations

import inspect
import logging
import subprocess
import types
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import override_settings
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.retry import Retry

from tests import (
    test_admin,
    test_command,
    test_counting,
    test_guests,
    test_hidden,
    test_live,
    test_middleware,
    test_peak,
    test_presence,
    test_rooms,
    test_status,
    test_templatetag,
)
from tests.conftest import NOW, BrowserClient, require, socket_timeout
from tests.counted import CountedConnection, Wire
from tests.redis_server import (
    REDIS_CLI,
    RedisServer,
    RedisServerError,
    spare_port,
    wait_for,
)
from tests.test_docs import install_recipe
from tests.test_faults import UNAVAILABLE, block, get, log_records, members, the_error
from whos_online.conf import Settings, conf
from whos_online.store import failsafe
from whos_online.store.connection import get_client

pytestmark = [pytest.mark.topology, pytest.mark.django_db]

BACKOFF = 30
ROOM_UNAVAILABLE = "Who is here is unavailable right now."
MASTERS = 3
# How long a master may be unreachable before the others mark it failed (ms).
NODE_TIMEOUT = 500
# Connection attempts one failed request may make to a dead master: the try and
# the factory's one retry, each followed by a refresh of the slot map, which may
# ask the dead node first (redis-py's default of 10 retries makes it 14 or so).
DIALS_PER_FAILURE = 4


# -- the site's client factory ---------------------------------------------------

# The startup node ``cluster_client`` connects to; the fixtures set it.
SEED_PORT: list[int] = []
# The client ``cluster_client`` made, per startup node: one per process, as a
# site makes it. ``close_clients()`` closes them (and is what a new process is).
CLIENTS: dict[int, RedisCluster] = {}


def cluster_client() -> RedisCluster:
    """``WHOS_ONLINE_REDIS_CLIENT`` for these tests, as a site on Redis Cluster writes one."""
    port = SEED_PORT[0]
    if port not in CLIENTS:
        # From a URL, whose node pools take a connection class (redis-py passes the
        # keyword arguments of the other constructor to Redis(), which has none).
        CLIENTS[port] = RedisCluster.from_url(
            f"redis://127.0.0.1:{port}",
            # The socket timeout of whos_online's cache alias (0.25 s by default; here 5 s).
            socket_timeout=conf.socket_timeout,
            socket_connect_timeout=conf.socket_timeout,
            # redis-py retries a failed command 10 times by default, each try
            # bounded by the timeouts above. whos_online already fails open and
            # backs off, so more than one retry would only hold the request. One
            # lets a client be built while its default node is down.
            retry=Retry(NoBackoff(), 1),
            # The suite's round-trip counter, through redis-py's public hook.
            connection_class=CountedConnection,
        )
    return CLIENTS[port]


def close_clients() -> None:
    while CLIENTS:
        client = CLIENTS.popitem()[1]
        client.close()
        # A node client given its pool (from_url's) leaves the pool open on close().
        for node in client.get_nodes():
            if node.redis_connection is not None:
                node.redis_connection.connection_pool.disconnect()


# -- the cluster ----------------------------------------------------------------------


class Cluster:
    """``MASTERS`` redis-server processes in cluster mode, no replicas, joined by redis-cli.

    ``--cluster-require-full-coverage no``: when a master dies, the others keep
    serving their own slots (with the default, the whole cluster refuses).
    """

    def __init__(self, directory: Path) -> None:
        self.nodes = [
            RedisServer(
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                str(NODE_TIMEOUT),
                "--cluster-require-full-coverage",
                "no",
                directory=directory / f"node-{n}",
                # The default bus port (port + 10000) does not exist for high spare ports.
                port_args=lambda port: ("--cluster-port", str(spare_port())),
            )  # fmt: skip
            for n in range(MASTERS)
        ]

    def start(self) -> Cluster:
        for node in self.nodes:
            node.start()
        create = subprocess.run(
            [
                REDIS_CLI,
                "--cluster",
                "create",
                *(f"127.0.0.1:{node.require_port()}" for node in self.nodes),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],  # fmt: skip
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if create.returncode != 0:
            raise RedisServerError(
                f"redis-cli --cluster create failed:\n{create.stdout}{create.stderr}"
            )
        wait_for(self.agreed, timeout=15, what="the cluster agreeing on its nodes and slots")
        return self

    def agreed(self) -> bool:
        """Every node knows every other, all slots are served, and the slot maps agree."""
        maps = []
        for node in self.nodes:
            with node.client() as direct:
                info = direct.cluster("INFO")
                if info["cluster_state"] != "ok" or int(info["cluster_known_nodes"]) != MASTERS:
                    return False
                maps.append(self._slot_map(direct))
        return all(m == maps[0] for m in maps) and len(maps[0]) == MASTERS

    @staticmethod
    def _slot_map(direct: redis.Redis) -> list[tuple[int, int, int]]:
        """(first slot, last slot, port) per master."""
        return sorted(
            (int(first), int(last), int(master[1]))
            for first, last, master, *_ in direct.execute_command("CLUSTER", "SLOTS")
        )

    def tag_on(self, node: RedisServer, name: str) -> str:
        """A hash tag, ``name`` plus a number, whose slot ``node`` serves."""
        with self.nodes[0].client() as direct:
            ranges = [(a, b) for a, b, port in self._slot_map(direct) if port == node.port]
        for n in range(10_000):
            slot = key_slot(("{" + (tag := f"{name}-{n}") + "}").encode())
            if any(a <= slot <= b for a, b in ranges):
                return tag
        raise AssertionError(f"no tag for port {node.port}")

    def flagged_failed(self, dead: RedisServer) -> bool:
        """Whether every other node has flagged ``dead`` as failed (not only suspected)."""
        for node in self.nodes:
            if node is not dead:
                with node.client() as direct:
                    view = direct.cluster("NODES")[f"127.0.0.1:{dead.require_port()}"]
                if "fail" not in view["flags"].split(","):
                    return False
        return True

    def close(self) -> None:
        for node in self.nodes:
            node.close()


@contextmanager
def running_cluster(directory: Path) -> Iterator[Cluster]:
    require("redis-server", "redis-cli")
    cluster = Cluster(directory)
    try:
        yield cluster.start()
    finally:
        close_clients()
        cluster.close()


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster for the core suite (each test has its own hash tag, and cleans it)."""
    with running_cluster(tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster of this test's own, which it may kill masters of."""
    with running_cluster(tmp_path / "cluster") as cluster:
        yield cluster


# -- 1. the core suite, on the cluster --------------------------------------------------


@pytest.fixture
def redis_db(shared_cluster: Cluster, settings: Any) -> Iterator[RedisCluster]:
    """Overrides conftest's: whos_online on the cluster, under a hash-tagged prefix of this test's.

    The tests below are the core suite's own, unchanged: ``redis_db`` is the
    fixture they ask for, and here it means the cluster.
    """
    SEED_PORT[:] = [shared_cluster.nodes[0].require_port()]
    settings.WHOS_ONLINE_REDIS_CLIENT = "tests.test_cluster.cluster_client"
    # Three masters and the test on a busy machine: what the core suite asserts is what
    # was recorded and read, so no wait for a CPU may read as a slow or timed-out Redis.
    socket_timeout(settings, 5)
    prefix = "{" + f"whos_online_test:{uuid.uuid4().hex}" + "}"
    settings.WHOS_ONLINE_KEY_PREFIX = prefix
    client = get_client()
    assert isinstance(client, RedisCluster)
    # A connection to every master now, as the real run's PING makes one, so
    # the round-trip counts below see whos_online's commands, not handshakes.
    client.ping(target_nodes=RedisCluster.PRIMARIES)
    try:
        yield client
        own = list(client.scan_iter(match=f"{prefix}:*"))
        if own:
            client.delete(*own)
    finally:
        close_clients()


def is_fixture(value: object) -> bool:
    # pytest 8.4+ wraps a fixture in a FixtureFunctionDefinition; older ones mark the function.
    return type(value).__name__ == "FixtureFunctionDefinition" or hasattr(
        value, "_pytestfixturefunction"
    )


def uses_redis(module: types.ModuleType, test: Callable[..., Any]) -> bool:
    """Whether ``test`` asks for ``redis_db``, directly or through a fixture of its module."""
    wanted = {"redis_db", "round_trips"}
    for name, value in vars(module).items():
        if is_fixture(value) and wanted & set(inspect.signature(value).parameters):
            wanted.add(name)
    return bool(wanted & set(inspect.signature(test).parameters))


# Tests of the core suite that cannot mean the same on a cluster: the 100,000
# rooms are recorded through a pipeline of EVALs, which a cluster pipeline
# cannot carry (the cap and the paged prune it measures are tested here too).
NOT_ON_CLUSTER = {"test_rooms__one_address_opening_100000_rooms"}

CORE_SUITE = [
    test_presence,  # record, list, counts, last seen, prune
    test_peak,
    test_rooms,
    test_command,  # whos_online_prune
    test_templatetag,
    test_middleware,
    test_guests,
    test_hidden,
    test_status,
    test_live,  # the live block's endpoint
    test_admin,  # the Online now page and its history
    test_counting,  # approximate guests, the past 24 hours, days: HyperLogLogs in one slot
]


def core_suite() -> dict[str, Any]:
    """The suite's tests that use Redis, as ``test_<module>__<test>``, and their fixtures."""
    found: dict[str, Any] = {}
    for module in CORE_SUITE:
        short = module.__name__.rsplit(".", 1)[1].removeprefix("test_")
        for name, value in vars(module).items():
            if is_fixture(value) and name != "redis_db":
                # The module's own fixtures (test_hidden's ``site``…), for its tests.
                assert found.get(name, value) is value and name not in globals(), name
                found[name] = value
            elif name.startswith("test_") and callable(value) and uses_redis(module, value):
                here = f"test_{short}__{name.removeprefix('test_')}"
                if here not in NOT_ON_CLUSTER:
                    found[here] = value
    return found


globals().update(core_suite())


def test_the_core_suite_is_here() -> None:
    """A guard against the import above silently collecting nothing."""
    collected = [name for name in globals() if name.startswith("test_") and "__" in name]
    assert len(collected) >= 40, collected


# -- 2. a master dies ------------------------------------------------------------------


class Site:
    """One site on the shared cluster: a Django process with its own hash tag.

    Each site has its own back-off state, as two sites (two processes) do: one
    site's outage does not make the other skip Redis.
    """

    def __init__(self, tag: str) -> None:
        self.prefix = "{" + tag + "}"
        self.breaker = failsafe.Breaker()

    @contextmanager
    def serving(self) -> Iterator[None]:
        saved = failsafe.breaker
        failsafe.breaker = self.breaker
        try:
            with (
                mock.patch.object(Settings, "backoff", BACKOFF),
                override_settings(
                    WHOS_ONLINE_REDIS_CLIENT="tests.test_cluster.cluster_client",
                    WHOS_ONLINE_KEY_PREFIX=self.prefix,
                    WHOS_ONLINE_MAX_AGE=600,
                ),
            ):
                yield
        finally:
            failsafe.breaker = saved


def member(name: str) -> BrowserClient:
    visitor = BrowserClient()
    visitor.force_login(User.objects.get_or_create(username=name)[0])
    return visitor


def test_a_dead_master_fails_open_for_its_site_and_the_other_site_is_unaffected(
    own_cluster: Cluster, wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    SEED_PORT[:] = [own_cluster.nodes[-1].require_port()]
    # The master that dies is the worst one to lose: the client's default node,
    # where redis-py sends whatever it cannot route by key (and which every
    # refresh of its slot map makes the default again).
    default = cluster_client().get_default_node()
    doomed = next(node for node in own_cluster.nodes if node.port == default.port)
    survivor = next(node for node in own_cluster.nodes if node is not doomed)
    # Site A's slot is on the master that dies, site B's on another one.
    site_a = Site(own_cluster.tag_on(doomed, "site-a"))
    site_b = Site(own_cluster.tag_on(survivor, "site-b"))
    dead_port = doomed.require_port()

    with time_machine.travel(NOW, tick=False) as traveller:
        for site in (site_a, site_b):
            with site.serving():
                assert "online" in get(member("alice"), "/").cookies
                html = block(BrowserClient(), REMOTE_ADDR="203.0.113.7")
                assert members(html) == ["alice"] and "1 member, 1 guest" in html

        doomed.kill()
        # Site B's master forgets its scripts, as a restarted or promoted one does:
        # it is sent their text once more (EVAL to that master alone), where a
        # SCRIPT LOAD would go to every master, the dead one too.
        survivor.client().script_flush()
        wire.clear()

        # Site B: recording, the list, the counts, the peak and rooms work as
        # before, and none of it goes near the dead node.
        traveller.shift(300)
        with site_b.serving():
            bob = member("bob")
            assert "online" in get(bob, "/").cookies
            traveller.shift(1)
            carol = member("carol")
            room = get(carol, "/thread/1/").content.decode()  # recorded on the site and in the room
            assert "1 here now: 1 member, 0 guests" in room and members(room) == ["carol"]
            assert "online" in get(BrowserClient(), "/", REMOTE_ADDR="203.0.113.8").cookies
            html = block(bob)
            assert members(html) == ["carol", "bob", "alice"] and "3 members, 2 guests" in html
            assert "Most ever online: 5 users" in html
            call_command("whos_online_prune", stdout=StringIO())  # cron keeps the peak
        assert wire.dials[dead_port] == 0

        # Site A: pages render, the block says unavailable, nobody gets the cookie
        # (so they are recorded once Redis is back). Only the first request
        # reaches for the dead node: no request is held by a retry loop.
        with site_a.serving():
            for n in range(10):
                response = get(member(f"a{n}"), "/")
                assert "online" not in response.cookies
                assert UNAVAILABLE in block(BrowserClient(), REMOTE_ADDR=f"198.51.100.{n}")
                html = get(BrowserClient(), "/thread/1/", REMOTE_ADDR=f"198.51.100.{n}").content
                assert ROOM_UNAVAILABLE in html.decode()
                if n == 0:
                    first_request = wire.dials[dead_port]
            assert 1 <= first_request <= DIALS_PER_FAILURE
            assert wire.dials[dead_port] == first_request
            assert isinstance(the_error(caplog), redis.ConnectionError)

        # The cluster notices too: the other masters flag the dead one as failed,
        # and (without full coverage required) go on serving their own slots.
        wait_for(lambda: own_cluster.flagged_failed(doomed), timeout=10, what="the failure flag")

        # Site B, later: its prune works (cron stays quiet) and the list follows.
        traveller.shift(300)  # alice and the first guest are now stale
        with site_b.serving():
            out = StringIO()
            call_command("whos_online_prune", stdout=out)
            assert "Pruned 1 stale member(s) and 1 stale guest(s)" in out.getvalue()
            html = block(bob)  # bob's cookie has expired: he is recorded again
            assert members(html) == ["bob", "carol"] and "2 members, 1 guest" in html
            assert "Most ever online: 5 users" in html
        assert wire.dials[dead_port] == first_request
        assert site_b.breaker.outage_since is None

        # Site A, later: still dead, still 200s; each back-off costs one more
        # attempt, the outage is still logged once, and cron hears about it.
        with site_a.serving():
            assert UNAVAILABLE in block(member("alice"))
            assert 1 <= wire.dials[dead_port] - first_request <= DIALS_PER_FAILURE
            again = wire.dials[dead_port]
            assert UNAVAILABLE in block(member("alice"))
            assert wire.dials[dead_port] == again
            with pytest.raises(CommandError, match="Redis failed, pruning stopped"):
                call_command("whos_online_prune", stdout=StringIO())
            assert len(log_records(caplog, logging.ERROR)) == 1


def test_a_process_started_after_its_seed_master_died_still_serves_pages(
    own_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker (re)started during the outage builds its client then: the factory fails.

    The factory's one startup node is the dead master, so ``RedisCluster()``
    cannot even learn the cluster's layout. That is a Redis failure like any
    other to the site: the page renders and the block says unavailable.
    """
    seed, _, survivor = own_cluster.nodes
    SEED_PORT[:] = [seed.require_port()]
    site = Site(own_cluster.tag_on(survivor, "site"))
    with time_machine.travel(NOW, tick=False) as traveller:
        with site.serving():
            assert "online" in get(member("alice"), "/").cookies
        seed.kill()
        close_clients()  # a new process: it has no client yet
        with site.serving():
            response = get(BrowserClient(), "/block/", REMOTE_ADDR="203.0.113.7")
            assert UNAVAILABLE in response.content.decode()
            assert "online" not in response.cookies
            assert len(log_records(caplog, logging.ERROR)) == 1
            # Once the factory can reach a live node (its address leads elsewhere
            # now, as a DNS name would), the first try after the back-off builds
            # the client, and tracking goes on: no restart. The site's keys live
            # on a master that never stopped, so alice is still listed.
            SEED_PORT[:] = [survivor.require_port()]
            traveller.shift(BACKOFF + 1)
            html = block(member("bob"))
            assert members(html) == ["bob", "alice"]


# -- 3. the scaling guide's own client ----------------------------------------------------


def test_the_scaling_guides_client_records_and_lists_a_member(
    shared_cluster: Cluster, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/howto/scaling.md's settings and mysite/redis.py, word for word but for what it
    says to put in: two of these masters as the startup nodes."""
    ports = [node.require_port() for node in shared_cluster.nodes[:2]]
    install_recipe("howto/scaling.md", monkeypatch, settings, ports, number=1)
    client = get_client()
    try:
        assert "online" in get(member("alice"), "/").cookies
        html = block(BrowserClient())
        assert members(html) == ["alice"] and "1 member, 1 guest" in html
        assert client.zcard(f"{settings.WHOS_ONLINE_KEY_PREFIX}:users") == 1
    finally:
        client.close()  # its keys' prefix is this test's alone on the cluster
