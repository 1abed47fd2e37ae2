"""``{% whos_online %}`` rendered through real templates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from django.template import engines
from django.test import RequestFactory
from django.utils.html import escape

from tests.conftest import BrowserClient
from whos_online import presence

pytestmark = pytest.mark.django_db


def render(context: dict[str, Any] | None = None, request: Any = None) -> str:
    template = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
    return template.render(context or {}, request)


def test_lists_members_most_recent_first_with_counts_and_window(redis_db: redis.Redis) -> None:
    for name in ["alice", "bob"]:
        presence.record_user(name)
    presence.record_guest("203.0.113.7")
    html = render()
    assert html.index("<li>bob</li>") < html.index("<li>alice</li>")
    assert "3 users online" in html
    assert "2 members" in html and "1 guest" in html
    assert "past 10 minutes" in html


def test_renders_without_request_and_with_one(redis_db: redis.Redis) -> None:
    presence.record_user("alice")
    request = RequestFactory().get("/")
    assert "<li>alice</li>" in render()
    assert "<li>alice</li>" in render(request=request)


def test_list_limit_then_and_n_more(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_LIST_LIMIT = 2
    for name in ["a", "b", "c", "d", "e"]:
        presence.record_user(name)
    html = render()
    assert html.count("<li>") == 2
    assert "and 3 more" in html


def test_window_follows_the_setting(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 60
    assert "past minute" in render()
    settings.WHOS_ONLINE_MAX_AGE = 1800
    assert "past 30 minutes" in render()


def test_usernames_are_escaped(redis_db: redis.Redis) -> None:
    presence.record_user('<script>alert("x")</script>')
    html = render()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


ODD_NAMES = [
    'O\'Brien "quoted" & <b>bold</b>',
    "\u202eevil\u202c right-to-left override",
    "zero\u200bwidth\u200djoiner",
    "emoji \U0001f600\U0001f469\u200d\U0001f4bb",
    "שלום עליכם",
    "long" + "x" * 180,
]


def test_odd_usernames_render_escaped_and_whole(redis_db: redis.Redis) -> None:
    for name in ODD_NAMES:
        presence.record_user(name)
    html = render()
    assert "<b>bold</b>" not in html
    for name in ODD_NAMES:
        assert escape(name) in html
    assert sorted(presence.online_users()) == sorted(ODD_NAMES)


def test_one_round_trip_per_block(redis_db: redis.Redis, round_trips: Any) -> None:
    presence.record_user("alice")
    round_trips.clear()
    render()
    assert round_trips.count == 1


def test_unavailable_state_when_redis_is_down(dead_redis: None) -> None:
    response = BrowserClient().get("/block/")
    assert response.status_code == 200
    assert "unavailable right now" in response.content.decode()


def test_the_template_can_be_overridden(
    redis_db: redis.Redis, settings: Any, tmp_path: Path
) -> None:
    (tmp_path / "whos_online").mkdir()
    (tmp_path / "whos_online" / "whos_online.html").write_text(
        "{{ online.user_count }} here: {{ online.usernames|join:', ' }}"
    )
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [str(tmp_path)]}]
    presence.record_user("alice")
    assert render() == "1 here: alice"
