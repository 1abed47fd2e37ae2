"""The site owner's "Online now" admin page and the samples behind its chart."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.core.management import call_command

from tests.conftest import NOW, BrowserClient
from whos_online import presence

pytestmark = pytest.mark.django_db

PAGE = "/admin/whos_online/onlinenow/"


def prune() -> None:
    call_command("whos_online_prune", stdout=StringIO())


def staff() -> BrowserClient:
    client = BrowserClient()
    client.force_login(User.objects.create_user("boss", is_staff=True))
    return client


def test_prune_samples_the_counts_for_the_chart(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_IS_HIDDEN = "tests.test_hidden.wants_privacy"
    (alice,) = people("alice")
    (bob,) = people("bob", email="hidden")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        prune()
        traveller.shift(60)
        presence.record_guest("203.0.113.1")
        presence.record_user(bob)
        prune()
        samples = presence.history()
    assert [(s.users, s.guests) for s in samples] == [(1, 0), (2, 1)]
    assert samples[1].at.timestamp() - samples[0].at.timestamp() == 60


def test_history_keeps_a_day(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False) as traveller:
        prune()
        traveller.shift(12 * 3600)
        prune()
        traveller.shift(13 * 3600)
        prune()
        assert len(presence.history()) == 2


def test_staff_see_members_hidden_ones_guests_peak_and_the_chart(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_IS_HIDDEN = "tests.test_hidden.wants_privacy"
    (alice,) = people("alice")
    (shy,) = people("shy", first_name="Shy", email="hidden")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        presence.record_user(shy)
        prune()
        traveller.shift(60)
        presence.record_guest("203.0.113.1")
        prune()
        html = staff().get(PAGE).content.decode()
    assert "Online now" in html
    assert "4 online: 3 members (1 hidden) and 1 guests." in html  # boss counts too
    change = f"/admin/auth/user/{shy.pk}/change/"
    assert f'<a href="{change}"><bdi>Shy</bdi></a> <em>(hidden)</em>' in html
    assert "<bdi>alice</bdi>" in html
    assert '<tr class="whos-online-online">' in html
    assert "Most ever online: 4 on" in html
    assert '<svg class="whos-online-chart"' in html
    assert html.count("<polyline") == 2


def test_before_any_sample_the_page_says_how_to_get_one(redis_db: redis.Redis) -> None:
    html = staff().get(PAGE).content.decode()
    assert "No samples yet" in html and "whos-online-chart" not in html


def test_the_page_is_listed_in_the_admin_index_for_staff(redis_db: redis.Redis) -> None:
    html = staff().get("/admin/").content.decode()
    assert f'href="{PAGE}"' in html
    assert "add/" not in html.split(PAGE)[1][:200]  # read-only: no "Add" link


def test_not_for_members_who_are_not_staff(redis_db: redis.Redis) -> None:
    client = BrowserClient()
    client.force_login(User.objects.create_user("alice"))
    response = client.get(PAGE)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert BrowserClient().get(PAGE).status_code == 302


def test_redis_down_says_so_and_is_no_error(dead_redis: None) -> None:
    response = staff().get(PAGE)
    assert response.status_code == 200
    assert "Redis is unavailable" in response.content.decode()


def test_staff_see_the_page_each_member_was_last_on_when_pages_are_tracked(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_TRACK_PAGES = True
    client = BrowserClient()
    client.force_login(User.objects.create_user("alice"))
    client.get("/block/")
    html = staff().get(PAGE).content.decode()
    assert "<th>Page</th>" in html and "<code>/block/</code>" in html
    block = client.get("/block/").content.decode()  # alice is no staff
    assert "/block/" not in block.split("<section")[1]
