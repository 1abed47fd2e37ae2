"""docs/howto/cms-pages.md on Wagtail itself: a site as ``wagtail start`` makes it, the
how-to's two settings and home page template word for word (tests/settings_wagtail.py),
real pages with Wagtail's view restrictions in the test database, and the admin menu.

Run with ``nox -s wagtail`` (or ``python -m pytest --ds tests.settings_wagtail
tests/test_wagtail.py`` with the ``wagtail`` dependency group installed); under
tests.settings this module collects nothing (``__test__``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.conf import settings

from tests import online_now
from tests.conftest import BrowserClient
from tests.test_rooms import listed, logged_in

__test__ = "wagtail" in settings.INSTALLED_APPS

pytestmark = pytest.mark.django_db
STAFF_PAGE = "/django-admin/whos_online/onlinenow/"


@pytest.fixture
def pages(redis_db: Any) -> dict[str, Any]:
    """The home page and four under it: public, for members, for a group, behind a password."""
    from django.contrib.auth.models import Group
    from wagtail.models import Page, PageViewRestriction, Site

    from tests.wagtail_home.models import HomePage

    home = Page.get_first_root_node().add_child(instance=HomePage(title="Home", slug="garden"))
    Site.objects.update(root_page=home)
    made = {"home": home}
    for slug in ("about", "members", "agents", "secret"):
        made[slug] = home.add_child(instance=HomePage(title=slug.title(), slug=slug))
    PageViewRestriction.objects.create(page=made["members"], restriction_type="login")
    agents = PageViewRestriction.objects.create(page=made["agents"], restriction_type="groups")
    agents.groups.set([Group.objects.create(name="Agents")])
    made["password"] = PageViewRestriction.objects.create(
        page=made["secret"], restriction_type="password", password="rose"
    )
    return made


def room(page: Any) -> str:
    return f"wagtailcore.page:{page.pk}"


def here(html: str) -> list[str]:
    """Who the page's room block lists ([] for no block)."""
    block = re.search(r'<section class="whos-here".*?</section>', html, re.S)
    return listed(block[0]) if block else []


def test_a_reader_is_listed_in_the_pages_room_and_leaves_it_for_the_next_page(
    pages: dict[str, Any], people: Any
) -> None:
    (alice,) = people("alice")
    reader = logged_in(alice)
    html = reader.get("/about/").content.decode()
    assert "<h1>About</h1>" in html and "Reading this page" in html
    assert here(html) == ["alice"]
    guest = " ".join(BrowserClient().get("/about/").content.decode().split())
    assert "2 here now: 1 member, 1 guest" in guest and here(guest) == ["alice"]
    reader.get("/")  # one page's room at a time
    assert online_now.user_count(room=room(pages["about"])) == 0
    assert online_now.user_count(room=room(pages["home"])) == 1


def test_a_login_or_group_restricted_page_is_read_and_listed_by_whom_wagtail_shows_it(
    pages: dict[str, Any], people: Any
) -> None:
    from django.contrib.auth.models import Group

    bob, agent = people("bob", "agent")
    agent.groups.add(Group.objects.get(name="Agents"))
    assert BrowserClient().get("/members/").status_code == 302  # Wagtail's login redirect
    assert online_now.guest_count(room=room(pages["members"])) == 0
    assert here(logged_in(bob).get("/members/").content.decode()) == ["bob"]
    assert logged_in(bob).get("/agents/").status_code == 302  # not in the group
    assert here(logged_in(agent).get("/agents/").content.decode()) == ["agent"]
    assert online_now.user_count(room=room(pages["agents"])) == 1  # bob was put in no room

    from whos_online.contrib.wagtail.pages import access

    assert access(bob, room(pages["agents"])) is None  # what a socket to the room is told
    assert access(agent, room(pages["agents"])) == "join"


def test_nobody_shown_a_password_form_or_the_page_behind_it_is_listed(
    pages: dict[str, Any], people: Any
) -> None:
    from django.urls import reverse

    reader = logged_in(*people("alice"))
    form = reader.get("/secret/").content.decode()
    assert 'name="password"' in form
    restriction, secret = pages["password"], pages["secret"]
    unlock = reverse("wagtailcore_authenticate_with_password", args=[restriction.pk, secret.pk])
    reader.post(unlock, {"password": "rose", "return_url": "/secret/"})
    html = reader.get("/secret/").content.decode()
    assert "<h1>Secret</h1>" in html and "whos-here" not in html  # the page, no room block
    assert online_now.user_count(room=room(secret)) == 0
    assert "<bdi>alice</bdi>" in html  # the site's block, in the base's footer


def test_the_admin_menu_has_online_now_for_staff_only(pages: dict[str, Any], people: Any) -> None:
    from django.contrib.auth.models import Group

    (boss,) = people("boss", is_staff=True, is_superuser=True)
    (editor,) = people("editor")
    editor.groups.add(Group.objects.get(name="Editors"))  # Wagtail's own: into its admin
    staff = logged_in(boss).get("/admin/").content.decode()
    assert "Online now" in staff and STAFF_PAGE in staff
    assert logged_in(boss).get(STAFF_PAGE).status_code == 200
    page = logged_in(editor).get("/admin/")
    assert page.status_code == 200 and STAFF_PAGE not in page.content.decode()


def test_page_room_alone_records_nobody_shown_the_password_form(
    pages: dict[str, Any], people: Any, settings: Any
) -> None:
    """Without the policy a page's room is open, so it is page_room that keeps whoever
    is shown the form out; once past the password, the reader is listed."""
    from django.urls import reverse

    del settings.WHOS_ONLINE_ACCESS
    reader = logged_in(*people("alice"))
    reader.get("/secret/")
    assert online_now.user_count(room=room(pages["secret"])) == 0
    restriction, secret = pages["password"], pages["secret"]
    unlock = reverse("wagtailcore_authenticate_with_password", args=[restriction.pk, secret.pk])
    reader.post(unlock, {"password": "rose", "return_url": "/secret/"})
    assert here(reader.get("/secret/").content.decode()) == ["alice"]
