"""A long listing: every member keeps their own card, however many are listed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import redis

from whos_online import presence
from whos_online.conf import conf


@pytest.fixture
def named(settings: Any) -> Any:
    """Members as the API takes them, each card naming its pk."""
    settings.WHOS_ONLINE_MEMBER_CARD = lambda user: {"name": f"Person {user.pk}"}
    return lambda pk: SimpleNamespace(pk=pk, is_staff=False)


def test_all_of_1001_members_are_listed_with_their_own_names(
    redis_db: redis.Redis, named: Any
) -> None:
    for pk in range(1001):  # the script reads cards 1,000 at a time: two reads
        presence.record_user(named(pk))
    online = presence.summary(limit=-1)
    assert online.user_count == 1001 and len(online.members) == 1001
    assert {member.pk: member.name for member in online.members} == {
        str(pk): f"Person {pk}" for pk in range(1001)
    }


def test_a_damaged_card_reads_as_no_card_and_spares_the_others(
    redis_db: redis.Redis, named: Any
) -> None:
    for pk in range(3):
        presence.record_user(named(pk))
    redis_db.hset(conf.keys().cards, "1", '{"name": "Person 1"}, {"name": "Forged"}')
    online = presence.summary()
    assert [member.name for member in online.members] == ["Person 2", "Member #1", "Person 0"]


def test_any_pk_comes_through_the_listing_as_it_was_recorded(
    redis_db: redis.Redis, named: Any
) -> None:
    pks = ['a"b\\c', "é/ü", "1\n2"]
    for pk in pks:
        presence.record_user(named(pk))
    online = presence.summary()
    assert [member.pk for member in online.members] == pks[::-1]
    assert [member.name for member in online.members] == [f"Person {pk}" for pk in pks[::-1]]


# fakeredis's cjson refuses bytes that are not UTF-8; Redis passes them through.
@pytest.mark.parametrize("redis_db", ["real"], indirect=True)
def test_a_card_that_is_not_utf8_spares_the_others(redis_db: redis.Redis, named: Any) -> None:
    for pk in range(2):
        presence.record_user(named(pk))
    redis_db.hset(conf.keys().cards, "1", b'{"name": "\xff\xfe"}')
    assert [member.name for member in presence.summary().members] == ["\ufffd\ufffd", "Person 0"]
