"""On a site whose users log in by email address, no address is shown or stored by default.

These tests need the example project's ``accounts.EmailUser`` as the user model,
so they run under tests/settings_email.py:

    python -m pytest --ds tests.settings_email tests/test_email_login.py

Under the main run's settings this module collects nothing (``__test__`` below:
not a skip, there is simply nothing here for Django's User); the main run's
tests/test_example_project.py runs it in a subprocess under its own settings.
Members log in through the login view with their address, some with a full
name and some without, and the block, the JSON endpoint, the admin page and
every key and value in Redis are searched for an "@".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import checks

from tests.conftest import BrowserClient, hiding

EMAIL_USER = "accounts.EmailUser"
__test__ = settings.AUTH_USER_MODEL == EMAIL_USER

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
POLL = {"X-Whos-Online": "poll"}  # the live block's requests: read, not a visit
# (email, full name): with a name, without one, with an address typed as one's
# name, with a plus address, and a staff member without a name.
PEOPLE = (
    ("alice@example.com", "Alice Archer"),
    ("bob@example.com", ""),
    ("carol@example.com", "carol@example.org"),
    ("dave.smith+forum@example.com", "Dave Smith"),
    ("erin@example.com", "Erin Evans"),  # hidden: wants_privacy
    ("admin@example.com", ""),
)
STAFF = "admin@example.com"
BLOCK = re.compile(r'<section class="whos-online".*?</section>', re.DOTALL)


def wants_privacy(user: Any) -> bool:
    return bool(user.email.startswith("erin@"))


private_card = hiding(wants_privacy)


@pytest.fixture
def site(redis_db: redis.Redis, settings: Any) -> Iterator[dict[str, Any]]:
    """Everyone in PEOPLE logged in through the login view, plus a guest: their clients."""
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_email_login.private_card"
    model = get_user_model()
    users = {
        email: model.objects.create_user(
            email, password=PASSWORD, full_name=name, is_staff=email == STAFF
        )
        for email, name in PEOPLE
    }
    guest = BrowserClient()
    assert guest.get("/block/").status_code == 200
    clients: dict[str, Any] = {"guest": guest}
    for email in users:
        client = BrowserClient()
        client.get("/block/")  # first as a guest, as one arrives
        response = client.post("/login/", {"username": email, "password": PASSWORD})
        assert response.status_code == 200 and response.wsgi_request.user.is_authenticated
        client.get("/block/")
        clients[email] = client
    yield {"users": users, "clients": clients, "redis": redis_db}


def everything_in_redis(client: redis.Redis, prefix: str) -> list[bytes]:
    """Every key under ``prefix`` and every member, field and value it holds, as bytes."""
    found: list[bytes] = []
    for key in client.scan_iter(match=f"{prefix}:*"):
        found.append(key)
        kind = client.type(key).decode()
        if kind == "zset":
            found += [member for member, _ in client.zrange(key, 0, -1, withscores=True)]
        elif kind == "hash":
            for field, value in client.hgetall(key).items():
                found += [field, value]
        elif kind == "set":
            found += list(client.smembers(key))
        elif kind == "list":
            found += client.lrange(key, 0, -1)
        elif kind == "string":
            value = client.get(key)
            # A HyperLogLog (the per-day counters) holds bits of hashes, no text: any
            # of its bytes may happen to be "@". Its key is still searched.
            if not value.startswith(b"HYLL"):
                found.append(value)
        else:
            raise AssertionError(f"{key!r} is a {kind}: search it too")
    return found


def test_members_are_named_without_their_address(site: dict[str, Any]) -> None:
    users = site["users"]
    block = BLOCK.search(site["clients"]["guest"].get("/block/").content.decode())
    assert block is not None
    shown = block.group(0)
    # The short name: the login id is the address, and the full name is more than a handle.
    alice = users["alice@example.com"]
    assert f'<a href="/people/{alice.pk}/"><bdi>Alice</bdi></a>' in shown  # get_absolute_url
    assert "<bdi>Dave</bdi>" in shown
    assert "Archer" not in shown
    # No name, or an address typed as one's name: a neutral name, never the address.
    for email in ("bob@example.com", "carol@example.com", STAFF):
        assert f"<bdi>Member #{users[email].pk}</bdi>" in shown
    assert "Erin" not in shown  # hidden
    assert "6 members (1 hidden)" in re.sub(r"\s+", " ", shown)


def test_no_at_sign_in_the_block_or_the_json_for_anyone(site: dict[str, Any]) -> None:
    for who in ("guest", "alice@example.com", STAFF):
        client = site["clients"][who]
        page = client.get("/block/").content.decode()
        block = BLOCK.search(page)
        assert block is not None and "@" not in block.group(0), (who, block)
        response = client.get("/whos-online/", headers=POLL)
        assert response.status_code == 200
        assert b"@" not in response.content, (who, response.content)
        data = json.loads(response.content)
        # Staff also see the hidden member, still without her address.
        listed = {member["name"] for member in data["members"]}
        assert ("Erin" in listed) == (who == STAFF)
        assert len(listed) == (6 if who == STAFF else 5)


def test_no_at_sign_in_redis(site: dict[str, Any]) -> None:
    stored = everything_in_redis(site["redis"], settings.WHOS_ONLINE_KEY_PREFIX)
    cards = [item for item in stored if item.endswith(b":cards")]
    assert len(cards) == 1, "the search missed the cards"
    card = site["redis"].hget(cards[0], str(site["users"]["alice@example.com"].pk))
    assert json.loads(card)["name"] == "Alice"
    assert len(stored) > 2 * len(PEOPLE), stored  # members, cards, the peak...
    assert not [item for item in stored if b"@" in item]


def test_the_admin_page_links_members_without_their_address(site: dict[str, Any]) -> None:
    page = site["clients"][STAFF].get("/admin/whos_online/onlinenow/").content.decode()
    table = re.search(r'<table class="whos-online-members">.*?</table>', page, re.DOTALL)
    assert table is not None
    assert "@" not in table.group(0)
    erin = site["users"]["erin@example.com"]
    assert f'<a href="/admin/accounts/emailuser/{erin.pk}/change/"><bdi>Erin</bdi>' in (
        table.group(0)
    )


def test_the_checks_warn_that_members_are_named_by_default() -> None:
    warnings = [m for m in checks.run_checks() if m.id == "whos_online.W007"]
    assert len(warnings) == 1
    assert warnings[0].msg.startswith(
        "EmailUser logs in by email address and WHOS_ONLINE_MEMBER_CARD is not set"
    )


def test_a_member_card_setting_silences_the_warning(settings: Any) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "whos_online.defaults.default_card"
    assert "whos_online.W007" not in [m.id for m in checks.run_checks()]
