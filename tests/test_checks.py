"""System checks: each misconfiguration gives exactly its id."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.checks import CheckMessage, run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import models

from tests.conftest import django_redis_cache, socket_timeout
from whos_online.checks import settings as settings_checks
from whos_online.settings_table import REMOVED, SETTINGS, Setting

MIDDLEWARE = "whos_online.middleware.WhosOnlineMiddleware"
SESSION = "django.contrib.sessions.middleware.SessionMiddleware"
AUTH = "django.contrib.auth.middleware.AuthenticationMiddleware"


def messages() -> list[CheckMessage]:
    """Our messages that ``manage.py check`` would report (SILENCED_SYSTEM_CHECKS honoured)."""
    return [
        m for m in run_checks() if m.id and m.id.startswith("whos_online.") and not m.is_silenced()
    ]


def ids() -> list[str]:
    return sorted(str(m.id) for m in messages())


def test_the_test_settings_pass() -> None:
    assert ids() == []


def test_checks_run_with_the_check_command(settings: Any) -> None:
    settings.MIDDLEWARE = [SESSION, AUTH]
    with pytest.raises(SystemCheckError, match="whos_online.E001"):
        call_command("check", stdout=StringIO(), stderr=StringIO())


def test_middleware_missing(settings: Any) -> None:
    settings.MIDDLEWARE = [SESSION, AUTH]
    assert ids() == ["whos_online.E001"]


@pytest.mark.parametrize("middleware", [[SESSION, MIDDLEWARE, AUTH], [SESSION, MIDDLEWARE]])
def test_middleware_before_or_without_authentication(settings: Any, middleware: list[str]) -> None:
    settings.MIDDLEWARE = middleware
    assert ids() == ["whos_online.E002"]


def test_the_per_site_cache_inside_the_middleware_is_warned_about(settings: Any) -> None:
    update, fetch = (f"django.middleware.cache.{name}" for name in ("Update", "FetchFrom"))
    settings.MIDDLEWARE = [
        SESSION,
        AUTH,
        MIDDLEWARE,
        f"{update}CacheMiddleware",
        f"{fetch}CacheMiddleware",
    ]
    assert ids() == ["whos_online.W014"]
    settings.MIDDLEWARE = [
        f"{update}CacheMiddleware",
        SESSION,
        AUTH,
        MIDDLEWARE,
        f"{fetch}CacheMiddleware",
    ]
    assert ids() == []


def test_cache_alias_missing(settings: Any) -> None:
    settings.WHOS_ONLINE_CACHE_ALIAS = "presence"
    assert ids() == ["whos_online.E003"]


def test_cache_alias_not_django_redis(settings: Any) -> None:
    settings.CACHES = {
        **settings.CACHES,
        "local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "dummy": {"BACKEND": "django.core.cache.backends.dummy.DummyCache", "LOCATION": None},
    }
    settings.WHOS_ONLINE_CACHE_ALIAS = "local"
    assert ids() == ["whos_online.E004"]


@pytest.mark.parametrize(
    "name, value",
    [
        ("WHOS_ONLINE_MAX_AGE", "600"),
        ("WHOS_ONLINE_MAX_AGE", 0),
        ("WHOS_ONLINE_MAX_AGE", timedelta(0)),
        ("WHOS_ONLINE_GUESTS", "yes"),
        ("WHOS_ONLINE_GUESTS", False),
        ("WHOS_ONLINE_LIST_LIMIT", -1),
        ("WHOS_ONLINE_KEY_PREFIX", 3),
        ("WHOS_ONLINE_RETENTION", "30 days"),
        ("WHOS_ONLINE_RETENTION", timedelta(0)),
        ("WHOS_ONLINE_HEARTBEAT", "25"),
        ("WHOS_ONLINE_HEARTBEAT", 0),
    ],
)
def test_settings_of_the_wrong_type_or_range(settings: Any, name: str, value: Any) -> None:
    setattr(settings, name, value)
    assert ids() == ["whos_online.E005"]


def test_good_values_of_every_accepted_type(settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = timedelta(minutes=15)
    settings.WHOS_ONLINE_LIST_LIMIT = 0
    settings.WHOS_ONLINE_PROXIES = 2
    settings.WHOS_ONLINE_IS_BOT = None
    settings.WHOS_ONLINE_RETENTION = timedelta(days=30)
    settings.WHOS_ONLINE_HEARTBEAT = 2.5
    assert ids() == []


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.name)
def test_every_setting_in_the_table_is_checked(settings: Any, setting: Setting) -> None:
    """Bytes are no value any setting accepts: each is refused by the check the table names
    (a bad cache alias also names no cache, E003; a client factory also wants a hash tag, W006)."""
    setattr(settings, setting.name, b"")
    assert setting.check in ids()


@pytest.mark.parametrize(
    "name, value, message",
    [
        (
            "WHOS_ONLINE_HEARTBEAT",
            "25",
            "WHOS_ONLINE_HEARTBEAT is '25'; it must be int or float or timedelta >= 0.001.",
        ),
        (
            "WHOS_ONLINE_HEARTBEAT",
            timedelta(0),
            "WHOS_ONLINE_HEARTBEAT is datetime.timedelta(0); it must be int or float or "
            "timedelta >= 0.001.",
        ),
    ],
)
def test_websocket_settings_of_the_wrong_type(
    settings: Any, name: str, value: Any, message: str
) -> None:
    setattr(settings, name, value)
    [found] = messages()
    assert (found.id, found.msg) == ("whos_online.E005", message)
    assert found.hint == "Fix or remove it (the default is 25)."


@pytest.mark.parametrize(
    "value", ["whos_online.visitors.bots.no_such_filter", "no.such.module", 42]
)
@pytest.mark.parametrize(
    "name, error_id",
    [
        ("WHOS_ONLINE_IS_BOT", "whos_online.E006"),
        ("WHOS_ONLINE_REDIS_CLIENT", "whos_online.E008"),
        ("WHOS_ONLINE_MEMBER_CARD", "whos_online.E009"),
        ("WHOS_ONLINE_ACCESS", "whos_online.E014"),
    ],
)
def test_callable_settings_that_cannot_be_used(
    settings: Any, value: Any, name: str, error_id: str
) -> None:
    setattr(settings, name, value)
    settings.WHOS_ONLINE_KEY_PREFIX = "{whos_online}"  # no W006 with a client factory
    assert ids() == [error_id]


@pytest.mark.parametrize("timeout", [0.001, 5])
def test_socket_timeout_out_of_range(settings: Any, timeout: float) -> None:
    socket_timeout(settings, timeout)
    assert ids() == ["whos_online.W003"]


def test_the_cache_s_own_socket_timeout_in_either_backend_s_name(settings: Any) -> None:
    settings.CACHES = {
        **settings.CACHES,
        "django": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:6390/1",
            "OPTIONS": {"socket_timeout": 9},
        },
    }
    settings.WHOS_ONLINE_CACHE_ALIAS = "django"
    assert ids() == ["whos_online.W003"]
    socket_timeout(settings, 0.5)
    assert ids() == []


def test_each_removed_setting_still_set_is_told_its_replacement(settings: Any) -> None:
    for name in REMOVED:
        setattr(settings, name, b"")
    found = messages()
    assert [(m.id, m.msg) for m in found] == [
        ("whos_online.W015", f"{name} is set, but whos_online no longer reads it.")
        for name in REMOVED
    ]
    assert [m.hint for m in found] == [f"Remove it; instead, {hint}." for hint in REMOVED.values()]
    assert found[0].hint == (
        "Remove it; instead, give WHOS_ONLINE_PROXIES under the header's name, e.g. "
        '{"Forwarded": ["10.0.0.0/8"]}.'
    )


def test_every_message_has_a_hint(settings: Any) -> None:
    settings.MIDDLEWARE = [SESSION, AUTH]
    settings.WHOS_ONLINE_ROOM_MAX_AGE = 900
    settings.WHOS_ONLINE_PROXIES = -1
    socket_timeout(settings, 9)
    settings.WHOS_ONLINE_TRACK_PAGES = True
    settings.WHOS_ONLINE_IS_BOT = 42
    found = [m for m in run_checks() if m.id and m.id.startswith("whos_online.")]
    assert len(found) == 7  # W010 (the suite silences it) among them
    assert all(m.hint for m in found)


def test_a_client_factory_wants_a_hash_tagged_prefix(settings: Any) -> None:
    settings.WHOS_ONLINE_REDIS_CLIENT = "tests.test_connection.fakeredis_client"
    assert ids() == ["whos_online.W006"]
    settings.WHOS_ONLINE_KEY_PREFIX = "{whos_online}"
    assert ids() == []


@pytest.mark.parametrize(
    "value",
    ["10.0.0.0/8", ["10.0.0.0/33"], ["10.0.0.0/8", "proxy.internal"], -1, True, 1.5, [None]],
)
def test_trusted_proxies_that_are_not_networks(settings: Any, value: Any) -> None:
    settings.WHOS_ONLINE_PROXIES = value
    assert ids() == ["whos_online.E010"]


def test_trusted_proxies_of_addresses_and_networks(settings: Any) -> None:
    networks = ["10.0.0.0/8", "192.0.2.1", "fd00::/8", "10.1.2.3/8"]
    settings.WHOS_ONLINE_PROXIES = networks
    assert ids() == []
    settings.WHOS_ONLINE_PROXIES = {"Forwarded": networks}
    assert ids() == []


@pytest.mark.parametrize(
    "value, error_id",
    [
        ({"X-Real-IP": 1}, "whos_online.E011"),
        ({"Forwarded": "10.0.0.0/8"}, "whos_online.E010"),
        ({"Forwarded": 1, "X-Forwarded-For": 1}, "whos_online.E010"),
    ],
)
def test_proxies_under_a_header_s_name(settings: Any, value: Any, error_id: str) -> None:
    settings.WHOS_ONLINE_PROXIES = value
    assert ids() == [error_id]


@pytest.mark.parametrize("value", ["/api/", 3, ["/api/", "(unclosed"], [3]])
def test_exclusions_that_are_not_lists_of_regexes(settings: Any, value: Any) -> None:
    settings.WHOS_ONLINE_EXCLUDE_PATHS = value
    assert ids() == ["whos_online.E013"]


def test_exclusions_of_regexes(settings: Any) -> None:
    settings.WHOS_ONLINE_EXCLUDE_PATHS = ["/api/", r"/healthz$"]
    assert ids() == []


@pytest.mark.parametrize(
    "values, message, hint",
    [
        (
            {"WHOS_ONLINE_PROXIES": "10.0.0.0/8"},
            "WHOS_ONLINE_PROXIES is '10.0.0.0/8'; it must be a number of proxies (0 or more) "
            "or a list of networks (CIDRs) or addresses. Until it is fixed no guest is counted.",
            'E.g. ["10.0.0.0/8", "2001:db8:ff::/48"]: the addresses your reverse proxies '
            "connect from.",
        ),
        (
            {"WHOS_ONLINE_PROXIES": {"X-Real-IP": 1}},
            "WHOS_ONLINE_PROXIES names the header 'X-Real-IP'; until it is fixed no guest is "
            "counted.",
            "Use one of 'X-Forwarded-For', 'Forwarded': the header your proxies write.",
        ),
        (
            {"WHOS_ONLINE_EXCLUDE_PATHS": "/api/"},
            "WHOS_ONLINE_EXCLUDE_PATHS is not a list; until it is fixed nothing is excluded.",
            'A list of regular expressions, e.g. [r"/healthz$", "/api/"].',
        ),
        (
            {"WHOS_ONLINE_EXCLUDE_PATHS": ["/api/", "(unclosed"]},
            "WHOS_ONLINE_EXCLUDE_PATHS has '(unclosed', which is no regular expression "
            "(missing ), unterminated subpattern at position 0); until it is fixed nothing is "
            "excluded.",
            'A list of regular expressions, e.g. [r"/healthz$", "/api/"].',
        ),
        (
            {"WHOS_ONLINE_MEMBER_CARD": "no.such.card"},
            "WHOS_ONLINE_MEMBER_CARD is 'no.such.card', which cannot be imported (No module "
            "named 'no').",
            "Set it to a callable (or its dotted path), or to None.",
        ),
    ],
)
def test_messages_say_what_is_wrong_and_how_to_fix_it(
    settings: Any, values: dict[str, Any], message: str, hint: str
) -> None:
    for name, value in values.items():
        setattr(settings, name, value)
    [found] = messages()
    assert (found.msg, found.hint) == (message, hint)


def user_model(login: str, field: models.Field[Any, Any]) -> type:
    """A user model logging in by ``login``, a field of the given kind."""
    meta = type("Meta", (), {"get_field": staticmethod(lambda name: field)})
    return type("Account", (), {"USERNAME_FIELD": login, "_meta": meta})


@pytest.mark.parametrize(
    "login, field, warned",
    [
        ("username", models.CharField(), False),
        ("email", models.EmailField(), True),
        ("login", models.EmailField(), True),  # an address, whatever its name
        ("email_address", models.CharField(), True),  # named as one
    ],
)
def test_email_login_sites_are_told_how_members_are_named(
    settings: Any, monkeypatch: pytest.MonkeyPatch, login: str, field: Any, warned: bool
) -> None:
    monkeypatch.setattr(settings_checks, "get_user_model", lambda: user_model(login, field))
    if not warned:
        assert messages() == []
        return
    [found] = messages()
    assert (found.id, found.msg, found.hint) == (
        "whos_online.W007",
        "Account logs in by email address and WHOS_ONLINE_MEMBER_CARD is not set: the block "
        'shows members by short name, and as "Member #<pk>" when that is empty or an email '
        "address.",
        "Set WHOS_ONLINE_MEMBER_CARD to a callable returning the display name "
        '(e.g. {"name": user.profile.nickname}); see the docs\' how-to "Sites whose users '
        'log in by email address".',
    )
    settings.WHOS_ONLINE_MEMBER_CARD = "whos_online.defaults.default_card"  # set, even as default
    assert ids() == []


OWN_DATABASE = "redis://127.0.0.1:6379/1"


def check_output(settings: Any) -> str:
    """What ``manage.py check`` prints, with the suite's silencing of W010 lifted."""
    settings.SILENCED_SYSTEM_CHECKS = []
    out = StringIO()
    call_command("check", stdout=out, stderr=out)
    return out.getvalue()


def test_whos_online_on_the_default_cache_is_warned_about(settings: Any) -> None:
    output = check_output(settings)
    assert (
        "?: (whos_online.W010) WHOS_ONLINE_CACHE_ALIAS is 'default', which is also "
        "django.core.cache.cache: a cache.clear() there (a deploy step, a test helper) "
        "flushes the whole Redis database, erasing who is online, the most-ever-online peak "
        "and the history.\n"
        "\tHINT: Give whos_online its own Redis cache alias on its own Redis database "
        '(e.g. "redis://127.0.0.1:6379/1") and name it in WHOS_ONLINE_CACHE_ALIAS.'
    ) in output
    assert "System check identified 1 issue (0 silenced)." in output
    settings.SILENCED_SYSTEM_CHECKS = ["whos_online.W010"]
    assert ids() == []


def test_an_alias_of_its_own_is_not_warned_about(settings: Any) -> None:
    settings.CACHES = {**settings.CACHES, "whos_online": django_redis_cache(OWN_DATABASE)}
    settings.WHOS_ONLINE_CACHE_ALIAS = "whos_online"
    assert check_output(settings) == "System check identified no issues (0 silenced).\n"


@pytest.mark.parametrize(
    ("engine", "warned"),
    [
        ("django.contrib.sessions.backends.cache", True),
        ("django.contrib.sessions.backends.cached_db", True),
        ("django.contrib.sessions.backends.db", False),
    ],
)
def test_an_alias_the_sessions_cache_in_is_warned_about(
    settings: Any, engine: str, warned: bool
) -> None:
    settings.CACHES = {**settings.CACHES, "shared": django_redis_cache(OWN_DATABASE)}
    settings.WHOS_ONLINE_CACHE_ALIAS = "shared"
    settings.SESSION_CACHE_ALIAS = "shared"
    settings.SESSION_ENGINE = engine
    settings.SILENCED_SYSTEM_CHECKS = []
    assert ids() == (["whos_online.W010"] if warned else [])
    if warned:
        [message] = [m for m in run_checks() if m.id == "whos_online.W010"]
        assert message.msg.startswith(
            "WHOS_ONLINE_CACHE_ALIAS is 'shared', which is also the sessions' cache "
            "(SESSION_CACHE_ALIAS): a cache.clear() there"
        )


@pytest.mark.parametrize(
    ("default", "ours", "shared"),
    [
        # Two aliases, one database: clearing the site's cache erases whos_online's data.
        ("redis://127.0.0.1:6379/0", "redis://localhost:6379", "localhost:6379/0"),
        ("redis://cache.internal:6379/0,redis://replica:6379/0", "redis://cache.internal/0", "cache.internal:6379/0"),
        (["redis://[::1]:6380/2"], "redis://127.0.0.1:6380/2", "localhost:6380/2"),
        ("unix:///run/redis.sock?db=1", "unix:///run/redis.sock?db=1", "/run/redis.sock/1"),
        # The same server, another database; another server: nothing to warn about.
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1", None),
        ("redis://cache.internal:6379/0", "redis://presence.internal:6379/0", None),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6380/0", None),
    ],
)  # fmt: skip
def test_another_alias_on_the_same_redis_database_is_warned_about(
    settings: Any, default: Any, ours: str, shared: str | None
) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": default},
        "whos_online": django_redis_cache(ours),
        "local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "dummy": {"BACKEND": "django.core.cache.backends.dummy.DummyCache", "LOCATION": None},
    }
    settings.WHOS_ONLINE_CACHE_ALIAS = "whos_online"
    settings.SILENCED_SYSTEM_CHECKS = []
    warnings = [m for m in run_checks() if m.id == "whos_online.W010"]
    if shared is None:
        assert warnings == []
    else:
        [warning] = warnings
        assert warning.msg.startswith(
            "WHOS_ONLINE_CACHE_ALIAS is 'whos_online', which is also the Redis database of "
            f"CACHES['default'] ({shared}): a cache.clear() there"
        )


def deploy_ids() -> list[str]:
    """Our ids from ``check --deploy``'s cache checks."""
    found = run_checks(include_deployment_checks=True, tags=["caches"])
    return sorted(str(m.id) for m in found if str(m.id).startswith("whos_online."))


def test_check_deploy_warns_when_redis_does_not_answer(dead_redis: None) -> None:
    """A warning, not an error: the deploy's checks pass, and say what they could not reach."""
    stderr = StringIO()
    call_command("check", deploy=True, stdout=StringIO(), stderr=stderr)
    [line] = [line for line in stderr.getvalue().splitlines() if "whos_online.W013" in line]
    assert line.startswith(
        "?: (whos_online.W013) whos_online could not reach Redis (ConnectionError: "
    )
    assert line.endswith(
        "); until it answers, pages show the block as unavailable and nobody is recorded."
    )
    assert "whos_online.W013" in deploy_ids()


def test_check_deploy_is_quiet_when_redis_answers(redis_db: Any) -> None:
    assert "whos_online.W013" not in deploy_ids()


def test_check_deploy_leaves_a_missing_alias_to_its_error(settings: Any) -> None:
    settings.WHOS_ONLINE_CACHE_ALIAS = "presence"
    assert deploy_ids() == ["whos_online.E003"]


def test_plain_check_tries_no_redis(dead_redis: None) -> None:
    assert "whos_online.W013" not in ids()
