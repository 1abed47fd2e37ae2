"""Two blocks on one page read as two: each names itself in a heading its landmark is
labelled by, and the stylesheet's link, written beside each block, comes once."""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

from tests.conftest import BrowserClient
from whos_online import presence

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.test_two_blocks")]

# A CMS page's shape: the page's room block above the site's, each with the style tag
# beside it, as a template whose <head> the site cannot reach would write them.
BOTH = {
    "django": engines["django"].from_string(
        "{% load whos_online %}<main>{% whos_online_style %}{% whos_here 'page' 7 %}</main>"
        "<footer>{% whos_online_style %}{% whos_online %}</footer>"
    ),
    "jinja2": engines["jinja2"].from_string(
        "<main>{{ whos_online_style() }}{{ whos_here('page', 7) }}</main>"
        "<footer>{{ whos_online_style() }}{{ whos_online() }}</footer>"
    ),
}


def page(request: HttpRequest, engine: str) -> HttpResponse:
    return HttpResponse(BOTH[engine].render({}, request))


urlpatterns = [path("<str:engine>/", page)]


def landmarks(html: str) -> dict[str, str]:
    """Each <section>'s class and the text of the heading its aria-labelledby names."""
    found = {}
    for css, label in re.findall(r'<section class="([\w-]+)" aria-labelledby="([\w-]+)"', html):
        heading = re.search(rf'<h2 class="[\w-]+" id="{label}">(.*?)</h2>', html)
        assert heading, label
        found[css] = heading[1]
    return found


@pytest.mark.parametrize("engine", list(BOTH))
def test_the_room_block_and_the_site_block_name_themselves_apart(
    redis_db: redis.Redis, people: Any, engine: str
) -> None:
    (alice,) = people("alice")
    presence.record_user(alice)
    presence.record_user(alice, room="page:7")
    html = BrowserClient().get(f"/{engine}/").content.decode()
    assert landmarks(html) == {
        "whos-here": "Reading this page",
        "whos-online": "Online on the site",
    }
    assert html.count('<link rel="stylesheet" href="/static/whos_online/whos_online.css">') == 1
    assert html.index("<link") < html.index("<section")
