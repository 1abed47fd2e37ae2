"""WHOS_ONLINE_ACCESS on every surface: each answer a policy gives, for a member and a guest.

Surfaces: the rendered site block, the rendered room block of an ``@in_room`` view,
a ``WHOS_ONLINE_ROOMS`` view, the JSON endpoint, the site socket and a room socket.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from django.contrib.auth.models import AnonymousUser, User

from tests import online_now
from tests.conftest import BrowserAsyncClient, BrowserClient
from tests.test_consumers import eventually, run, tab, until
from tests.test_middleware import async_get
from tests.test_realtime_trust import refused
from tests.test_rooms import listed, logged_in
from whos_online import presence, push
from whos_online.access import RoomAccess

pytestmark = pytest.mark.django_db

NAMES, COUNTS, NOTHING = "names", "counts", "nothing"

# The policy's answer (for the site and every room alike): what each surface shows
# the viewer, and whether a page or socket puts them in the room.
TABLE = [
    ("join", NAMES, True),
    ("see", NAMES, False),
    ("count", COUNTS, False),
    (RoomAccess(names=True, join=True), NAMES, True),
    (RoomAccess(names=True, join=False), NAMES, False),
    (RoomAccess(names=False, join=True), COUNTS, True),
    (RoomAccess(names=False, join=False), COUNTS, False),
    (None, NOTHING, False),
    (False, NOTHING, False),
]


def answering(answer: Any) -> Any:
    def policy(user: Any, room: str | None) -> Any:
        return answer

    return policy


@pytest.mark.parametrize("viewer", ["member", "guest"])
@pytest.mark.parametrize(("answer", "shown", "joins"), TABLE, ids=str)
def test_every_answer_on_every_surface(
    redis_db: redis.Redis,
    people: Any,
    settings: Any,
    viewer: str,
    answer: Any,
    shown: str,
    joins: bool,
) -> None:
    alice, carol = people("alice", "carol")
    for room in (None, "thread:1", "topic:2"):
        presence.record_user(alice, room=room)
    settings.WHOS_ONLINE_ACCESS = answering(answer)
    settings.WHOS_ONLINE_ROOMS = {"board:topic": "topic:{pk}"}
    user = carol if viewer == "member" else AnonymousUser()
    client = logged_in(carol) if viewer == "member" else BrowserClient()

    site = client.get("/block/")
    room = client.get("/thread/1/")  # @in_room, its template {% whos_here %}
    board = client.get("/board/topic/two-2/")  # WHOS_ONLINE_ROOMS
    assert site.status_code == room.status_code == board.status_code == 200
    member = viewer == "member"
    # A member is on the site whatever the answer (the middleware's record), in a room if it joins.
    for page, counted_in in ((site, member), (room, member and joins), (board, member and joins)):
        html = page.content.decode()
        assert listed(html) == (["carol"] * counted_in + ["alice"] if shown == NAMES else [])
        assert ("1 member" in html or "2 members" in html) == (shown != NOTHING)
        if shown == NOTHING:
            assert "whos-online" not in html and "whos-here" not in html
    in_room = online_now.user_count(room="thread:1") + online_now.guest_count(room="thread:1")
    in_board = online_now.user_count(room="topic:2") + online_now.guest_count(room="topic:2")
    assert (in_room, in_board) == ((2, 2) if joins else (1, 1))

    endpoint = client.get("/whos-online/")
    if shown == NOTHING:
        assert endpoint.status_code == 403 and b"alice" not in endpoint.content
    else:
        data = json.loads(endpoint.content)
        on_site = ["carol"] * member + ["alice"]
        assert [m["name"] for m in data["members"]] == (on_site if shown == NAMES else [])
        assert data["users"] >= 1 and (b"alice" in endpoint.content) == (shown == NAMES)

    async def sockets() -> None:
        for path in ("/ws/whos-online/", "/ws/whos-online/thread:1/"):
            if shown == NOTHING:
                assert await refused(user, path) == 4403
                continue
            socket = await tab(user, path)
            state = await until(socket, lambda m: m["type"] == "presence_state")
            assert ("alice" in str(state)) == (shown == NAMES) and state["users"] >= 1
            if member:  # on the site once connected; in the room only if it joins
                await eventually(lambda: str(carol.pk) in push.connected())
                assert (str(carol.pk) in push.connected(room="thread:1")) == (
                    joins and "thread" in path
                )
            await socket.disconnect()

    run(sockets)


def test_the_policy_is_asked_once_per_request_and_namespace(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    asked: list[str | None] = []

    def policy(user: Any, room: str | None) -> str:
        asked.append(room)
        return "join"

    settings.WHOS_ONLINE_ACCESS = policy
    client = logged_in(*people("alice"))
    client.get("/thread/1/")  # recorded by @in_room, read by {% whos_here %}: one question
    assert asked == ["thread:1"]
    asked.clear()
    client.get("/jinja/?member=alice")  # the site block, a room block, presence dots
    assert asked == [None, "lobby"]
    asked.clear()
    client.get("/")  # no block: not asked at all
    assert asked == []


def test_a_policy_that_raises_shows_nothing_and_is_logged_once(
    redis_db: redis.Redis, people: Any, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    alice, carol = people("alice", "carol")
    presence.record_user(alice, room="thread:1")

    def policy(user: Any, room: str | None) -> str:
        raise KeyError(f"no such page for {user.pk}")  # a message per viewer: one cause

    settings.WHOS_ONLINE_ACCESS = policy
    pages = [logged_in(carol).get("/thread/1/"), BrowserClient().get("/thread/1/")]
    pages.append(BrowserClient().get("/block/"))
    assert [page.status_code for page in pages] == [200, 200, 200]
    assert all(b"alice" not in page.content and b"whos-" not in page.content for page in pages)
    assert online_now.user_count(room="thread:1") == 1  # carol was not put in the room
    assert BrowserClient().get("/whos-online/").status_code == 403

    async def socket() -> None:
        assert await refused(carol, "/ws/whos-online/thread:1/") == 4403

    run(socket)
    errors = [r for r in caplog.records if r.name == "whos_online.access"]
    assert len(errors) == 1 and errors[0].levelname == "ERROR"
    assert "WHOS_ONLINE_ACCESS raised" in errors[0].getMessage() and errors[0].exc_info


def test_a_counts_viewer_never_gets_a_cached_list_of_names(
    redis_db: redis.Redis, people: Any, settings: Any, kept_block_reads: Any
) -> None:
    kept_block_reads(60)
    settings.WHOS_ONLINE_ACCESS = "whos_online.access.names_to_members"
    alice, bob = people("alice", "bob")
    presence.record_user(alice)
    member = logged_in(bob).get("/block/").content.decode()  # caches the list with names
    guest = BrowserClient().get("/block/").content.decode()
    assert listed(member) == ["bob", "alice"]
    assert listed(guest) == [] and "3 users online: 2 members, 1 guest" in guest
    assert "alice" not in guest and "bob" not in guest


@pytest.mark.parametrize("path", ["/lobby/", "/board/async/5/"])  # @in_room, WHOS_ONLINE_ROOMS
def test_an_async_view_asks_a_policy_that_reads_the_database_off_the_event_loop(
    redis_db: redis.Redis, people: Any, settings: Any, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    settings.WHOS_ONLINE_ACCESS = "tests.test_access.members_who_exist"
    settings.WHOS_ONLINE_ROOMS = {"board:async_topic": "topic:{pk}"}
    alice, bob = people("alice", "bob")
    room = "lobby" if path == "/lobby/" else "topic:5"
    presence.record_user(alice, room=room)
    client = BrowserAsyncClient()
    client.force_login(bob)
    html = async_get(client, path).content.decode()
    assert listed(html) == ["bob", "alice"] and online_now.user_count(room=room) == 2
    assert not [r for r in caplog.records if r.name == "whos_online.access"]


def members_who_exist(user: Any, room: str | None) -> str | None:
    """A policy that reads the database, as a site's often does."""
    return "join" if User.objects.filter(pk=user.pk).exists() else None


def test_the_helpdesk_policy_names_agents_to_agents_and_counts_to_customers(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    """One line in settings: staff see names everywhere, anyone else the site's counts and
    nothing of a ticket's room, and is put in none."""
    settings.WHOS_ONLINE_ACCESS = "whos_online.access.helpdesk"
    alice, customer = people("alice", "customer")
    (agent,) = people("agent", is_staff=True)
    presence.record_user(alice, room="thread:1")
    agents, customers, guests = logged_in(agent), logged_in(customer), BrowserClient()
    for client in (customers, guests):
        site = client.get("/block/").content.decode()
        assert listed(site) == [] and " members, " in site
        ticket = client.get("/thread/1/")
        assert ticket.status_code == 200 and b"whos-here" not in ticket.content
        assert client.get("/whos-online/").status_code == 200
    assert online_now.user_count(room="thread:1") == 1  # the customer was put in no room
    assert listed(agents.get("/thread/1/").content.decode()) == ["agent", "alice"]
    assert "customer" in listed(agents.get("/block/").content.decode())
    assert online_now.user_count(room="thread:1") == 2
