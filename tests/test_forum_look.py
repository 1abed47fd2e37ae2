"""The block on a real forum's own pages, in Chromium: django-machina's layout and CSS.

tests/test_look.py judges the look on a page we wrote; here the pages are
machina's (its Bootstrap theme, its fonts, its scripts), with what a site adds
in tests/forum_templates: ``{% whos_here "topic" topic.pk %}`` under a topic,
``{% whos_online %}`` under the index's statistics and the stylesheet's one line
in the base template's head. Chromium asks for ``http://forum.test/...``;
Playwright answers from this process (tests.test_look's ``answerer``): pages
through Django's test client logged in as bob, static files as the finders find
them. Alice and a guest read the topic through their own clients first.

Without the stylesheet (its request refused, as if the line were not there)
the block must still read as a list. Screenshots go to a temporary folder, or
for the topic page to docs/ (forum-topic-*.png) with UPDATE_DOCS=1. Under tests.settings this module
collects nothing (``__test__``): tests/test_look.py runs it in a subprocess.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from django.conf import settings
from django.urls import reverse

from tests.conftest import BrowserClient
from tests.test_browser import (
    browser,  # noqa: F401 (the fixture, used by name below)
    check_contrast,
)
from tests.test_forum import board  # noqa: F401 (the fixture, used by name below)
from tests.test_look import (
    _orm_beside_playwright,  # noqa: F401 (autouse)
    answerer,
    screenshot,
)
from tests.test_rooms import logged_in

if TYPE_CHECKING:
    from pathlib import Path

    from playwright.sync_api import Locator, Page

__test__ = "machina" in settings.INSTALLED_APPS

pytestmark = [
    pytest.mark.browser,
    # Committed, so that the pages Playwright asks for (answered in its greenlet, on
    # a connection of their own) read the board and write bob's session unblocked.
    pytest.mark.django_db(transaction=True),
    pytest.mark.parametrize("redis_db", ["fake"], indirect=True),  # one look is enough
    pytest.mark.filterwarnings("ignore::DeprecationWarning:machina"),
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:machina"),
]

SITE = "http://forum.test"
GUEST = "203.0.113.7"


@pytest.fixture
def reading(board: dict[str, Any], people: Any, browser: Any) -> Iterator[Any]:  # noqa: F811
    """Bob's Chromium on the board, where alice and a guest read the first topic."""
    from machina.apps.forum_permission.models import ForumPermission, UserForumPermission

    for codename in ("can_see_forum", "can_read_forum"):  # guests may read this forum
        UserForumPermission.objects.create(
            forum=board["forum"],
            anonymous_user=True,
            permission=ForumPermission.objects.get_or_create(codename=codename)[0],
            has_perm=True,
        )
    alice, bob = people("alice", "bob")
    topic = board["urls"][0]
    assert logged_in(alice).get(topic).status_code == 200
    assert BrowserClient().get(topic, REMOTE_ADDR=GUEST).status_code == 200
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    page = context.new_page()
    page.route(f"{SITE}/**", answerer(logged_in(bob)))
    yield page, topic
    context.close()


def unstyled(page: Page) -> None:
    """The site without the stylesheet's line: its request is refused."""
    page.route("**/whos_online/whos_online.css", lambda route: route.abort())


def open_page(page: Page, path: str) -> None:
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.goto(SITE + path)
    page.wait_for_load_state("load")
    # machina's own theme is there: its navbar in Bootstrap's primary colour.
    navbar = page.locator("nav.navbar")
    assert navbar.evaluate("n => getComputedStyle(n).backgroundColor") != "rgba(0, 0, 0, 0)"
    assert all(url.endswith("whos_online.css") for url in failed), failed


def items(block: Locator) -> list[dict[str, float]]:
    return [box for box in (li.bounding_box() for li in block.locator("li").all()) if box]


def in_the_layout(page: Page, block: Locator, content: str) -> None:
    """Inside machina's main container, on the left edge of ``content``, apart from
    what comes before it (the container's child just above the block's)."""
    container = page.locator("#main_container").bounding_box()
    box, aligned = block.bounding_box(), page.locator(content).last.bounding_box()
    assert container and box and aligned
    assert (
        container["x"] <= box["x"]
        and box["x"] + box["width"] <= container["x"] + container["width"]
    )
    assert box["y"] + box["height"] <= container["y"] + container["height"]
    assert abs(box["x"] - aligned["x"]) <= 1
    above = block.evaluate(
        """b => { let e = b; while (e.parentElement.id !== "main_container") e = e.parentElement;
                  return e.previousElementSibling.getBoundingClientRect().bottom; }"""
    )
    assert above + 12 <= box["y"], (above, box)  # not stuck to it


def names_apart_on_one_line(block: Locator) -> None:
    first, second = items(block)
    assert first["y"] == second["y"] and first["x"] + first["width"] < second["x"]
    assert block.locator("li").first.evaluate("li => getComputedStyle(li, '::after').content") == (
        '","'
    )


def names_on_lines_of_their_own(block: Locator) -> None:
    first, second = items(block)
    assert first["y"] + first["height"] <= second["y"]
    assert block.locator("li").first.evaluate("li => getComputedStyle(li).display") == "list-item"


@pytest.mark.parametrize("styled", [True, False], ids=["styled", "unstyled"])
def test_the_topic_page_shows_who_is_reading_it_under_the_posts(
    reading: Any, styled: bool, tmp_path: Path
) -> None:
    page, topic = reading
    if not styled:
        unstyled(page)
    open_page(page, topic)
    block = page.locator("section.whos-here")
    said = " ".join(block.inner_text().split())
    assert said.startswith("Reading this page 3 here now: 2 members, 1 guest bob"), said
    assert [li.inner_text().strip(" ,") for li in block.locator("li").all()] == ["bob", "alice"]
    in_the_layout(page, block, ".post")
    if styled:
        names_apart_on_one_line(block)
        check_contrast(page, "section.whos-here")
    else:
        names_on_lines_of_their_own(block)
    screenshot(page, f"forum-topic-{'styled' if styled else 'unstyled'}.png", tmp_path)


@pytest.mark.parametrize("styled", [True, False], ids=["styled", "unstyled"])
def test_the_index_shows_who_is_online_under_its_statistics(
    reading: Any, styled: bool, tmp_path: Path
) -> None:
    page, _ = reading
    if not styled:
        unstyled(page)
    open_page(page, reverse("forum:index"))
    block = page.locator("section.whos-online")
    summary = " ".join(block.locator(".whos-online-summary").inner_text().split())
    assert summary == "3 users online: 2 members, 1 guest"
    assert [li.inner_text().strip(" ,") for li in block.locator("li").all()] == ["bob", "alice"]
    in_the_layout(page, block, ".forum-page-statistics .page-header")
    if styled:
        names_apart_on_one_line(block)
        check_contrast(page, "section.whos-online")
    else:
        names_on_lines_of_their_own(block)
    # Looked at, never in the docs (the topic page's are): always a temporary file.
    page.screenshot(path=str(tmp_path / "forum-index.png"), full_page=True)
