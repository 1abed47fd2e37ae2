"""One person is listed once and counted once, whatever the order of their pages.

The block cache is on at its default of one second and time is travelled, as
in tests/test_blockcache.py. Room pages record every view; site pages once per
cookie, live pages too.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.core.management import call_command

from tests import online_now
from tests.conftest import NOW, BrowserAsyncClient, BrowserClient, RoundTrips
from tests.test_blockcache import POLL, member, reads, traveller
from tests.test_consumers import run, tab, until
from tests.test_faults import members
from tests.test_middleware import async_get
from whos_online.conf import Settings, conf
from whos_online.rendering import blockcache
from whos_online.store import scripts

pytestmark = pytest.mark.django_db
__all__ = ["traveller"]  # the fixture, for this module's tests

CUSTOMER = "203.0.113.7"


def shown(page: Any) -> str:
    """A page's text, its whitespace collapsed."""
    return " ".join(page.content.decode().split())


def totals(html: str) -> tuple[int, int | None]:
    """The block's total and the "Most ever online" beside it (None if not shown)."""
    total = re.search(r"(\d+) users? online", html)
    peak = re.search(r"Most ever online: (\d+) users?", html)
    assert total is not None, html
    return int(total[1]), None if peak is None else int(peak[1])


def assert_counted_once(page: Any, names: list[str], counts: str) -> None:
    """The site block lists ``names`` once each, says ``counts``, and no total above its peak."""
    html = shown(page)
    assert sorted(members(html)) == names
    assert counts in html
    total, peak = totals(html)
    assert peak is not None and peak >= total


@pytest.fixture
def another_process(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``with another_process():`` pages served by a second worker: its own block cache."""
    entries: OrderedDict[Any, blockcache.Cached] = OrderedDict()

    @contextmanager
    def serving() -> Iterator[None]:
        with monkeypatch.context() as patched:
            patched.setattr(blockcache, "_entries", entries)
            yield

    return serving


def test_another_process_lists_a_newcomer_once_its_kept_read_is_due(
    redis_db: redis.Redis,
    traveller: Any,
    another_process: Any,
    round_trips: RoundTrips,
) -> None:
    alice = member("alice")
    with another_process():
        alice.get("/block/")  # that process's cached read: alice alone
    traveller.shift(0.3)
    newcomer = BrowserClient()
    first = newcomer.get("/block/", REMOTE_ADDR=CUSTOMER)  # recorded here
    assert_counted_once(first, ["alice"], "2 users online: 1 member, 1 guest")
    traveller.shift(0.3)
    with another_process():
        # Their cookie holds off a record: that process shows the read it keeps...
        page = newcomer.get("/block/", REMOTE_ADDR=CUSTOMER)
        assert_counted_once(page, ["alice"], "1 user online: 1 member, 0 guests")
        traveller.shift(1)
        round_trips.clear()
        # ...until it is due: the next read holds them.
        again = newcomer.get("/block/", REMOTE_ADDR=CUSTOMER)
        assert_counted_once(again, ["alice"], "2 users online: 1 member, 1 guest")
        assert reads(round_trips) == 1


def test_an_agent_reloading_a_live_page_is_listed_and_counted_once(
    redis_db: redis.Redis, settings: Any, traveller: Any, round_trips: RoundTrips
) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    agent1, agent2 = member("agent1"), member("agent2")
    BrowserClient().get("/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(5)
    agent2.get("/block/")  # the cached read: agent1, agent2 and the customer
    round_trips.clear()
    for _ in range(3):  # three reloads within the cached second
        traveller.shift(0.3)
        page = agent1.get("/live-block/")
        assert "online" not in page.cookies  # the cookie member() got holds off a record
        assert_counted_once(page, ["agent1", "agent2"], "3 users online: 2 members, 1 guest")
    assert round_trips.records == 0 and reads(round_trips) == 0
    for headers in ({}, POLL):  # the live endpoint, as a page's fetch and as its poll
        data = agent1.get("/whos-online/", headers=headers).json()
        assert sorted(m["name"] for m in data["members"]) == ["agent1", "agent2"]
        assert (data["users"], data["guests"], data["total"]) == (2, 1, 3)
        assert data["peak"]["count"] >= data["total"]


def test_a_member_with_a_socket_then_pages_is_listed_once(
    redis_db: redis.Redis, settings: Any, traveller: Any
) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    member("agent2").get("/block/")  # the cached read: agent2 alone
    agent1 = User.objects.create_user("agent1")
    traveller.shift(0.3)

    async def scenario() -> None:
        socket = await tab(agent1)  # recorded by its connect
        pushed = await until(socket, lambda message: "agent1" in message.get("html", ""))
        assert pushed["users"] == 2 and members(pushed["html"]) in (
            ["agent1", "agent2"],
            ["agent2", "agent1"],
        )
        await socket.disconnect()

    run(scenario)
    browser = BrowserClient()
    browser.force_login(agent1)
    for _ in range(3):
        traveller.shift(0.3)
        page = browser.get("/live-block/")
        assert_counted_once(page, ["agent1", "agent2"], "2 users online: 2 members, 0 guests")


def test_a_guest_who_logs_in_and_reloads_is_one_member(
    redis_db: redis.Redis, traveller: Any
) -> None:
    User.objects.create_user("carol", password="pw")
    carol = BrowserClient()
    first = carol.get("/block/", REMOTE_ADDR=CUSTOMER)  # read: one guest
    assert_counted_once(first, [], "1 user online: 0 members, 1 guest")
    traveller.shift(0.2)
    carol.post("/login/", {"username": "carol", "password": "pw"}, REMOTE_ADDR=CUSTOMER)
    traveller.shift(0.2)
    for _ in range(2):  # the reload after the login (recorded), and one with the cookie
        page = carol.get("/block/", REMOTE_ADDR=CUSTOMER)
        assert_counted_once(page, ["carol"], "1 user online: 1 member, 0 guests")
        assert "Most ever online: 1 user on" in shown(page)
        traveller.shift(0.2)


def test_a_login_posted_without_the_online_cookie_is_one_member(
    redis_db: redis.Redis, traveller: Any
) -> None:
    """A login form on a cached page, or a browser that dropped the cookie: the POST is due
    a record, which is the member the view just logged in, not the guest who sent it."""
    User.objects.create_user("carol", password="pw")
    carol = BrowserClient()
    carol.post("/login/", {"username": "carol", "password": "pw"}, REMOTE_ADDR=CUSTOMER)
    traveller.shift(0.2)
    page = member("dave").get("/block/")  # another member's page, before carol's next
    assert_counted_once(page, ["carol", "dave"], "2 users online: 2 members, 0 guests")


def test_a_member_who_logs_out_and_reloads_is_one_guest(
    redis_db: redis.Redis, traveller: Any
) -> None:
    carol = BrowserClient()
    carol.force_login(User.objects.create_user("carol"))
    carol.get("/", REMOTE_ADDR=CUSTOMER)
    member("dave").get("/block/")  # the cached read: carol and dave, members
    traveller.shift(0.2)
    carol.logout()
    traveller.shift(0.2)
    for _ in range(2):  # her first page as a guest (recorded), and one with the cookie
        page = carol.get("/block/", REMOTE_ADDR=CUSTOMER)
        assert_counted_once(page, ["dave"], "2 users online: 1 member, 1 guest")
        traveller.shift(0.2)


def test_a_newcomers_first_page_counts_them_under_the_peak(
    redis_db: redis.Redis, traveller: Any
) -> None:
    member("alice").get("/block/")  # the cached read: alice alone, the peak 1
    traveller.shift(0.5)
    newcomer = BrowserClient()
    page = newcomer.get("/block/", REMOTE_ADDR=CUSTOMER)
    assert_counted_once(page, ["alice"], "2 users online: 1 member, 1 guest")
    assert "Most ever online: 2 users on" in shown(page)
    traveller.shift(0.2)
    again = newcomer.get("/block/", REMOTE_ADDR=CUSTOMER)  # the cookie: not recorded
    assert_counted_once(again, ["alice"], "2 users online: 1 member, 1 guest")


def test_an_agent_reloading_a_room_is_listed_there_once(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    agent1, agent2 = member("agent1"), member("agent2")
    agent2.get("/thread/7/")
    agent1.get("/thread/7/")
    traveller.shift(5)
    agent2.get("/thread/7/")  # the room's cached read: both agents
    round_trips.clear()
    for _ in range(3):  # every room page is recorded
        traveller.shift(0.3)
        html = shown(agent1.get("/thread/7/"))
        assert sorted(members(html)) == ["agent1", "agent2"]
        assert "2 here now: 2 members, 0 guests" in html
    # The first found them in the room since before any kept read: the kept read holds
    # them. The next two found their record of 0.3 s before: each reads afresh.
    assert round_trips.ran(scripts.RECORD) == 3 and reads(round_trips) == 2


def test_a_guest_reloading_a_room_is_counted_there_once(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    agent1 = member("agent1")
    customer = BrowserClient()
    customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(5)
    agent1.get("/thread/7/")  # the room's cached read: agent1 and the customer
    round_trips.clear()
    for _ in range(3):
        traveller.shift(0.3)
        html = shown(customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER))
        assert members(html) == ["agent1"] and "2 here now: 1 member, 1 guest" in html
    assert reads(round_trips) == 2  # all but the first, which found them there since 5 s


def test_the_jinja2_globals_count_a_reloading_member_once(
    redis_db: redis.Redis, traveller: Any
) -> None:
    agent1 = member("agent1")
    agent1.get("/lobby/")
    member("agent2").get("/jinja/")  # the cached reads of the site and the lobby
    for _ in range(3):
        traveller.shift(0.3)
        del agent1.cookies["online"]  # as a live page drops it: recorded each time
        site, room = shown(agent1.get("/jinja/")).split('class="whos-here"')
        assert sorted(members(site)) == ["agent1", "agent2"] and "2 users online" in site
        assert members(room) == ["agent1"] and "1 here now" in room


def test_no_block_shows_a_peak_below_its_total(
    redis_db: redis.Redis,
    traveller: Any,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "max_guests", 2)
    BrowserClient().get("/block/", REMOTE_ADDR=CUSTOMER)  # the peak: 1
    traveller.shift(0.3)
    # The guests now fill their cap: a count the peak does not take.
    html = shown(BrowserClient().get("/block/", REMOTE_ADDR="198.51.100.9"))
    assert "2 users online: 0 members, 2 guests" in html
    assert "Most ever online" not in html


def a_record_of(count: int, redis_db: redis.Redis) -> None:
    """The site's "Most ever online" is ``count``: newcomers now stay under it."""
    redis_db.hset(conf.keys().peak, mapping={"count": count, "at": NOW.timestamp() - 86400})


def wsgi(path: str, address: str) -> Any:
    return BrowserClient().get(path, REMOTE_ADDR=address)


def asgi(path: str, address: str) -> Any:
    return async_get(BrowserAsyncClient(), path, REMOTE_ADDR=address)


# --- The rule: a page shows the kept read if it counts its visitor, else reads afresh


def test_a_newcomers_first_page_reads_afresh_and_their_reloads_read_nothing(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    member("alice").get("/block/")  # the kept read: alice alone
    round_trips.clear()
    traveller.shift(0.1)
    newcomer = BrowserClient()
    page = newcomer.get("/block/", REMOTE_ADDR=CUSTOMER)
    assert_counted_once(page, ["alice"], "2 users online: 1 member, 1 guest")
    assert (round_trips.records, reads(round_trips)) == (1, 1)  # her record, then the read
    round_trips.clear()
    for _ in range(10):  # ten reloads within her first second: the read after her record
        traveller.shift(0.05)
        page = newcomer.get("/block/", REMOTE_ADDR=CUSTOMER)
        assert_counted_once(page, ["alice"], "2 users online: 1 member, 1 guest")
    assert (round_trips.records, reads(round_trips)) == (0, 0)


@pytest.mark.parametrize("get", [wsgi, asgi])
def test_a_flood_of_newcomers_reads_at_most_the_cap_each_second(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips, get: Any
) -> None:
    member("alice").get("/block/")
    round_trips.clear()
    for n in range(3 * blockcache.FRESH_READS_PER_SECOND):  # all within one second
        traveller.shift(0.01)
        page = get("/block/", f"198.51.100.{n}")
        total, _ = totals(shown(page))
        assert 2 <= total <= n + 2  # alice and the newcomers, never more
    assert round_trips.records == 3 * blockcache.FRESH_READS_PER_SECOND
    assert reads(round_trips) == blockcache.FRESH_READS_PER_SECOND


def test_a_refused_newcomer_reads_nothing(
    redis_db: redis.Redis, traveller: Any, monkeypatch: Any, round_trips: RoundTrips
) -> None:
    monkeypatch.setattr(Settings, "max_guests", 1)
    BrowserClient().get("/block/", REMOTE_ADDR=CUSTOMER)  # the one guest the cap admits
    round_trips.clear()
    traveller.shift(0.1)
    page = BrowserClient().get("/block/", REMOTE_ADDR="198.51.100.9")
    assert "1 user online: 0 members, 1 guest" in shown(page)
    assert (round_trips.records, reads(round_trips)) == (1, 0)  # refused: nothing to read for


# --- Readers of a room


def test_a_guest_back_on_a_page_within_a_second_sees_themselves(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    member("agent1").get("/thread/7/")
    customer = BrowserClient()
    traveller.shift(0.1)
    html = shown(customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER))
    assert "2 here now: 1 member, 1 guest" in html
    traveller.shift(0.2)
    customer.get("/thread/8/", REMOTE_ADDR=CUSTOMER)  # out of thread 7, into 8
    traveller.shift(0.2)
    html = shown(customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER))  # and back
    assert members(html) == ["agent1"] and "2 here now: 1 member, 1 guest" in html
    round_trips.clear()
    traveller.shift(0.2)
    html = shown(customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER))  # a reload
    assert "2 here now: 1 member, 1 guest" in html
    assert reads(round_trips) == 1  # recorded again: it reads afresh


def test_behind_one_address_a_room_never_counts_more_than_the_site(
    redis_db: redis.Redis, traveller: Any
) -> None:
    office = [BrowserClient(), BrowserClient()]  # two guests' browsers behind one address
    for browser in office:
        browser.get("/", REMOTE_ADDR=CUSTOMER)  # each with its cookie: one guest
    traveller.shift(2)
    office[0].get("/thread/7/", REMOTE_ADDR=CUSTOMER)
    agents = [member(f"agent{n}") for n in (1, 2, 3)]
    for agent in agents:
        agent.get("/thread/7/", REMOTE_ADDR=CUSTOMER)  # the room's kept read counts the guest
    traveller.shift(0.2)
    office[0].get("/thread/8/", REMOTE_ADDR=CUSTOMER)  # the guest moves on
    traveller.shift(0.2)
    html = shown(office[1].get("/thread/7/", REMOTE_ADDR=CUSTOMER))  # the same guest to Redis
    assert "4 here now: 3 members, 1 guest" in html
    assert online_now.guest_count() == 1


# --- Logins, logouts and returns


def test_a_newcomer_who_would_pass_the_most_ever_online_reads_afresh(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    a_record_of(2, redis_db)
    alice = member("alice")
    BrowserClient().get("/block/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(1)
    alice.get("/block/")  # the cached read: 2 users, at the record
    round_trips.clear()
    traveller.shift(0.3)
    page = BrowserClient().get("/block/", REMOTE_ADDR="198.51.100.9")
    assert_counted_once(page, ["alice"], "3 users online: 1 member, 2 guests")
    assert "Most ever online: 3 users on" in shown(page)
    assert reads(round_trips) == 1  # the read raised the record


def test_a_guest_back_just_as_they_left_the_window_is_counted_once(
    redis_db: redis.Redis, traveller: Any
) -> None:
    a_record_of(10, redis_db)
    BrowserClient().get("/block/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(conf.max_age - 0.5)
    alice = member("alice")
    alice.get("/block/")  # the cached read: alice, and the guest half a second from leaving
    traveller.shift(0.7)
    call_command("whos_online_prune")  # the guest has left the window: cron runs
    traveller.shift(0.1)
    back = BrowserClient().get("/block/", REMOTE_ADDR=CUSTOMER)  # their cookie has expired
    # Pruned, they would look new to the read that counts them: "2 guests".
    assert_counted_once(back, ["alice"], "2 users online: 1 member, 1 guest")


def test_a_member_logged_out_on_an_excluded_page_is_not_added_as_a_newcomer(
    redis_db: redis.Redis, traveller: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_EXCLUDE_PATHS = [r"^/logout/"]
    a_record_of(10, redis_db)
    carol = BrowserClient()
    carol.force_login(User.objects.create_user("carol"))
    carol.get("/", REMOTE_ADDR=CUSTOMER)
    member("dave").get("/block/")  # the cached read: carol and dave, members
    traveller.shift(0.2)
    carol.post("/logout/", REMOTE_ADDR=CUSTOMER)  # excluded: no record after the view
    del carol.cookies["online"]  # her member's cookie, expired by now on a real site
    traveller.shift(0.2)
    page = carol.get("/block/", REMOTE_ADDR=CUSTOMER)
    # The logout counted her as a guest at once, so the read (listing her) is not topped up.
    assert_counted_once(page, ["dave"], "2 users online: 1 member, 1 guest")


def test_the_page_of_a_login_counts_them_once(redis_db: redis.Redis, traveller: Any) -> None:
    User.objects.create_user("carol", password="pw")
    laptop, phone = BrowserClient(), BrowserClient()
    laptop.post("/login/", {"username": "carol", "password": "pw"}, REMOTE_ADDR="198.51.100.9")
    phone.get("/", REMOTE_ADDR=CUSTOMER)  # carol again, as a guest on her phone
    traveller.shift(2)
    member("dave").get("/block/")  # the kept read: carol, dave and the phone's guest
    traveller.shift(0.2)
    # Her login on the phone renders the block: the read above counts her twice.
    page = phone.post(
        "/login/?block", {"username": "carol", "password": "pw"}, REMOTE_ADDR=CUSTOMER
    )
    assert_counted_once(page, ["carol", "dave"], "2 users online: 2 members, 0 guests")


def test_a_login_or_a_logout_reads_afresh(redis_db: redis.Redis, traveller: Any) -> None:
    a_record_of(10, redis_db)
    User.objects.create_user("carol", password="pw")
    carol = BrowserClient()
    carol.get("/block/", REMOTE_ADDR=CUSTOMER)  # the cached read: one guest
    traveller.shift(0.2)
    carol.post("/login/", {"username": "carol", "password": "pw"}, REMOTE_ADDR=CUSTOMER)
    del carol.cookies["online"]  # as a live page drops it: her next page is recorded
    traveller.shift(0.2)
    page = carol.get("/block/", REMOTE_ADDR=CUSTOMER)  # a member new to the read
    assert_counted_once(page, ["carol"], "1 user online: 1 member, 0 guests")
    traveller.shift(0.2)
    kept = carol.cookies["online"]
    carol.logout()  # a logout with no address to count her as a guest
    carol.cookies["online"] = kept  # the test client drops every cookie; a browser keeps it
    page = carol.get("/block/", REMOTE_ADDR=CUSTOMER)  # her member's cookie: no newcomer
    assert_counted_once(page, [], "1 user online: 0 members, 1 guest")


def test_a_member_back_after_a_while_is_listed_not_added_as_a_guest(
    redis_db: redis.Redis, traveller: Any
) -> None:
    a_record_of(10, redis_db)
    alice = member("alice")  # her session outlives the window ("remember me")
    traveller.shift(conf.max_age + 60)
    member("dave").get("/block/")  # the cached read: dave alone
    traveller.shift(0.2)
    del alice.cookies["online"]  # expired long ago
    page = alice.get("/block/")  # recorded, new to the read: a member, so it reads
    assert_counted_once(page, ["alice", "dave"], "2 users online: 2 members, 0 guests")


def test_a_guest_back_in_a_thread_they_left_since_its_read_is_counted_once(
    redis_db: redis.Redis, traveller: Any
) -> None:
    agent1 = member("agent1")
    customer = BrowserClient()
    customer.get("/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(2)
    customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(0.1)
    agent1.get("/thread/7/")  # the room's kept read: agent1 and the customer
    traveller.shift(0.2)
    customer.get("/thread/8/", REMOTE_ADDR=CUSTOMER)  # out of thread 7, into 8
    traveller.shift(0.2)
    html = shown(customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER))  # and back
    assert members(html) == ["agent1"] and "2 here now: 1 member, 1 guest" in html


def test_a_member_logged_out_in_a_thread_is_not_added_to_its_read_as_a_guest(
    redis_db: redis.Redis, traveller: Any
) -> None:
    agent1 = member("agent1")
    User.objects.create_user("carol", password="pw")
    carol = BrowserClient()
    carol.post("/login/", {"username": "carol", "password": "pw"}, REMOTE_ADDR=CUSTOMER)
    traveller.shift(2)
    carol.get("/thread/7/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(0.1)
    agent1.get("/thread/7/")  # the room's kept read: agent1 and carol, members
    traveller.shift(0.2)
    carol.post("/logout/", REMOTE_ADDR=CUSTOMER)
    for path in ("/", "/thread/7/"):  # her guest's cookie, then back to the thread with it
        traveller.shift(0.2)
        html = shown(carol.get(path, REMOTE_ADDR=CUSTOMER))
    assert members(html) == ["agent1"] and "2 here now: 1 member, 1 guest" in html


def test_a_member_logged_out_on_an_excluded_page_is_not_added_to_a_threads_read(
    redis_db: redis.Redis, traveller: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_EXCLUDE_PATHS = [r"^/logout/"]
    agent1 = member("agent1")
    carol = BrowserClient()
    carol.force_login(User.objects.create_user("carol"))
    carol.get("/thread/7/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(0.1)
    agent1.get("/thread/7/")  # the room's kept read: agent1 and carol, members
    traveller.shift(0.2)
    carol.post("/logout/", REMOTE_ADDR=CUSTOMER)  # excluded: the logout alone counts her
    del carol.cookies["online"]  # her member's cookie, expired by now on a real site
    traveller.shift(0.2)
    html = shown(carol.get("/thread/7/", REMOTE_ADDR=CUSTOMER))
    assert members(html) == ["agent1"] and "2 here now: 1 member, 1 guest" in html


def test_a_guest_back_in_a_thread_just_as_they_left_its_window_is_counted_once(
    redis_db: redis.Redis, traveller: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_ROOM_MAX_AGE = 120  # her site cookie outlives her place in the room
    customer = BrowserClient()
    customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER)
    traveller.shift(119.5)
    member("agent1").get("/thread/7/")  # the room's read: agent1, and her half a second to go
    traveller.shift(0.7)
    call_command("whos_online_prune")  # she has left the room's window: cron runs
    traveller.shift(0.1)
    html = shown(customer.get("/thread/7/", REMOTE_ADDR=CUSTOMER))
    # Pruned, she would look new to the read that counts her: "2 guests".
    assert members(html) == ["agent1"] and "2 here now: 1 member, 1 guest" in html
