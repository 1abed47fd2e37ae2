"""WHOS_ONLINE_ROOMS: rooms on views the site does not own, named by their URL names.

tests/urls.py includes a "board" app's undecorated views under its own namespace;
tests/test_forum.py does the same with a real forum from PyPI.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
from django.contrib.auth.views import redirect_to_login
from django.core.checks import Error
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from tests import online_now
from tests.conftest import BrowserAsyncClient, BrowserClient, names, passes_on_its_own_settings
from tests.test_middleware import async_get
from tests.test_rooms import listed, logged_in, room_keys
from whos_online.checks import deployment as deployment_checks

pytestmark = pytest.mark.django_db

ROOMS = {"board:topic": "topic:{pk}", "board:async_topic": "topic:{pk}"}


@pytest.fixture
def rooms(settings: Any) -> None:
    settings.WHOS_ONLINE_ROOMS = ROOMS


def test_a_reader_is_in_the_room_the_template_names(
    redis_db: redis.Redis, rooms: None, people: Any
) -> None:
    alice, bob = (logged_in(user) for user in people("alice", "bob"))
    alice.get("/board/topic/hello-42/")
    BrowserClient().get("/board/topic/other-7/")
    html = bob.get("/board/topic/hello-42/").content.decode()
    # {% whos_here "topic" topic.pk %} is "topic:42", the room "topic:{pk}" named:
    # bob sees himself on his first view of it.
    assert "<h1>Topic 42</h1>" in html
    assert "2 here now: 2 members, 0 guests" in html and listed(html) == ["bob", "alice"]
    assert names(online_now.online_users(room=("topic", 42))) == ["bob", "alice"]
    assert online_now.guest_count(room="topic:7") == 1


def test_a_reader_who_moves_on_leaves_the_topic(
    redis_db: redis.Redis, rooms: None, people: Any
) -> None:
    alice, bob = people("alice", "bob")
    reader, other = logged_in(alice), logged_in(bob)
    reader.get("/board/topic/one-1/")
    other.get("/board/topic/one-1/")
    reader.get("/board/topic/two-2/")
    assert names(online_now.online_users(room="topic:1")) == ["bob"]
    assert names(online_now.online_users(room="topic:2")) == ["alice"]
    reader.get("/board/topic/one-1/")  # back again: no cookie throttle for rooms
    assert names(online_now.online_users(room="topic:1")) == ["alice", "bob"]
    assert online_now.online_users(room="topic:2") == []


def test_a_room_visit_costs_one_round_trip(
    redis_db: redis.Redis, rooms: None, round_trips: Any, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_ROOMS = {"board:topic": lambda request, slug, pk: ("topic", pk)}
    client = logged_in(*people("alice"))
    client.get("/")  # the site-wide record, and its cookie
    round_trips.clear()
    client.get("/board/topic/hello-42/")
    # alice into the room, then the block's list
    assert round_trips.commands == [["EVALSHA"], ["EVALSHA"]] and round_trips.records == 1
    assert names(online_now.online_users(room="topic:42")) == ["alice"]


def test_async_views_are_rooms_too(redis_db: redis.Redis, rooms: None, people: Any) -> None:
    client = BrowserAsyncClient()
    client.force_login(*people("alice"))
    html = async_get(client, "/board/async/5/").content.decode()
    assert "1 here now: 1 member, 0 guests" in html and listed(html) == ["alice"]
    async_get(client, "/board/topic/sync-6/")  # a sync view behind the async handler
    assert online_now.online_users(room="topic:5") == []  # one topic at a time
    assert names(online_now.online_users(room="topic:6")) == ["alice"]


@pytest.mark.parametrize("client_class", [BrowserClient, BrowserAsyncClient])
def test_a_page_without_the_block_records_its_visitor_in_the_room(
    redis_db: redis.Redis, settings: Any, client_class: Any
) -> None:
    settings.WHOS_ONLINE_ROOMS = {"board:feed": "topic:{pk}"}
    client = client_class()
    response = (
        client.get("/board/feed/8/")
        if client_class is BrowserClient
        else async_get(client, "/board/feed/8/")
    )
    assert response.content == b"<rss>topic 8</rss>"
    assert online_now.guest_count(room="topic:8") == 1


@pytest.mark.parametrize(
    "path, status",
    [
        ("/board/topic/missing-404/", 404),  # the view raised
        ("/board/topic/members-99/", 302),  # to the login page
        ("/board/topic/staff-98/", 403),  # answered
    ],
)
def test_a_page_that_does_not_show_the_room_records_nothing(
    redis_db: redis.Redis, rooms: None, settings: Any, path: str, status: int
) -> None:
    assert BrowserClient().get(path).status_code == status
    assert room_keys(redis_db, settings) == []
    assert redis_db.zcard(f"{settings.WHOS_ONLINE_KEY_PREFIX}:rooms") == 0


class PrivateBoardMiddleware:
    """What issue 27's forum does: guests are sent to log in anywhere in its URL namespace."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        return self.get_response(request)

    def process_view(self, request: Any, *args: Any) -> Any:
        private = request.resolver_match.namespaces[:1] == ["board"]
        if private and not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        return None


def test_an_app_that_relies_on_its_namespace_still_refuses_guests(
    redis_db: redis.Redis, rooms: None, settings: Any, people: Any
) -> None:
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.PrivateBoardMiddleware"]
    response = BrowserClient().get("/board/topic/hello-42/")
    assert (response.status_code, response["Location"]) == (
        302,
        "/accounts/login/?next=/board/topic/hello-42/",
    )
    assert room_keys(redis_db, settings) == []
    html = logged_in(*people("alice")).get("/board/topic/hello-42/").content.decode()
    assert listed(html) == ["alice"]


def test_a_url_that_leaves_a_field_empty_is_an_error_under_debug(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.DEBUG = True
    settings.WHOS_ONLINE_ROOMS = {"board:topic": "topic:{slug}"}
    with pytest.raises(ValueError) as raised:
        BrowserClient().get("/board/topic/-3/")
    assert str(raised.value) == (
        "WHOS_ONLINE_ROOMS['board:topic']: 'topic:{slug}' names no room: the URL gives no "
        "slug (its keyword arguments: slug='', pk='3')."
    )


def test_a_url_that_leaves_a_field_empty_is_a_warning_without_debug(
    redis_db: redis.Redis, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.WHOS_ONLINE_ROOMS = {"board:topic": "topic:{slug}"}
    response = BrowserClient().get("/board/topic/-3/")
    assert response.status_code == 200 and "<h1>Topic 3</h1>" in response.content.decode()
    [warning] = [r for r in caplog.records if r.name == "whos_online.room_names"]
    assert warning.getMessage().startswith("WHOS_ONLINE_ROOMS['board:topic']: 'topic:{slug}'")
    assert room_keys(redis_db, settings) == []  # never the room "topic:" shared by all


def test_a_callable_that_names_no_room_is_an_error_under_debug(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.DEBUG = True
    settings.WHOS_ONLINE_ROOMS = {"board:topic": lambda request, slug, pk: ("topic", slug)}
    with pytest.raises(ValueError, match=re.escape("('topic', '') names no room: '' is empty.")):
        BrowserClient().get("/board/topic/-3/")


@pytest.mark.parametrize(
    "rooms, message",
    [
        ({"topic": "topic:{pk}"}, "WHOS_ONLINE_ROOMS['topic']: no URL is named so"),
        (
            {"board:topic": "topic:{topic_pk}"},
            "WHOS_ONLINE_ROOMS['board:topic']: 'topic:{topic_pk}' needs topic_pk, which the URL "
            "does not capture (it has pk, slug)",
        ),
        (
            {"board:topic": "topic:{0}"},
            "WHOS_ONLINE_ROOMS['board:topic']: 'topic:{0}' has the field {0}",
        ),
        (
            {"board:topic": ("topic", "pk")},
            "WHOS_ONLINE_ROOMS['board:topic']: ('topic', 'pk') is neither a room string",
        ),
        (["board:topic"], "WHOS_ONLINE_ROOMS is ['board:topic']; it must be a dict"),
    ],
)
def test_malformed_entries_are_check_errors(settings: Any, rooms: Any, message: str) -> None:
    settings.WHOS_ONLINE_ROOMS = rooms
    [error] = deployment_checks.check_rooms()
    assert isinstance(error, Error) and error.id == "whos_online.E015"
    assert error.msg.startswith(message), error.msg


def test_well_formed_entries_pass_the_checks(settings: Any) -> None:
    settings.WHOS_ONLINE_ROOMS = {
        **ROOMS,
        "admin:auth_user_change": "user:{object_id}",
        "admin:index": lambda request: "admin",
    }
    assert deployment_checks.check_rooms() == []
    call_command("check", "--fail-level", "ERROR")
    settings.WHOS_ONLINE_ROOMS = {"board:topics": "topic:{pk}"}  # a typo: registered, it fails
    with pytest.raises(SystemCheckError, match=re.escape("(whos_online.E015)")):
        call_command("check")


def test_the_forum_suite_passes_on_its_own_settings() -> None:
    """tests/test_forum.py needs django-machina's apps installed, so another process."""
    print(passes_on_its_own_settings("tests.settings_forum", "tests/test_forum.py"))


# A CMS's catch-all (tests/urls_cms.py): Wagtail's serve view captures the path positionally.
CMS = {"wagtail_serve": "tests.urls_cms.page_room"}


def test_a_catch_all_url_names_its_room_by_a_dotted_path(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.ROOT_URLCONF, settings.WHOS_ONLINE_ROOMS = "tests.urls_cms", CMS
    assert deployment_checks.check_rooms() == []
    call_command("check", "--fail-level", "ERROR")
    BrowserClient(REMOTE_ADDR="198.51.100.1").get("/about/")
    html = BrowserClient(REMOTE_ADDR="198.51.100.2").get("/about/").content.decode()
    assert "<h1>About</h1>" in html and "2 here now: 0 members, 2 guests" in html
    assert online_now.guest_count(room="page:2") == 2


def test_a_dotted_path_that_names_nothing_is_a_check_error_and_no_room(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.ROOT_URLCONF = "tests.urls_cms"
    settings.WHOS_ONLINE_ROOMS = {"wagtail_serve": "tests.urls_cms.page_rooms"}
    [error] = deployment_checks.check_rooms()
    assert error.id == "whos_online.E015"
    assert error.msg.startswith(
        "WHOS_ONLINE_ROOMS['wagtail_serve']: 'tests.urls_cms.page_rooms' is a dotted path "
        "that names nothing to import ("
    )
    with pytest.raises(SystemCheckError, match=re.escape("'tests.urls_cms.page_rooms'")):
        call_command("check")
    response = BrowserClient().get("/about/")
    assert response.status_code == 200 and "Nobody is here" in response.content.decode()
    assert room_keys(redis_db, settings) == []  # never a room named "tests.urls_cms.page_rooms"


def test_a_room_string_on_a_positional_path_points_at_the_callable_form(settings: Any) -> None:
    settings.ROOT_URLCONF, settings.WHOS_ONLINE_ROOMS = (
        "tests.urls_cms",
        {"wagtail_serve": "page:{pk}"},
    )
    [error] = deployment_checks.check_rooms()
    assert (error.id, error.msg) == (
        "whos_online.E015",
        "WHOS_ONLINE_ROOMS['wagtail_serve']: 'page:{pk}' needs pk, which the URL does not "
        "capture (it has none), so its views name no room.",
    )
    assert "captures its path positionally" in error.hint
    assert '"whos_online.contrib.wagtail.pages.page_room"' in error.hint
    assert "CMS pages as rooms" in error.hint


@pytest.mark.parametrize("debug", [True, False])
def test_an_unsaved_page_s_preview_is_in_no_room(
    redis_db: redis.Redis, settings: Any, caplog: pytest.LogCaptureFixture, debug: bool
) -> None:
    """{% whos_here "page" page.pk %} with pk None: no room, no 500, no warning."""
    settings.DEBUG, settings.ROOT_URLCONF = debug, "tests.urls_cms"
    response = BrowserClient().get("/?preview")
    assert (response.status_code, response.content.decode()) == (200, "<h1>Draft</h1>")
    assert [r for r in caplog.records if r.name == "whos_online.room_names"] == []
    assert room_keys(redis_db, settings) == []
