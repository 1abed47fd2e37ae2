"""Settings are cached, yet every way Django changes settings in tests is seen."""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from functools import cached_property
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core.signals import setting_changed
from django.test import override_settings

from tests.conftest import BrowserClient, socket_timeout
from tests.test_connection import fakeredis_client
from whos_online import conf as conf_module
from whos_online.conf import Settings, conf
from whos_online.room_names import room_name, room_parts
from whos_online.store import members
from whos_online.visitors import bots


def test_defaults() -> None:
    assert (conf.cookie_name, conf.cookie_age, conf.max_age) == ("online", 300, 600.0)
    assert (conf.keys().users, conf.keys().guests) == ("whos_online:users", "whos_online:guests")


def test_override_settings_is_seen_and_undone() -> None:
    with override_settings(WHOS_ONLINE_MAX_AGE=timedelta(hours=1)):
        assert (conf.max_age, conf.cookie_age) == (3600.0, 1800)
    assert (conf.max_age, conf.cookie_age) == (600.0, 300)


def test_the_settings_fixture_is_seen(settings: Any) -> None:
    settings.WHOS_ONLINE_KEY_PREFIX = "{site}"
    assert conf.keys().users == "{site}:users"
    settings.WHOS_ONLINE_KEY_PREFIX = "whos_online"
    assert conf.keys().users == "whos_online:users"


DEFAULTS = [
    ("cache_alias", "default"),
    ("key_prefix", "whos_online"),
    ("max_age", 600.0),
    ("cookie_name", "online"),
    ("cookie_age", 300),
    ("track_guests", True),
    ("list_limit", 100),
    ("proxy_count", 0),
    ("trusted_proxies", ()),
    ("proxy_header", "X-Forwarded-For"),
    ("exclude_paths", None),
    ("backoff", 5.0),
    ("max_guests", 100_000),
    ("max_rooms", 10_000),
    ("ipv6_prefix", 64),
    ("retention", 600.0),  # the window
    ("window_minutes", 10),
    ("redis_client", None),
    ("guest_counting", "exact"),
    ("show_day_total", False),
    ("websocket_url", None),
    ("history_key", "whos_online:history"),
    ("rooms_key", "whos_online:rooms"),
]


@pytest.fixture
def unset(settings: Any) -> None:
    """No WHOS_ONLINE_* setting at all, as on a site that sets none.

    pytest-django's ``del settings.X`` sends no ``setting_changed`` (4.14), so
    the fixture says it, as a test suite deleting a setting has to.
    """
    for name in [name for name in dir(django_settings) if name.startswith("WHOS_ONLINE_")]:
        delattr(settings, name)
        setting_changed.send(sender=None, setting=name, value=None, enter=True)


@pytest.mark.parametrize("name, default", DEFAULTS)
def test_the_documented_defaults(unset: None, name: str, default: Any) -> None:
    value = getattr(conf, name)
    assert value == default and type(value) is type(default)


def test_the_default_callables(unset: None, people: Any) -> None:
    (alice,) = people("alice")
    assert conf.is_bot is bots.is_bot
    assert conf.member_card is members.default_card
    assert members.card_of(alice) == ('{"name":"alice"}', False)  # nobody is hidden


@pytest.mark.parametrize(
    "setting, value, name, seen",
    [
        ("WHOS_ONLINE_CACHE_ALIAS", "presence", "cache_alias", "presence"),
        ("WHOS_ONLINE_GUESTS", None, "track_guests", False),
        ("WHOS_ONLINE_MAX_AGE", 120, "cookie_age", 60),
        ("WHOS_ONLINE_LIST_LIMIT", 7, "list_limit", 7),
        ("WHOS_ONLINE_PROXIES", 2, "proxy_count", 2),
        ("WHOS_ONLINE_PROXIES", 2, "trusted_proxies", ()),
        ("WHOS_ONLINE_PROXIES", ["10.0.0.0/8"], "proxy_count", 0),
        ("WHOS_ONLINE_PROXIES", {"Forwarded": 2}, "proxy_header", "Forwarded"),
        ("WHOS_ONLINE_PROXIES", {"Forwarded": 2}, "proxy_count", 2),
        ("WHOS_ONLINE_PROXIES", {"X-Real-IP": 2}, "trusted_proxies", None),
        ("WHOS_ONLINE_GUESTS", "approximate", "guest_counting", "approximate"),
        ("WHOS_ONLINE_RETENTION", timedelta(days=1), "show_day_total", True),
        ("WHOS_ONLINE_RETENTION", 86399, "show_day_total", False),
        ("WHOS_ONLINE_WEBSOCKET_URL", "/ws/online/", "websocket_url", "/ws/online/"),
        ("WHOS_ONLINE_REDIS_CLIENT", "tests.test_connection.fakeredis_client", "redis_client",
         fakeredis_client),
        ("WHOS_ONLINE_IS_BOT", None, "is_bot", None),
    ],
)  # fmt: skip
def test_each_setting_is_read(
    settings: Any, setting: str, value: Any, name: str, seen: Any
) -> None:
    setattr(settings, setting, value)
    assert getattr(conf, name) == seen


def test_a_process_keeps_a_block_s_read_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the suite's: every block read afresh (tests/conftest.py)
    assert conf.block_cache == 1.0


def test_the_socket_timeout_is_the_cache_s_else_a_short_one(settings: Any) -> None:
    """A call is slow after 0.4 socket timeouts."""
    settings.CACHES = {
        "default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": "redis://h:6390/0"}
    }
    assert (conf.socket_timeout, conf.slow_call) == (0.25, pytest.approx(0.1))
    socket_timeout(settings, 1)
    assert (conf.socket_timeout, conf.slow_call) == (1.0, pytest.approx(0.4))


@pytest.mark.parametrize(
    "retention, max_age, kept",
    [(None, 600, 600), (60, 600, 600), (timedelta(days=1), 600, 86400), (3600, 7200, 7200)],
)
def test_members_are_kept_at_least_the_window(
    settings: Any, retention: Any, max_age: int, kept: float
) -> None:
    settings.WHOS_ONLINE_RETENTION = retention
    settings.WHOS_ONLINE_MAX_AGE = max_age
    assert conf.retention == kept


@pytest.mark.parametrize("max_age, minutes", [(3600, 60), (90, 2), (20, 1), (1, 1)])
def test_the_window_in_whole_minutes(settings: Any, max_age: int, minutes: int) -> None:
    settings.WHOS_ONLINE_MAX_AGE = max_age
    assert conf.window_minutes == minutes


def test_the_redis_keys(settings: Any) -> None:
    settings.WHOS_ONLINE_KEY_PREFIX = "{site}"
    assert conf.keys() == ("{site}:users", "{site}:hidden", "{site}:guests", "{site}:peak",
                           "{site}:cards")  # fmt: skip
    assert conf.keys(42) == (
        "{site}:room:42:users",
        "{site}:room:42:hidden",
        "{site}:room:42:guests",
        "{site}:room:42:peak",
        "{site}:cards",  # one card per member, whichever room
    )
    assert conf.socket_keys() == (
        "{site}:live",
        "{site}:left",
        "{site}:kept:users",
        "{site}:kept:hidden",
    )
    assert conf.socket_keys("lobby") == (
        "{site}:room:lobby:live",
        "{site}:room:lobby:left",
        "{site}:room:lobby:kept:users",
        "{site}:room:lobby:kept:hidden",
    )
    assert conf.connections_key(None, "7") == "{site}:conns:7"
    assert conf.connections_key("lobby", "7") == "{site}:room:lobby:conns:7"
    assert (conf.keys().users, conf.keys().guests) == ("{site}:users", "{site}:guests")
    assert (conf.rooms_key, conf.history_key) == ("{site}:rooms", "{site}:history")
    with pytest.raises(ValueError, match="A room needs a name."):
        conf.keys("")


def test_room_names() -> None:
    assert room_name("") is None is room_name(None)
    assert room_name(12) == "12"
    assert room_name("caf\udce9") == "caf\ufffd\ufffd\ufffd"  # a lone surrogate cannot go to Redis
    assert room_name("r" * 200) == "r" * 200
    long = room_name("r" * 201)
    assert long and len(long) == 200 and re.fullmatch("r{175}~[0-9a-f]{24}", long)
    assert long != room_name("r" * 202)
    odd = room_name("\udce9" * 300)
    assert odd and re.fullmatch("\ufffd{525}~[0-9a-f]{24}", odd)


@pytest.mark.django_db
def test_rooms_named_by_parts_and_model_instances() -> None:
    user = User.objects.create_user("ann")
    assert room_name(("topic", 42)) == room_parts("topic", 42) == "topic:42"
    assert room_parts(("topic", 42)) == "topic:42"  # a view's parts passed whole to the tag
    assert room_name(user) == room_parts(user) == f"auth.user:{user.pk}"
    assert room_parts("page", user, 2) == f"page:auth.user:{user.pk}:2"
    for parts, problem in [
        ((), "A room needs a name: no parts were given."),
        (("topic", ""), "('topic', '') names no room: '' is empty."),
    ]:
        with pytest.raises(ValueError, match=re.escape(problem)):
            room_parts(*parts)
        with pytest.raises(ValueError, match=re.escape(problem)):
            room_name(parts)
    # A missing part (None, an unsaved instance: an editor's preview) is no room, quietly.
    for parts in [("topic", None), (User(username="new"),), ("page", (User(),))]:
        assert room_parts(*parts) is None and room_name(parts) is None


def test_trusted_proxies(settings: Any) -> None:
    settings.WHOS_ONLINE_PROXIES = ["10.1.2.3/8", "2001:db8::1"]
    assert conf.trusted_proxies == (
        ipaddress.ip_network("10.0.0.0/8"),  # host bits allowed
        ipaddress.ip_network("2001:db8::1/128"),
    )
    for broken in ("10.0.0.0/8", -1, True, ["proxy.internal"]):
        settings.WHOS_ONLINE_PROXIES = broken
        assert conf.trusted_proxies is None


def test_exclusions_are_one_regex(settings: Any) -> None:
    settings.WHOS_ONLINE_EXCLUDE_PATHS = ["/api/", r"/health\w*$"]
    paths = conf.exclude_paths
    assert paths
    assert paths.match("/api/users") and paths.match("/healthz")
    assert not paths.match("/API/") and not paths.match("/x/api/") and not paths.match("/")
    for broken in ("/api/", 3, ["(unclosed"], []):
        settings.WHOS_ONLINE_EXCLUDE_PATHS = broken
        assert conf.exclude_paths is None


@pytest.mark.parametrize("spec", [("page", "pk"), 2, "tests.urls_cms.page_rooms"])
def test_a_rooms_entry_check_e015_reports_names_no_room_and_breaks_no_page(
    redis_db: Any, settings: Any, spec: object
) -> None:
    """Neither a room string nor a callable (nor a dotted path to one): the page is served
    as if the entry were not there."""
    settings.ROOT_URLCONF = "tests.urls_cms"
    settings.WHOS_ONLINE_ROOMS = {"wagtail_serve": spec, "other": "room:{pk}"}
    assert conf.rooms == {"other": "room:{pk}"}
    response = BrowserClient().get("/about/")
    assert response.status_code == 200 and "Nobody is here" in response.content.decode()


def test_a_value_is_read_from_django_once_per_settings_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[str] = []
    read = conf_module._get
    monkeypatch.setattr(conf_module, "_get", lambda name: reads.append(name) or read(name))
    with override_settings(WHOS_ONLINE_LIST_LIMIT=5):
        assert [conf.list_limit for _ in range(3)] == [5, 5, 5]
    assert conf.list_limit == 100
    assert reads == ["WHOS_ONLINE_LIST_LIMIT"] * 2


def test_the_settings_class_documents_its_values() -> None:
    assert isinstance(Settings.max_age, cached_property)
    assert (
        Settings.max_age.__doc__ == "The online window in seconds (the setting may be a timedelta)."
    )


def test_values_are_read_again_when_a_setting_changes(settings: Any) -> None:
    assert conf.key_prefix == "whos_online"
    with override_settings(WHOS_ONLINE_KEY_PREFIX="here"):
        assert conf.key_prefix == "here"
    assert conf.key_prefix == "whos_online"
    settings.WHOS_ONLINE_KEY_PREFIX = "there"
    assert conf.key_prefix == "there"
    settings.SESSION_COOKIE_NAME = "sid"  # Django's own settings that whos_online reads
    assert conf.session_cookie_name == "sid"


def test_another_setting_changing_keeps_the_values(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert conf.cookie_age == 300
    reads: list[str] = []
    read = conf_module._get
    monkeypatch.setattr(conf_module, "_get", lambda name: reads.append(name) or read(name))
    settings.LANGUAGE_CODE = "de"
    assert conf.cookie_age == 300 and reads == []
