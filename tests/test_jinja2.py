"""The block, the room block and presence dots under Django's Jinja2 backend.

``tests/jinja2/page.html`` is rendered by the ``jinja2`` engine of
tests/settings.py, which loads ``whos_online.contrib.jinja2.WhosOnlineExtension``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import AnonymousUser, User
from django.template import engines
from django.test import RequestFactory

from tests.conftest import NOW, BrowserClient

pytestmark = pytest.mark.django_db

BLOCK = re.compile(r'<section class="whos-online".*?</section>', re.S)
ROOM = re.compile(r'<section class="whos-here".*?</section>', re.S)


def member(name: str, **fields: Any) -> BrowserClient:
    client = BrowserClient()
    client.force_login(User.objects.create_user(name, **fields))
    return client


@pytest.fixture
def lobby(redis_db: redis.Redis, settings: Any) -> None:
    """alice, a hidden member and a member with markup in their name, in the lobby;
    nobody, who never came."""
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    for name, email in (("alice", ""), ("shy", "hidden"), ("<b>bold</b>", "")):
        member(name, email=email).get("/lobby/")
    User.objects.create_user("nobody")


@pytest.mark.parametrize("staff", [True, False], ids=["staff", "visitor"])
def test_the_blocks_are_the_django_tags_html(lobby: None, staff: bool) -> None:
    with time_machine.travel(NOW, tick=False):
        viewer = member("boss", is_staff=True) if staff else BrowserClient()
        room = viewer.get("/lobby/").content.decode()  # the {% whos_here %} tag
        block = viewer.get("/block/").content.decode()  # the {% whos_online %} tag
        page = viewer.get("/jinja/").content.decode()
    assert BLOCK.findall(page) == BLOCK.findall(block)
    assert ROOM.findall(page) == ROOM.findall(room)
    assert ("<bdi>shy</bdi> (hidden)" in page) is staff
    # Escaped once: the Django template escaped it, Jinja did not escape that again.
    assert "<bdi>&lt;b&gt;bold&lt;/b&gt;</bdi>" in page and "&amp;" not in page


def test_presence_dots(lobby: None) -> None:
    query = "/jinja/?member=alice&member=shy&member=nobody"
    staff_page = member("boss", is_staff=True).get(query).content.decode()
    visitor_page = BrowserClient().get(query).content.decode()
    dots = re.compile(r'<li class="dot-(\w+)">(\w+)</li>')
    assert dots.findall(staff_page) == [
        ("online", "alice"),
        ("online", "shy"),
        ("offline", "nobody"),
    ]
    assert dots.findall(visitor_page) == [
        ("online", "alice"),
        ("offline", "shy"),  # hidden from whoever is not staff
        ("offline", "nobody"),
    ]
    # The bare filter cannot see who is looking, so it hides hidden members from all.
    assert '<p class="unbatched">online offline offline </p>' in staff_page


def test_statuses_for_a_page_cost_one_round_trip(lobby: None, round_trips: Any) -> None:
    viewer = BrowserClient()
    viewer.get("/")  # recorded now; the page below records nothing
    round_trips.clear()
    viewer.get("/jinja/?member=alice&member=shy")
    # block, room, statuses, then the two unbatched filters
    assert round_trips.count == 3 + 2


def test_redis_down_renders_the_unavailable_blocks(dead_redis: None) -> None:
    User.objects.create_user("alice")
    response = BrowserClient().get("/jinja/?member=alice")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Who's online is unavailable right now." in html
    assert "Who is here is unavailable right now." in html
    assert '<li class="dot-unavailable">alice</li>' in html


def test_the_jinja_blocks_are_live_only_when_asked(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    request = RequestFactory().get("/")
    request.user = AnonymousUser()
    jinja = engines["jinja2"]
    static = jinja.from_string("{{ whos_online() }}{{ whos_here('lobby') }}")
    shown = static.render(request=request)
    assert "data-whos-online-url" not in shown and "data-whos-online-ws" not in shown
    live = jinja.from_string("{{ whos_online(live=30) }}{{ whos_here('lobby', live=True) }}")
    page = live.render(request=request)
    assert 'data-whos-online-refresh="30" data-whos-online-ws="/ws/whos-online/"' in page
    assert 'data-whos-online-ws="/ws/whos-online/lobby/"' in page
    assert page.count('data-whos-online-shown="[]"') == 2  # nobody listed in either
