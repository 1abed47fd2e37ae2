"""One picture of a person: the block, the JSON endpoint, the pushes and the Python API
agree on a member's status through a day's sequence of HTTP and WebSocket signs."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import async_to_sync, sync_to_async

from tests.conftest import NOW, BrowserClient
from tests.test_consumers import SITE, DrivenHub, Page, eventually
from tests.test_consumers import tab as open_tab
from whos_online import presence, push
from whos_online.conf import conf
from whos_online.contrib.channels import hub as realtime_hub

pytestmark = pytest.mark.django_db


def seen_by(watcher: BrowserClient, hub: DrivenHub, page: Page, member: Any) -> dict[str, str]:
    """The member's status as each surface shows it ("absent" where it does not list them)."""
    html = watcher.get("/block/").content.decode()
    block = re.findall(r"whos-online-member whos-online-(\w+)[^>]*>(?:<[^>]+>)*<bdi>([^<]+)", html)
    data = watcher.get("/whos-online/", headers={"X-Whos-Online": "poll"}).json()
    async_to_sync(hub.tick)()
    cards: dict[str, Any] = {}
    for message in page.messages:
        cards = {pk: c for pk, c in cards.items() if pk not in message["leaves"]}
        cards.update(message["joins"])
    pk = str(member.pk)
    return {
        "block": dict((name, status) for status, name in block).get(member.username, "absent"),
        "json": {m["pk"]: m["status"] for m in data["members"]}.get(pk, "absent"),
        "push": cards[pk]["status"] if pk in cards else "absent",
        "api": {"offline": "absent"}.get(s := presence.status(member), s),
    }


def test_every_surface_tells_the_same_status_through_a_day_of_signs(
    redis_db: redis.Redis, people: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(realtime_hub, "TICK", 0)  # each notice is read at the next tick
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    settings.WHOS_ONLINE_MAX_AGE = 600  # idle after 300 s
    alice, bob = people("alice", "bob")
    browser, watcher = BrowserClient(), BrowserClient()
    hub, page = DrivenHub(), Page()
    hub.subscribe(SITE, page)
    get = sync_to_async(browser.get)

    def everywhere(status: str) -> None:
        hub.changed(None)  # the notice the listener thread would deliver
        assert seen_by(watcher, hub, page, alice) == dict.fromkeys(
            ("block", "json", "push", "api"), status
        )

    async def live_page() -> None:
        await get("/live-block/")
        socket = await open_tab(alice)
        await eventually(lambda: str(alice.pk) in push.connected())
        await sync_to_async(everywhere)("online")  # a live tab
        traveller.shift(100)  # she reads the live page (her cookie would still be valid)
        live = conf.socket_keys().live
        await eventually(lambda: (redis_db.zscore(live, str(alice.pk)) or 0) >= time.time())
        await sync_to_async(everywhere)("online")
        await socket.disconnect()  # she closes the tab

    with time_machine.travel(NOW, tick=False) as traveller:
        browser.force_login(alice)  # a login records: on the travelled clock too
        watcher.force_login(bob)
        watcher.get("/")
        browser.get("/")
        everywhere("online")  # a page view
        traveller.shift(301)
        everywhere("idle")  # nothing since
        async_to_sync(live_page)()
        everywhere("online")  # a tab closed within her cookie's life: she may browse on
        browser.get("/")
        everywhere("online")  # browsing on: throttled by the live page's cookie
        traveller.shift(60)
        browser.get("/")  # throttled by its cookie
        everywhere("online")
        browser.logout()
        everywhere("absent")  # a logout, at once
