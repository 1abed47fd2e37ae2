"""WebSocket presence through the real consumer and router (channels' WebsocketCommunicator).

Each scenario runs in an event loop of its own (``run``), as a server process
would; the database is reached from the test's thread, so the test transaction
holds. Messages are awaited with a deadline, never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.urls import path

from tests import online_now
from tests.conftest import NOW, STAFF, BrowserClient, RoundTrips, names
from tests.test_live import rendered_shown
from whos_online import presence, push, testing
from whos_online.conf import conf
from whos_online.contrib.channels import hub
from whos_online.contrib.channels.consumers import PresenceMixin
from whos_online.contrib.channels.routing import websocket_urlpatterns
from whos_online.store import scripts, sockets

pytestmark = pytest.mark.django_db

application = URLRouter(websocket_urlpatterns)
# s: a push is due within a tick (0.5 s); this only bounds a failure, generously, so a busy
# machine makes a test slower, never red
DEADLINE = 30


@pytest.fixture(autouse=True)
def websockets(settings: Any) -> None:
    """The site routes the live block's socket, so its pages' live blocks subscribe
    (autouse here and in the modules that import it)."""
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async_to_sync(scenario)()


async def tab(user: Any, path: str = "/ws/whos-online/") -> WebsocketCommunicator:
    """A browser tab with the live block open, connected."""
    communicator = WebsocketCommunicator(application, path)
    communicator.scope["user"] = user if user is not None else AnonymousUser()
    connected, _ = await communicator.connect(timeout=DEADLINE)
    assert connected
    return communicator


async def until(
    communicator: WebsocketCommunicator, wanted: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The first message ``wanted`` accepts (earlier ones are skipped)."""
    while True:
        await eventually(lambda: not communicator.output_queue.empty())  # the ticker woken
        message: dict[str, Any] = await communicator.receive_json_from(timeout=DEADLINE)
        if wanted(message):
            return message


async def eventually(check: Callable[[], bool]) -> None:
    """Wait (on the real clock: time travel stops only the wall clock) until ``check()``.

    Each look first wakes this loop's ticker, as a notice does: what the travelled clock
    made due (a beat, an expiry, a retried connect) runs at once, not after the rest of
    the real TICK. Reads stay one per TICK and beats one per heartbeat: those are timed.
    """
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "not within the deadline"
        hub.get_hub().wake.set()
        await asyncio.sleep(0.01)


async def shift(traveller: Any, seconds: float) -> None:
    """Travel ``seconds`` on (a Redis call in flight across it counts as one slow call: the
    breaker opens only when half its window is slow)."""
    traveller.shift(seconds)


async def ticked_after_a_read(ticks: list[Any], mark: float) -> None:
    """Until every view of this loop's hub was read after ``mark`` (``time.monotonic()``)
    and the tick that read it has ended: whatever it had to send is sent."""
    ticker = hub.get_hub()
    await eventually(lambda: all(feed.read_at > mark for feed in ticker.feeds.values()))
    done = len(ticks)
    await eventually(lambda: len(ticks) > done)


def status_of(pk: Any) -> str:
    return presence.statuses([str(pk)], viewer=STAFF)[str(pk)]


def listed(room: str | None = None) -> dict[str, str]:
    """What the block lists (staff view): name -> status."""
    return {m.name: m.status for m in presence.summary(limit=None, room=room, viewer=STAFF).members}


def test_a_connected_member_is_online_and_subscribers_get_their_card(
    redis_db: redis.Redis, people: Any
) -> None:
    alice, bob = people("Ann", "bob")

    async def scenario() -> None:
        watcher = await tab(bob)
        state = await until(watcher, lambda m: m["type"] == "presence_state")
        assert list(state["joins"]) in ([str(bob.pk)], [])
        alice_tab = await tab(alice)
        diff = await until(watcher, lambda m: str(alice.pk) in m["joins"])
        assert diff["type"] == "presence_diff"
        assert diff["joins"][str(alice.pk)] == {
            "pk": str(alice.pk),
            "name": "Ann",
            "url": None,
            "avatar": None,
            "status": "online",
            "hidden": False,
        }
        assert diff["users"] == 2 and diff["leaves"] == {}
        assert "<bdi>Ann</bdi>" in diff["html"]
        assert set(push.connected()) == {str(alice.pk), str(bob.pk)}
        await alice_tab.disconnect()
        await watcher.disconnect()

    run(scenario)


def test_five_tabs_are_one_member_and_the_last_to_close_takes_them_off_at_once(
    redis_db: redis.Redis, people: Any
) -> None:
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        watcher = await tab(bob)
        tabs = [await tab(alice) for _ in range(5)]
        conns = conf.connections_key(None, str(alice.pk))
        await eventually(lambda: redis_db.hlen(conns) == 5)  # every tab recorded
        await until(watcher, lambda m: str(alice.pk) in m["joins"])
        assert online_now.user_count() == 2 and listed()["alice"] == "online"
        for closed in tabs[:4]:
            await closed.disconnect()
        assert status_of(alice.pk) == "online" and str(alice.pk) in push.connected()
        reading.shift(conf.cookie_age)  # she reads a while, then closes the last tab
        both = {str(alice.pk), str(bob.pk)}
        await eventually(lambda: set(push.connected()) == both)  # beaten since the shift
        await tabs[4].disconnect()
        # At once: the next read, with no tick and no timeout in between.
        assert status_of(alice.pk) == "idle" and listed()["alice"] == "idle"
        assert push.connected() == [str(bob.pk)]
        diff = await until(watcher, lambda m: str(alice.pk) in m["leaves"])
        assert diff["leaves"][str(alice.pk)]["status"] == "online"
        assert diff["joins"][str(alice.pk)]["status"] == "idle"
        await watcher.disconnect()

    with time_machine.travel(NOW) as reading:
        run(scenario)


def test_a_page_view_after_leaving_is_the_http_rule_again(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        alice_tab = await tab(alice)
        await eventually(lambda: str(alice.pk) in push.connected())
        traveller.shift(conf.cookie_age)
        # Beaten since the shift, so no beat is in flight to race the close.
        await eventually(lambda: str(alice.pk) in push.connected())
        await alice_tab.disconnect()

    with time_machine.travel(NOW, tick=False) as traveller:
        run(scenario)
        assert status_of(alice.pk) == "idle"
        traveller.shift(1)
        presence.record_user(alice)
        assert status_of(alice.pk) == "online"


def test_heartbeats_keep_a_connection_and_a_dead_process_drops_out_after_the_timeout(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_HEARTBEAT = 18.75  # a timeout of 45 s (2.4 beats)
    settings.WHOS_ONLINE_MAX_AGE = 200  # her socket outlives her cookie's 100 s
    alice, bob = people("alice", "bob")
    pk = str(alice.pk)
    live_key = conf.socket_keys().live

    async def scenario() -> None:
        with time_machine.travel(NOW, tick=False) as traveller:
            watcher = await tab(bob)
            alice_tab = await tab(alice)
            await until(watcher, lambda m: pk in m["joins"])
            for step in range(1, 5):  # 4 x 30 s: far past the timeout, but a beat is due each time
                traveller.shift(30)
                due = NOW.timestamp() + 30 * step
                await eventually(lambda: (redis_db.zscore(live_key, pk) or 0) >= due)
                assert status_of(pk) == "online" and pk in push.connected()
            # The process dies: nothing beats for alice any more, nothing disconnects her.
            ticker = hub.get_hub()
            for connection in [c for c in ticker.connections.values() if c.pk == pk]:
                ticker.untrack(connection)
            traveller.move_to(NOW + timedelta(seconds=120 + 44))
            assert status_of(pk) == "online"  # still inside the timeout
            traveller.move_to(NOW + timedelta(seconds=120 + 46))
            assert pk not in push.connected() and status_of(pk) == "idle"
            assert listed()["alice"] == "idle"
            diff = await until(watcher, lambda m: pk in m["leaves"])
            assert diff["joins"][pk]["status"] == "idle"
            await alice_tab.disconnect()
            await watcher.disconnect()

    run(scenario)


def test_a_member_forgotten_at_logout_is_not_brought_back_by_their_open_socket(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_HEARTBEAT = 20
    (alice,) = people("alice")
    pk = str(alice.pk)
    live_key = conf.socket_keys().live

    async def scenario() -> None:
        with time_machine.travel(NOW, tick=False) as traveller:
            alice_tab = await tab(alice)
            await eventually(lambda: pk in push.connected())
            presence.forget_user(alice)  # what the logout signal does
            traveller.shift(30)  # a heartbeat is due
            due = NOW.timestamp() + 30
            await eventually(lambda: (redis_db.zscore(live_key, pk) or 0) >= due)
            assert listed() == {} and status_of(pk) == "offline"
            await alice_tab.disconnect()

    run(scenario)


def test_one_heartbeat_round_trip_per_batch_of_a_process_connections(
    redis_db: redis.Redis, round_trips: RoundTrips, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sockets, "HEARTBEAT_BATCH", 20)
    presence.record_guest(
        "203.0.113.9", room="thread:1"
    )  # heartbeats write to registered rooms only
    connections = [sockets.Connection(str(pk), f"c{pk}", "thread:1") for pk in range(50)]
    round_trips.clear()
    sockets.heartbeat(connections)
    assert round_trips.commands == [["EVALSHA"]] * 3  # 20 + 20 + 10
    assert len(push.connected()) == 50 and len(push.connected(room="thread:1")) == 50


def test_hidden_members_reach_staff_subscribers_alone(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    (shy,) = people("Shy", email="hidden")
    (visitor,) = people("visitor")
    (admin,) = people("admin", is_staff=True)
    pk = str(shy.pk)

    async def scenario() -> None:
        public, staff = await tab(visitor), await tab(admin)
        shy_tab = await tab(shy)
        seen = await until(staff, lambda m: pk in m["joins"])
        assert seen["joins"][pk]["hidden"] is True and seen["hidden"] == 1
        counted = await until(public, lambda m: m["hidden"] == 1)
        assert pk not in counted["joins"] and "Shy" not in str(counted)
        reading.shift(conf.cookie_age)
        await shy_tab.disconnect()
        await until(staff, lambda m: pk in m["leaves"])
        await public.disconnect()
        await staff.disconnect()

    with time_machine.travel(NOW) as reading:
        run(scenario)
    assert sorted(names(online_now.online_users())) == ["admin", "visitor"]


@pytest.fixture
def public_rooms(settings: Any) -> None:
    """Every room is declared public (see whos_online.access)."""
    settings.WHOS_ONLINE_ACCESS = "whos_online.access.public"


def test_a_room_connection_is_in_the_room_and_on_the_site(
    redis_db: redis.Redis, people: Any, public_rooms: None
) -> None:
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        watcher = await tab(bob, "/ws/whos-online/thread:1/")
        alice_tab = await tab(alice, "/ws/whos-online/thread:1/")
        diff = await until(watcher, lambda m: str(alice.pk) in m["joins"])
        assert diff["room"] == "thread:1" and 'class="whos-here"' in diff["html"]
        assert listed("thread:1") == {"alice": "online", "bob": "online"}
        assert listed() == {"alice": "online", "bob": "online"}
        reading.shift(conf.cookie_age)
        await alice_tab.disconnect()
        assert listed("thread:1")["alice"] == "idle" and listed()["alice"] == "idle"
        await watcher.disconnect()

    with time_machine.travel(NOW) as reading:
        run(scenario)


def test_anonymous_sockets_subscribe_but_are_not_counted(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        anonymous = await tab(None)
        alice_tab = await tab(alice)
        diff = await until(anonymous, lambda m: str(alice.pk) in m["joins"])
        assert (diff["users"], diff["guests"]) == (1, 0)
        await anonymous.disconnect()
        assert push.connected() == [str(alice.pk)]
        await alice_tab.disconnect()

    run(scenario)


def test_a_connect_redis_skipped_is_recorded_by_the_next_beat_due_at_once(
    redis_db: redis.Redis, people: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a heartbeat (25 s) later: the member shows once Redis answers (the breaker's
    back-off), by the beat that puts back a member whose connection Redis does not hold."""
    (alice,) = people("alice")
    connect = push.connect
    failures = [redis.ConnectionError("a blip")]

    def blip(connection: sockets.Connection, every: float) -> float:
        if failures:
            raise failures.pop()
        return connect(connection, every)

    monkeypatch.setattr(push, "connect", blip)

    async def scenario() -> None:
        alice_tab = await tab(alice)
        await eventually(lambda: not failures)
        assert listed() == {}
        await eventually(lambda: listed() == {"alice": "online"})
        assert push.connected() == [str(alice.pk)]
        await alice_tab.disconnect()

    run(scenario)  # within seconds: a heartbeat comes due 25 s apart


def test_a_flush_with_sockets_open_errors_nowhere_and_the_next_beat_puts_members_back(
    redis_db: redis.Redis, people: Any, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 49: no generation, no reconnect-all. Redis loses the data (here the test's own
    keys: the shared Redis is never flushed); the process's next heartbeat puts its
    sockets' members back, cards included, and the page shows them again."""
    settings.WHOS_ONLINE_HEARTBEAT = 20
    alice, bob = people("Ann", "bob")

    async def scenario() -> None:
        with time_machine.travel(NOW, tick=False) as traveller:
            watcher, alice_tab = await tab(bob), await tab(alice)
            await until(watcher, lambda m: m["users"] == 2)
            redis_db.delete(*redis_db.scan_iter(match=f"{conf.key_prefix}:*"))
            await shift(traveller, hub.CHECK_EVERY)  # no notice: the view is read as due
            emptied = await until(watcher, lambda m: m["users"] == 0)
            assert emptied["leaves"].keys() == {str(alice.pk), str(bob.pk)}
            await shift(traveller, 10)  # the heartbeat is due
            back = await until(watcher, lambda m: m["users"] == 2)
            assert back["joins"][str(alice.pk)]["name"] == "Ann"
            assert listed() == {"Ann": "online", "bob": "online"}
            assert sorted(push.connected()) == sorted([str(alice.pk), str(bob.pk)])
            await alice_tab.disconnect()
            await watcher.disconnect()

    with caplog.at_level(logging.WARNING, logger="whos_online"):
        run(scenario)
    assert caplog.records == []


def test_a_close_redis_skipped_ends_the_member_as_a_dead_process_would(
    redis_db: redis.Redis, people: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing keeps the close to write later: the connection's beats stop, and the member
    turns idle once the heartbeat timeout passes, swept by the page's process."""
    settings.WHOS_ONLINE_HEARTBEAT = 20  # a timeout of 48 s
    alice, bob = people("alice", "bob")
    pk = str(alice.pk)
    disconnect = push.disconnect
    skipped: list[str] = []

    def blip(connection: sockets.Connection) -> float:
        if connection.pk == pk and not skipped:
            skipped.append(connection.id)
            raise redis.ConnectionError("a blip")
        return disconnect(connection)

    monkeypatch.setattr(push, "disconnect", blip)

    async def scenario() -> None:
        with time_machine.travel(NOW, tick=False) as traveller:
            watcher, alice_tab = await tab(bob), await tab(alice)
            await until(watcher, lambda m: pk in m["joins"])
            await shift(traveller, conf.cookie_age)  # a heartbeat past her cookie's life
            beat = NOW.timestamp() + conf.cookie_age
            await eventually(lambda: (redis_db.zscore(conf.socket_keys().live, pk) or 0) >= beat)
            await alice_tab.disconnect()
            await eventually(lambda: skipped and pk not in hub.get_hub().per_member)
            await shift(traveller, 47)  # 47 s after her last beat: inside the timeout
            assert status_of(pk) == "online"
            testing.reset()  # the blip's back-off is over (it runs on the real clock)
            await shift(traveller, hub.CHECK_EVERY)  # past it, and the page's sweep is due
            await until(watcher, lambda m: pk in m["leaves"])
            assert status_of(pk) == "idle" and push.connected() == [str(bob.pk)]
            await watcher.disconnect()

    run(scenario)


def test_redis_down_never_closes_a_socket_or_raises(
    dead_redis: None, people: Any, caplog: pytest.LogCaptureFixture, ticks: list[Any]
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        alice_tab = await tab(alice)
        await alice_tab.send_json_to({"ping": 1})
        await eventually(lambda: len(ticks) >= 3)  # ticks ran, their reads failing open
        assert await alice_tab.receive_nothing(timeout=0)  # nothing pushed, still open
        await alice_tab.disconnect()

    with caplog.at_level(logging.ERROR, logger="whos_online"):
        run(scenario)
    assert [r.name for r in caplog.records] == ["whos_online.store.failsafe"]  # logged once


def test_the_merge_holds_with_approximate_counting_and_the_day_total(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    """The block's script then has more KEYS (buckets, hours): the socket keys are its last two."""
    settings.WHOS_ONLINE_GUESTS = "approximate"
    settings.WHOS_ONLINE_RETENTION = timedelta(days=1)  # adds the day's total
    (alice,) = people("alice")
    connection = sockets.open_connection(alice)
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(connection)
        presence.record_guest("203.0.113.7")
        assert listed() == {"alice": "online"}
        traveller.shift(conf.cookie_age)
        sockets.disconnect(connection)
        online = presence.summary(limit=None, room=None, viewer=STAFF)
    assert [(m.name, m.status) for m in online.members] == [("alice", "idle")]
    assert (online.user_count, online.guest_count, online.day_total) == (1, 1, 2)


class Page:
    """A subscriber (a page with the live block open) that keeps what it is sent."""

    def __init__(self, broken: bool = False) -> None:
        self.messages: list[dict[str, Any]] = []
        self.broken = broken
        self.sent = asyncio.Event()

    async def presence_message(self, text: str) -> None:
        if self.broken:
            raise ConnectionError("the socket closed as we sent")
        self.messages.append(json.loads(text))
        self.sent.set()

    def counts(self) -> list[dict[str, Any]]:
        """The messages without their cards and html."""
        drop = {"joins", "leaves", "html"}
        return [{k: v for k, v in m.items() if k not in drop} for m in self.messages]


class DrivenHub(hub.Hub):
    """A hub whose ticks the test runs itself, one at a time (no ticker task)."""

    def _start(self) -> None:
        pass


@pytest.mark.parametrize(
    ("elapsed", "beats"),
    [(0, 0), (19.5, 0), (20, 1), (-1, 1)],
    ids=["just-beat", "not-yet-due", "due", "clock-went-back"],
)
def test_the_ticker_beats_once_a_heartbeat_and_at_once_when_the_clock_went_back(
    redis_db: redis.Redis, round_trips: RoundTrips, settings: Any, elapsed: float, beats: int
) -> None:
    settings.WHOS_ONLINE_HEARTBEAT = 20
    with time_machine.travel(NOW, tick=False) as traveller:
        ticker = DrivenHub()  # as if it had just beaten
        connection = sockets.Connection("1", "tab")
        sockets.connect(connection)
        ticker.track(connection)
        traveller.shift(elapsed)
        round_trips.clear()
        run(ticker.tick)
        assert round_trips.ran(scripts.HEARTBEAT) == beats  # (a check is due every 10 s too)
        done = round_trips.count
        run(ticker.tick)  # the same second again: nothing more is due
        assert round_trips.count == done


def test_a_skipped_connect_makes_the_next_tick_beat_every_connection_at_once(
    redis_db: redis.Redis, round_trips: RoundTrips, settings: Any
) -> None:
    settings.WHOS_ONLINE_HEARTBEAT = 20
    with time_machine.travel(NOW, tick=False):
        ticker = DrivenHub()  # as if it had just beaten
        for n in range(3):
            ticker.track(sockets.Connection(str(n), f"tab{n}"))
        round_trips.clear()
        ticker.beat_soon()
        run(ticker.tick)
        assert round_trips.ran(scripts.HEARTBEAT) == 1  # one batch for the three
        run(ticker.tick)  # then once a heartbeat again
        assert round_trips.ran(scripts.HEARTBEAT) == 1


SITE = hub.View(None, staff=False)


def test_a_page_gets_the_whole_state_then_what_changed_and_a_quiet_tick_sends_nothing(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_LIST_LIMIT = 1
    alice, bob = people("alice", "bob")
    ticker, page, closed, late = DrivenHub(), Page(), Page(), Page()
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.record_guest("203.0.113.7")
        for subscriber in (closed, page):
            ticker.subscribe(SITE, subscriber)
        ticker.unsubscribe(SITE, closed)  # closed before the first tick
        run(ticker.tick)
        run(ticker.tick)  # nothing changed
        traveller.shift(1)
        presence.record_user(bob)
        ticker.subscribe(SITE, late)
        run(ticker.tick)
    counts = {"room": None, "hidden": 0, "guests": 1}
    assert page.counts() == [
        {"type": "presence_state", **counts, "users": 1, "total": 2, "more": 0},
        {"type": "presence_diff", **counts, "users": 2, "total": 3, "more": 1},
    ]
    assert late.counts() == [
        {"type": "presence_state", **counts, "users": 2, "total": 3, "more": 1}
    ]
    assert list(page.messages[0]["joins"]) == [str(alice.pk)] and page.messages[0]["leaves"] == {}
    assert list(page.messages[1]["joins"]) == [str(bob.pk)]  # the most recent is listed
    assert list(page.messages[1]["leaves"]) == [str(alice.pk)]
    assert late.messages[0]["joins"] == page.messages[1]["joins"]
    assert closed.messages == []


def test_each_change_is_said_in_a_short_sentence_never_the_list(
    redis_db: redis.Redis, settings: Any, people: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600  # idle after 300 s
    monkeypatch.setattr(hub, "TICK", 0)  # each notice read at its tick, not a TICK later
    alice, bob, carol, dan = people("alice", "bob", "carol", "dan")
    ticker, page = DrivenHub(), Page()
    said: list[str | None] = []

    def tick() -> None:
        before = len(page.messages)
        ticker.changed()  # the notice of the change
        run(ticker.tick)
        assert len(page.messages) == before + 1, "no push"
        said.append(page.messages[-1].get("announce"))
        traveller.shift(1)

    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        ticker.subscribe(SITE, page)
        tick()  # the whole state: nothing to say
        presence.record_user(bob)
        tick()
        presence.record_user(carol)
        presence.record_user(dan)
        tick()
        presence.forget_user(bob)  # logged out
        tick()
        presence.forget_user(carol)
        presence.forget_user(dan)
        tick()
        traveller.shift(300)
        tick()  # alice, seen 305 s ago
        presence.record_user(alice)  # back from idle
        tick()
        presence.record_user(bob)
        presence.record_user(carol)
        tick()
        traveller.shift(300)
        tick()  # all three idle, still inside the window
        presence.record_user(bob)
        presence.record_user(carol)
        tick()
    assert said == [
        None,
        "bob joined.",
        "2 people joined.",
        "bob left.",
        "2 people left.",
        "alice is idle.",
        "alice is back.",
        "2 people joined.",
        "3 people are idle.",
        "2 people are back.",
    ]
    assert "<bdi>alice</bdi>" in page.messages[-1]["html"]


def test_a_sockets_first_state_says_what_changed_since_its_page_was_rendered(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    alice, bob, carol = people("alice", "bob", "carol")
    presence.record_user(bob)
    browser = BrowserClient()
    browser.force_login(alice)
    shown = rendered_shown(browser.get("/live-block/").content.decode())
    presence.forget_user(bob)  # he logs out, and carol comes, as alice's page loads
    presence.record_user(carol)

    async def scenario() -> None:
        # Each socket its own: another tab that sends nothing shown is told nothing.
        for query, said in ((f"?shown={shown}", "carol joined. bob left."), ("", None)):
            page = await tab(alice, f"/ws/whos-online/{query}")
            state = await until(page, lambda m: m["type"] == "presence_state")
            assert state.get("announce") == said
            await page.disconnect()

    run(scenario)


OVERRIDES = {
    "whos_online/whos_online.html": "site {{ room }} {{ window_minutes }} {{ members_html }}",
    "whos_online/room.html": "room {{ room }} {{ window_minutes }} {{ members_html }}",
}


@pytest.mark.parametrize(
    ("room", "block"),
    [
        (None, 'site None 10 <li class="whos-online-member whos-online-online">'),
        ("thread:1", 'room thread:1 10 <li class="whos-here-member whos-here-online">'),
    ],
)
def test_a_push_renders_the_site_override_of_the_block_with_the_page_context(
    redis_db: redis.Redis, people: Any, settings: Any, room: str | None, block: str
) -> None:
    settings.TEMPLATES = [
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "loaders": [
                    ("django.template.loaders.locmem.Loader", OVERRIDES),
                    "django.template.loaders.app_directories.Loader",
                ]
            },
        }
    ]
    (alice,) = people("alice")
    presence.record_user(alice, room=room)
    ticker, page = DrivenHub(), Page()
    ticker.subscribe(hub.View(room, staff=False), page)
    run(ticker.tick)
    assert page.messages[0]["html"] == f"{block}<bdi>alice</bdi></li>"


def test_a_page_closing_as_it_is_sent_to_is_logged_at_debug_and_the_others_get_theirs(
    redis_db: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    ticker, gone, page = DrivenHub(), Page(broken=True), Page()
    for subscriber in (gone, page):
        ticker.subscribe(SITE, subscriber)
    with caplog.at_level(logging.DEBUG, logger="whos_online"):
        run(ticker.tick)
    assert page.counts()[0]["type"] == "presence_state"
    assert [(r.levelname, r.name, r.getMessage()) for r in caplog.records] == [
        ("DEBUG", "whos_online.contrib.channels.hub", "whos_online: a push was not delivered")
    ]


def test_the_ticker_runs_while_a_page_listens_then_stops(
    redis_db: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []

    def pause(self: hub.Hub) -> float:  # the ticker's pauses, ended at once
        pauses.append(hub.TICK)
        return 0.0

    async def scenario() -> None:
        ticker, page = hub.Hub(), Page()
        ticker.subscribe(SITE, page)
        await asyncio.wait_for(page.sent.wait(), DEADLINE)
        ticker.unsubscribe(SITE, page)
        assert ticker.task is not None
        await asyncio.wait_for(ticker.task, DEADLINE)  # no page listens: no more reads

    monkeypatch.setattr(hub.Hub, "pause", pause)
    run(scenario)
    assert pauses


def test_a_failed_tick_is_logged_and_the_next_one_sends_what_it_could_not(
    redis_db: redis.Redis, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    render, failures = hub._render, [RuntimeError("a broken template override")]

    def flaky(*args: Any) -> str:
        if failures:
            raise failures.pop()
        return render(*args)

    monkeypatch.setattr(hub, "_render", flaky)

    async def scenario() -> None:
        ticker, page = hub.Hub(), Page()
        ticker.subscribe(SITE, page)
        await asyncio.wait_for(page.sent.wait(), DEADLINE)
        ticker.unsubscribe(SITE, page)

    with caplog.at_level(logging.ERROR, logger="whos_online"):
        run(scenario)
    [record] = caplog.records
    assert (record.name, record.getMessage()) == (
        "whos_online.contrib.channels.hub",
        "whos_online: a push tick failed",
    )
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


def test_once_the_last_tab_closes_the_process_neither_beats_nor_reads_for_it(
    redis_db: redis.Redis, people: Any, public_rooms: None
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        ticker = hub.get_hub()
        alice_tab = await tab(alice, "/ws/whos-online/thread:1/")
        await until(alice_tab, lambda m: m["type"] == "presence_state")
        await alice_tab.disconnect()
        assert ticker.task is not None
        await asyncio.wait_for(ticker.task, DEADLINE)  # the ticker stopped: nothing to serve

    run(scenario)


class ChatConsumer(PresenceMixin, AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """A site's own consumer: presence from the mixin alone, no live block."""

    async def connect(self) -> None:
        await self.accept()


chat = URLRouter([path("ws/chat/<room>/", ChatConsumer.as_asgi())])


def test_a_site_consumer_with_the_mixin_keeps_its_member_online_in_the_route_room(
    redis_db: redis.Redis, people: Any, settings: Any, public_rooms: None
) -> None:
    settings.WHOS_ONLINE_HEARTBEAT = 18.75  # a timeout of 45 s (2.4 beats)
    settings.WHOS_ONLINE_MAX_AGE = 120  # her socket outlives her cookie's 60 s
    (alice,) = people("alice")

    async def scenario() -> None:
        with time_machine.travel(NOW, tick=False) as traveller:
            communicator = WebsocketCommunicator(chat, "/ws/chat/lobby/")
            communicator.scope["user"] = alice
            assert (await communicator.connect(timeout=DEADLINE))[0]
            await eventually(lambda: listed("lobby") == {"alice": "online"})
            for step in range(1, 4):  # 3 x 30 s: past the timeout, beaten for each time
                traveller.shift(30)
                due = NOW.timestamp() + 30 * step
                live = conf.socket_keys("lobby").live
                await eventually(lambda: (redis_db.zscore(live, str(alice.pk)) or 0) >= due)
            assert listed("lobby") == {"alice": "online"} and listed() == {"alice": "online"}
            await communicator.disconnect()
            assert listed("lobby") == {"alice": "idle"}

    run(scenario)
