"""The live block: its JSON endpoint, the tag's ``live=`` option and the static script."""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote, unquote

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.core.exceptions import ImproperlyConfigured
from django.template import engines
from django.urls import include, path, set_script_prefix, set_urlconf

from tests import online_now
from tests.conftest import BrowserAsyncClient, BrowserClient, names
from tests.test_middleware import async_get
from whos_online import presence
from whos_online.rendering.announcements import SHOWN_HEADER

pytestmark = pytest.mark.django_db

POLL = {"X-Whos-Online": "poll"}


def member(name: str, **fields: Any) -> BrowserClient:
    client = BrowserClient()
    client.force_login(User.objects.create_user(name, **fields))
    return client


def test_endpoint_gives_counts_members_peak_and_the_block(redis_db: redis.Redis) -> None:
    member("alice").get("/")
    member("bob").get("/")
    response = BrowserClient().get("/whos-online/", headers=POLL)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    data = json.loads(response.content)
    assert [m["name"] for m in data["members"]] == ["bob", "alice"]
    assert set(data["members"][0]) == {"pk", "name", "url", "avatar", "status", "hidden"}
    assert (data["users"], data["guests"], data["total"], data["more"]) == (2, 0, 2, 0)
    assert data["peak"]["count"] == 2 and data["peak"]["at"].endswith("+00:00")
    assert data["available"] is True and data["window_minutes"] == 10
    assert "<bdi>bob</bdi></li>\n<li" in data["html"]
    assert "data-whos-online" not in data["html"]  # the page's block already polls


def test_only_the_browser_keeps_it_and_revalidates_by_etag(redis_db: redis.Redis) -> None:
    member("alice").get("/")
    first = BrowserClient().get("/whos-online/", headers=POLL)
    assert first["Cache-Control"] == "private, no-cache"  # per viewer: staff see hidden members
    etag = first["ETag"]
    again = BrowserClient().get("/whos-online/", headers={**POLL, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    member("bob").get("/")
    changed = BrowserClient().get("/whos-online/", headers={**POLL, "If-None-Match": etag})
    assert changed.status_code == 200 and changed["ETag"] != etag
    assert [m["name"] for m in json.loads(changed.content)["members"]] == ["bob", "alice"]


@pytest.mark.parametrize("handler", ["WSGI", "ASGI"])
def test_a_guest_poll_loads_no_session(
    redis_db: redis.Redis, django_assert_num_queries: Any, handler: str
) -> None:
    member("alice").get("/")
    with django_assert_num_queries(0):
        if handler == "ASGI":
            response = async_get(BrowserAsyncClient(), "/whos-online/", headers=POLL)
        else:
            response = BrowserClient().get("/whos-online/", headers=POLL)
    assert "Vary" not in response  # the session was never read, so nothing varies by cookie
    assert [m["name"] for m in json.loads(response.content)["members"]] == ["alice"]


def test_list_limit_and_hidden_members_are_respected(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_LIST_LIMIT = 1
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    member("Shy", email="hidden").get("/")
    member("alice").get("/")
    member("bob").get("/")
    data = json.loads(BrowserClient().get("/whos-online/", headers=POLL).content)
    assert [m["name"] for m in data["members"]] == ["bob"]
    assert data["more"] == 1  # alice; shy counts as hidden
    assert (data["users"], data["hidden"]) == (3, 1)
    assert "Shy" not in json.dumps(data)
    settings.WHOS_ONLINE_LIST_LIMIT = 10
    staff = json.loads(member("admin", is_staff=True).get("/whos-online/", headers=POLL).content)
    hidden = [m["name"] for m in staff["members"] if m["hidden"]]
    assert hidden == ["Shy"]
    assert "<bdi>Shy</bdi> (hidden)" in staff["html"]


class Poller:
    """A polling block, as live.js runs it: each poll sends the members it showed."""

    def __init__(self, shown: str = "") -> None:
        self.client, self.shown = BrowserClient(), shown

    def poll(self) -> str | None:
        headers = {**POLL, SHOWN_HEADER: self.shown} if self.shown else POLL
        data = json.loads(self.client.get("/whos-online/", headers=headers).content)
        cards = [[m["pk"], m["name"], m["status"]] for m in data["members"]]
        self.shown = "" if data["more"] else quote(json.dumps(cards))
        said: str | None = data.get("announce")
        return said


def test_a_poll_says_what_changed_since_the_members_its_block_showed(
    redis_db: redis.Redis, settings: Any
) -> None:
    block = Poller()
    with time_machine.travel(datetime(2026, 5, 1, 12, tzinfo=timezone.utc), tick=False) as clock:
        alice, bob = member("alice"), member("bob")
        alice.get("/")
        bob.get("/")
        assert block.poll() is None  # the first: nothing it showed, nothing to say
        assert block.poll() is None  # nothing changed
        bob.logout()
        assert block.poll() == "bob left."
        member("carol").get("/")
        member("dan").get("/")
        assert block.poll() == "2 people joined."
        clock.shift(200)
        bob.force_login(User.objects.get(username="bob"))
        bob.get("/")
        clock.shift(200)  # alice, carol and dan seen 400 s ago; bob 200 s ago
        assert block.poll() == "bob joined. 3 people are idle."
        alice.get("/")
        assert block.poll() == "alice is back."
        # Another viewer's poll, with nothing shown before, says nothing.
        assert Poller().poll() is None


def rendered_shown(page: str) -> str:
    """The rendered live block's ``data-whos-online-shown``, URL-encoded as live.js does."""
    found = re.search(r' data-whos-online-shown="([^"]*)"', page)
    return quote(html.unescape(found.group(1)), safe="!'()*~") if found else ""


def test_the_first_poll_says_what_changed_since_the_page_was_rendered(
    redis_db: redis.Redis,
) -> None:
    bob_name = 'Bob "B" <&> 100%'  # a name the attribute escapes and the URL encodes
    alice, bob = member("alice"), member(bob_name)
    bob.get("/")
    shown = rendered_shown(alice.get("/live-block/").content.decode())
    assert len(shown) <= 8000 and json.loads(unquote(shown)) == [
        [str(User.objects.get(username="alice").pk), "alice", "online"],
        [str(User.objects.get(username=bob_name).pk), bob_name, "online"],
    ]
    bob.logout()
    assert Poller(shown).poll() == f"{bob_name} left."


def percent_name(user: Any) -> dict[str, Any]:
    return {"name": "%" * 150}  # 450 characters URL-encoded


@pytest.mark.parametrize(
    "setting, value", [("WHOS_ONLINE_LIST_LIMIT", 17), ("WHOS_ONLINE_MEMBER_CARD", percent_name)]
)
def test_a_cut_or_too_long_list_carries_nothing_shown(
    redis_db: redis.Redis, settings: Any, setting: str, value: Any
) -> None:
    """18 members: a list of 17 drops and takes names with the cut; 18 such names pass
    the header's 8,000 characters URL-encoded (as JSON, 3,000). Nothing to say, as for
    a poll of either."""
    setattr(settings, setting, value)
    for number in range(17):
        member(f"member{number}").get("/")
    page = member("erin").get("/live-block/").content.decode()
    assert 'data-whos-online-url="/whos-online/"' in page
    assert "data-whos-online-shown" not in page


@pytest.mark.parametrize("over", [0, 1])
def test_a_block_carries_what_it_shows_while_the_header_fits_to_the_character(
    redis_db: redis.Redis, settings: Any, over: int
) -> None:
    """42 names of one non-ASCII, one reserved and unreserved characters (8, 3 and 1 encoded:
    é is \\u00e9 in ASCII JSON), the last sized for live.js's value to be 8,000 characters,
    or 8,001."""
    names = {pk: "é%" + "'" * 140 for pk in range(100, 142)}
    cards = [[str(pk), name, "online"] for pk, name in names.items()]
    encoded = len(quote(json.dumps(cards, separators=(",", ":")), safe="!'()*~"))
    names[141] = "é%" + "'" * (140 + 8000 + over - encoded)  # 31 + over
    settings.WHOS_ONLINE_MEMBER_CARD = lambda user: {"name": names[user.pk]}
    for pk in names:
        presence.record_user(SimpleNamespace(pk=pk, is_staff=False))
    block = engines["django"].from_string("{% load whos_online %}{% whos_online live=30 %}")
    assert len(rendered_shown(block.render({}))) == (0 if over else 8000)


def test_a_poll_says_nothing_for_a_list_cut_at_its_limit_or_a_bad_header(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_LIST_LIMIT = 1
    member("alice").get("/")
    block = Poller()
    assert block.poll() is None
    member("bob").get("/")  # bob replaces alice in the list of one
    assert block.poll() is None
    settings.WHOS_ONLINE_LIST_LIMIT = 10  # uncut: each header is read, and found bad
    deep = "[" * 4000 + "]" * 4000  # too deep for Python's JSON parser
    for bad in ["[1,2]", "%7B", "nonsense", quote(json.dumps([[1, "x", "online"]] * 400)), deep]:
        response = BrowserClient().get("/whos-online/", headers={**POLL, SHOWN_HEADER: bad})
        assert response.status_code == 200 and "announce" not in json.loads(response.content)


def test_polls_are_not_visits(redis_db: redis.Redis) -> None:
    client = member("alice")
    presence.forget_user(User.objects.get(username="alice"))
    response = client.get("/whos-online/", headers=POLL)
    assert online_now.online_users() == [] and "online" not in response.cookies
    client.get("/")  # a page view is
    assert names(online_now.online_users()) == ["alice"]


def test_redis_down_is_a_200_with_the_unavailable_block(dead_redis: None) -> None:
    response = BrowserClient().get("/whos-online/", headers=POLL)
    data = json.loads(response.content)
    assert response.status_code == 200 and data["available"] is False
    assert "unavailable" in data["html"] and "members" not in data


def test_only_get(redis_db: redis.Redis) -> None:
    assert BrowserClient().post("/whos-online/").status_code == 405


def test_live_tag_adds_the_polling_attributes_and_a_static_script(
    redis_db: redis.Redis,
) -> None:
    html = BrowserClient().get("/live-block/").content.decode()
    assert 'data-whos-online-url="/whos-online/"' in html
    assert 'data-whos-online-refresh="30"' in html
    assert '<script src="/static/whos_online/live.js" defer></script>' in html
    assert "<script>" not in html  # nothing inline: strict CSP sites can use it
    assert finders.find("whos_online/live.js")


def test_the_live_url_follows_the_sites_script_prefix_and_urlconf(
    redis_db: redis.Redis, settings: Any
) -> None:
    """The endpoint's URL is reversed once per URLconf and prefix, never served across them."""
    template = engines["django"].from_string("{% load whos_online %}{% whos_online live=30 %}")
    try:
        for prefix, url in (("/forum/", "/forum/whos-online/"), ("/", "/whos-online/")):
            set_script_prefix(prefix)  # as a WSGI server mounted under SCRIPT_NAME sets it
            assert f'data-whos-online-url="{url}"' in template.render({})
    finally:
        set_script_prefix("/")
    settings.ROOT_URLCONF = "tests.urls_without_whos_online"
    assert "data-whos-online-url" not in template.render({})  # no endpoint there


def test_plain_tag_does_not_poll(redis_db: redis.Redis) -> None:
    html = BrowserClient().get("/block/").content.decode()
    assert "live.js" not in html and "data-whos-online-url" not in html
    assert "beacon.js" in html  # a guest's block: in case a cache serves the page


def test_a_too_eager_refresh_is_slowed_down(redis_db: redis.Redis) -> None:
    template = engines["django"].from_string("{% load whos_online %}{% whos_online live=1 %}")
    assert 'data-whos-online-refresh="5"' in template.render({})


def test_live_without_the_urls_says_what_to_add_under_debug(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.ROOT_URLCONF = "tests.urls_without_whos_online"
    settings.DEBUG = True
    template = engines["django"].from_string("{% load whos_online %}{% whos_online live=30 %}")
    with pytest.raises(ImproperlyConfigured, match='include\\("whos_online.urls"\\)'):
        template.render({})


def test_live_without_the_urls_shows_the_block_and_says_so_once(
    redis_db: redis.Redis, settings: Any, caplog: pytest.LogCaptureFixture, monkeypatch: Any
) -> None:
    """In production a forgotten include is no 500: the block shows, without refreshing."""
    from whos_online.rendering import block as tags

    monkeypatch.setattr(tags, "_told_of_live_urls", False)
    settings.ROOT_URLCONF = "tests.urls_without_whos_online"
    presence.record_user(User.objects.create_user("alice"))
    template = engines["django"].from_string("{% load whos_online %}{% whos_online live=30 %}")
    pages = [template.render({}) for _ in range(3)]
    assert all("alice" in page and "data-whos-online" not in page for page in pages)
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [
        'A live block ({% whos_online live=… %}) reads an endpoint: add path("whos-online/", '
        'include("whos_online.urls")) to your URLconf. Until then such blocks show without '
        "refreshing."
    ]


def test_with_the_websocket_routed_the_block_subscribes_and_still_polls_as_fallback(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    html = BrowserClient().get("/live-block/").content.decode()
    assert 'data-whos-online-ws="/ws/whos-online/"' in html
    assert 'data-whos-online-url="/whos-online/"' in html  # polled while the socket is down
    assert "<script>" not in html


def test_a_live_room_block_subscribes_to_its_room_only_over_the_websocket(
    redis_db: redis.Redis, settings: Any
) -> None:
    template = engines["django"].from_string(
        '{% load whos_online %}{% whos_here "thread:4/2" live=True %}'
    )
    assert "data-whos-online" not in template.render({})  # no socket routed: a static block
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    html = template.render({})
    assert 'data-whos-online-ws="/ws/whos-online/thread%3A4%2F2/"' in html
    assert 'data-whos-online-shown="[]"' in html  # nobody: a join after it is said
    static = engines["django"].from_string('{% load whos_online %}{% whos_here "thread:4/2" %}')
    assert "data-whos-online" not in static.render({})  # only when asked
    assert '<script src="/static/whos_online/live.js" defer></script>' in html


def test_polls_answered_from_the_block_cache_get_the_same_body_and_etag(
    redis_db: redis.Redis, settings: Any, kept_block_reads: Any
) -> None:
    kept_block_reads(60)
    member("alice").get("/")
    first = BrowserClient().get("/whos-online/", headers=POLL)
    second = BrowserClient().get("/whos-online/", headers=POLL)
    assert second.content == first.content and second["ETag"] == first["ETag"]
    assert [m["name"] for m in json.loads(second.content)["members"]] == ["alice"]
    again = BrowserClient().get("/whos-online/", headers={**POLL, "If-None-Match": first["ETag"]})
    assert again.status_code == 304


def test_a_page_with_a_plain_and_a_live_block_gets_each_as_asked(
    redis_db: redis.Redis, settings: Any, kept_block_reads: Any
) -> None:
    kept_block_reads(60)  # one summary, and its renderings, for all three
    page = engines["django"].from_string(
        "{% load whos_online %}{% whos_online %}|{% whos_online live=30 %}|"
        "{% whos_online live=60 %}|{% whos_online %}"
    )
    plain, live, slower, plain_again = page.render({}).split("|")
    assert 'data-whos-online-refresh="30"' in live and 'data-whos-online-refresh="60"' in slower
    assert "data-whos-online" not in plain and "data-whos-online" not in plain_again


# Another site's URLconf (below): the endpoint where that site put it.
urlpatterns = [path("elsewhere/", include("whos_online.urls"))]


def test_a_live_block_polls_the_endpoint_of_the_requests_urlconf(
    redis_db: redis.Redis, settings: Any, kept_block_reads: Any
) -> None:
    kept_block_reads(60)
    template = engines["django"].from_string("{% load whos_online %}{% whos_online live=30 %}")
    assert 'data-whos-online-url="/whos-online/"' in template.render({})
    set_urlconf(__name__)  # what a request with its own urlconf (per-host sites) gets
    try:
        assert 'data-whos-online-url="/elsewhere/"' in template.render({})
    finally:
        set_urlconf(None)
