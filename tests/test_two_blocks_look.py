"""Two blocks on one page, in Chromium: a page's room block above the site's block, as
a CMS page shows them, styled (``{% whos_online_style %}`` in the body, where a site
whose base fills the head itself can write it) and unstyled, at desktop and phone width.

What a visitor would notice is asserted: each block is a landmark named by its own
visible heading, the two headings differ, and with the stylesheet the room block sits
on a tinted panel the site block has not, every text at 4.5:1 or more; axe-core finds
no violation on the page. The four pages
are screenshotted (docs/two-blocks-*.png with UPDATE_DOCS=1, a temporary folder
otherwise).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import time_machine
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

from tests.conftest import NOW, BrowserClient
from tests.test_browser import (
    browser,  # noqa: F401 (the fixture, used by name below)
    check_contrast,
)
from tests.test_look import (
    SITE,
    _orm_beside_playwright,  # noqa: F401 (the fixture, autouse)
    answerer,
    avatar,
    screenshot,
)
from whos_online import presence

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.urls("tests.test_two_blocks_look"),
    pytest.mark.parametrize("redis_db", ["fake"], indirect=True),  # one look is enough
]

ON_SITE = ["rosa_gallica", "tomato_tim", "fern", "compost-king", "marigold"]
READING = ["fern", "rosa_gallica"]
WIDTHS = {"desktop": 900, "phone": 390}

PAGE = engines["django"].from_string(
    """{% load whos_online %}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Blackspot on climbing roses</title>
<style>
  body { margin: 0; background: #fff; color: #2b2b2b; font: 16px/1.45 "DejaVu Serif", serif; }
  header { background: #35613a; color: #fff; padding: .8rem 1.5rem; }
  header p { margin: 0; font-weight: bold; }
  main, footer { max-width: 44rem; margin: 0 auto; padding: .5rem 1.5rem; }
  footer { margin-top: 1rem; }
</style>
</head>
<body>
{% if styled %}{% whos_online_style %}{% endif %}
<header><p>Gardeners' Corner</p></header>
<main>
  <h1>Blackspot on climbing roses</h1>
  <p>My 'New Dawn' has black spots on its lower leaves since the wet spell. Should I
  strip them, or spray first? It flowered well in June.</p>
  {% whos_here "page" 7 %}
</main>
<footer>{% whos_online %}</footer>
</body>
</html>"""
)


# The recipes' other shape: the room block ends the post, the site block starts the footer,
# and neither parent adds any space of its own.
BARE_PARENTS = engines["django"].from_string(
    """{% load whos_online %}<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>A post</title>
<style>body { margin: 0; font: 16px/1.45 serif; } .post, .site-footer { margin: 0; padding: 0; }</style>
</head>
<body>
{% whos_online_style %}
<div class="post"><h1>Blackspot on climbing roses</h1>{% whos_here "page" 7 %}</div>
<div class="site-footer">{% whos_online %}</div>
</body>
</html>"""
)


def rose_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(PAGE.render({"styled": "styled" in request.GET}, request))


def bare_parents(request: HttpRequest) -> HttpResponse:
    return HttpResponse(BARE_PARENTS.render({}, request))


urlpatterns = [
    path("", rose_page),
    path("bare/", bare_parents),
    path("avatars/<str:name>.svg", avatar),
]


@pytest.fixture
def both_blocks(
    redis_db: Any,
    settings: Any,
    django_user_model: Any,
    browser: Any,  # noqa: F811 (the fixture imported above)
    request: pytest.FixtureRequest,
) -> Iterator[Page]:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_look.member_card"
    users = {name: django_user_model.objects.create(username=name) for name in ON_SITE}
    with time_machine.travel(NOW, tick=False) as traveller:
        for second, name in enumerate(reversed(ON_SITE)):
            traveller.move_to(NOW + timedelta(seconds=second))
            presence.record_user(users[name])
            if name in READING:
                presence.record_user(users[name], room="page:7")
        for guest in range(3):
            presence.record_guest(f"203.0.113.{guest}")
        presence.record_guest("203.0.113.0", room="page:7")
        width = WIDTHS[request.node.callspec.params["width"]]
        context = browser.new_context(viewport={"width": width, "height": 700})
        page = context.new_page()
        page.route(f"{SITE}/**", answerer(BrowserClient()))
        yield page
        context.close()


def no_axe_violation(page: Page) -> None:
    """axe-core's rules (WCAG A and AA and its best practices) on the whole page."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def named_landmarks(page: Page) -> dict[str, str]:
    """Each block's accessible name, as a screen reader's list of regions gives it."""
    names = {}
    for css in ("whos-here", "whos-online"):
        section = page.get_by_role("region", name=page.locator(f"section.{css} h2").inner_text())
        assert section.get_attribute("class") == css
        names[css] = section.locator("h2").inner_text()
    return names


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_two_blocks_are_told_apart_with_the_stylesheet(
    both_blocks: Page, tmp_path: Path, width: str
) -> None:
    page = both_blocks
    page.goto(f"{SITE}/?styled")
    assert page.locator("body > link[rel=stylesheet]").count() == 1  # in the body, applied
    assert named_landmarks(page) == {
        "whos-here": "Reading this page",
        "whos-online": "Online on the site",
    }
    here, site = page.locator("section.whos-here"), page.locator("section.whos-online")
    style = (
        "el => { const s = getComputedStyle(el); return [s.backgroundColor, s.borderLeftWidth]; }"
    )
    assert here.evaluate(style) == ["rgb(239, 246, 255)", "4px"]
    assert site.evaluate(style) == ["rgba(0, 0, 0, 0)", "0px"]
    for block in ("section.whos-here", "section.whos-online"):
        check_contrast(page, block)
    # Neither runs off a phone's screen.
    for block in (here, site):
        box = block.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTHS[width]
    no_axe_violation(page)
    screenshot(page, f"two-blocks-{width}-styled.png", tmp_path)


@pytest.mark.parametrize("width", list(WIDTHS))
def test_unstyled_each_block_still_says_which_it_is(
    both_blocks: Page, tmp_path: Path, width: str
) -> None:
    page = both_blocks
    page.goto(SITE + "/")
    assert page.locator("link[rel=stylesheet]").count() == 0
    assert named_landmarks(page) == {
        "whos-here": "Reading this page",
        "whos-online": "Online on the site",
    }
    # The headings are as visible as the page's own h2s would be.
    for heading in page.locator("section h2").all():
        assert heading.is_visible()
    no_axe_violation(page)
    screenshot(page, f"two-blocks-{width}-unstyled.png", tmp_path)


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_two_blocks_keep_apart_in_parents_that_add_no_space(
    both_blocks: Page, tmp_path: Path, width: str
) -> None:
    page = both_blocks
    page.goto(f"{SITE}/bare/")
    here = page.locator("section.whos-here").bounding_box()
    site = page.locator("section.whos-online").bounding_box()
    assert here is not None and site is not None
    assert site["y"] - (here["y"] + here["height"]) == 16  # 1em: the panel stands clear
    screenshot(page, f"two-blocks-{width}-bare-parents.png", tmp_path)
