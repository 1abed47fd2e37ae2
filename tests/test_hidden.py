"""Hidden members: counted, never named to ordinary visitors, marked for staff."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.template import engines

from tests.conftest import BrowserClient
from whos_online import presence

pytestmark = pytest.mark.django_db


def wants_privacy(user: Any) -> bool:
    """The site's own rule; here, a flag kept in last_name."""
    return bool(user.last_name == "hidden")


@pytest.fixture
def site(redis_db: redis.Redis, settings: Any) -> dict[str, BrowserClient]:
    """alice (listed) and shy (hidden) browsing, and a guest."""
    settings.WHOS_ONLINE_IS_HIDDEN = "tests.test_hidden.wants_privacy"
    clients = {}
    for name, last_name in (("alice", ""), ("shy", "hidden")):
        client = BrowserClient()
        client.force_login(User.objects.create_user(name, last_name=last_name))
        client.get("/")
        clients[name] = client
    BrowserClient().get("/")  # a guest, from the address the test clients share
    return clients


def staff_client() -> BrowserClient:
    client = BrowserClient()
    client.force_login(User.objects.create_user("admin", is_staff=True))
    return client


def test_visitors_see_the_count_but_not_the_name(site: dict[str, BrowserClient]) -> None:
    html = BrowserClient().get("/block/").content.decode()
    assert "3 users online: 2 members (1 hidden), 1 guest" in html
    assert "alice" in html and "shy" not in html
    assert "more" not in html  # the hidden member is counted once, as hidden
    # a member is an ordinary visitor too, even the hidden one
    assert "shy" not in site["alice"].get("/block/").content.decode()


def test_staff_see_hidden_members_marked(site: dict[str, BrowserClient]) -> None:
    html = staff_client().get("/block/").content.decode()
    assert '<li class="whos-online-hidden">shy (hidden)</li>' in html
    assert "<li>alice</li>" in html


def test_a_hidden_member_reads_offline_in_templates_except_to_staff(
    site: dict[str, BrowserClient], rf: Any
) -> None:
    source = (
        "{% load whos_online %}{% presence_statuses names as s %}"
        "{{ 'shy'|presence:s }} {{ 'shy'|presence }} {{ 'alice'|presence:s }}"
    )
    template = engines["django"].from_string(source)
    visitor = rf.get("/")
    visitor.user = User.objects.get(username="alice")
    staff = rf.get("/")
    staff.user = User(username="boss", is_staff=True)
    names = ["shy", "alice"]
    assert template.render({"names": names}, visitor) == "offline offline online"
    assert template.render({"names": names}, staff) == "online offline online"


def test_the_python_api_reports_the_truth(site: dict[str, BrowserClient]) -> None:
    assert presence.status("shy") == "online"
    assert set(presence.online_users()) == {"alice", "shy"}
    assert presence.online_users(include_hidden=False) == ["alice"]
    assert presence.user_count() == 2
    assert presence.last_seen("shy") is not None


def test_changing_ones_mind_moves_the_member(site: dict[str, BrowserClient]) -> None:
    presence.record_user("shy", hidden=False)
    summary = presence.summary(limit=10)
    assert (summary.user_count, summary.hidden_count) == (2, 0)
    assert set(summary.usernames) == {"alice", "shy"}


def test_logout_and_prune_cover_hidden_members(site: dict[str, BrowserClient]) -> None:
    site["shy"].logout()
    assert presence.user_count() == 1
    assert presence.status("shy") == "offline"


def test_the_peak_counts_hidden_members(site: dict[str, BrowserClient]) -> None:
    BrowserClient().get("/block/")
    peak = presence.peak()
    assert peak is not None and peak.count == 3
