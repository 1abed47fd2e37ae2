"""The block's summary is read from Redis once per ``conf.block_cache`` (1 s) per process.

The rest of the suite turns the cache off (tests/conftest.py's ``kept_block_reads``);
here it is on, at its one second, and time is travelled.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime
from datetime import timezone as dt_timezone
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.template import engines
from django.test import RequestFactory
from django.test.signals import template_rendered
from django.utils import timezone, translation

from tests import online_now
from tests.conftest import NOW, BrowserAsyncClient, BrowserClient, RoundTrips, socket_timeout
from tests.test_faults import members
from tests.test_hidden import staff_client
from tests.test_middleware import async_get
from whos_online import presence
from whos_online.conf import Settings, conf
from whos_online.rendering import blockcache
from whos_online.rendering.block import members_html
from whos_online.store import reading, scripts
from whos_online.store.reading import Summary

pytestmark = pytest.mark.django_db

POLL = {"X-Whos-Online": "poll"}


@pytest.fixture
def traveller(settings: Any, kept_block_reads: Any) -> Iterator[Any]:
    kept_block_reads(1.0)
    with time_machine.travel(NOW, tick=False) as travelling:
        yield travelling


def reads(round_trips: RoundTrips) -> int:
    """Round trips that read the block (they carry scripts.SUMMARY's SHA1)."""
    return sum(scripts.SUMMARY.sha.encode() in payload for payload in round_trips.payloads)


def gone(*args: Any, **kwargs: Any) -> Any:
    """``presence.summary`` while Redis refuses connections."""
    raise redis.ConnectionError("Connection refused.")


def summary() -> Summary | None:
    """The site's block as the cache has it for a visitor; None for "unavailable"."""
    entry = blockcache.entry()
    return None if entry is None else entry.summary


def names(online: Summary | None) -> list[str]:
    assert online is not None
    return [listed.name for listed in online.members]


def member(name: str, **fields: Any) -> BrowserClient:
    client = BrowserClient()
    client.force_login(User.objects.create_user(name, **fields))
    client.get("/")  # recorded; the "online" cookie holds off the next records
    return client


def test_a_busy_page_reads_redis_once_a_second(
    redis_db: redis.Redis, round_trips: RoundTrips, traveller: Any
) -> None:
    alice = member("alice")
    round_trips.clear()
    for _ in range(20):
        assert members(alice.get("/block/").content.decode()) == ["alice"]
    assert round_trips.count == reads(round_trips) == 1

    member("bob")  # recorded now, and at most a second late in the block
    assert members(alice.get("/block/").content.decode()) == ["alice"]
    traveller.shift(0.99)
    assert members(alice.get("/block/").content.decode()) == ["alice"]
    assert reads(round_trips) == 1
    traveller.shift(0.01)
    assert members(alice.get("/block/").content.decode()) == ["bob", "alice"]
    assert reads(round_trips) == 2


def test_the_live_endpoint_shares_it(
    redis_db: redis.Redis, round_trips: RoundTrips, traveller: Any
) -> None:
    alice = member("alice")
    round_trips.clear()
    assert members(alice.get("/block/").content.decode()) == ["alice"]
    for _ in range(5):
        listed = alice.get("/whos-online/", headers=POLL).json()["members"]
        assert [listed_member["name"] for listed_member in listed] == ["alice"]
    assert reads(round_trips) == 1


def test_staff_visitors_rooms_and_limits_are_kept_apart(
    redis_db: redis.Redis, settings: Any, round_trips: RoundTrips, traveller: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    member("alice")
    member("shy", email="hidden")
    visitor, staff = BrowserClient(), staff_client()
    assert "shy" not in visitor.get("/block/").content.decode()
    assert "<bdi>shy</bdi> (hidden)" in staff.get("/block/").content.decode()
    assert "shy" not in visitor.get("/block/").content.decode()  # not the staff's entry
    traveller.shift(1)  # past the second of their cookies: a read from now on holds them
    visitor.get("/block/"), staff.get("/block/")
    lobby = blockcache.entry(room="lobby")
    assert lobby is not None and lobby.summary == presence.summary(room="lobby")
    round_trips.clear()
    for _ in range(3):  # every one of them is cached now
        visitor.get("/block/"), staff.get("/block/"), blockcache.entry(room="lobby")
    assert reads(round_trips) == 0
    settings.WHOS_ONLINE_LIST_LIMIT = 1  # other settings: another entry
    assert members(visitor.get("/block/").content.decode()) == ["admin"]  # the latest
    assert reads(round_trips) == 1


def test_a_due_entry_is_refreshed_by_one_request_while_the_others_show_the_last_one(
    redis_db: redis.Redis, traveller: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = blockcache.entry()
    assert first is not None and first.sent_at == NOW.timestamp()
    traveller.shift(1)
    presence.record_user(User.objects.create_user("alice"))
    entered, release = threading.Event(), threading.Event()
    calls = []
    original = reading.read

    def slow_summary(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        entered.set()
        assert release.wait(10)
        return original(*args, **kwargs)

    monkeypatch.setattr(reading, "read", slow_summary)
    refreshed: list[Any] = []
    refresher = threading.Thread(target=lambda: refreshed.append(blockcache.entry()))
    refresher.start()
    assert entered.wait(10)
    for _ in range(10):  # meanwhile: the last summary, at once, and no second read
        assert blockcache.entry() == first
    release.set()
    refresher.join(10)
    assert len(calls) == 1
    [entry] = refreshed
    assert names(entry.summary) == ["alice"] and entry.sent_at == NOW.timestamp() + 1
    assert blockcache.entry() == entry


@pytest.mark.parametrize("age, shown", [(9.5, "alice"), (10.5, "unavailable")])
def test_a_page_served_while_a_read_hangs_never_shows_a_block_past_the_limit(
    redis_db: redis.Redis,
    traveller: Any,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    age: float,
    shown: str,
) -> None:
    """Under an ASGI server: one request's read hangs on a sick Redis; another's waits out
    the socket timeout and shows the last block while it is young enough."""
    socket_timeout(settings, 0.25)  # the default
    presence.record_user(User.objects.create_user("alice"))
    assert names(summary()) == ["alice"]
    entered, release = threading.Event(), threading.Event()

    def hanging(*args: Any, **kwargs: Any) -> Any:
        if not entered.is_set():  # the refresher's read
            entered.set()
            assert release.wait(10)
        else:  # the page's own read times out
            traveller.shift(conf.socket_timeout)
        raise redis.TimeoutError("Timeout reading from socket")

    monkeypatch.setattr(reading, "read", hanging)
    traveller.shift(age)
    refresher = threading.Thread(target=blockcache.entry)
    refresher.start()
    try:
        assert entered.wait(10)
        traveller.shift(0.2)
        page = async_get(BrowserAsyncClient(), "/block/").content.decode()
    finally:
        release.set()
        refresher.join(10)
    expected = "alice" if shown == "alice" else "is unavailable right now."
    assert expected in page and ("alice" in page) == (shown == "alice")


def test_when_redis_fails_the_last_block_is_shown_for_a_few_seconds(
    redis_db: redis.Redis, traveller: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    presence.record_user(User.objects.create_user("alice"))
    assert names(summary()) == ["alice"]
    monkeypatch.setattr(reading, "read", gone)
    traveller.shift(9.99)
    assert names(summary()) == ["alice"]
    traveller.shift(0.01)  # 10 s after it was read
    assert summary() is None  # "unavailable"


def test_a_clock_that_went_back_makes_the_block_due_and_never_stretches_it(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips, monkeypatch: pytest.MonkeyPatch
) -> None:
    presence.record_user(User.objects.create_user("alice"))
    assert names(summary()) == ["alice"]
    round_trips.clear()
    traveller.shift(-0.5)
    assert names(summary()) == ["alice"] and reads(round_trips) == 1
    traveller.shift(-0.5)
    monkeypatch.setattr(reading, "read", gone)
    assert summary() is None  # read "later" than now: not shown as if fresh


def test_the_cache_keeps_the_256_blocks_read_last(
    redis_db: redis.Redis, traveller: Any, settings: Any, kept_block_reads: Any
) -> None:
    kept_block_reads(60)

    def kept() -> set[str]:
        return {key[0] for key in blockcache._entries}

    for n in range(256):
        blockcache.entry(room=f"room-{n}")
    blockcache.entry(room="room-0")  # from the cache, and now the last read
    blockcache.entry(room="room-256")
    assert len(kept()) == 256 and "room-0" in kept() and "room-1" not in kept()
    traveller.shift(60)
    blockcache.entry(room="room-2")  # due: read from Redis again, and now the last read
    blockcache.entry(room="room-257")
    assert len(kept()) == 256 and "room-2" in kept() and "room-3" not in kept()


def test_clear_makes_the_next_block_read_redis(
    redis_db: redis.Redis, traveller: Any, round_trips: RoundTrips
) -> None:
    summary()
    round_trips.clear()
    summary()
    blockcache.clear()
    summary()
    assert reads(round_trips) == 1


def test_a_visitor_back_as_the_window_closes_on_them_is_counted_once(
    redis_db: redis.Redis, traveller: Any
) -> None:
    BrowserClient().get("/", REMOTE_ADDR="203.0.113.7")
    traveller.shift(600)  # the last moment that visit is in the window
    BrowserClient().get("/block/", REMOTE_ADDR="198.51.100.1")  # the block is read: two guests
    traveller.shift(0.5)
    html = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.7").content.decode()
    assert "2 guests" in html


def test_zero_reads_redis_for_every_block(
    redis_db: redis.Redis,
    settings: Any,
    round_trips: RoundTrips,
    traveller: Any,
    monkeypatch: pytest.MonkeyPatch,
    kept_block_reads: Any,
) -> None:
    kept_block_reads(0)
    alice = member("alice")
    round_trips.clear()
    for _ in range(5):
        alice.get("/block/")
    assert reads(round_trips) == 5
    monkeypatch.setattr(reading, "read", gone)
    assert "unavailable right now" in alice.get("/block/").content.decode()  # no stale block


def test_a_new_visitor_sees_themselves_in_an_older_cached_block(
    redis_db: redis.Redis, round_trips: RoundTrips, traveller: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    alice = member("alice")
    assert members(alice.get("/block/").content.decode()) == ["alice"]  # the cache is filled
    traveller.shift(0.5)
    round_trips.clear()
    guest = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.7").content.decode()
    traveller.shift(0.1)  # time stands still otherwise: every moment is apart
    bob = BrowserClient()
    bob.force_login(User.objects.create_user("bob"))
    shy = BrowserClient()
    shy.force_login(User.objects.create_user("shy", email="hidden"))
    traveller.shift(0.1)
    bobs_page = bob.get("/block/").content.decode()
    traveller.shift(0.1)
    shys_page = shy.get("/block/").content.decode()
    # Each page that recorded its visitor after the kept read was sent reads afresh.
    assert reads(round_trips) == 3
    assert "2 users online: 1 member, 1 guest" in guest
    assert members(bobs_page) == ["bob", "alice"] and "3 members (1 hidden), 1 guest" in bobs_page
    assert members(shys_page) == ["bob", "alice"] and "3 members (1 hidden)" in shys_page
    # A visitor recorded again reads afresh, and counts once.
    del alice.cookies["online"]
    assert "4 users online: 3 members (1 hidden), 1 guest" in alice.get("/block/").content.decode()
    assert reads(round_trips) == 4


def test_a_guest_refused_at_the_cap_is_not_merged_into_the_cached_block(
    redis_db: redis.Redis,
    round_trips: RoundTrips,
    traveller: Any,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "max_guests", 1)
    first = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.7").content.decode()
    assert "1 user online: 0 members, 1 guest" in first  # the cache is filled
    traveller.shift(0.5)
    round_trips.clear()
    refused = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.8")
    assert reads(round_trips) == 0 and round_trips.records == 1
    # Not counted (the guests fill their cap), so not on their own page either;
    # yet the cookie is set: they wait for it to expire, as the flood does.
    assert "1 user online: 0 members, 1 guest" in refused.content.decode()
    assert "online" in refused.cookies
    assert online_now.guest_count() == 1


@pytest.fixture
def rendered() -> Iterator[list[str]]:
    """The whos_online templates rendered meanwhile (Django's test instrumentation)."""
    found: list[str] = []

    def spy(sender: Any, template: Any, **kwargs: Any) -> None:
        if (template.name or "").startswith("whos_online/"):
            found.append(template.name)

    template_rendered.connect(spy)
    yield found
    template_rendered.disconnect(spy)


def test_a_cached_block_is_rendered_once_per_language_and_time_zone(
    redis_db: redis.Redis, traveller: Any, rendered: list[str]
) -> None:
    traveller.move_to(datetime(2026, 3, 3, 12, tzinfo=dt_timezone.utc))
    member("alice")  # the peak: 1 on 3 March, UTC
    block = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
    english = block.render()
    assert "1 user on March 3, 2026." in english
    assert rendered == [f"whos_online/{name}.html" for name in ("whos_online", "counts", "members")]
    rendered.clear()
    assert block.render() == english and rendered == []
    with translation.override("de"):
        assert "1 Benutzer online" in block.render() and len(rendered) == 3
    with timezone.override("Pacific/Kiritimati"):  # UTC+14: already 4 March
        assert "1 user on March 4, 2026." in block.render() and len(rendered) == 6
    assert block.render() == english and len(rendered) == 6
    traveller.shift(1.0)  # the summary is due: read again, rendered again
    assert block.render() == english and len(rendered) == 9


def test_an_override_that_reads_the_request_is_rendered_for_each(
    redis_db: redis.Redis, traveller: Any, settings: Any, tmp_path: Any
) -> None:
    (tmp_path / "whos_online").mkdir()
    (tmp_path / "whos_online" / "whos_online.html").write_text(
        "{{ request.user.username }} sees {{ online.user_count }}"
    )
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [str(tmp_path)]}]
    block = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
    member("alice")
    member("bob")
    for name in ("alice", "bob"):
        request = RequestFactory().get("/")
        request.user = User.objects.get(username=name)
        assert block.render({}, request) == f"{name} sees 2"


def test_an_override_added_while_debugging_shows_at_once(
    redis_db: redis.Redis, traveller: Any, settings: Any, tmp_path: Any
) -> None:
    django_engine, *others = settings.TEMPLATES
    loaders = ["django.template.loaders.filesystem.Loader"]  # not cached: files are read anew
    loaders.append("django.template.loaders.app_directories.Loader")
    options = {**django_engine.get("OPTIONS", {}), "debug": True, "loaders": loaders}
    django_engine = {**django_engine, "APP_DIRS": False, "DIRS": [str(tmp_path)]}
    settings.TEMPLATES = [{**django_engine, "OPTIONS": options}, *others]
    block = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
    member("alice")
    assert "<bdi>alice</bdi>" in block.render()
    (tmp_path / "whos_online").mkdir()
    (tmp_path / "whos_online" / "whos_online.html").write_text("{{ online.user_count }} here")
    assert block.render() == "1 here"


def test_a_rendered_summary_still_equals_a_fresh_read_and_reprs_without_html(
    redis_db: redis.Redis, people: Any
) -> None:
    (alice,) = people("alice")
    presence.record_user(alice)
    online = presence.summary()
    assert "<bdi>alice</bdi>" in members_html(online, "whos-online")  # kept with the summary
    assert online == presence.summary()
    assert "<bdi>" not in repr(online)


def test_a_logout_never_shows_one_person_twice(redis_db: redis.Redis, traveller: Any) -> None:
    carol = member("carol")
    member("dave").get("/block/")  # the cached block: carol and dave, members
    traveller.shift(0.2)
    carol.logout()
    html = " ".join(carol.get("/block/").content.decode().split())  # her first page as a guest
    assert "2 users online: 1 member, 1 guest" in html
    # Nor a total above the peak printed beside it, in the block or in a poll's answer.
    assert "Most ever online: 2 users on" in html
    poll = json.loads(carol.get("/whos-online/", headers=POLL).content)
    assert (poll["total"], poll["users"], poll["peak"]["count"]) == (2, 1, 2)
