"""The block's look on a site that is not ours, in Chromium: with whos_online.css and without.

The page is a small gardening forum with its own layout, fonts and CSS (nothing
of the demo's), the block in its footer, as a site would add it. Chromium
asks for ``http://forum.test/...`` and Playwright answers each request from
this process: pages through Django's test client (middleware, templates, the
docs/howto/style.md's ``{% static %}`` line), static files as the staticfiles finders find
them. The members are recorded by the real API, two of them idle.

What a visitor would notice is asserted: with the stylesheet the names flow on
one line, each with a dot (a ring when idle) and a comma, avatars sized and
every text at 4.5:1 contrast or more; without it they are list items on lines
of their own. Both pages are screenshotted (docs/block-styled.png and
docs/block-unstyled.png with UPDATE_DOCS=1, a temporary folder otherwise).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
import time_machine
from django.conf import settings as django_settings
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

from tests.conftest import NOW, BrowserClient, passes_on_its_own_settings
from tests.test_browser import (
    browser,  # noqa: F401 (the fixture, used by name below)
    check_contrast,
)
from whos_online import presence

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

pytestmark = [
    pytest.mark.browser,
    pytest.mark.urls("tests.test_look"),
]
ONE_LOOK = pytest.mark.parametrize("redis_db", ["fake"], indirect=True)  # one is enough

ROOT = Path(__file__).resolve().parent.parent
SITE = "http://forum.test"
# Most recent first, as the block lists them; the last two were seen 7 minutes ago.
MEMBERS = ["rosa_gallica", "tomato_tim", "ياسمين", "fern", "compost-king", "marigold", "bob"]
IDLE = {"marigold", "bob"}

PAGE = engines["django"].from_string(
    """{% load static whos_online %}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Gardeners' Corner</title>
<style>
  body { margin: 0; background: #fff; color: #2b2b2b; font: 16px/1.45 "DejaVu Serif", serif; }
  header { background: #35613a; color: #fff; padding: .8rem 2rem; }
  header h1 { margin: 0; font-size: 1.4rem; }
  main, footer { max-width: 44rem; margin: 0 auto; padding: .5rem 2rem; }
  table { border-collapse: collapse; width: 100%; }
  td { border-bottom: 1px solid #e5e5e5; padding: .35rem .2rem; }
  footer { border-top: 3px solid #35613a; margin-top: 1rem; }
</style>
{% if styled %}<link rel="stylesheet" href="{% static 'whos_online/whos_online.css' %}">{% endif %}
</head>
<body>
<header><h1>Gardeners' Corner</h1></header>
<main>
  <h2>Latest topics</h2>
  <table>
    <tr><td>Blackspot on climbing roses</td><td>14 replies</td></tr>
    <tr><td>When to lift dahlia tubers?</td><td>6 replies</td></tr>
    <tr><td>Hot compost in winter</td><td>22 replies</td></tr>
  </table>
</main>
<footer>{% whos_online %}</footer>
</body>
</html>"""
)


def forum(request: HttpRequest) -> HttpResponse:
    return HttpResponse(PAGE.render({"styled": "styled" in request.GET}, request))


def avatar(request: HttpRequest, name: str) -> HttpResponse:
    """An initial on a colour of the name's own, as forums make default avatars."""
    hue = hashlib.sha256(name.encode()).digest()[0] * 360 // 256
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40">'
        f'<rect width="40" height="40" fill="hsl({hue} 45% 40%)"/>'
        '<text x="20" y="27" font-size="20" text-anchor="middle" fill="#fff" '
        f'font-family="sans-serif">{name[:1].upper()}</text></svg>'
    )
    return HttpResponse(svg, content_type="image/svg+xml")


urlpatterns = [path("", forum), path("avatars/<str:name>.svg", avatar)]


@pytest.fixture(scope="module", autouse=True)
def _orm_beside_playwright() -> Iterator[None]:
    """Playwright's sync API keeps an event loop in this thread, where Django is used
    synchronously all the same (no other task runs on that loop meanwhile)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "1")
        yield


def member_card(user: Any) -> dict[str, Any]:
    return {
        "name": user.username,
        "url": f"/members/{user.pk}/",
        "avatar": f"/avatars/{user.username}.svg",
    }


def answerer(client: BrowserClient) -> Any:
    """Answers the page's requests in this process: static files, or Django through ``client``."""

    def answer(route: Route) -> None:
        url = urlsplit(route.request.url)
        static = url.path.removeprefix(django_settings.STATIC_URL)
        if static != url.path:
            found = finders.find(static)
            route.fulfill(path=str(found)) if found else route.fulfill(status=404)
            return
        response = client.get(f"{url.path}?{url.query}")
        route.fulfill(
            status=response.status_code,
            content_type=response["Content-Type"],
            body=response.content,
        )

    return answer


@pytest.fixture
def forum_page(
    redis_db: Any,
    settings: Any,
    django_user_model: Any,
    browser: Any,  # noqa: F811 (the fixture imported above)
) -> Iterator[Page]:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_look.member_card"
    users = {name: django_user_model.objects.create(username=name) for name in MEMBERS}
    with time_machine.travel(NOW, tick=False) as traveller:
        # Oldest first, a second apart; all but the idle ones 7 minutes later.
        for second, name in enumerate(reversed(MEMBERS)):
            traveller.move_to(NOW + timedelta(seconds=second + (0 if name in IDLE else 420)))
            presence.record_user(users[name])
        for guest in range(4):
            presence.record_guest(f"203.0.113.{guest}")
        context = browser.new_context(viewport={"width": 900, "height": 620})
        page = context.new_page()
        page.route(f"{SITE}/**", answerer(BrowserClient()))
        yield page
        context.close()


def screenshot(page: Page, name: str, tmp_path: Path) -> None:
    target = ROOT / "docs" / name if os.environ.get("UPDATE_DOCS") else tmp_path / name
    page.screenshot(path=str(target), full_page=True)
    assert target.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def boxes(page: Page) -> list[dict[str, float]]:
    items = page.locator("footer .whos-online-members li")
    return [box for box in (item.bounding_box() for item in items.all()) if box]


def pseudo(page: Page, name: str, part: str, prop: str) -> str:
    """A computed style of a member's ::before or ::after."""
    item = page.locator("footer .whos-online-members li", has_text=name)
    return str(item.evaluate(f"li => getComputedStyle(li, '{part}').{prop}"))


@ONE_LOOK
def test_with_the_stylesheet_names_flow_with_dots_commas_and_sized_avatars(
    forum_page: Page, tmp_path: Path
) -> None:
    page = forum_page
    page.goto(f"{SITE}/?styled")
    block = page.locator("footer section.whos-online")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    items = boxes(page)
    assert len(items) == len(MEMBERS)
    # Names flow in lines of several, apart: none touches the next on its line.
    rows = [[box for box in items if round(box["y"]) == y] for y in {round(b["y"]) for b in items}]
    assert len(rows) <= 2
    for row in rows:
        assert all(a["x"] + a["width"] < b["x"] for a, b in zip(row, row[1:]))
    assert pseudo(page, "rosa_gallica", "::after", "content") == '","'
    assert pseudo(page, "bob", "::after", "content") == "none"  # the last one
    for language, comma in (("ar", "\u060c"), ("ja", "\u3001"), ("zh-hans", "\u3001")):
        page.evaluate(f"document.documentElement.lang = '{language}'")
        assert pseudo(page, "rosa_gallica", "::after", "content") == f'"{comma}"', language
    page.evaluate("document.documentElement.lang = 'en'")
    # A filled dot online, a ring idle: not told apart by colour alone.
    assert pseudo(page, "fern", "::before", "backgroundColor") == "rgb(21, 128, 61)"
    assert pseudo(page, "bob", "::before", "backgroundColor") == "rgba(0, 0, 0, 0)"
    assert pseudo(page, "bob", "::before", "borderTopWidth") == "2px"
    assert block.locator("li", has_text="bob").inner_text().strip() == "bob (idle)"
    for image in block.locator("img.whos-online-avatar").all():
        assert image.evaluate("img => [img.width, img.height, img.naturalWidth > 0]") == [
            20,
            20,
            True,
        ]
    contrasts = check_contrast(page, "footer section.whos-online")
    assert len(contrasts) >= 10, contrasts  # the summary, the names, "(idle)", the window...
    screenshot(page, "block-styled.png", tmp_path)


@ONE_LOOK
def test_without_it_the_block_reads_as_a_list_in_the_sites_own_style(
    forum_page: Page, tmp_path: Path
) -> None:
    page = forum_page
    page.goto(SITE + "/")
    assert page.locator("link[rel=stylesheet]").count() == 0
    items = boxes(page)
    # A list item each, one under the other: never run together.
    assert len(items) == len(MEMBERS)
    assert all(a["y"] + a["height"] <= b["y"] for a, b in zip(items, items[1:]))
    # A site's CSS that sets list items inline still shows a space between names.
    page.add_style_tag(content="footer li { display: inline; }")
    inline = boxes(page)
    assert inline[0]["y"] == inline[1]["y"] and inline[0]["x"] + inline[0]["width"] < inline[1]["x"]
    idle = page.locator("footer li", has_text="marigold")
    assert idle.inner_text().strip() == "marigold (idle)"
    assert page.locator("footer").inner_text().count("(idle)") == len(IDLE)
    screenshot(page, "block-unstyled.png", tmp_path)


def test_on_a_real_forum_the_block_fits_its_pages_with_and_without_the_stylesheet() -> None:
    """tests/test_forum_look.py needs django-machina's apps installed, so another process."""
    print(passes_on_its_own_settings("tests.settings_forum", "tests/test_forum_look.py"))


@ONE_LOOK
@pytest.mark.parametrize("width", [900, 390])  # a desktop, a phone
def test_the_third_party_override_keeps_the_block_in_the_apps_content_column(
    redis_db: Any,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    tmp_path: Path,
    browser: Any,  # noqa: F811 (the fixture imported above)
    width: int,
) -> None:
    """docs/howto/third-party-templates.md's override on the stand-in ticket app: the block
    lines up with the page's heading, in the footer whose rule runs the full width."""
    from tests.test_docs import override, snippets, ticket_pages

    ticket_pages(monkeypatch, settings, tmp_path)
    (plain, _members_only) = snippets("howto/third-party-templates.md", "django")
    override(tmp_path, plain)
    context = browser.new_context(viewport={"width": width, "height": 700})
    page = context.new_page()
    page.route(f"{SITE}/**", answerer(BrowserClient()))  # a guest: the block is everyone's
    page.goto(f"{SITE}/tickets/")
    heading = page.locator("main h1").bounding_box()
    block = page.locator("footer section.whos-online").bounding_box()
    assert heading and block and heading["x"] > 0
    assert (block["x"], block["width"]) == (heading["x"], heading["width"])
    screenshot(page, f"tickets-{width}.png", tmp_path)
    context.close()
