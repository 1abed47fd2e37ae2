"""Settings are cached, yet every way Django changes settings in tests is seen."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import override_settings

from whos_online.conf import conf


def test_defaults() -> None:
    assert (conf.cookie_name, conf.cookie_age, conf.max_age) == ("online", 300, 600.0)
    assert (conf.users_key, conf.guests_key) == ("whos_online:users", "whos_online:guests")


def test_override_settings_is_seen_and_undone() -> None:
    assert conf.cookie_name == "online"
    with override_settings(WHOS_ONLINE_COOKIE_NAME="here", WHOS_ONLINE_MAX_AGE=timedelta(hours=1)):
        assert conf.cookie_name == "here"
        assert conf.max_age == 3600.0
    assert conf.cookie_name == "online"
    assert conf.max_age == 600.0


def test_the_settings_fixture_is_seen(settings: Any) -> None:
    settings.WHOS_ONLINE_KEY_PREFIX = "{site}"
    assert conf.users_key == "{site}:users"
    del settings.WHOS_ONLINE_KEY_PREFIX
    assert conf.users_key == "whos_online:users"
