"""Hidden members: counted, never named to ordinary visitors, marked for staff."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import AnonymousUser, User
from django.template import engines

from tests import online_now
from tests.conftest import NOW, STAFF, BrowserClient, hiding, names, tab
from whos_online import presence
from whos_online.store import recording, sockets

pytestmark = pytest.mark.django_db


def wants_privacy(user: Any) -> bool:
    """The site's own rule, given the user; here, a flag kept in the (never shown) email field."""
    return bool(user.email == "hidden")


private_card = hiding(wants_privacy)


@pytest.fixture
def site(redis_db: redis.Redis, settings: Any, people: Any) -> dict[str, BrowserClient]:
    """alice (listed) and shy (hidden) browsing, and a guest."""
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    (alice,) = people("alice")
    (shy,) = people("shy", email="hidden")
    clients = {}
    for user in (alice, shy):
        client = BrowserClient()
        client.force_login(user)
        client.get("/")
        clients[user.username] = client
    BrowserClient().get("/")  # a guest, from the address the test clients share
    return clients


def staff_client() -> BrowserClient:
    client = BrowserClient()
    client.force_login(User.objects.create(username="admin", is_staff=True))
    return client


def listed(html: str) -> dict[str, str]:
    """The block's members: display name -> the classes of their list item."""
    items = re.findall(r'<li class="([^"]*)">.*?<bdi>(.*?)</bdi>.*?</li>', html)
    return {name: classes for classes, name in items}


def test_visitors_see_the_count_but_not_the_name(site: dict[str, BrowserClient]) -> None:
    html = BrowserClient().get("/block/").content.decode()
    assert "3 users online: 2 members (1 hidden), 1 guest" in html
    assert "alice" in html and "shy" not in html
    assert "more" not in html  # the hidden member is counted once, as hidden
    # a member is an ordinary visitor too, even the hidden one
    assert "shy" not in site["alice"].get("/block/").content.decode()


def test_staff_see_hidden_members_marked(site: dict[str, BrowserClient]) -> None:
    html = staff_client().get("/block/").content.decode()
    members = listed(html)
    assert "whos-online-hidden" in members["shy"].split()
    assert "<bdi>shy</bdi> (hidden)</li>" in html
    assert "whos-online-hidden" not in members["alice"].split()
    assert "<bdi>alice</bdi></li>" in html


def test_a_hidden_member_reads_offline_in_templates_except_to_staff(
    site: dict[str, BrowserClient], rf: Any
) -> None:
    source = (
        "{% load whos_online %}{% presence_statuses people as s %}"
        "{{ shy|presence:s }} {{ shy|presence }} {{ alice|presence:s }}"
    )
    template = engines["django"].from_string(source)
    alice, shy = User.objects.get(username="alice"), User.objects.get(username="shy")
    visitor = rf.get("/")
    visitor.user = alice
    staff = rf.get("/")
    staff.user = User(username="boss", is_staff=True)
    context = {"people": [shy, alice], "shy": shy, "alice": alice}
    assert template.render(context, visitor) == "offline offline online"
    assert template.render(context, staff) == "online offline online"


def test_the_python_api_reports_the_truth_when_asked(site: dict[str, BrowserClient]) -> None:
    shy = User.objects.get(username="shy")
    assert presence.status(shy, viewer=STAFF) == "online"
    assert set(names(online_now.online_users(viewer=STAFF))) == {"alice", "shy"}
    assert names(online_now.online_users()) == ["alice"]
    assert online_now.user_count() == 2  # a count names nobody
    assert presence.last_seen(shy, viewer=STAFF) is not None


# How each kind of caller asks (made inside the test: viewers are users), and
# whether they may see hidden members.
ASKED: dict[str, tuple[Callable[[], dict[str, Any]], bool]] = {
    "default": (lambda: {}, False),
    "anonymous viewer": (lambda: {"viewer": AnonymousUser()}, False),
    "member viewer": (lambda: {"viewer": User.objects.get(username="alice")}, False),
    "staff viewer": (lambda: {"viewer": User.objects.create(username="boss", is_staff=True)}, True),
}


def seen_in_every_result(who: Any, **asked: Any) -> dict[str, bool]:
    """Whether ``who`` (a user or a pk) shows in each result that could name them."""
    pk = str(recording.member_id(who))
    return {
        "online_users": pk in [m.pk for m in online_now.online_users(**asked)],
        "summary": pk in [m.pk for m in presence.summary(**asked).members],
        "statuses": presence.statuses([who], **asked)[who] != "offline",
        "last_seen_many": presence.last_seen_many([who], **asked)[who] is not None,
        "last_seen": presence.last_seen(who, **asked) is not None,
        "status": presence.status(who, **asked) != "offline",
    }


@pytest.mark.parametrize("how", list(ASKED))
def test_hidden_members_are_in_no_default_result_and_in_every_allowed_one(
    site: dict[str, BrowserClient], how: str
) -> None:
    ask, allowed = ASKED[how]
    asked = ask()
    alice, shy = User.objects.get(username="alice"), User.objects.get(username="shy")
    everywhere = dict.fromkeys(seen_in_every_result(alice), True)
    nowhere = dict.fromkeys(everywhere, False)
    # the listed member shows everywhere, whoever asks
    assert seen_in_every_result(alice, **asked) == everywhere
    assert seen_in_every_result(alice.pk, **asked) == everywhere
    # the hidden one, by user object or by pk, only to those allowed
    assert seen_in_every_result(shy, **asked) == (everywhere if allowed else nowhere)
    assert seen_in_every_result(shy.pk, **asked) == (everywhere if allowed else nowhere)
    online = presence.summary(**asked)
    assert (online.user_count, online.hidden_count) == (2, 1)
    assert online.more == 0  # hidden is not "more", and nobody listed is left out
    hidden_flags = {m.name: m.hidden for m in online.members}
    assert hidden_flags == ({"alice": False, "shy": True} if allowed else {"alice": False})


def test_changing_ones_mind_moves_the_member(site: dict[str, BrowserClient]) -> None:
    shy = User.objects.get(username="shy")
    shy.email = ""
    shy.save()
    presence.record_user(shy)
    summary = presence.summary(limit=10)
    assert (summary.user_count, summary.hidden_count) == (2, 0)
    assert set(names(summary.members)) == {"alice", "shy"}


def test_logout_and_prune_cover_hidden_members(site: dict[str, BrowserClient]) -> None:
    site["shy"].logout()
    assert online_now.user_count() == 1
    shy = User.objects.get(username="shy")
    assert presence.status(shy, viewer=STAFF) == "offline"


def test_the_peak_counts_hidden_members(site: dict[str, BrowserClient]) -> None:
    assert "Most ever online: 3 users" in BrowserClient().get("/block/").content.decode()
    presence.prune()
    peak = presence.peak()
    assert peak is not None and peak.count == 3


def test_staff_see_everyone_newest_first_within_the_limit(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    (alice,) = people("alice")
    (shy,) = people("shy", email="hidden")
    (bob,) = people("bob")
    with time_machine.travel(NOW, tick=False) as traveller:
        for user in (alice, shy, bob):
            presence.record_user(user)
            traveller.shift(10)
        assert names(online_now.online_users(viewer=STAFF)) == ["bob", "shy", "alice"]
        assert names(online_now.online_users(limit=2, viewer=STAFF)) == ["bob", "shy"]


def test_a_hidden_members_open_socket_does_not_show_them(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    (shy,) = people("shy", email="hidden")
    sockets.connect(tab(shy))
    assert presence.status(shy) == "offline"
    assert presence.status(shy, viewer=STAFF) == "online"
