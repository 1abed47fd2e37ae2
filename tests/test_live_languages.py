"""Pushed blocks speak their reader's language: a socket is served in the language its
page was rendered in (LocaleMiddleware, Accept-Language), else as LocaleMiddleware
would resolve its handshake, and the hub renders and says each change once per
language, whatever the number of sockets.

Pages come from the test client, sockets from the real consumer and router
(channels' WebsocketCommunicator), the data from Redis.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import redis
import time_machine
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.template import engines
from django.test.signals import template_rendered
from django.utils import translation

from tests.conftest import NOW, BrowserClient
from tests.test_consumers import DEADLINE, application, run, until
from tests.test_live import rendered_shown
from tests.test_translations import localized, text  # noqa: F401 (a fixture)
from whos_online import presence

pytestmark = pytest.mark.django_db

SITE_BLOCK = "whos_online/whos_online.html"


@pytest.fixture
def renders() -> Iterator[list[str]]:
    """The language of each rendering of the site block, as it happens."""
    rendered: list[str] = []

    def seen(sender: Any, template: Any, **kwargs: Any) -> None:
        if template.name == SITE_BLOCK:
            rendered.append(translation.get_language())

    template_rendered.connect(seen)
    yield rendered
    template_rendered.disconnect(seen)


def socket_path(page: str) -> str:
    """The URL live.js opens for the page's live block: its socket, language and members."""
    found = re.search(r'data-whos-online-ws="([^"]*)"', page)
    assert found is not None, "the block is not live"
    lang = re.search(r'data-whos-online-lang="([^"]*)"', page)
    query = [f"lang={quote(html.unescape(lang.group(1)))}"] if lang else []
    shown = rendered_shown(page)
    query += [f"shown={shown}"] if shown else []
    return html.unescape(found.group(1)) + ("?" + "&".join(query) if query else "")


async def reader(
    user: Any, path: str = "/ws/whos-online/", headers: list[tuple[bytes, bytes]] | None = None
) -> WebsocketCommunicator:
    """A browser tab's socket, its handshake with ``headers``."""
    communicator = WebsocketCommunicator(application, path, headers=headers or [])
    communicator.scope["user"] = user or AnonymousUser()
    connected, _ = await communicator.connect(timeout=DEADLINE)
    assert connected
    return communicator


def page_of(user: Any, language: str) -> str:
    """The live block's page as ``user``'s browser, asking for ``language``, gets it."""
    browser = BrowserClient()
    browser.force_login(user)
    return browser.get("/live-block/", headers={"Accept-Language": language}).content.decode()


def is_state(message: dict[str, Any]) -> bool:
    return message["type"] == "presence_state"


@pytest.mark.usefixtures("localized")
def test_each_socket_is_pushed_its_page_s_language_once_rendered_per_language(
    redis_db: redis.Redis, people: Any, settings: Any, renders: list[str]
) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    erika, bob, carol = people("erika", "bob", "carol")
    with time_machine.travel(NOW):
        german, english = page_of(erika, "de"), page_of(bob, "en")
    assert "1 Benutzer online" in text(german) and "2 users online" in text(english)
    # The sockets send no Accept-Language: only their page's URL says the language.
    german_path, english_path = socket_path(german), socket_path(english)
    assert "lang=de" in german_path and "lang=en" in english_path

    async def scenario() -> None:
        # Erika in two tabs, Bob in one.
        tabs = [await reader(erika, german_path), await reader(erika, german_path)]
        tabs.append(await reader(bob, english_path))
        first = [await until(tab, is_state) for tab in tabs]
        assert ["2 Benutzer online" in text(m["html"]) for m in first] == [True, True, False]
        assert "2 users online" in text(first[2]["html"])
        renders.clear()
        presence.record_user(carol)  # its notice makes the site's views due
        joined = [await until(tab, lambda m: str(carol.pk) in m["joins"]) for tab in tabs]
        said = [(m["announce"], "3 Benutzer online" in text(m["html"])) for m in joined]
        assert said == [("carol ist dazugekommen.", True)] * 2 + [("carol joined.", False)]
        assert "3 users online" in text(joined[2]["html"])
        assert sorted(renders) == ["de", "en"]  # three sockets, two languages
        for tab in tabs:
            await tab.disconnect()

    with time_machine.travel(NOW):
        run(scenario)


@pytest.mark.parametrize(
    ("query", "headers", "summary"),
    [
        ("", [], "1 user online"),  # LANGUAGE_CODE
        ("", [(b"accept-language", b"de-AT,de;q=0.9,en;q=0.5")], "1 Benutzer online"),
        ("", [(b"cookie", b"django_language=fr"), (b"accept-language", b"de")], "1 utilisateur"),
        ("?lang=fr", [(b"accept-language", b"de")], "1 utilisateur"),  # the page's, first
    ],
    ids=["default", "accept-language", "cookie-first", "page-first"],
)
def test_a_socket_without_its_page_s_language_is_resolved_as_locale_middleware_would(
    redis_db: redis.Redis, people: Any, query: str, headers: Any, summary: str
) -> None:
    presence.record_user(*people("erika"))

    async def scenario() -> None:
        tab = await reader(None, f"/ws/whos-online/{query}", headers)
        state = await until(tab, is_state)
        assert summary in text(state["html"])
        await tab.disconnect()

    run(scenario)


# What a hostile client may put in place of its page's language: each is ignored.
HOSTILE = [
    "lang=xx",
    "lang=" + "zz-" * 40_000,
    "lang=" + "x" * 100_000,
    "lang=fr&lang=de",
    "lang=%00%ff%3Cscript%3E",
    "lang=../../../etc/passwd",
    "lang=%E2%80%AEde",
    "lang",
]


def test_a_hostile_language_is_ignored_and_never_costs_a_render_more(
    redis_db: redis.Redis, settings: Any, people: Any, renders: list[str]
) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    erika, bob = people("erika", "bob")
    presence.record_user(erika)

    async def scenario() -> None:
        # Anonymous readers: their sockets change nothing, so only bob's coming is a change.
        tabs = [await reader(None, f"/ws/whos-online/?{query}") for query in HOSTILE]
        raw = WebsocketCommunicator(application, "/ws/whos-online/")
        raw.scope["query_string"] = b"lang=\xff\xfe\x00&shown=%5B"  # not even UTF-8
        raw.scope["user"] = AnonymousUser()
        assert (await raw.connect(timeout=DEADLINE))[0]
        tabs.append(raw)
        # One asks for German by its handshake: the language it sent is ignored, not that.
        tabs.append(await reader(None, "/ws/whos-online/?lang=zz", [(b"accept-language", b"de")]))
        states = [await until(tab, is_state) for tab in tabs]
        assert ["1 user online" in text(m["html"]) for m in states] == [True] * 9 + [False]
        assert "1 Benutzer online" in text(states[-1]["html"])
        renders.clear()
        presence.record_user(bob)
        joined = [await until(tab, lambda m: str(bob.pk) in m["joins"]) for tab in tabs]
        assert [m["announce"] for m in joined] == ["bob joined."] * 9 + ["bob ist dazugekommen."]
        assert sorted(renders) == ["de", "en"]  # ten sockets, two languages
        for tab in tabs:
            await tab.disconnect()

    run(scenario)


def test_a_live_room_block_is_pushed_in_its_page_s_language(
    redis_db: redis.Redis, people: Any, settings: Any
) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    settings.WHOS_ONLINE_ACCESS = "whos_online.access.public"
    presence.record_user(*people("erika"), room="thread:1")
    room = engines["django"].from_string(
        '{% load whos_online %}{% whos_here "thread:1" live=True %}'
    )
    with translation.override("de"):
        page = room.render({})

    async def scenario() -> None:
        tab = await reader(None, socket_path(page))
        state = await until(tab, is_state)
        said = "Leser dieser Seite 1 gerade hier: 1 Mitglied, 0 Gäste erika"
        assert text(state["html"]).startswith(said)
        await tab.disconnect()

    run(scenario)
