"""``{% whos_online %}`` rendered through real templates."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.staticfiles import finders
from django.template import engines
from django.test import RequestFactory
from django.utils.html import escape

import whos_online
from tests.conftest import BrowserClient
from whos_online import presence

pytestmark = pytest.mark.django_db


def render(context: dict[str, Any] | None = None, request: Any = None) -> str:
    template = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
    return template.render(context or {}, request)


def listed(html: str) -> list[str]:
    """The names the block lists, in order."""
    return re.findall(r"<bdi>(.*?)</bdi>", html)


def test_lists_members_most_recent_first_with_counts_and_window(
    redis_db: redis.Redis, people: Any
) -> None:
    for user in people("alice", "bob"):
        presence.record_user(user)
    presence.record_guest("203.0.113.7")
    html = render()
    assert listed(html) == ["bob", "alice"]
    assert "3 users online" in html
    assert "2 members" in html and "1 guest" in html
    assert "past 10 minutes" in html


def test_renders_without_request_and_with_one(redis_db: redis.Redis, people: Any) -> None:
    (alice,) = people("alice")
    presence.record_user(alice)
    request = RequestFactory().get("/")
    assert listed(render()) == ["alice"]
    assert listed(render(request=request)) == ["alice"]


def test_list_limit_then_and_n_more(redis_db: redis.Redis, settings: Any, people: Any) -> None:
    settings.WHOS_ONLINE_LIST_LIMIT = 2
    for user in people("a", "b", "c", "d", "e"):
        presence.record_user(user)
    html = render()
    assert len(listed(html)) == 2
    assert "and 3 more" in html


def test_window_follows_the_setting(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 60
    assert "past minute" in render()
    settings.WHOS_ONLINE_MAX_AGE = 1800
    assert "past 30 minutes" in render()


def test_names_are_escaped(redis_db: redis.Redis, people: Any) -> None:
    (user,) = people('<script>alert("x")</script>')
    presence.record_user(user)
    html = render()
    assert "<script>" not in html
    assert "<bdi>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</bdi>" in html


ODD_NAMES = [
    'O\'Brien "quoted" & <b>bold</b>',
    "zero\u200bwidth\u200djoiner",
    "emoji \U0001f600\U0001f469\u200d\U0001f4bb",
    "שלום עליכם",
    "long" + "x" * 140,
]


def test_odd_names_render_escaped_and_whole_each_in_bdi(redis_db: redis.Redis, people: Any) -> None:
    for name in ODD_NAMES:
        (user,) = people(name)
        presence.record_user(user)
    html = render()
    assert "<b>bold</b>" not in html
    assert sorted(listed(html)) == sorted(escape(name) for name in ODD_NAMES)


def test_look_alike_and_invisible_names_are_neutralised_in_display(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    spoof, blank = people("\u202enimda", "\u200b\u200b\u200d")
    for user in (spoof, blank):
        presence.record_user(user)
    assert listed(render()) == [f"Member #{blank.pk}", "nimda"]
    # Redis keeps the name exactly as the callable gave it.
    card = redis_db.hget(f"{settings.WHOS_ONLINE_KEY_PREFIX}:cards", str(spoof.pk))
    assert "\u202enimda" in card.decode()


def test_names_link_to_the_profile_and_show_the_avatar_from_the_card(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = lambda user: {
        "name": user.get_username().title(),
        "url": f"/members/{user.pk}/",
        "avatar": f"/avatars/{user.pk}.svg",
        "role": "staff" if user.is_staff else "member",
    }
    alice, bob = people("alice", "bob")
    bob.is_staff = True
    presence.record_user(alice)
    presence.record_user(bob)
    html = render()
    assert (
        f'<img class="whos-online-avatar" src="/avatars/{alice.pk}.svg" alt="" width="20" '
        f'height="20" loading="lazy"> <a href="/members/{alice.pk}/"><bdi>Alice</bdi></a>'
    ) in html


def test_a_hundred_members_in_one_round_trip_and_no_sql(
    redis_db: redis.Redis, round_trips: Any, people: Any, django_assert_num_queries: Any
) -> None:
    for user in people(*(f"member{i:03}" for i in range(100))):
        presence.record_user(user)
    round_trips.clear()
    with django_assert_num_queries(0):
        html = render()
    assert round_trips.count == 1
    assert len(listed(html)) == 100


def test_unavailable_state_when_redis_is_down(dead_redis: None) -> None:
    response = BrowserClient().get("/block/")
    assert response.status_code == 200
    assert "unavailable right now" in response.content.decode()


def override(settings: Any, folder: Path, name: str, text: str) -> None:
    """A site's own ``whos_online/<name>``, found before the app's."""
    (folder / "whos_online").mkdir(exist_ok=True)
    (folder / "whos_online" / name).write_text(text)
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [str(folder)]}]


def test_the_template_can_be_overridden(
    redis_db: redis.Redis, settings: Any, tmp_path: Path, people: Any
) -> None:
    override(
        settings,
        tmp_path,
        "whos_online.html",
        "{{ online.user_count }} here: {{ online.members|join:', ' }}"
        "{% for member in online.members %}; {{ member.name }} is {{ member.role }}{% endfor %}",
    )
    settings.WHOS_ONLINE_MEMBER_CARD = lambda user: {"name": user.username, "role": "moderator"}
    (alice,) = people("alice")
    presence.record_user(alice)
    assert render() == "1 here: alice; alice is moderator"


def test_an_override_of_the_room_block_gets_the_room_and_the_window(
    redis_db: redis.Redis, settings: Any, tmp_path: Path
) -> None:
    override(
        settings, tmp_path, "room.html", "{{ room }}: {{ online.total }} in {{ window_minutes }}"
    )
    presence.record_guest("203.0.113.7", room="lobby")
    template = engines["django"].from_string('{% load whos_online %}{% whos_here "lobby" %}')
    assert template.render({}) == "lobby: 1 in 10"


def test_an_override_showing_the_prebuilt_list_shows_nothing_while_redis_is_down(
    dead_redis: None, settings: Any, tmp_path: Path
) -> None:
    override(settings, tmp_path, "whos_online.html", "[{{ members_html }}]")
    assert render() == "[]"


def test_each_name_is_classed_by_its_status_and_role_for_the_sites_css(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = lambda user: {
        "name": user.username,
        "role": "Site Staff" if user.is_staff else "",
    }
    alice, bob = people("alice", "bob")
    bob.is_staff = True
    presence.record_user(alice)
    presence.record_user(bob)
    items = re.findall(r"<li [^>]*>.*?</li>", render())
    assert items == [
        '<li class="whos-online-member whos-online-online whos-online-role-site-staff">'
        "<bdi>bob</bdi></li>",
        '<li class="whos-online-member whos-online-online"><bdi>alice</bdi></li>',
    ]


def test_the_docs_stylesheet_line_links_the_shipped_stylesheet() -> None:
    howto = (Path(__file__).resolve().parent.parent / "docs" / "howto" / "style.md").read_text()
    line = re.search(r"^<link rel=\"stylesheet\" href=\"\{% static .*%\}\">$", howto, re.M)
    assert line is not None
    html = engines["django"].from_string("{% load static %}" + line.group(0)).render({})
    href = re.search(r'href="/static/(.*)"', html)
    assert href is not None
    found = finders.find(href.group(1))
    assert found == str(Path(whos_online.__file__).parent / "static/whos_online/whos_online.css")
