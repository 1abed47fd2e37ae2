"""Presence channels a site can trust: who may see and join a room, what a refused,
broken or hostile socket leaves behind (nothing), and bounds that hold under any
socket pattern. Through the real routes and consumers (WebsocketCommunicator).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
import redis
import time_machine
from channels.exceptions import DenyConnection
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.db.backends.signals import connection_created
from django.urls import path

from tests import online_now
from tests.conftest import NOW, socket_timeout
from tests.test_consumers import (
    DEADLINE,
    application,
    eventually,
    listed,
    run,
    shift,
    tab,
    ticked_after_a_read,
    until,
    websockets,  # noqa: F401 (a fixture, autouse)
)
from whos_online import push
from whos_online.access import RoomAccess, room_access
from whos_online.conf import Settings, conf
from whos_online.contrib.channels import hub
from whos_online.contrib.channels.consumers import PresenceMixin

pytestmark = pytest.mark.django_db


def forum(user: Any, room: str | None) -> Any:
    """A forum's policy: the site list and topics are public (guests see, members join), staff
    have a room, a private conversation is its two members', a live stream shows counts only."""
    if room is None:
        return "see"
    kind, _, rest = room.partition(":")
    if kind == "topic":
        return "join" if user.is_authenticated else "see"
    if kind == "staff":
        return "join" if user.is_staff else None
    if kind == "pm":
        return "join" if str(user.pk) in rest.split(",") else None
    if kind == "stream":
        return RoomAccess(names=False, join=True) if user.is_authenticated else "count"
    return None


@pytest.fixture
def declared(settings: Any) -> None:
    settings.WHOS_ONLINE_ACCESS = "tests.test_realtime_trust.forum"


async def refused(user: Any, path: str) -> int:
    """The close code a socket to ``path`` gets, asserting it was sent nothing else."""
    communicator = WebsocketCommunicator(application, path)
    communicator.scope["user"] = user if user is not None else AnonymousUser()
    assert (await communicator.connect(timeout=DEADLINE))[0]
    closed = await communicator.receive_output(timeout=DEADLINE)
    assert closed["type"] == "websocket.close", closed
    await communicator.disconnect()  # what the server does once the handshake is closed
    return int(closed["code"])


def nothing_recorded(*rooms: str | None) -> bool:
    return all(listed(room) == {} and push.connected(room=room) == [] for room in rooms)


@pytest.mark.parametrize("policy", [None, "whos_online.access.public"])
def test_without_a_policy_every_room_is_refused_and_the_site_still_served(
    redis_db: redis.Redis, people: Any, settings: Any, policy: str | None
) -> None:
    settings.WHOS_ONLINE_ACCESS = policy
    (alice,) = people("alice")

    async def scenario() -> None:
        if policy is None:
            for user in (alice, None):
                assert await refused(user, "/ws/whos-online/staff-only/") == 4403
            assert nothing_recorded(None, "staff-only")
        site = await tab(alice)
        state = await until(site, lambda m: m["type"] == "presence_state")
        assert state["room"] is None
        await site.disconnect()

    run(scenario)


def test_a_declared_policy_decides_who_sees_and_who_joins_each_room(
    redis_db: redis.Redis, people: Any, declared: None
) -> None:
    alice, bob = people("alice", "bob")
    (admin,) = people("admin", is_staff=True)
    conversation = f"/ws/whos-online/pm:{alice.pk},{bob.pk}/"

    async def scenario() -> None:
        # Nobody but its two members reads or joins a private conversation.
        assert await refused(admin, conversation) == 4403
        assert await refused(None, conversation) == 4403
        assert await refused(alice, "/ws/whos-online/staff:mods/") == 4403
        assert await refused(None, "/ws/whos-online/undeclared/") == 4403
        assert nothing_recorded(None, "staff:mods", f"pm:{alice.pk},{bob.pk}")
        pm = await tab(alice, conversation)
        staff = await tab(admin, "/ws/whos-online/staff:mods/")
        await until(staff, lambda m: str(admin.pk) in m["joins"])
        joined = await until(pm, lambda m: str(alice.pk) in m["joins"])
        assert joined["room"] == f"pm:{alice.pk},{bob.pk}" and 'class="whos-here"' in joined["html"]
        assert listed(f"pm:{alice.pk},{bob.pk}") == {"alice": "online"}
        # A guest sees a topic's members without being in it; a member joins it.
        guest = await tab(None, "/ws/whos-online/topic:7/")
        bob_topic = await tab(bob, "/ws/whos-online/topic:7/")
        seen = await until(guest, lambda m: str(bob.pk) in m["joins"])
        assert seen["joins"][str(bob.pk)]["name"] == "bob" and seen["users"] == 1
        for closed in (pm, staff, guest, bob_topic):
            await closed.disconnect()

    run(scenario)


def test_a_count_only_room_never_sends_a_name(
    redis_db: redis.Redis, people: Any, declared: None, ticks: list[Any]
) -> None:
    alice, bob = people("alice", "bob", first_name="Secret")

    async def scenario() -> None:
        # Not even a name its page sent back is said ("Secret left.": nobody is listed).
        shown = quote(json.dumps([["0", "Secret", "online"]]))
        guest = await tab(None, f"/ws/whos-online/stream:1/?shown={shown}")
        state = await until(guest, lambda m: m["type"] == "presence_state")
        assert "Secret" not in str(state) and "announce" not in state
        viewers = [await tab(user, "/ws/whos-online/stream:1/") for user in (alice, bob)]
        sent = [await until(socket, lambda m: m["users"] == 2) for socket in (guest, *viewers)]
        assert online_now.user_count(room="stream:1") == 2  # counted in: names stay on the server
        for message in sent:
            assert message["joins"] == {} and message["leaves"] == {} and message["more"] == 0
            assert "2 here now" in message["html"] and "<li" not in message["html"]
            assert "Secret" not in str(message)
        mark = time.monotonic()
        await viewers[0].disconnect()
        await ticked_after_a_read(ticks, mark)  # the change was read...
        assert await guest.receive_nothing(timeout=0)  # ...but online to idle changes no count
        await viewers[1].disconnect()
        await guest.disconnect()

    run(scenario)


class Refusing(PresenceMixin, AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """A site's own consumer that refuses or fails in each way a connect can."""

    async def connect(self) -> None:
        how = self.scope["url_route"]["kwargs"]["how"]
        if how == "close":
            await self.close()
        elif how == "deny":
            raise DenyConnection
        elif how == "accept-close":
            await self.accept()
            await self.close(code=4000)
        elif how == "accept-raise":
            await self.accept()
            raise RuntimeError("the site's connect failed after accepting")
        else:
            await self.accept()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"the site's handler broke on {content!r}")


site_routes = URLRouter([path("ws/site/<how>/<room>/", Refusing.as_asgi())])


@pytest.mark.parametrize("how", ["close", "deny", "accept-close", "accept-raise"])
def test_a_refused_or_failed_connect_is_never_recorded(
    redis_db: redis.Redis, people: Any, declared: None, how: str
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        communicator = WebsocketCommunicator(site_routes, f"/ws/site/{how}/topic:1/")
        communicator.scope["user"] = alice
        try:
            await communicator.connect(timeout=DEADLINE)
            await communicator.receive_nothing(timeout=0.3)
        except RuntimeError:
            assert how == "accept-raise"
        assert nothing_recorded(None, "topic:1")
        ticker = hub.get_hub()  # nothing is left for a later tick to beat for
        assert ticker.connections == {}
        await ticker.tick()
        assert nothing_recorded(None, "topic:1")

    run(scenario)


@pytest.mark.parametrize(
    "frame",
    [
        {"text_data": "not json"},
        {"text_data": "{"},
        {"text_data": "[]" * 50_000},
        {"bytes_data": b"\x00\xff binary"},
        {"bytes_data": b"\x00"},
        {"text_data": '{"type": "presence.message", "text": "spoofed"}'},
    ],
    ids=["text", "broken-json", "large", "binary", "nul", "spoofed-handler"],
)
def test_nothing_a_client_sends_breaks_the_ready_consumer(
    redis_db: redis.Redis, people: Any, frame: dict[str, Any]
) -> None:
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        page = await tab(alice)
        await until(page, lambda m: m["type"] == "presence_state")
        await page.send_to(**frame)
        await page.send_to(**frame)
        bob_tab = await tab(bob)  # the socket still works: it is sent bob's join
        await until(page, lambda m: str(bob.pk) in m["joins"])
        await bob_tab.disconnect()
        await page.disconnect()

    run(scenario)


# Query strings around a valid ``shown`` (bob, who has left since): each is ignored.
JUNK_SHOWN = {
    "repeated": lambda shown: b"shown=%s&shown=%s" % (shown, shown),
    "oversized": lambda shown: b"shown=" + shown + b"%20" * 3000,  # JSON space, 9 KB
    "too-deep": lambda shown: b"shown=" + b"[" * 4000 + b"]" * 4000,
    "broken-escape": lambda shown: b"shown=%ZZ" + shown,
    "not-ascii": lambda shown: b"shown=\xff" + shown,
    "no-value": lambda shown: b"shown&=&shown%3D" + shown,
}


@pytest.mark.parametrize("junk", JUNK_SHOWN.values(), ids=JUNK_SHOWN.keys())
def test_a_junk_shown_query_is_ignored(
    redis_db: redis.Redis, people: Any, junk: Callable[[bytes], bytes]
) -> None:
    alice, bob = people("alice", "bob")
    shown = quote(json.dumps([[str(bob.pk), "bob", "online"]])).encode()

    async def scenario() -> None:
        page = WebsocketCommunicator(application, "/ws/whos-online/")
        page.scope.update(user=alice, query_string=junk(shown))
        assert (await page.connect(timeout=DEADLINE))[0]
        state = await until(page, lambda m: m["type"] == "presence_state")
        assert "announce" not in state  # one valid shown would say "bob left."
        await page.disconnect()

    run(scenario)


def test_a_consumer_that_raises_or_is_cancelled_leaves_no_member_online(
    redis_db: redis.Redis, people: Any, declared: None
) -> None:
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        broken = WebsocketCommunicator(site_routes, "/ws/site/open/topic:1/")
        broken.scope["user"] = alice
        assert (await broken.connect(timeout=DEADLINE))[0]
        await eventually(lambda: listed("topic:1") == {"alice": "online"})
        await shift(reading, conf.cookie_age)  # she reads a while
        await broken.send_json_to({"hello": 1})  # the site's handler raises
        with pytest.raises(RuntimeError, match="broke on"):
            await broken.wait(timeout=DEADLINE)
        assert listed("topic:1") == {"alice": "idle"} and listed() == {"alice": "idle"}
        assert push.connected() == [] and hub.get_hub().connections == {}

        stopped = WebsocketCommunicator(site_routes, "/ws/site/open/topic:1/")
        stopped.scope["user"] = bob
        assert (await stopped.connect(timeout=DEADLINE))[0]
        await eventually(lambda: push.connected() == [str(bob.pk)])
        await shift(reading, conf.cookie_age)
        stopped.future.cancel()  # a server shutting down
        with pytest.raises(asyncio.CancelledError):
            await stopped.future
        assert push.connected() == [] and listed("topic:1")["bob"] == "idle"

    with time_machine.travel(NOW) as reading:
        run(scenario)


def test_the_room_cap_holds_with_sockets_open_and_closing_in_any_order(
    redis_db: redis.Redis,
    people: Any,
    settings: Any,
    declared: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "max_rooms", 5)
    # Keys are counted here, not time: on a busy machine five slow calls in a row
    # would open the circuit and skip a disconnect, leaving its keys behind.
    socket_timeout(settings, 5)
    members = people(*(f"m{n}" for n in range(8)))
    prefix = settings.WHOS_ONLINE_KEY_PREFIX

    def rooms_with_keys(sockets: bool = False) -> set[bytes]:
        """Rooms with keys in Redis; with ``sockets``, counting open connections' too."""
        keys = redis_db.scan_iter(match=f"{prefix}:room:*", count=1000)
        names = (re.match(rb".*:room:(topic:[\d-]+):(conns:)?", key) for key in keys)
        return {name[1] for name in names if name and (sockets or not name[2])}

    async def scenario() -> None:
        for round_ in range(2):
            sockets = [
                await tab(member, f"/ws/whos-online/topic:{round_}-{n}/")
                for n, member in enumerate(members * 3)
            ]
            # Joins still in flight may pass through more rooms; none keeps keys (a
            # record that pushed a room over the cap deletes its keys in its next
            # round trip, so a sixth room's keys may be seen until then).
            await eventually(lambda: len(rooms_with_keys()) <= 5)
            for socket in sockets[1::2] + sockets[::2]:  # closed out of order
                await socket.disconnect()
                await eventually(lambda: len(rooms_with_keys()) <= 5)
            # An open socket's own state is bounded by the sockets; closed, it is gone too.
            assert len(rooms_with_keys(sockets=True)) <= 5
        assert redis_db.zcard(f"{prefix}:rooms") == 5

    run(scenario)


def test_one_member_holds_at_most_the_connection_cap_in_a_process(
    redis_db: redis.Redis, people: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub, "MAX_CONNECTIONS_PER_MEMBER", 3)
    (alice,) = people("alice")

    async def scenario() -> None:
        tabs = [await tab(alice) for _ in range(3)]
        await eventually(lambda: len(hub.get_hub().connections) == 3)
        assert await refused(alice, "/ws/whos-online/") == 4429
        assert len(hub.get_hub().connections) == 3
        await tabs[0].disconnect()
        tabs[0] = await tab(alice)  # one closed: one may open
        await until(tabs[0], lambda m: m["type"] == "presence_state")
        for socket in tabs:
            await socket.disconnect()

    run(scenario)


def card_from_the_database(user: Any) -> dict[str, Any]:
    """A card callable as the docs' examples write them: it queries the database."""
    return {"name": type(user).objects.get(pk=user.pk).username.upper()}


def test_the_sites_callables_run_where_django_manages_database_connections(
    redis_db: redis.Redis, people: Any, settings: Any, declared: None
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_realtime_trust.card_from_the_database"
    (alice,) = people("alice")
    opened_on: list[str] = []

    def opened(sender: Any, connection: Any, **kwargs: Any) -> None:
        opened_on.append(threading.current_thread().name)

    connection_created.connect(opened)
    try:

        async def scenario() -> None:
            for n in range(20):
                socket = await tab(alice, f"/ws/whos-online/topic:{n}/")
                await until(socket, lambda m: "ALICE" in m["html"])
                await socket.disconnect()

        run(scenario)
    finally:
        connection_created.disconnect(opened)
    # Worker threads (asyncio.to_thread) talk to Redis only: no connection was opened there.
    assert opened_on == []


def test_a_policy_returning_something_else_is_a_clear_error(settings: Any) -> None:
    settings.WHOS_ONLINE_ACCESS = lambda user, room: "yes"
    with pytest.raises(ImproperlyConfigured, match="returned 'yes' for room 't'"):
        room_access(AnonymousUser(), "t")


def test_without_channels_the_realtime_package_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['channels'] = None\n"
        "try:\n    import whos_online.contrib.channels.routing\n"
        "except ImportError as error:\n    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        'whos_online.contrib.channels needs Channels: pip install "whos-online[channels]"'
    )


def test_a_site_without_channels_or_wagtail_sets_up_checks_and_serves_the_block() -> None:
    """The core imports no optional part (issue 50): with Channels, Daphne, Wagtail and
    Django's admin refused at import, a site sets up, passes ``check`` and serves a page
    whose block counts its visitor, and nothing under ``whos_online.contrib`` was imported."""
    code = """
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"channels", "daphne", "wagtail"} or name.startswith(
            "django.contrib.admin"
        ):
            raise ModuleNotFoundError(f"refused: {name}")

sys.meta_path.insert(0, Refuse())
import django
import fakeredis
from django.conf import settings
from django.http import HttpResponse
from django.template import RequestContext, Template
from django.urls import include, path

server = fakeredis.FakeServer()

def client():
    return fakeredis.FakeRedis(server=server)

def page(request):
    block = Template("{% load whos_online %}{% whos_online %}")
    return HttpResponse(block.render(RequestContext(request)))

settings.configure(
    DEBUG=True, ALLOWED_HOSTS=["testserver"], ROOT_URLCONF="__main__", SECRET_KEY="x",
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes",
                    "django.contrib.sessions", "whos_online"],
    MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware",
                "django.contrib.auth.middleware.AuthenticationMiddleware",
                "whos_online.middleware.WhosOnlineMiddleware"],
    TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates",
                "APP_DIRS": True}],
    CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    WHOS_ONLINE_REDIS_CLIENT="__main__.client",
)
django.setup()
from django.core.management import call_command
from django.test import Client
urlpatterns = [path("", page), path("whos-online/", include("whos_online.urls"))]
call_command("check", "--fail-level", "ERROR")
browser = Client(HTTP_USER_AGENT="Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0")
print(" ".join(browser.get("/").content.decode().split()))
print(sorted(m for m in sys.modules if m.startswith(("channels", "daphne", "wagtail",
                                                       "django.contrib.admin",
                                                       "whos_online.contrib"))))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    block, optional_modules = done.stdout.splitlines()[-2:]
    assert "1 guest" in block and optional_modules == "[]"
