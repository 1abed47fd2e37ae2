"""What a user sees, pinned: each rule here once broke without failing a test (issue 16).

Found by ``python3 dev.py mutate``. The tests go through pages, logins, the
admin, templates and the prune command, so they hold whatever the Python API
looks like.
"""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync
from django.contrib import admin
from django.contrib.auth.models import User
from django.contrib.auth.signals import user_logged_in
from django.core.checks import run_checks
from django.core.management import call_command
from django.http import HttpResponse
from django.template import engines
from django.test import RequestFactory

from tests.conftest import BROWSER, FAKE_CACHE, NOW, BrowserAsyncClient, BrowserClient, hiding
from whos_online.models import OnlineNow
from whos_online.room_names import room_name
from whos_online.rooms.pages import in_room
from whos_online.settings_table import SETTINGS

pytestmark = pytest.mark.django_db

HIDDEN = "tests.test_pinned.private_card"


def asked_to_be_hidden(user: Any) -> bool:
    """The site's rule in these tests."""
    return user.get_username() in SHY


private_card = hiding(asked_to_be_hidden)


SHY = {"shy", "quiet"}


def visit(name: str, staff: bool = False) -> BrowserClient:
    """``name`` logs in and opens a page (created the first time)."""
    user, _ = User.objects.get_or_create(username=name, defaults={"is_staff": staff})
    client = BrowserClient()
    client.force_login(user)
    client.get("/")
    return client


def render(source: str, request: Any = None, **context: Any) -> str:
    return engines["django"].from_string("{% load whos_online %}" + source).render(context, request)


def in_order(html: str, *names: str) -> bool:
    return [html.index(name) for name in names] == sorted(html.index(name) for name in names)


# --- The block: the window, hidden members, the order ------------------------


def test_the_block_lists_and_counts_only_who_is_inside_the_window(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_MEMBER_CARD = HIDDEN
    with time_machine.travel(NOW, tick=False) as traveller:
        visit("alice")
        visit("quiet")
        traveller.shift(300)
        visit("bob")
        visit("shy")
        traveller.shift(301)  # alice and quiet left the window; nobody pruned them
        html = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.9").content.decode()
        staff = visit("boss", staff=True).get("/block/").content.decode()
    assert "3 users online: 2 members (1 hidden), 1 guest" in html
    assert "bob" in html and "alice" not in html and "shy" not in html and "quiet" not in html
    assert "4 users online: 3 members (1 hidden), 1 guest" in staff
    assert "<bdi>shy</bdi> (hidden)" in staff and "alice" not in staff and "quiet" not in staff


def test_staff_see_everyone_most_recent_first_whatever_their_names(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = HIDDEN
    with time_machine.travel(NOW, tick=False) as traveller:
        for name in ("zoe", "shy", "adam"):
            visit(name)
            traveller.shift(10)
        html = visit("boss", staff=True).get("/block/").content.decode()
    assert in_order(html, "<bdi>boss", "<bdi>adam", "<bdi>shy</bdi> (hidden)", "<bdi>zoe")


def test_a_block_rendered_without_a_request_names_no_hidden_member(
    redis_db: redis.Redis, settings: Any
) -> None:
    # e.g. a digest e-mail rendered outside any request: nobody to call staff
    settings.WHOS_ONLINE_MEMBER_CARD = HIDDEN
    visit("alice")
    visit("shy")
    html = render("{% whos_online %}")
    assert "2 users online: 2 members (1 hidden), 0 guests" in html
    assert "alice" in html and "shy" not in html and "more" not in html


def test_an_anonymous_visitor_with_a_session_counts_as_a_guest(
    redis_db: redis.Redis, client: BrowserClient
) -> None:
    session = client.session  # a cart or a language choice: a session, nobody logged in
    session["cart"] = [42]
    session.save()
    html = client.get("/block/").content.decode()
    assert "1 user online: 0 members, 1 guest" in html


def test_the_response_that_sets_the_cookie_says_exactly_private(redis_db: redis.Redis) -> None:
    # "private=False" or "no-cache" would let a shared cache store the Set-Cookie.
    response = BrowserClient().get("/")
    assert "online" in response.cookies
    assert response["Cache-Control"] == "private"


def test_no_cookie_when_nothing_was_recorded_sync_or_async(redis_db: redis.Redis) -> None:
    # A cookie on a prefetch would hide the real visit that follows it.
    prefetch = {"Sec-Purpose": "prefetch"}
    assert "online" not in BrowserClient().get("/", headers=prefetch).cookies

    async def fetch() -> Any:
        return await BrowserAsyncClient().get("/", headers=prefetch)

    assert "online" not in async_to_sync(fetch)().cookies


@pytest.mark.parametrize(
    "max_age, words",
    [(3600, "past 60 minutes"), (5400, "past 90 minutes"), (20, "past minute"), (90, "past 2")],
)
def test_the_window_in_minutes(
    redis_db: redis.Redis, settings: Any, max_age: int, words: str
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = max_age
    assert f"Based on users active in the {words}" in render("{% whos_online %}")


# --- Documented defaults, through what they do --------------------------------


def test_the_block_lists_100_members_by_default(redis_db: redis.Redis) -> None:
    for user in User.objects.bulk_create(User(username=f"member{i:03}") for i in range(101)):
        user_logged_in.send(sender=User, request=None, user=user)  # as each logs in
    html = render("{% whos_online %}")
    assert "101 users online: 101 members, 0 guests" in html
    assert len(re.findall(r"member\d{3}", html)) == 100
    assert "and 1 more" in html


def test_a_member_is_idle_after_5_minutes_and_offline_after_10_by_default(
    redis_db: redis.Redis,
) -> None:
    alice = User.objects.create_user("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        BrowserClient().force_login(alice)
        words = []
        for seconds in (300, 1, 299, 1):
            traveller.shift(seconds)
            words.append(render("{{ alice|presence }}", alice=alice))
    assert words == ["online", "idle", "idle", "offline"]


def test_a_retention_shorter_than_the_window_still_keeps_the_window(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_RETENTION = 60
    with time_machine.travel(NOW, tick=False) as traveller:
        visit("alice")
        traveller.shift(300)
        assert "alice" in render("{% whos_online %}")


# --- Rooms and logout -----------------------------------------


@pytest.mark.parametrize("length", [1, 200])
def test_room_names_of_1_and_200_characters_are_kept_as_they_are(
    redis_db: redis.Redis, settings: Any, length: int
) -> None:
    room = "r" * length
    view = in_room(room)(lambda request: HttpResponse())
    view(RequestFactory().get("/", HTTP_USER_AGENT=BROWSER))  # recorded after the view
    assert redis_db.exists(f"{settings.WHOS_ONLINE_KEY_PREFIX}:room:{room}:guests")
    html = render("{% whos_here room %}", room=room)
    assert "1 here now: 0 members, 1 guest" in html


def test_a_room_name_of_201_characters_is_shortened_with_a_hash(redis_db: redis.Redis) -> None:
    room = "r" * 201
    view = in_room(room)(lambda request: HttpResponse())
    view(RequestFactory().get("/", HTTP_USER_AGENT=BROWSER))
    name = room_name(room)
    assert name is not None and len(name) == 200 and name != room[:200]
    assert "1 here now: 0 members, 1 guest" in render("{% whos_here room %}", room=room)


def test_rooms_keep_no_peak(redis_db: redis.Redis, settings: Any) -> None:
    for address in ("203.0.113.1", "203.0.113.2"):
        BrowserClient().get("/thread/1/", REMOTE_ADDR=address)
    html = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.1").content.decode()
    assert "Most ever online: 2 users" in html
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    assert list(redis_db.scan_iter(match=f"{prefix}:room:*peak*")) == []


def test_logging_out_nobody_is_no_error(redis_db: redis.Redis) -> None:
    visit("alice")
    BrowserClient().logout()  # user_logged_out with user=None
    assert "alice" in render("{% whos_online %}")


# --- Prune and the admin page ---------------------------------------------------


def test_prune_with_batches_of_one(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False) as traveller:
        visit("alice")
        visit("bob")
        traveller.shift(300)
        visit("carol")
        traveller.shift(301)
        out = StringIO()
        call_command("whos_online_prune", "--batch-size", "1", stdout=out)
    # members: 1 + 1 + an empty batch; hidden, guests and rooms: one empty batch each
    assert out.getvalue() == "Pruned 2 stale member(s) and 0 stale guest(s) in 6 batch(es).\n"


PAGE = "/admin/whos_online/onlinenow/"


def test_the_chart_keeps_2880_samples(redis_db: redis.Redis, settings: Any) -> None:
    # 2,880 earlier samples written as prune writes them ("time:members:guests"),
    # since running prune 2,880 times would take a while.
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:history"
    with time_machine.travel(NOW, tick=False):
        now = NOW.timestamp()
        redis_db.zadd(key, {f"{now - 20 * i:.3f}:0:0": now - 20 * i for i in range(1, 2881)})
        call_command("whos_online_prune", stdout=StringIO())
        html = visit("boss", staff=True).get(PAGE).content.decode()
    assert "Members and guests online, 2880 samples" in html


def test_one_sample_is_no_chart_yet(redis_db: redis.Redis) -> None:
    call_command("whos_online_prune", stdout=StringIO())
    html = visit("boss", staff=True).get(PAGE).content.decode()
    assert "One sample so far" in html and "<polyline" not in html


def test_the_admin_page_title_and_what_staff_may_do(redis_db: redis.Redis) -> None:
    client = visit("boss", staff=True)
    html = client.get(PAGE).content.decode()
    assert "<title>Online now | Django site admin</title>" in html
    assert "<h1>Online now</h1>" in html
    index = client.get("/admin/").content.decode()
    # a "View" link, not "Change", and no "Add"
    assert f'<a href="{PAGE}" class="viewlink"' in index
    assert f"{PAGE}add/" not in index
    request = RequestFactory().get(PAGE)
    request.user = User.objects.get(username="boss")
    perms = admin.site._registry[OnlineNow].get_model_perms(request)
    assert perms == {"add": False, "change": False, "delete": False, "view": True}


# --- System checks: boundaries, explicit defaults, exact messages ---------------


def whos_online_messages() -> list[Any]:
    return [
        m for m in run_checks() if m.id and m.id.startswith("whos_online.") and not m.is_silenced()
    ]


def ids() -> list[str]:
    return sorted(m.id for m in whos_online_messages())


DOCUMENTED_DEFAULTS = {
    "WHOS_ONLINE_CACHE_ALIAS": "default",
    "WHOS_ONLINE_KEY_PREFIX": "whos_online",
    "WHOS_ONLINE_MAX_AGE": 600,
    "WHOS_ONLINE_GUESTS": "exact",
    "WHOS_ONLINE_LIST_LIMIT": 100,
    "WHOS_ONLINE_PROXIES": 0,
    "WHOS_ONLINE_RETENTION": None,
    "WHOS_ONLINE_REDIS_CLIENT": None,
    "WHOS_ONLINE_IS_BOT": "whos_online.defaults.is_bot",
    "WHOS_ONLINE_MEMBER_CARD": "whos_online.defaults.default_card",
}


def socket_timeout(seconds: float) -> dict[str, Any]:
    """The suite's cache with ``seconds`` of socket timeout in its OPTIONS."""
    options = {**FAKE_CACHE["OPTIONS"], "SOCKET_TIMEOUT": seconds}
    return {"CACHES": {"default": {**FAKE_CACHE, "OPTIONS": options}}}


def test_every_default_written_out_passes(settings: Any) -> None:
    for name, value in DOCUMENTED_DEFAULTS.items():
        setattr(settings, name, value)
    assert ids() == []


CALLABLE_SETTINGS = {
    "WHOS_ONLINE_REDIS_CLIENT",
    "WHOS_ONLINE_IS_BOT",
    "WHOS_ONLINE_MEMBER_CARD",
}


@pytest.mark.parametrize(
    "name",
    sorted(
        s.name for s in SETTINGS if s.check == "whos_online.E005" and s.name in DOCUMENTED_DEFAULTS
    ),
)
def test_a_wrong_value_is_told_the_documented_default(settings: Any, name: str) -> None:
    setattr(settings, name, b"")
    hints = [m.hint for m in whos_online_messages() if m.id == "whos_online.E005"]
    assert f"Fix or remove it (the default is {DOCUMENTED_DEFAULTS[name]!r})." in hints


@pytest.mark.parametrize(
    "values, expected",
    [
        ({"WHOS_ONLINE_MAX_AGE": 1}, []),
        ({"WHOS_ONLINE_MAX_AGE": True}, ["E005"]),
        ({"WHOS_ONLINE_PROXIES": 3}, []),
        ({"WHOS_ONLINE_PROXIES": ["10.0.0.0/8", "::1"]}, []),
        ({"WHOS_ONLINE_PROXIES": -1}, ["E010"]),
        ({"WHOS_ONLINE_PROXIES": "10.0.0.0/8"}, ["E010"]),
        ({"WHOS_ONLINE_RETENTION": 1}, []),
        ({"WHOS_ONLINE_RETENTION": 0}, ["E005"]),
        ({"WHOS_ONLINE_GUESTS": None}, []),
        (socket_timeout(0.01), []),
        (socket_timeout(2), []),
        (socket_timeout(0.0099), ["W003"]),
        (socket_timeout(2.01), ["W003"]),
    ],
)
def test_check_boundaries(settings: Any, values: dict[str, Any], expected: list[str]) -> None:
    for name, value in values.items():
        setattr(settings, name, value)
    assert ids() == [f"whos_online.{e}" for e in expected]


MIDDLEWARE = "whos_online.middleware.WhosOnlineMiddleware"
AUTH = "django.contrib.auth.middleware.AuthenticationMiddleware"
SESSION = "django.contrib.sessions.middleware.SessionMiddleware"


@pytest.mark.parametrize(
    "values, message, hint",
    [
        (
            {"MIDDLEWARE": [SESSION, AUTH]},
            f"{MIDDLEWARE} is not in MIDDLEWARE, so nobody is ever recorded as online.",
            f"Add it to MIDDLEWARE after {AUTH}.",
        ),
        (
            {"MIDDLEWARE": [SESSION, MIDDLEWARE, AUTH]},
            f"{MIDDLEWARE} must come after {AUTH}: it needs request.user to tell members from "
            "guests.",
            f"Move it below {AUTH} in MIDDLEWARE.",
        ),
        (
            {"WHOS_ONLINE_CACHE_ALIAS": "presence"},
            "WHOS_ONLINE_CACHE_ALIAS is 'presence', but CACHES has no such alias.",
            "Add a Redis cache (django-redis or Django's RedisCache) under that alias, or point "
            "the setting at one.",
        ),
        (
            {
                "CACHES": {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
            },
            "CACHES['default'] uses 'django.core.cache.backends.locmem.LocMemCache'; whos_online "
            "needs a Redis cache for its Redis connection.",
            "Set its BACKEND to 'django.core.cache.backends.redis.RedisCache' or "
            "'django_redis.cache.RedisCache', or set WHOS_ONLINE_CACHE_ALIAS to an alias that does.",
        ),
        (
            {"WHOS_ONLINE_RETENTION": "30 days"},
            "WHOS_ONLINE_RETENTION is '30 days'; it must be int or timedelta or None >= 1.",
            "Fix or remove it (the default is None).",
        ),
        (
            {"WHOS_ONLINE_KEY_PREFIX": 3},
            "WHOS_ONLINE_KEY_PREFIX is 3; it must be str.",
            "Fix or remove it (the default is 'whos_online').",
        ),
        (
            socket_timeout(5),
            "The socket timeout of the cache 'default' is 5 s: too short fails on a healthy "
            "loopback Redis, too long holds requests when Redis hangs.",
            "Set its OPTIONS' SOCKET_TIMEOUT (django-redis) or socket_timeout (Django's "
            "RedisCache) between 0.01 and 2 seconds, or remove it (the default is 0.25).",
        ),
        (
            {"WHOS_ONLINE_TRACK_PAGES": True},
            "WHOS_ONLINE_TRACK_PAGES is set, but whos_online no longer reads it.",
            "Remove it; instead, rooms say where members are: the in_room decorator and "
            "{% whos_here %}.",
        ),
        (
            {"WHOS_ONLINE_PROXIES": "10.0.0.0/8"},
            "WHOS_ONLINE_PROXIES is '10.0.0.0/8'; it must be a number of proxies (0 or more) "
            "or a list of networks (CIDRs) or addresses. Until it is fixed no guest is counted.",
            'E.g. ["10.0.0.0/8", "2001:db8:ff::/48"]: the addresses your reverse proxies '
            "connect from.",
        ),
        (
            {"WHOS_ONLINE_GUESTS": "roughly"},
            "WHOS_ONLINE_GUESTS is 'roughly'; it must be one of 'exact', 'approximate', None.",
            "Use one of them, or remove the setting (the default is 'exact').",
        ),
        (
            {"WHOS_ONLINE_REDIS_CLIENT": "tests.test_connection.fakeredis_client"},
            "WHOS_ONLINE_KEY_PREFIX 'whos_online' has no hash tag. With a Redis Cluster client, "
            "whos_online's scripts touch several keys at once and fail with CROSSSLOT unless all "
            "keys of the namespace share one slot.",
            'Use a prefix with a hash tag, e.g. "{whos_online}" (any other client: silence '
            "whos_online.W006).",
        ),
    ],
)
def test_check_messages(settings: Any, values: dict[str, Any], message: str, hint: str) -> None:
    settings.WHOS_ONLINE_KEY_PREFIX = "whos_online"
    for name, value in values.items():
        setattr(settings, name, value)
    [found] = whos_online_messages()
    assert (found.msg, found.hint) == (message, hint)


def test_check_message_for_a_path_that_cannot_be_imported(settings: Any) -> None:
    settings.WHOS_ONLINE_IS_BOT = "no.such.module"
    [found] = whos_online_messages()
    assert found.msg.startswith(
        "WHOS_ONLINE_IS_BOT is 'no.such.module', which cannot be imported ("
    )
