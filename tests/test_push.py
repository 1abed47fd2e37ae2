"""Redis work that follows changes: a hub reads a view when a notice or its own data's next
expiry says it changed, and at least every CHECK_EVERY seconds (a lost notice), never
because a tick came round.

Hubs are driven tick by tick (``DrivenHub``) under time travel, and Redis calls are
counted per script; one test listens for real notices over Pub/Sub.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis
import time_machine

from tests import online_now
from tests.conftest import NOW, RoundTrips, tab
from tests.test_consumers import (
    DEADLINE,
    SITE,
    DrivenHub,
    Page,
    run,
    until,
    websockets,  # noqa: F401 (a fixture, autouse)
)
from tests.test_consumers import tab as tab_in
from whos_online import presence, push
from whos_online.conf import conf
from whos_online.contrib.channels import hub
from whos_online.store import scripts, sockets

pytestmark = pytest.mark.django_db

ROOM = hub.View("topic:1", staff=False)


def test_a_quiet_view_is_read_every_check_and_when_its_data_says_and_sends_only_changes(
    redis_db: redis.Redis, people: Any, settings: Any, round_trips: RoundTrips
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600  # idle after 300 s
    (alice,) = people("alice")
    pk = str(alice.pk)
    ticker, page = DrivenHub(), Page()
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        ticker.subscribe(SITE, page)
        run(ticker.tick)
        round_trips.clear()
        for _ in range(59):  # 295 s, a tick every 5 s, nobody moving
            traveller.shift(5)
            run(ticker.tick)
        # One read and one sweep every 10 s, nothing else.
        assert round_trips.ran(scripts.SUMMARY) == round_trips.ran(scripts.CHECK) == 29
        assert round_trips.count == 58 and len(page.messages) == 1
        traveller.shift(1)  # 296 s: read at 290 s, due at 300 s
        run(ticker.tick)
        traveller.shift(5)  # 301 s: alice turned idle by the clock alone
        run(ticker.tick)
        traveller.shift(300)  # 601 s: she leaves the window
        run(ticker.tick)
    state, idle, gone = page.messages
    assert (state["joins"][pk]["status"], idle["joins"][pk]["status"]) == ("online", "idle")
    assert list(gone["leaves"]) == [pk] and gone["users"] == 0


def test_a_room_view_pushes_a_leave_when_the_room_s_shorter_window_ends(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600  # idle after 300 s
    settings.WHOS_ONLINE_ROOM_MAX_AGE = 120
    settings.WHOS_ONLINE_ACCESS = "whos_online.access.public"
    (alice,) = people("alice")
    ticker, page = DrivenHub(), Page()
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice, room="topic:1")
        ticker.subscribe(ROOM, page)
        run(ticker.tick)
        traveller.shift(115)  # idle since 60 s: half the room's window, not the site's
        run(ticker.tick)
        traveller.shift(5.5)  # read when the room's window, not the site's, passes her by
        run(ticker.tick)
    state, idle, gone = page.messages
    assert idle["joins"][str(alice.pk)]["status"] == "idle"
    assert list(gone["leaves"]) == [str(alice.pk)] and gone["users"] == 0
    assert "past 2 minutes" in state["html"]


def test_a_notice_rereads_the_views_of_its_namespace_alone_once_a_tick(
    redis_db: redis.Redis, round_trips: RoundTrips, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticker = DrivenHub()
    for view in (SITE, ROOM, hub.View("topic:2", staff=False), hub.View(None, staff=True)):
        ticker.subscribe(view, Page())
    with time_machine.travel(NOW, tick=False) as traveller:
        run(ticker.tick)
        assert round_trips.ran(scripts.SUMMARY) == 4
        round_trips.clear()
        traveller.shift(1)
        run(ticker.tick)  # nothing is due
        monkeypatch.setattr(hub, "TICK", 0)  # as if the views had been read a TICK ago
        ticker.changed("topic:1")
        run(ticker.tick)
        assert round_trips.ran(scripts.SUMMARY) == 1
        monkeypatch.setattr(hub, "TICK", 60)  # just read: a notice waits out the TICK
        ticker.changed("topic:1")
        run(ticker.tick)
        assert round_trips.ran(scripts.SUMMARY) == 1
        monkeypatch.setattr(hub, "TICK", 0)
        ticker.changed(None)  # the site: both of its views, staff and not
        run(ticker.tick)
        assert round_trips.ran(scripts.SUMMARY) == 4  # and the room's pending one


def test_a_change_made_in_another_process_reaches_the_page_by_its_notice(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")

    async def scenario() -> None:
        ticker, page = hub.get_hub(), Page()
        ticker.subscribe(ROOM, page)
        await asyncio.wait_for(page.sent.wait(), DEADLINE)
        assert ticker.listener is not None
        await asyncio.to_thread(ticker.listener.subscribed.wait, DEADLINE)
        page.sent.clear()
        # Nothing here reads the empty room again until told: its data names no expiry.
        await asyncio.to_thread(presence.record_user, alice, room="topic:1")
        await asyncio.wait_for(page.sent.wait(), DEADLINE)  # well before a check (10 s)
        assert list(page.messages[-1]["joins"]) == [str(alice.pk)]
        page.sent.clear()
        await asyncio.to_thread(presence.record_user, alice, room="topic:2")  # she moves on
        await asyncio.wait_for(page.sent.wait(), DEADLINE)
        assert list(page.messages[-1]["leaves"]) == [str(alice.pk)]
        assert page.messages[-1]["joins"] == {} and page.messages[-1]["users"] == 0
        ticker.unsubscribe(ROOM, page)

    run(scenario)


def test_a_lost_notice_is_caught_by_the_next_read_within_check_every(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")
    ticker, page = DrivenHub(), Page()  # a driven hub listens to no notice: each one is lost
    with time_machine.travel(NOW, tick=False) as traveller:
        ticker.subscribe(ROOM, page)
        run(ticker.tick)
        presence.record_user(alice, room="topic:1")
        traveller.shift(hub.CHECK_EVERY - 1)
        run(ticker.tick)
        assert len(page.messages) == 1  # not yet
        traveller.shift(1)
        run(ticker.tick)
    assert [list(message["joins"]) for message in page.messages] == [[], [str(alice.pk)]]


def test_a_check_sweeps_a_dead_process_connections_where_no_process_beats(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_HEARTBEAT = 25  # a timeout of 60 s (2.4 beats)
    settings.WHOS_ONLINE_ACCESS = "whos_online.access.public"
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        ticker, page = DrivenHub(), Page()  # its first check is due 10 s from now
        elsewhere = tab(alice, room="topic:1")  # another process's, which beats, then dies
        sockets.connect(elsewhere)
        traveller.shift(conf.cookie_age)  # open past her cookie's life
        sockets.heartbeat([elsewhere])
        ticker.subscribe(ROOM, page)
        run(ticker.tick)
        traveller.shift(61)
        run(ticker.tick)
        assert push.connected(room="topic:1") == push.connected() == []
    statuses = [m["joins"][str(alice.pk)]["status"] for m in page.messages]
    assert statuses == ["online", "idle"]


def test_a_steady_crowd_on_two_processes_sends_nothing(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    """More members than the list shows, each process beating at its own time, for two
    windows: heartbeats never move a score, so nothing is reordered and nothing sent."""
    settings.WHOS_ONLINE_LIST_LIMIT = 3
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_HEARTBEAT = 25  # a timeout of 60 s (2.4 beats)
    members = people(*(f"m{n}" for n in range(6)))
    page = Page()
    with time_machine.travel(NOW, tick=False) as traveller:
        processes = [DrivenHub(), DrivenHub()]
        for n, member in enumerate(members):
            connection = tab(member, f"tab{n}")
            sockets.connect(connection)
            processes[n % 2].track(connection)
            traveller.shift(1)
        processes[0].subscribe(SITE, page)
        processes[1].beat_at += 12.5  # the second process beats 12.5 s after the first
        for _ in range(1200 // 5):
            for process in processes:
                run(process.tick)
            traveller.shift(5)
        assert len(presence.summary().members) == 3 and online_now.user_count() == 6
    assert [message["type"] for message in page.messages] == ["presence_state"]


def test_approximate_counting_reads_again_when_the_guest_buckets_move_on(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_GUESTS = "approximate"
    with time_machine.travel(NOW, tick=False):
        presence.record_guest("203.0.113.7")
        changes_at = presence.summary().changes_at
    assert changes_at == (NOW.timestamp() // 60 + 1) * 60  # the next one-minute bucket


class Clock:
    """The hub's monotonic clock, moved by the test (the event loop keeps the real one)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return self.now


def test_a_notice_soon_after_a_read_waits_out_the_rest_of_the_tick_not_a_whole_one(
    redis_db: redis.Redis, round_trips: RoundTrips, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(hub, "time", clock)
    ticker = DrivenHub()
    ticker.subscribe(ROOM, Page())
    run(ticker.tick)  # read at 1000.0
    assert ticker.pause() == hub.LOOK  # nothing notified: the ticker looks again later
    clock.now += 0.8 * hub.TICK
    ticker.changed("topic:1")
    round_trips.clear()
    run(ticker.tick)
    assert round_trips.ran(scripts.SUMMARY) == 0  # a burst still costs one read a TICK
    # The next tick when that read's TICK ends, not a whole TICK (or LOOK) from now.
    assert ticker.pause() == pytest.approx(0.2 * hub.TICK)
    clock.now += 0.2 * hub.TICK
    assert ticker.pause() == 0
    run(ticker.tick)
    assert round_trips.ran(scripts.SUMMARY) == 1


def test_a_joiner_s_first_state_and_its_process_other_pages_show_the_join_in_one_read(
    redis_db: redis.Redis, people: Any, round_trips: RoundTrips, settings: Any
) -> None:
    """The joining socket subscribes once its member is recorded: the read its subscription
    makes shows the join to the pages of the same process at once, not a TICK later."""
    settings.WHOS_ONLINE_ACCESS = "whos_online.access.public"
    alice, bob = people("alice", "bob")

    async def scenario() -> None:
        watcher = await tab_in(bob, "/ws/whos-online/topic:1/")
        await until(watcher, lambda m: m["type"] == "presence_state")
        round_trips.clear()
        joiner = await tab_in(alice, "/ws/whos-online/topic:1/")
        state = await until(joiner, lambda m: m["type"] == "presence_state")
        diff = await until(watcher, lambda m: m["type"] == "presence_diff")
        assert round_trips.ran(scripts.SUMMARY) == 1  # the one read, before any notice's
        assert sorted(state["joins"]) == sorted([str(alice.pk), str(bob.pk)])  # she is in
        assert list(diff["joins"]) == [str(alice.pk)]
        await joiner.disconnect()
        await watcher.disconnect()

    run(scenario)
