"""Members as people: identity by pk, the card, and what each viewer may see."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest
import redis
import time_machine
from django.core import checks
from django.template import engines

from tests import online_now
from tests.conftest import NOW, BrowserClient, names
from whos_online import presence
from whos_online.store import failsafe
from whos_online.store.members import MAX_CARD_BYTES, Member, card_json, default_card, read_member

pytestmark = pytest.mark.django_db


def logged_in(user: Any) -> BrowserClient:
    client = BrowserClient()
    client.force_login(user)
    return client


def test_the_default_name_is_the_username_never_a_real_name_nor_an_email(people: Any) -> None:
    bob, carol, dan = people("bob", "carol@example.com", "dan@example.com")
    bob.first_name, bob.last_name = "Robert", "Jones"  # the site itself shows "bob"
    dan.first_name = "Dan"
    assert [default_card(user)["name"] for user in (bob, carol, dan)] == ["bob", "", "Dan"]


def test_an_email_login_id_is_never_the_name_even_without_an_at_sign() -> None:
    class Account:
        USERNAME_FIELD = "email"

        def get_username(self) -> str:
            return "alice.archer"  # a login id: private on such a site, whatever it looks like

        def get_short_name(self) -> str:
            return "Ali"

    assert default_card(Account())["name"] == "Ali"


def test_guests_see_the_username_the_site_shows_not_the_real_name(
    redis_db: redis.Redis, people: Any
) -> None:
    (bob,) = people("bob", first_name="Robert", last_name="Jones")
    logged_in(bob).get("/")
    block = BrowserClient().get("/block/").content.decode()
    assert "<bdi>bob</bdi>" in block
    assert "Robert" not in block and "Jones" not in block


def test_a_rename_shows_within_the_cookie_age_and_keeps_presence(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    (user,) = people("alice")
    with time_machine.travel(NOW, tick=False) as traveller:
        client = logged_in(user)
        client.get("/")
        user.username = "alicia"
        user.save()
        assert names(online_now.online_users()) == ["alice"]
        traveller.shift(timedelta(seconds=301))  # the cookie has expired in the browser
        del client.cookies["online"]
        assert "<bdi>alicia</bdi>" in client.get("/block/").content.decode()
        assert online_now.user_count() == 1  # one member, renamed: nobody left behind


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
    (member,) = online_now.online_users()
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


def test_the_page_an_older_card_keeps_is_shown_to_nobody(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    """Cards written while WHOS_ONLINE_TRACK_PAGES kept the member's page for staff still
    hold it after an upgrade: read back, it is dropped, never shown as an extra field."""
    (alice,), (boss,) = people("alice"), people("boss", is_staff=True)
    logged_in(alice).get("/block/")
    cards = f"{settings.WHOS_ONLINE_KEY_PREFIX}:cards"
    redis_db.hset(cards, str(alice.pk), '{"name":"alice","where":"/private/messages/"}')
    staff = logged_in(boss).get("/whos-online/", HTTP_X_WHOS_ONLINE="poll").content.decode()
    assert "alice" in staff and "/private/messages/" not in staff
    assert [m.extra for m in online_now.online_users(viewer=boss)] == [{}, {}]


def test_a_login_during_an_outage_never_counts_the_person_twice(
    redis_db: redis.Redis, people: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (alice,) = people("alice")
    client = BrowserClient()
    client.get("/", REMOTE_ADDR="203.0.113.7")
    assert online_now.guest_count() == 1
    # Redis fails the login's write, so the guest entry stays for now.
    monkeypatch.setattr(failsafe.breaker, "admit", lambda write: None)  # Redis skipped
    client.force_login(alice)
    monkeypatch.undo()
    client.get("/", REMOTE_ADDR="203.0.113.7")  # Redis is back: the next request records
    assert (online_now.user_count(), online_now.guest_count()) == (1, 0)


def test_email_login_models_without_a_card_callable_are_warned(
    settings: Any, django_user_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def w007() -> list[str]:
        return [m.id for m in checks.run_checks() if m.id == "whos_online.W007"]

    assert w007() == []
    monkeypatch.setattr(django_user_model, "USERNAME_FIELD", "email")
    assert w007() == ["whos_online.W007"]
    settings.WHOS_ONLINE_MEMBER_CARD = "whos_online.defaults.default_card"
    assert w007() == []


# -- the card as stored, and the Member read back ----------------------------------------------

T = 1_700_000_000.0


def member(card: Any = None, pk: Any = b"7", score: float = T) -> Any:
    """A member as read back from Redis: pk 7, seen at ``score``, online."""
    raw = card if card is None or isinstance(card, (str, bytes)) else json.dumps(card)
    return read_member(pk, score, raw, "online", False)


@pytest.mark.parametrize(
    ("card", "stored"),
    [
        (
            {"name": "Zoë", "url": "http://example.com/zoe", "avatar": "/media/z.png"},
            '{"name":"Zoë","url":"http://example.com/zoe","avatar":"/media/z.png"}',
        ),
        ({"name": "x", "url": "javascript:alert(1)", "avatar": "data:,x"}, '{"name":"x"}'),
        # "where" was the page of WHOS_ONLINE_TRACK_PAGES: older cards' is never shown.
        ({"name": "x", "where": "/fake/"}, '{"name":"x"}'),
        ({"name": "x", "url": "/" + "u" * 600}, '{"name":"x","url":"/' + "u" * 499 + '"}'),
        (
            {"name": "x", "posts": 5, "staff": True, "score": 1.5, "badge": None, "tags": ["a"]},
            '{"name":"x","posts":5,"staff":true,"score":1.5,"badge":null,"tags":"[\'a\']"}',
        ),
        (
            {"name": "x", "k" * 150: "v" * 150, **{f"f{i}": i for i in range(6)}},
            '{"name":"x","' + "k" * 100 + '":"' + "v" * 100 + '","f0":0,"f1":1,"f2":2,"f3":3}',
        ),
    ],
)
def test_what_a_card_stores(card: dict[str, Any], stored: str) -> None:
    assert card_json(card) == stored


def test_a_card_over_the_byte_cap_keeps_only_the_name_and_links() -> None:
    # Three 100-character extras of three-byte characters: a card of exactly 2048 bytes.
    card = {"name": "Zoë", "url": "/" + "u" * 211}
    card |= {f"{i}" + "€" * 99: "€" * 100 for i in range(3)}
    text = card_json(card)
    assert len(text.encode()) == MAX_CARD_BYTES == 2048 and "€" in text
    card["url"] += "u"
    assert card_json(card) == '{"name":"Zoë","url":"/' + "u" * 212 + '"}'


def test_the_default_card_passes_over_an_email_to_the_short_name_and_links_the_profile(
    people: Any,
) -> None:
    (user,) = people("ann@example.com")
    user.first_name, user.last_name = "ann@example.org", "Lee"
    assert default_card(user) == {"name": "", "url": None}
    profile = SimpleNamespace(get_username=lambda: "bob", get_absolute_url=lambda: "/people/bob/")
    assert default_card(profile) == {"name": "bob", "url": "/people/bob/"}


@pytest.mark.parametrize(
    "char",
    [*map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A)), "\u200e", "\u200f"]
    + ["\u061c"],
)
def test_bidi_controls_are_taken_out_of_names(char: str) -> None:
    assert member({"name": f"{char}nimda{char}"}).name == "nimda"


@pytest.mark.parametrize("char", ["\u2029", "\u202f", "\u2065", "\u206a", "\u200d", "\u2010"])
def test_their_neighbours_are_not(char: str) -> None:
    assert member({"name": f"a{char}b"}).name == f"a{char}b"


@pytest.mark.parametrize("name", ["", " ", "\u200b", "\u202e\u2066", "\u0301", None])
def test_a_name_with_nothing_to_see_shows_as_member_pk(name: str | None) -> None:
    assert member({"name": name}).name == "Member #7"


@pytest.mark.parametrize("name", ["Ann Lee", "٣", "!", "☺", "zoë"])
def test_letters_digits_punctuation_and_symbols_are_a_name(name: str) -> None:
    assert member({"name": name}).name == name


@pytest.mark.parametrize("raw", [None, "not json", "[1, 2]", b'{"name": ""}'])
def test_a_missing_or_broken_card_shows_member_pk(raw: Any) -> None:
    shown = member(raw)
    assert (shown.name, shown.url, shown.avatar, shown.extra) == ("Member #7", None, None, {})


def test_a_pk_that_is_not_utf8_still_shows() -> None:
    assert member({"name": "x"}, pk=b"7\xff").pk == "7\ufffd"


def test_what_templates_and_the_live_endpoint_get() -> None:
    shown = member({"name": "Ann", "url": "/people/ann/", "avatar": "/a.png", "role": "mod"})
    template = engines["django"].from_string("{{ m }}|{{ m.name }}|{{ m.role }}|{{ m.url }}")
    assert template.render({"m": shown}) == "Ann|Ann|mod|/people/ann/"
    assert (shown.url, shown.avatar, shown["role"]) == ("/people/ann/", "/a.png", "mod")
    expected = {
        "pk": "7",
        "name": "Ann",
        "url": "/people/ann/",
        "avatar": "/a.png",
        "status": "online",
        "hidden": False,
        "role": "mod",
    }
    assert shown.as_json() == expected


def test_a_member_read_back_is_the_member_built_from_its_fields() -> None:
    card = card_json({"name": "Ann", "url": "/a/", "avatar": "/a.png", "role": "mod"})
    read = read_member(b"7", T - 90, card, "idle", True)
    built = Member(
        pk="7",
        display_name="Ann",
        url="/a/",
        avatar="/a.png",
        last_seen=datetime.fromtimestamp(T - 90, tz=timezone.utc),
        status="idle",
        hidden=True,
        extra={"role": "mod"},
    )
    assert read == built
    with pytest.raises(FrozenInstanceError):
        read.status = "online"  # type: ignore[misc]
