"""The site owner's "Online now" admin page and the samples behind its chart."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.utils.dateformat import format as format_date
from django.utils.timezone import localtime

from tests.conftest import NOW, BrowserClient, on_one_day
from whos_online import presence
from whos_online.contrib.admin import chart, stats
from whos_online.models import OnlineNow

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
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    (alice,) = people("alice")
    (bob,) = people("bob", email="hidden")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        prune()
        traveller.shift(60)
        presence.record_guest("203.0.113.1")
        presence.record_user(bob)
        prune()
        samples = stats.history()
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
        assert len(stats.history()) == 2


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_staff_see_members_hidden_ones_guests_peak_and_the_chart(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    (alice,) = people("alice")
    (shy,) = people("Shy", email="hidden")
    with time_machine.travel(on_one_day(NOW), tick=False) as traveller:
        presence.record_user(alice)
        presence.record_user(shy)
        prune()
        traveller.shift(60)
        presence.record_guest("203.0.113.1")
        prune()
        html = staff().get(PAGE).content.decode()
    assert "<h1>Online now</h1>" in html
    assert "Home</a> &rsaquo; Who&#x27;s online &rsaquo; Online now</div>" in html
    assert "4 users online: 3 members (1 hidden), 1 guest." in text(html)  # boss counts too
    assert "Active in the last 24 hours: 4 (members: 3, guests: 1)." in text(html)
    assert len(re.findall(r"<tr><td>\w{3} \d+ \w{3} \d{4}</td>", html)) == 1  # today
    change = f"/admin/auth/user/{shy.pk}/change/"
    assert f'<a href="{change}"><bdi>Shy</bdi></a> <em>(hidden)</em>' in html
    assert "<bdi>alice</bdi>" in html
    assert '<tr class="whos-online-online">' in html
    assert re.search(r"Most ever online: 4 users on \w+\.? \d+, \d{4} at \d\d:\d\d\.", text(html))
    assert '<svg class="whos-online-chart"' in html


def days_table(html: str) -> list[list[str]]:
    body = html.split('<table class="whos-online-days">')[1].split("</table>")[0]
    return [re.findall(r"<td>([^<]*)</td>", row) for row in body.split("<tr>")[2:]]


def test_the_numbers_of_a_known_day_agree_or_say_why_not(
    redis_db: redis.Redis, people: Any
) -> None:
    """carol came three days ago; today alice, bob and a guest came, and bob logged out."""
    alice, bob, carol = people("alice", "bob", "carol")

    def visit(user: Any = None) -> BrowserClient:
        client = BrowserClient(REMOTE_ADDR="203.0.113.9" if user is None else "127.0.0.1")
        if user is not None:
            client.force_login(user)
        client.get("/block/")
        return client

    with time_machine.travel(NOW - timedelta(days=3), tick=False) as traveller:
        visit(carol)
        traveller.move_to(NOW)
        visit(alice)
        visit()
        visit(bob).logout()
        html = staff().get(PAGE).content.decode()
    page = text(html)
    assert "3 users online: 2 members, 1 guest." in page  # alice and boss
    # bob logged out, and was active today all the same.
    assert "Active in the last 24 hours: 4 (members: 3, guests: 1)." in page
    day = [format_date(localtime(NOW - timedelta(days=n)), "D j M Y") for n in range(4)]
    assert days_table(html) == [  # from carol's day on, not a month of zeros
        [day[0], "3", "1", "4"],
        [day[1], "0", "0", "0"],
        [day[2], "0", "0", "0"],
        [day[3], "1", "0", "1"],
    ]


def test_a_site_nobody_visited_says_so_instead_of_a_table_of_zeros(
    redis_db: redis.Redis, rf: Any, people: Any
) -> None:
    """The view itself, without the middleware that would record its viewer."""
    request = rf.get(PAGE)
    (request.user,) = people("boss", is_staff=True)
    html = admin.site._registry[OnlineNow].changelist_view(request).render().content.decode()
    assert '<table class="whos-online-days">' not in html
    assert '<p class="whos-online-days-empty">No visitors recorded yet.</p>' in html


def test_the_chart_of_a_day(redis_db: redis.Redis, people: Any) -> None:
    """A sample every 30 minutes for 19.5 hours; at 15:15 in, five guests at once."""
    (alice,) = people("alice")
    start = NOW.replace(minute=15, second=0) - timedelta(hours=20)
    busiest = start + timedelta(hours=15)
    with time_machine.travel(start, tick=False) as traveller:
        for step in range(40):
            presence.record_user(alice)
            for guest in range(5 if step == 30 else 1):
                presence.record_guest(f"203.0.113.{guest + 1}")
            prune()
            traveller.shift(1800)
        html = staff().get(PAGE).content.decode()
    # Both series, drawn in colours of their own, neither on the chart's top edge.
    members = re.search(r'<polyline class="whos-online-members" points="([^"]+)"[^>]*>', html)
    guests = re.search(r'<polyline class="whos-online-guests" points="([^"]+)"[^>]*>', html)
    assert members and guests
    for line in (members, guests):
        ys = [float(point.split(",")[1]) for point in line.group(1).split()]
        assert len(ys) == 40 and min(ys) > chart.TOP + 10
    assert 'stroke="#2563eb"' in members.group(0) and 'stroke="#ea580c"' in guests.group(0)
    assert "members" in text(html.split("whos-online-legend")[1])
    # Titled with the axis's span, and why its busiest moment is below the page's peak.
    first, last = (localtime(start + timedelta(hours=h)).strftime("%H:%M") for h in (0, 19.5))
    assert f"<h2>Online counts from {first} to {last}</h2>" in html
    assert (
        "The chart shows the counts each time whos_online_prune ran; the most ever online "
        "is raised whenever the counts are read, so it can be higher than the chart's "
        "busiest moment."
    ) in text(html)
    # A gridline every hour of the 19.5, every other one labelled.
    assert html.count('class="whos-online-tick"') == 19
    labels = re.findall(r'class="whos-online-tick-label"[^>]*>(\d\d):(\d\d)<', html)
    assert len(labels) == 10 and {minute for _, minute in labels} == {"00"}
    hours = [int(hour) for hour, _ in labels]
    assert all((b - a) % 24 == 2 for a, b in zip(hours, hours[1:]))
    # The busiest moment marked, and every sample's counts on hover.
    at = localtime(busiest).strftime("%H:%M")
    assert (
        f'<g class="whos-online-peak"><title>Busiest: 6 online at {at} (1 member, 5 guests)</title>'
        in html
    )
    assert f"busiest: 6 online at {at}</text>" in html
    assert html.count("1 member, 1 guest</title>") == 39
    assert 'aria-label="Members and guests online, 40 samples"' in html
    # Alone now (the others left the window): singular forms.
    assert "1 user online: 1 member, 0 guests." in text(html)
    assert "Most ever online: 6 users on" in text(html) and ".." not in text(html)


def test_a_new_sites_first_samples_sit_on_an_hour_long_axis(redis_db: redis.Redis) -> None:
    # Half a minute off the 5-minute ticks, so the axis holds exactly 12 of them.
    with time_machine.travel(NOW.replace(second=30), tick=False) as traveller:
        prune()
        traveller.shift(60)
        prune()
        html = staff().get(PAGE).content.decode()
    points = re.search(r'<polyline class="whos-online-members" points="([^"]+)"', html)
    assert points
    xs = [float(point.split(",")[0]) for point in points.group(1).split()]
    right_edge, plot_width = chart.WIDTH - chart.RIGHT, chart.WIDTH - chart.LEFT - chart.RIGHT
    # The last minute of the hour up to the last sample, at the right edge.
    assert xs == pytest.approx([right_edge - plot_width / 60, right_edge], abs=0.1)
    assert html.count('class="whos-online-tick"') == 12  # every 5 minutes
    first, last = (localtime(NOW.replace(second=30) + timedelta(seconds=s)) for s in (-3540, 60))
    assert f"<h2>Online counts from {first:%H:%M} to {last:%H:%M}</h2>" in html


def test_before_two_samples_the_page_says_how_to_get_them(redis_db: redis.Redis) -> None:
    boss = staff()
    empty = boss.get(PAGE).content.decode()
    prune()
    one = boss.get(PAGE).content.decode()
    for html in (empty, one):
        assert '<div class="whos-online-chart-empty"' in html and "<svg class" not in html
        assert "<h2>Online counts, last 24 hours</h2>" in html
    assert "No samples yet: whos_online_prune records one each time cron runs it" in empty
    assert (
        "One sample so far: the chart draws its line from the second, which "
        "whos_online_prune records the next time cron runs it."
    ) in one


def test_the_page_is_listed_in_the_admin_index_for_staff(redis_db: redis.Redis) -> None:
    html = staff().get("/admin/").content.decode()
    assert f'href="{PAGE}"' in html
    row = html.split('<tr class="model-onlinenow">')[1].split("</tr>")[0]
    assert "add/" not in row and 'class="viewlink"' in row  # read-only: no "Add", no "Change"


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


@pytest.mark.parametrize("mode", ["exact", "approximate"])
def test_the_page_says_when_guests_are_counted_approximately(
    redis_db: redis.Redis, settings: Any, mode: str
) -> None:
    settings.WHOS_ONLINE_GUESTS = mode
    html = staff().get(PAGE).content.decode()
    assert ("Guests are counted approximately" in html) is (mode == "approximate")


def test_the_page_lists_500_members_and_counts_the_rest(
    redis_db: redis.Redis, django_user_model: Any
) -> None:
    users = django_user_model.objects.bulk_create(
        django_user_model(username=f"member{i}") for i in range(500)
    )
    for user in users:
        presence.record_user(user)
    html = staff().get(PAGE).content.decode()  # boss is the 501st
    assert "501 users online" in text(html)
    assert html.count('<tr class="whos-online-online">') == 500
    assert "and 1 more" in text(html)


@pytest.mark.parametrize(
    "fields, allowed",
    [
        ({"is_staff": True}, True),
        ({}, False),  # a member
        ({"is_staff": True, "is_active": False}, False),  # a former staff member
    ],
)
def test_only_active_staff_may_view_and_nobody_may_edit(
    rf: Any, people: Any, fields: dict[str, Any], allowed: bool
) -> None:
    """Asked directly, as an admin site that lets more people in than staff would ask."""
    page = admin.site._registry[OnlineNow]
    request = rf.get(PAGE)
    (request.user,) = people("someone", **fields)
    assert (page.has_module_permission(request), page.has_view_permission(request)) == (
        allowed,
        allowed,
    )
    assert (
        page.has_add_permission(request),
        page.has_change_permission(request),
        page.has_delete_permission(request),
    ) == (False, False, False)
    if not allowed:  # the page itself answers with the admin's login form
        response = page.changelist_view(request).render()
        assert "not authorized to access this page" in text(response.content.decode())


def test_the_admin_part_without_djangos_admin_fails_the_check(settings: Any) -> None:
    settings.INSTALLED_APPS = [
        app for app in settings.INSTALLED_APPS if app != "django.contrib.admin"
    ]
    with pytest.raises(SystemCheckError) as failed:
        call_command("check")
    assert "whos_online_admin.E001" in str(failed.value)
    assert 'Add "django.contrib.admin" to INSTALLED_APPS' in str(failed.value)
