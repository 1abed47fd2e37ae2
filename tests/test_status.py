"""Status (online/idle/offline) and last seen: the API, the retention and the template side."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis
import time_machine
from django.template import engines
from django.utils import translation

from tests import online_now
from tests.conftest import NOW, BrowserClient, tab
from whos_online import presence, push
from whos_online.conf import conf
from whos_online.store import sockets
from whos_online.store.status import status_of

pytestmark = pytest.mark.django_db

# A pk nobody has: never recorded.
NOBODY = 424242


def render(source: str, **context: Any) -> str:
    return engines["django"].from_string("{% load whos_online %}" + source).render(context)


# now 1,000; window 600 s, idle after 300 s (the cookie's life); beat: when the member's
# connections are alive until (their last heartbeat plus its timeout)
@pytest.mark.parametrize(
    ("score", "beat", "left", "expected"),
    [
        (None, 1050, None, "offline"),  # logged out or never seen: a socket alone is no one
        (100, 1000, None, "online"),  # a beating socket, however old the page view
        (100, 990, None, "idle"),  # its process died: timed out 10 s ago (not yet swept)
        (100, None, 930, "idle"),  # the last socket closed 70 s ago
        (100, None, 399, "offline"),  # ... 601 s ago: out of the window
        (399, None, None, "offline"),  # a page view 601 s ago
        (699, None, None, "idle"),  # 301 s ago
        (701, None, None, "online"),  # 299 s ago
        (900, None, 904, "online"),  # the old tab closed as the page that replaced it loaded
        (900, None, 905, "online"),  # closed within her cookie's life: she may browse on
        (690, None, 990, "idle"),  # closed 300 s after her last record: gone
        (950, 940, 905, "online"),  # a page view after the last socket sign
    ],
)
def test_the_one_rule_for_a_status(
    settings: Any, score: float | None, beat: float | None, left: float | None, expected: str
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600  # idle after 300 s
    assert status_of(score, 1000, beat, left) == expected


def test_online_then_idle_then_offline(redis_db: redis.Redis, settings: Any, people: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600  # idle after 300 s
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        assert presence.status(alice) == "online"
        traveller.shift(300)
        assert presence.status(alice) == "online"
        traveller.shift(1)
        assert presence.status(alice) == "idle"
        traveller.shift(299)
        assert presence.status(alice) == "idle"  # the window's last second
        traveller.shift(1)
        assert presence.status(alice) == "offline"
    assert presence.status(NOBODY) == "offline"


def test_the_block_says_who_is_idle_in_words_not_by_colour_alone(
    redis_db: redis.Redis, people: Any
) -> None:
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(bob)
        traveller.shift(400)  # past idle (half the window)
        presence.record_user(alice)
        page = BrowserClient().get("/block/").content.decode()
        with translation.override("fr"):
            french = render("{% whos_online %}")
    idle = '<bdi>bob</bdi> <span class="whos-online-status">{}</span></li>'
    assert idle.format("(idle)") in page and idle.format("(inactif)") in french
    assert '<li class="whos-online-member whos-online-online"><bdi>alice</bdi></li>' in page


def test_statuses_and_last_seen_of_a_page_in_one_round_trip_each(
    redis_db: redis.Redis, round_trips: Any, people: Any
) -> None:
    alice, bob, carol = people("alice", "bob", "carol")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(bob)
        traveller.shift(400)
        presence.record_user(alice)
        round_trips.clear()
        page = [alice, bob, carol, alice]
        assert presence.statuses(page) == {alice: "online", bob: "idle", carol: "offline"}
        # keyed as given: users above, pks here
        seen = presence.last_seen_many([user.pk for user in page])
        # one round trip each: the hidden set is read only for those allowed to see it;
        # both also read the WebSocket signs (the live and left sets) in the same trip
        assert round_trips.commands == [["ZMSCORE"] * 3] * 2
    assert seen == {
        alice.pk: NOW + timedelta(seconds=400),
        bob.pk: NOW,
        carol.pk: None,
    }
    round_trips.clear()
    assert presence.statuses([]) == {} and round_trips.count == 0


def test_retention_keeps_last_seen_after_the_window(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_RETENTION = timedelta(days=30)
    users_key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:users"
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.record_guest("203.0.113.7")
        assert redis_db.ttl(users_key) > 29 * 86400
        traveller.shift(3 * 86400)
        assert presence.last_seen(alice) == NOW
        assert presence.status(alice) == "offline"
        assert online_now.online_users() == [] and online_now.user_count() == 0
        # prune honours the retention for members (the window for guests)
        assert presence.prune().users == 0
        assert presence.last_seen(alice) == NOW
        traveller.shift(28 * 86400)
        presence.prune()
        assert presence.last_seen(alice) is None


def test_without_retention_last_seen_ends_with_the_window(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    alice, bob = people("alice", "bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.record_user(bob)
        traveller.shift(300)
        presence.record_user(bob)
        traveller.shift(301)
        presence.prune()
        assert presence.last_seen(alice) is None


def test_presence_filter_on_users_and_pks(redis_db: redis.Redis, people: Any) -> None:
    alice, bob = people("alice", "bob")
    presence.record_user(alice)
    html = render(
        "{{ alice|presence }} {{ alice.pk|presence }} {{ bob|presence }} {{ bob.pk|presence }}",
        alice=alice,
        bob=bob,
    )
    assert html == "online online offline offline"


def test_a_page_of_dots_costs_one_round_trip(
    redis_db: redis.Redis, round_trips: Any, people: Any
) -> None:
    members = people("alice", "bob", "carol")
    alice, _, carol = members
    presence.record_user(alice)
    presence.record_user(carol)
    round_trips.clear()
    html = render(
        "{% presence_statuses members as statuses %}"
        '{% for m in members %}<i class="{{ m|presence:statuses }}">{{ m }}</i>{% endfor %}',
        members=members,
    )
    assert html == (
        '<i class="online">alice</i><i class="offline">bob</i><i class="online">carol</i>'
    )
    assert round_trips.count == 1


def test_dots_read_unavailable_when_redis_is_down_not_offline(dead_redis: None) -> None:
    html = render(
        "{% presence_statuses pks as s %}{{ pk|presence:s }} {{ pk|presence }}",
        pks=[NOBODY],
        pk=NOBODY,
    )
    assert html == "unavailable unavailable"


def test_a_connection_keeps_its_member_online_until_the_heartbeat_timeout(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 120  # idle after 60 s
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        sockets.connect(tab(alice), every=37.5)  # a timeout of 90 s (2.4 beats)
        assert presence.status(alice) == "online"
        traveller.shift(90)  # past idle, but the last heartbeat is not timed out yet
        assert presence.status(alice) == "online"
        assert [m.status for m in online_now.online_users()] == ["online"]  # the block agrees
        traveller.shift(1)  # its process died: the socket was the last sign of alice
        assert presence.status(alice) == "idle"
        assert [m.status for m in online_now.online_users()] == ["idle"]


def test_a_connection_outlives_a_missed_beat_within_its_timeout_and_is_gone_after(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    """A push beating every 10 s keeps its connection 24 s (2.4 beats) after each beat:
    one beat missed, the member is still connected and online; then gone and idle."""
    settings.WHOS_ONLINE_MAX_AGE = 120  # idle after 60 s by the page view alone
    (alice,) = people("alice")
    connection = tab(alice)
    with time_machine.travel(NOW, tick=False) as traveller:
        push.connect(connection, every=10)
        traveller.shift(50)
        push.heartbeat([connection], every=10)  # her last beat: alive until +74
        traveller.shift(24)  # the beat due at +60 never came
        assert push.connected() == [str(alice.pk)]
        assert [m.status for m in online_now.online_users()] == ["online"]
        traveller.shift(1)
        assert push.connected() == []
        assert presence.status(alice) == "idle"
        assert [m.status for m in online_now.online_users()] == ["idle"]


def test_two_pushes_with_different_intervals_keep_their_own_timeouts(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    """A member's slow push (every 100 s: alive 240 s) outlives her fast ones (every 10 s):
    their beats and closes never shorten what the slow one keeps."""
    settings.WHOS_ONLINE_MAX_AGE, settings.WHOS_ONLINE_RETENTION = 120, 600
    (alice,) = people("alice")
    slow, fast, other = tab(alice, "slow"), tab(alice, "fast"), tab(alice, "other")
    with time_machine.travel(NOW, tick=False) as traveller:
        push.connect(slow, every=100)
        push.connect(fast, every=10)
        for _ in range(3):
            traveller.shift(10)
            push.heartbeat([fast], every=10)  # the last at +30: then its process died
        traveller.shift(70)
        assert push.connected() == [str(alice.pk)]  # +100: by the slow push alone
        push.connect(other, every=10)
        traveller.shift(10)
        push.disconnect(other)
        traveller.shift(129)  # +239: the slow push's beat is not yet overdue
        assert push.connected() == [str(alice.pk)]
        assert presence.status(alice) == "online"
        traveller.shift(2)
        assert push.connected() == []
        assert presence.status(alice) == "idle"


def test_a_tab_closed_after_her_cookie_would_have_expired_leaves_its_member_idle(
    redis_db: redis.Redis, people: Any
) -> None:
    """Closed sooner, she may be browsing on, throttled by the cookie her record set."""
    (alice,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        replaced = tab(alice, "one")
        sockets.connect(replaced)
        traveller.shift(conf.cookie_age - 1)
        sockets.disconnect(replaced)  # within her cookie's life: she may browse on
        assert presence.status(alice) == "online"
        closed = tab(alice, "two")
        sockets.connect(closed)  # recorded again
        traveller.shift(conf.cookie_age)
        sockets.disconnect(closed)  # read for half the window, then closed
        assert presence.status(alice) == "idle"


def test_a_member_browsing_on_after_a_live_page_is_not_idle(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    """A live page keeps her "online" cookie: the pages after it are throttled, and the
    old page's socket closing after them leaves her online."""
    from asgiref.sync import async_to_sync, sync_to_async

    from tests.test_consumers import eventually, shift
    from tests.test_consumers import tab as open_tab

    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    (alice,) = people("alice")
    browser = BrowserClient()
    get = sync_to_async(browser.get)

    async def visit() -> None:
        live = await get("/live-block/")  # recorded: the cookie holds off the next records
        assert int(live.cookies["online"]["max-age"]) == conf.cookie_age
        socket = await open_tab(alice)
        await eventually(lambda: str(alice.pk) in push.connected())
        await shift(traveller, 60)  # she reads the live page for a minute...
        assert "online" not in (await get("/")).cookies  # ...goes on to a page without one
        await socket.disconnect()  # and the old page's socket closes after that request
        assert presence.status(alice) == "online"
        traveller.shift(30)
        assert "online" not in (await get("/")).cookies  # throttled: nothing recorded
        assert presence.status(alice) == "online"

    with time_machine.travel(NOW, tick=False) as traveller:
        browser.force_login(alice)  # on the test's clock: the login records her
        async_to_sync(visit)()
