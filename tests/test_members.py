"""Members as people: identity by pk, the card, and what each viewer may see."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import redis
import time_machine
from django.core import checks
from django.template import engines

from tests.conftest import NOW, BrowserClient, names
from whos_online import failsafe, presence
from whos_online.members import MAX_CARD_BYTES, card_json, default_card

pytestmark = pytest.mark.django_db


def logged_in(user: Any) -> BrowserClient:
    client = BrowserClient()
    client.force_login(user)
    return client


def test_the_default_name_is_full_then_short_then_username_never_an_email(people: Any) -> None:
    full, plain, email, email_named = people("ann", "bob", "carol@example.com", "dan@example.com")
    full.first_name, full.last_name = "Ann", "Lee"
    email_named.first_name = "Dan"
    assert [default_card(user)["name"] for user in (full, plain, email, email_named)] == [
        "Ann Lee",
        "bob",
        "",
        "Dan",
    ]


def test_a_rename_shows_within_the_cookie_age_and_keeps_presence(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_COOKIE_AGE = 300
    (user,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        client = logged_in(user)
        client.get("/")
        user.username = "alicia"
        user.save()
        assert names(presence.online_users()) == ["alice"]
        traveller.shift(timedelta(seconds=301))  # the cookie has expired in the browser
        del client.cookies["online"]
        assert "<bdi>alicia</bdi>" in client.get("/block/").content.decode()
        assert presence.user_count() == 1  # one member, renamed: nobody left behind


def test_the_card_is_capped_and_unsafe_links_are_dropped(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = lambda user: {
        "name": "N" * 1000,
        "url": "javascript:alert(1)",
        "avatar": "https://cdn.example/a.png",
        **{f"field{i}": "x" * 500 for i in range(20)},
    }
    (user,) = people("alice")
    presence.record_user(user)
    raw = redis_db.hget(f"{settings.WHOS_ONLINE_KEY_PREFIX}:cards", str(user.pk))
    assert len(raw) <= MAX_CARD_BYTES
    (member,) = presence.online_users()
    assert (member.name, member.url, member.avatar) == (
        "N" * 150,
        None,
        "https://cdn.example/a.png",
    )
    assert card_json({"name": "x", "url": "", "role": "mod"}) == '{"name":"x","role":"mod"}'


def test_a_page_of_fifty_avatars_costs_one_round_trip(
    redis_db: redis.Redis, round_trips: Any, people: Any
) -> None:
    users = people(*(f"member{i:02}" for i in range(50)))
    for user in users[:10]:
        presence.record_user(user)
    template = engines["django"].from_string(
        "{% load whos_online %}{% presence_statuses users as s %}"
        "{% for user in users %}{{ user|presence:s }} {% endfor %}"
    )
    round_trips.clear()
    words = template.render({"users": users}).split()
    assert round_trips.count == 1
    assert words == ["online"] * 10 + ["offline"] * 40


def test_pages_are_for_staff_only(redis_db: redis.Redis, settings: Any, people: Any) -> None:
    settings.WHOS_ONLINE_TRACK_PAGES = True
    alice, boss = people("alice"), people("boss", is_staff=True)
    logged_in(alice[0]).get("/block/")
    guest = json.loads(BrowserClient().get("/whos-online/", HTTP_X_WHOS_ONLINE="poll").content)
    staff = json.loads(logged_in(boss[0]).get("/whos-online/", HTTP_X_WHOS_ONLINE="poll").content)
    assert [m.get("where") for m in guest["members"]] == [None]
    assert {m["name"]: m.get("where") for m in staff["members"]}["alice"] == "/block/"
    assert {m.name: m.where for m in presence.online_users()}["alice"] is None
    assert {m.name: m.where for m in presence.online_users(viewer=boss[0])}["alice"] == "/block/"


def test_a_login_during_an_outage_never_counts_the_person_twice(
    redis_db: redis.Redis, people: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (alice,) = people("alice")
    client = BrowserClient()
    client.get("/", REMOTE_ADDR="203.0.113.7")
    assert presence.guest_count() == 1
    # Redis fails the login's write, so the guest entry stays for now.
    monkeypatch.setattr(failsafe.breaker, "admit", lambda write: None)  # Redis skipped
    client.force_login(alice)
    monkeypatch.undo()
    client.get("/", REMOTE_ADDR="203.0.113.7")  # Redis is back: the next request records
    assert (presence.user_count(), presence.guest_count()) == (1, 0)


def test_email_login_models_without_a_card_callable_are_warned(
    settings: Any, django_user_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def w007() -> list[str]:
        return [m.id for m in checks.run_checks() if m.id == "whos_online.W007"]

    assert w007() == []
    monkeypatch.setattr(django_user_model, "USERNAME_FIELD", "email")
    assert w007() == ["whos_online.W007"]
    settings.WHOS_ONLINE_MEMBER_CARD = "whos_online.members.default_card"
    assert w007() == []
