"""Crawlers, empty User-Agents, HEAD requests and prefetches are no guests."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.http import HttpRequest

from tests import online_now
from tests.conftest import BrowserClient, RoundTrips, names

pytestmark = pytest.mark.django_db

GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
BINGBOT = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36"  # noqa: E501
CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36"  # noqa: E501


def only_staff_tools(request: HttpRequest) -> bool:
    """A site's own filter: its uptime checker is a bot, everything else is a visitor."""
    return request.headers.get("User-Agent", "").startswith("uptime-checker")


@pytest.mark.parametrize(
    "headers",
    [
        {"User-Agent": GOOGLEBOT},
        {"User-Agent": BINGBOT},
        {"User-Agent": "curl/8.14.1"},
        {"User-Agent": "python-requests/2.32.3"},
        {"User-Agent": ""},
        {"User-Agent": "   "},
        {"User-Agent": CHROME, "Sec-Purpose": "prefetch;prerender"},
        {"User-Agent": CHROME, "Purpose": "prefetch"},
        {"User-Agent": CHROME, "X-Moz": "prefetch"},
        {"User-Agent": CHROME, "X-Purpose": "preview"},
    ],
    ids=[
        "googlebot",
        "bingbot",
        "curl",
        "requests",
        "empty",
        "blank",
        "prerender",
        "purpose",
        "x-moz",
        "safari-preview",
    ],
)
def test_not_a_guest_and_no_cookie(round_trips: RoundTrips, headers: dict[str, str]) -> None:
    response = BrowserClient().get("/", headers=headers)
    assert response.status_code == 200
    assert round_trips.count == 0  # not even a write that a later prune would undo
    assert online_now.guest_count() == 0
    # A cookie on a prefetch would hide the real visit that follows it.
    assert "online" not in response.cookies


def test_head_is_not_a_visit(redis_db: redis.Redis) -> None:
    assert BrowserClient().head("/").status_code == 200
    assert online_now.guest_count() == 0


def test_a_real_browser_after_its_prefetch_is_counted(redis_db: redis.Redis) -> None:
    client = BrowserClient()
    client.get("/", headers={"User-Agent": CHROME, "Sec-Purpose": "prefetch"})
    client.get("/", headers={"User-Agent": CHROME})
    assert online_now.guest_count() == 1


def test_members_are_recorded_whatever_their_user_agent(redis_db: redis.Redis, people: Any) -> None:
    (alice,) = people("alice")
    client = BrowserClient()
    client.force_login(alice)
    client.get("/", headers={"User-Agent": GOOGLEBOT})
    assert names(online_now.online_users()) == ["alice"]


def test_the_filter_is_pluggable_by_dotted_path(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_IS_BOT = "tests.test_bots.only_staff_tools"
    BrowserClient().get("/", headers={"User-Agent": GOOGLEBOT}, REMOTE_ADDR="203.0.113.1")
    BrowserClient().get("/", headers={"User-Agent": "uptime-checker/1"}, REMOTE_ADDR="203.0.113.2")
    assert online_now.guest_count() == 1


def test_the_filter_can_be_a_callable_or_off(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_IS_BOT = only_staff_tools
    BrowserClient().get("/", headers={"User-Agent": "uptime-checker/1"}, REMOTE_ADDR="203.0.113.1")
    assert online_now.guest_count() == 0
    settings.WHOS_ONLINE_IS_BOT = None
    BrowserClient().get("/", headers={"User-Agent": ""}, REMOTE_ADDR="203.0.113.2")
    assert online_now.guest_count() == 1


@pytest.mark.parametrize("padding, counted", [(505, False), (506, True)])
def test_only_the_first_512_characters_of_a_user_agent_are_matched(
    redis_db: redis.Redis, padding: int, counted: bool
) -> None:
    # "bingbot" ends at character 512, or at 513 where the cut leaves "bingbo"
    BrowserClient().get("/", headers={"User-Agent": "x" * padding + "bingbot"})
    assert online_now.guest_count() == int(counted)


def test_the_filter_is_asked_once_per_request_even_when_the_page_shows_the_block(
    redis_db: redis.Redis, settings: Any
) -> None:
    asked: list[str] = []

    def every_agent_is_a_bot(request: HttpRequest) -> bool:
        asked.append(request.path)
        return True

    settings.WHOS_ONLINE_IS_BOT = every_agent_is_a_bot
    response = BrowserClient().get("/block/", REMOTE_ADDR="203.0.113.7")
    assert "0 users online" in response.content.decode()
    assert asked == ["/block/"]
