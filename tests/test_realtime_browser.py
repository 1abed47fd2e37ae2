"""WebSocket presence end to end: the demo on Daphne (ASGI), channels-redis and the real Redis.

The demo runs as a subprocess (``runserver``, which Daphne serves), its keys and
channel layer under a prefix of their own in REDIS_URL's Redis, with a short
heartbeat (1 s) and timeout (3 s) so a killed server's sockets expire quickly.
Debian's Chromium (Playwright) is the browser. Waits poll with a deadline,
never a fixed sleep. This test process reads the same Redis through the
public API, as another server process of the site would.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from tests import online_now
from tests.conftest import REAL_CACHE, STAFF, require, socket_timeout
from tests.test_browser import (
    NAMES,
    ROOT,
    STEP_TIMEOUT,
    Demo,
    browser,  # noqa: F401 (the fixture, used by name below)
    check_contrast,
    log_in,
    running_demo,
    server_log_on_failure,
)
from whos_online import presence, push
from whos_online.conf import conf
from whos_online.store.connection import get_client
from whos_online.store.sockets import BEATS_TO_TIMEOUT

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

HEARTBEAT = 1.25  # s, the server's WHOS_ONLINE_HEARTBEAT
MAX_AGE = 30  # s, the server's window: a tab closed past its member's 15 s cookie makes them idle
TIMEOUT = BEATS_TO_TIMEOUT * HEARTBEAT  # 3 s: a connection is gone after 2.4 beats
ROOM = "thread:welcome"  # the demo's thread page
SETUP = """
from django.core.management import call_command
from demo.management.commands.demo import Command
call_command("migrate", verbosity=0, interactive=False)
Command().create_users()
"""


@dataclass
class Server:
    site: Demo
    process: subprocess.Popen[bytes]


@pytest.fixture
def server(tmp_path: Any, settings: Any) -> Iterator[Server]:
    """The demo on Daphne; this process reads its Redis namespace through ``presence``."""
    require("REDIS_URL")
    prefix = f"whos_online_realtime:{uuid.uuid4().hex}"
    settings.CACHES = {"default": REAL_CACHE}
    settings.WHOS_ONLINE_KEY_PREFIX = prefix
    settings.WHOS_ONLINE_MAX_AGE = MAX_AGE
    socket_timeout(settings, 2)
    with running_demo(
        tmp_path,
        prefix,
        SETUP,
        DEMO_HEARTBEAT=str(HEARTBEAT),
        DEMO_MAX_AGE=str(MAX_AGE),
        DEMO_SOCKET_TIMEOUT="2",  # the machine may be busy: no outage for a slow reply
        PYTHONPATH=str(ROOT),  # this checkout's whos_online, not an installed one
    ) as (site, process):
        yield Server(site, process)


def deadline_wait(check: Callable[[], bool], seconds: float) -> float:
    """Poll ``check`` until it holds; return how long that took, or fail after ``seconds``."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.05)
    return time.monotonic() - started


def on_thread(page: Page, site: Demo) -> Any:
    """Open the demo's thread page; return its member list's entries."""
    page.goto(f"{site.url}/thread/")
    return page.locator("section.whos-here .whos-here-members li")


def beaten_past_the_grace() -> bool:
    """Whether every listed member's last heartbeat is a cookie's life after their last record
    (their score; their last seen is their newest sign, the heartbeat itself). The live set
    holds when the connection is alive until: the beat plus TIMEOUT."""
    client, keys = get_client(), conf.keys()
    live = conf.socket_keys().live
    return all(
        (client.zscore(live, member.pk) or 0) - TIMEOUT
        >= (client.zscore(keys.users, member.pk) or 0) + conf.cookie_age
        for member in presence.summary(limit=-1).members
    )


def connected_names(room: str | None = None) -> set[str]:
    cards = {m.pk: m.name for m in presence.summary(limit=-1, room=room, viewer=STAFF).members}
    return {cards.get(pk, pk) for pk in push.connected(room=room)}


def test_a_closed_tab_leaves_the_other_members_list_within_two_seconds(
    browser: Any,  # noqa: F811 (the fixture imported above)
    server: Server,
) -> None:
    from playwright.sync_api import expect

    with server_log_on_failure(server.site):
        alice = log_in(browser, server.site, "alice")
        bob = log_in(browser, server.site, "bob")
        try:
            members = on_thread(alice, server.site)
            deadline_wait(lambda: NAMES["alice"] in connected_names(ROOM), 5)  # subscribed
            bob_members = on_thread(bob, server.site)
            expect(bob_members.filter(has_text=NAMES["alice"])).to_have_class(
                "whos-here-member whos-here-online"
            )
            # Bob joined after alice's page rendered: pushed to her, no reload.
            bob_in_alice = members.filter(has_text=NAMES["bob"])
            expect(bob_in_alice).to_have_class("whos-here-member whos-here-online")
            deadline_wait(lambda: connected_names(ROOM) == {NAMES["alice"], NAMES["bob"]}, 5)
            # The thread's chat: the demo's own consumer (with the presence mixin) and
            # the channel layer (channels-redis here) carry alice's message to bob.
            alice.locator("#chat-form input").fill("hello bob")
            alice.locator("#chat-form button").click()
            expect(bob.locator("#chat-messages")).to_contain_text(f"{NAMES['alice']}: hello bob")

            # The block is no live region (it is replaced at each change): a small
            # polite one beside it says the change, bob's coming.
            block = alice.locator("section.whos-here")
            expect(block).not_to_have_attribute("aria-live", re.compile(".*"))
            said = alice.locator("section.whos-here + p.whos-online-announcement")
            expect(said).to_have_attribute("aria-live", "polite")
            expect(said).to_have_attribute("role", "status")
            expect(said).to_have_text(f"{NAMES['bob']} joined.")
            assert said.evaluate("e => e.getBoundingClientRect().width") <= 1, "not hidden"

            # He reads on (a socket closing within his cookie's life would be the
            # page that replaced it: a real server's clock, so a real wait).
            bob.wait_for_timeout(conf.cookie_age * 1000)
            bob.close()  # the tab
            started = time.monotonic()
            expect(bob_in_alice).to_have_class(
                "whos-here-member whos-here-idle", timeout=STEP_TIMEOUT
            )  # a push, whenever a busy machine lets it through (the wait is printed)
            waited = time.monotonic() - started
            # The leave in words, in the list and aloud; the count says what "now" means.
            expect(bob_in_alice).to_have_text(f"{NAMES['bob']} (idle)")
            expect(said).to_have_text(f"{NAMES['bob']} is idle.")
            expect(block.locator(".whos-here-window")).to_have_text(
                re.compile(r"^Based on users active in the past (\d+ minutes|minute)\.$")
            )
            check_contrast(alice, "section.whos-here")
            alice.screenshot(path=str(server.site.log.parent / "thread-after-leave.png"))
            assert connected_names(ROOM) == {NAMES["alice"]}
            assert connected_names() == {NAMES["alice"]}
            print(f"bob left alice's list {waited:.2f} s after his tab closed")

            on_thread(bob.context.new_page(), server.site)  # bob opens it again
            expect(bob_in_alice).to_have_text(NAMES["bob"])
            expect(said).to_have_text(f"{NAMES['bob']} is back.")
        finally:
            alice.context.close()
            bob.context.close()


def test_a_killed_server_s_connections_drop_out_within_the_heartbeat_timeout(
    browser: Any,  # noqa: F811 (the fixture imported above)
    server: Server,
) -> None:
    with server_log_on_failure(server.site):
        alice = log_in(browser, server.site, "alice")
        bob = log_in(browser, server.site, "bob")
        try:
            on_thread(alice, server.site)
            on_thread(bob, server.site)
            both = {NAMES["alice"], NAMES["bob"]}
            deadline_wait(lambda: connected_names(ROOM) == both, 5)
            # Beats keep them connected past the timeout while the server lives: until
            # both were beaten for later than they would have timed out at (a real server,
            # so a real clock).
            timed_out_at, live = time.time() + TIMEOUT, conf.socket_keys(ROOM).live
            pks = push.connected(room=ROOM)
            deadline_wait(
                lambda: all((get_client().zscore(live, pk) or 0) > timed_out_at for pk in pks),
                TIMEOUT + HEARTBEAT + 5,
            )
            assert connected_names(ROOM) == both and connected_names() == both
            # A busy machine may record a connect late (retried after a slow call): the
            # socket of a member seen within their cookie's life would count as replaced by
            # a page.
            deadline_wait(beaten_past_the_grace, conf.cookie_age + 20)

            os.kill(server.process.pid, signal.SIGKILL)  # no disconnect will ever run
            server.process.wait(timeout=10)
            killed_at = time.monotonic()

            def gone() -> bool:
                site, room = presence.summary(limit=-1), presence.summary(limit=-1, room=ROOM)
                online = {m.name for m in [*site.members, *room.members] if m.status == "online"}
                return not push.connected() and not push.connected(room=ROOM) and not online

            # Their last heartbeat was at most HEARTBEAT before the kill.
            deadline_wait(gone, TIMEOUT + HEARTBEAT + 1)
            elapsed = time.monotonic() - killed_at
            statuses = presence.statuses([m.pk for m in presence.summary(limit=-1).members])
            assert set(statuses.values()) <= {"idle"}
            print(f"the killed server's sockets dropped out {elapsed:.2f} s after SIGKILL")
        finally:
            alice.context.close()
            bob.context.close()


def test_another_site_s_page_cannot_open_a_socket(server: Server) -> None:
    """The demo checks the Origin: a browser would send our visitor's cookies along."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    url = server.site.url.replace("http", "ws") + "/ws/whos-online/"
    with connect(url, origin=server.site.url, open_timeout=10) as ours:
        assert '"presence_state"' in str(ours.recv(timeout=10))
    with pytest.raises(InvalidStatus) as refused:
        connect(url, origin="http://evil.example", open_timeout=10)
    assert refused.value.response.status_code == 403


# A room block for the given socket path, and live.js run again to pick it up.
ADD_A_ROOM_BLOCK = """(path) => {
  delete window.whosOnlineLive;
  const block = document.createElement("section");
  block.id = "added";
  block.setAttribute("data-whos-online-ws", path);
  block.innerHTML = "<p>as rendered</p>";
  document.body.append(block);
  const script = document.createElement("script");
  script.src = "/static/whos_online/live.js?again";
  document.body.append(script);
}"""


def test_a_room_the_site_did_not_declare_is_closed_with_4403_and_not_retried(
    server: Server,
    browser: Any,  # noqa: F811 (the fixture imported above)
) -> None:
    """On the real server, and in the browser: live.js takes the refusal as final."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    url = server.site.url.replace("http", "ws") + "/ws/whos-online/staff-only/"
    with connect(url, origin=server.site.url, open_timeout=10) as socket:
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    assert connected_names("staff-only") == set() and online_now.user_count(room="staff-only") == 0

    context = browser.new_context()
    try:
        page = context.new_page()
        page.clock.install()
        opened: list[str] = []
        page.on("websocket", lambda socket: opened.append(socket.url))
        page.goto(f"{server.site.url}/about/")
        with page.expect_websocket(lambda socket: socket.url == url) as first:
            page.evaluate(ADD_A_ROOM_BLOCK, "/ws/whos-online/staff-only/")
        for _ in range(100):
            if first.value.is_closed():
                break
            page.wait_for_timeout(100)
        page.clock.run_for(120_000)  # two minutes of the page's time: no second attempt
        page.wait_for_timeout(500)  # (events reach this process while Playwright waits)
        assert opened.count(url) == 1
        assert page.locator("#added p").inner_text() == "as rendered"
    finally:
        context.close()
