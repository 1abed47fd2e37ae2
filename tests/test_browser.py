"""End to end in a real headless browser: the demo site, served by runserver, in Debian's Chromium.

The demo (example_project/) runs as a subprocess on a spare loopback port, on a
SQLite file of its own and the real Redis in REDIS_URL under a key prefix of its
own (its DEMO_DATABASE and DEMO_KEY_PREFIX hooks), seeded like ``manage.py demo``
does but with a fixed random seed. Playwright drives the system's Chromium
(``/usr/bin/chromium``, the Debian package; never a browser Playwright downloads):

- two browser contexts (two cookie jars) log in as alice and bob through the
  real login form; alice's page shows bob in its ``{% whos_online live=10 %}``
  block without a reload, each member with their display name linked to their
  profile, an initials avatar that loads, and moderators in the staff colour;
  a screenshot of that page is taken (the README's docs/demo.png when
  UPDATE_DOCS=1 is set, a temporary file otherwise);
- the staff user ``admin`` sees the admin's "Online now" page with its chart,
  the hidden member marked and the page each member was last on (docs/admin.png
  when UPDATE_DOCS=1);
- bob leaves and alice's block shows and says it: his closed tab marks him idle in
  words, his logout takes his name away and a member from the count, and the polite
  region beside the block says each ("Bob Baker left."), over the WebSocket and, in a
  browser without one, by polling, even when he logs out after her page was rendered but
  before its script ran (the socket's first message says it).

Needs REDIS_URL (the server is another process), Chromium and Playwright
(``pip install playwright``; never ``playwright install``). Without them the
tests are deselected, or fail when CI is set (see ``require`` in conftest). Only this run's keys are deleted afterwards.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from tests.conftest import REDIS_URL, require

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser


ROOT = Path(__file__).resolve().parent.parent
MANAGE = ROOT / "example_project" / "manage.py"
# The README's picture; only rewritten on request, so a test run leaves the tree clean.
DOCS_SCREENSHOT = ROOT / "docs" / "demo.png"
ADMIN_SCREENSHOT = ROOT / "docs" / "admin.png"
PHONE = {"width": 390, "height": 844}
PASSWORD = "demo"  # example_project/demo/people.py
# Display names (example_project/demo/people.py): what the block shows instead of logins.
NAMES = {"alice": "Alice Archer", "bob": "Bob Baker", "admin": "Ada Admin"}
STAFF_COLOUR = "rgb(22, 101, 52)"  # .whos-online-role-staff in the demo's base.html
LIVE_TIMEOUT = 25_000  # ms: the demo's block refreshes every 10 s
PUSH_TIMEOUT = 5_000  # ms: a push reaches a subscriber within the hub's tick (0.5 s)
STEP_TIMEOUT = 10_000  # ms: any other wait
SERVER_START_TIMEOUT = 30  # s

# What `manage.py demo` does before it serves, minus the randomness, plus a day
# of the admin's samples (cron's prune, every 30 minutes, with the clock set
# back: time-machine), so that its chart has a line to draw.
SETUP = """
import random
from datetime import datetime, timedelta, timezone
import time_machine
from django.core.management import call_command
from demo.management.commands.demo import Command
from demo.simulation import simulate
call_command("migrate", verbosity=0, interactive=False)
Command().create_users()
rng = random.Random(2026)
now = datetime.now(timezone.utc)
for half_hours_ago in range(48, 0, -1):
    with time_machine.travel(now - timedelta(minutes=30 * half_hours_ago), tick=False):
        busy = 1 + (48 - half_hours_ago) / 48  # a site getting busier through the day
        simulate(rng.randint(3, 9), int(busy * rng.randint(10, 25)), rng)
        call_command("whos_online_prune", verbosity=0)
simulate(12, 40, rng)
call_command("whos_online_prune", verbosity=0)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Demo:
    url: str
    log: Path

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


@contextmanager
def running_demo(
    directory: Path, prefix: str, setup: str, **env: str
) -> Iterator[tuple[Demo, subprocess.Popen[bytes]]]:
    """The demo on runserver at a loopback port, set up by ``setup`` (a shell script),
    with ``env`` added to its environment; its Redis keys are deleted afterwards."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"} | {
        "REDIS_URL": REDIS_URL,
        "DEMO_DATABASE": str(directory / "demo.sqlite3"),
        "DEMO_KEY_PREFIX": prefix,
        "PYTHONUNBUFFERED": "1",
        **env,
    }
    store = redis.Redis.from_url(REDIS_URL)
    try:
        done = subprocess.run(
            [sys.executable, str(MANAGE), "shell", "-c", setup],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        port = free_port()
        site = Demo(f"http://127.0.0.1:{port}", directory / "runserver.log")
        with open(site.log, "wb") as log:
            server = subprocess.Popen(
                [sys.executable, str(MANAGE), "runserver", f"127.0.0.1:{port}", "--noreload"],
                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                wait_until_serving(server, site)
                yield site, server
            finally:
                if server.poll() is None:
                    server.terminate()
                    try:
                        server.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        server.kill()
                        server.wait(timeout=10)
    finally:
        own = list(store.scan_iter(match=f"{prefix}:*"))
        if own:
            store.delete(*own)
        store.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """The demo site on runserver at a loopback port, until the module's tests are done."""
    require("REDIS_URL")
    directory = tmp_path_factory.mktemp("browser_demo")
    with running_demo(directory, f"whos_online_browser:{uuid.uuid4().hex}", SETUP) as (site, _):
        yield site


def wait_until_serving(server: subprocess.Popen[bytes], site: Demo) -> None:
    """Until the server answers: a static file, which passes no middleware (no visitor)."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:
        if server.poll() is not None:
            pytest.fail(f"runserver exited with {server.returncode}:\n{site.log_tail()}")
        try:
            with urllib.request.urlopen(f"{site.url}/static/whos_online/live.js", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"runserver did not answer in {SERVER_START_TIMEOUT} s:\n{site.log_tail()}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's headless Chromium, driven by Playwright."""
    require("chromium", "playwright")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=shutil.which("chromium"))
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def server_log_on_failure(site: Demo) -> Iterator[None]:
    """A failing test prints the server's log: pytest shows it with the failure."""
    try:
        yield
    except BaseException:
        print(f"--- {site.log} (end) ---\n{site.log_tail()}")
        raise


def site_file(site: Demo, name: str) -> Path:
    """A file in the run's temporary folder (screenshots to look at, not the README's)."""
    return site.log.parent / name


def check_contrast(page: Page, within: str) -> dict[str, float]:
    """Every text in ``within`` against the background it is drawn on, as rendered
    (colours, backgrounds and opacity computed by the browser): at least WCAG AA's
    4.5:1. Returns each text's (first 30 characters') ratio."""
    ratios: dict[str, float] = page.locator(within).evaluate(CONTRAST_JS)
    assert len(ratios) >= 2, ratios
    low = {text: ratio for text, ratio in ratios.items() if ratio < AA}
    assert not low, f"below {AA}:1: {low}"
    return ratios


AA = 4.5  # WCAG AA: text contrast on its background
# An element with text of its own: its colour, faded by its and its ancestors'
# opacity, over the nearest background that is not transparent (else white).
CONTRAST_JS = """within => {
  const rgba = value => (value.match(/[\\d.]+/g) || []).map(Number);
  const luminance = rgb => {
    const [r, g, b] = rgb.map(c => {
      c /= 255;
      return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const found = {};
  for (const element of within.querySelectorAll("*")) {
    const own = [...element.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    let background = null, opacity = 1;
    for (let e = element; e; e = e.parentElement) {
      const style = getComputedStyle(e);
      opacity *= Number(style.opacity);
      const colour = rgba(style.backgroundColor);
      if (!background && (colour.length === 3 || colour[3] > 0)) background = colour.slice(0, 3);
    }
    background = background || [255, 255, 255];
    const text = rgba(getComputedStyle(element).color);
    const alpha = (text.length > 3 ? text[3] : 1) * opacity;
    const seen = text.slice(0, 3).map((c, i) => c * alpha + background[i] * (1 - alpha));
    const [light, dark] = [luminance(seen), luminance(background)].sort((a, b) => b - a);
    found[element.textContent.trim().slice(0, 30)] = (light + 0.05) / (dark + 0.05);
  }
  return found;
}"""


def screenshot_path(site: Demo, docs: Path) -> Path:
    """The README's picture with UPDATE_DOCS=1, else a file in the run's temporary folder."""
    return docs if os.environ.get("UPDATE_DOCS") else site.log.parent / docs.name


def log_in(browser: Browser, site: Demo, username: str) -> Page:
    """A new context (own cookies) that logged in through the demo's form; its page is home."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(STEP_TIMEOUT)
    page = context.new_page()
    page.goto(f"{site.url}/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.locator("main").get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{site.url}/")
    expect(page.locator("header .account")).to_contain_text(f"Logged in as {NAMES[username]}")
    return page


def member_count(summary: str) -> int:
    """The members in the block's summary, e.g. 54 users online: 14 members (1 hidden), ..."""
    found = re.search(r"(\d+) members?\b", summary)
    assert found, summary
    return int(found.group(1))


def test_a_member_appears_in_another_members_block_without_a_reload(
    browser: Browser, demo: Demo
) -> None:
    from playwright.sync_api import expect

    with server_log_on_failure(demo):
        alice = log_in(browser, demo, "alice")
        try:
            block = alice.locator("aside section.whos-online")
            members = block.locator(".whos-online-members li")
            expect(block).to_have_attribute("data-whos-online-refresh", "10")
            expect(members.get_by_text("Alice Archer", exact=True)).to_have_count(1)
            expect(members.get_by_text("Bob Baker", exact=True)).to_have_count(0)
            check_members_look_like_people(alice, demo)
            # The small print under the names (the peak, the day's total, the window) in
            # one small grey style, as the shipped stylesheet has it.
            look = "el => [getComputedStyle(el).color, getComputedStyle(el).fontSize]"
            small_print = [
                block.locator(f".whos-online-{line}").evaluate(look)
                for line in ("peak", "day", "window")
            ]
            assert small_print == [["rgb(75, 85, 99)", "14.4px"]] * 3, small_print
            # The WebSocket's first message may already have refreshed the block.
            updated_before = block.get_attribute("data-whos-online-updated")
            members_before = member_count(block.locator(".whos-online-summary").inner_text())
            alice.evaluate("window.whosOnlineMarker = 1")  # gone if the page reloads

            bob = log_in(browser, demo, "bob")
            try:
                bob_members = bob.locator("aside .whos-online-members li")
                expect(bob_members.get_by_text("Bob Baker", exact=True)).to_have_count(1)
                expect(bob_members.get_by_text("Alice Archer", exact=True)).to_have_count(1)

                started = time.monotonic()
                expect(members.get_by_text("Bob Baker", exact=True)).to_have_count(
                    1, timeout=LIVE_TIMEOUT
                )
                waited = time.monotonic() - started
            finally:
                bob.context.close()

            assert alice.evaluate("window.whosOnlineMarker") == 1, "the page was reloaded"
            updated = block.get_attribute("data-whos-online-updated") or ""
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", updated) and updated != (
                updated_before
            ), "live.js did not mark the block as refreshed"
            # Most recent first: the two who logged in ahead of the simulated members;
            # the counts were refreshed with the list.
            assert [text.strip() for text in members.all_inner_texts()[:2]] == [
                "Bob Baker",
                "Alice Archer",
            ]
            # The refreshed block is the same template: names, links, avatars, colours.
            check_members_look_like_people(alice, demo)
            summary = block.locator(".whos-online-summary").inner_text()
            assert member_count(summary) == members_before + 1, summary
            print(f"bob appeared in alice's block after {waited:.1f} s")

            screenshot = screenshot_path(demo, DOCS_SCREENSHOT)
            alice.screenshot(path=str(screenshot))
            assert screenshot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        finally:
            alice.context.close()


def test_staff_see_the_online_now_admin_page_with_its_chart(browser: Browser, demo: Demo) -> None:
    from playwright.sync_api import expect

    admin_page = f"{demo.url}/admin/whos_online/onlinenow/"
    with server_log_on_failure(demo):
        context = browser.new_context()
        context.set_default_timeout(STEP_TIMEOUT)
        try:
            page = context.new_page()
            page.goto(admin_page)
            expect(page).to_have_url(re.compile(r"/admin/login/"))  # staff only
        finally:
            context.close()

        page = log_in(browser, demo, "admin")
        try:
            page.get_by_role("link", name="Admin: online now").click()
            expect(page).to_have_url(admin_page)
            expect(page.get_by_role("heading", level=1)).to_have_text("Online now")
            chart = page.locator("svg.whos-online-chart")
            expect(chart).to_be_visible()
            expect(chart.locator("polyline")).to_have_count(2)
            expect(chart.locator(".whos-online-peak")).to_have_count(1)
            expect(page.locator(".whos-online-legend")).to_contain_text("guests")
            box = chart.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 50
            table = page.locator("#content-main table.whos-online-members")
            expect(table).to_contain_text(NAMES["admin"])
            # The demo's simulated hidden member, marked, linked to her change page.
            heidi = table.locator("tr", has_text="Heidi Huang")
            expect(heidi).to_contain_text("Heidi Huang (hidden)")
            expect(heidi.get_by_role("link", name="Heidi Huang")).to_have_attribute(
                "href", re.compile(r"^/admin/auth/user/\d+/change/$")
            )
            # Staff see the hidden member in the block too, marked.
            page.goto(f"{demo.url}/")
            expect(page.locator("aside .whos-online-hidden")).to_contain_text(
                "Heidi Huang (hidden)"
            )
            check_contrast(page, "aside")  # the admin's red, the hidden member's grey
            page.goto(admin_page)
            screenshot = screenshot_path(demo, ADMIN_SCREENSHOT)
            page.screenshot(path=str(screenshot), full_page=True)
            assert screenshot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
            # On a phone: no sideways scrolling, and the chart's text at a readable size.
            page.set_viewport_size(PHONE)
            page.reload()
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
            # Nor a table that hides a column behind a sideways scroll of its own.
            widths = page.locator("#content-main table").evaluate_all(
                "tables => tables.map(t => [t.scrollWidth, t.clientWidth])"
            )
            assert len(widths) == 2 and all(wide <= shown for wide, shown in widths), widths
            sizes = chart.locator("text:visible").evaluate_all(
                "texts => texts.map(t => t.getBoundingClientRect().height)"
            )
            assert len(sizes) >= 5 and min(sizes) >= 9, sizes  # CSS px; 4 before
            page.screenshot(path=str(site_file(demo, "admin-phone.png")), full_page=True)
        finally:
            page.context.close()
        # Every page the browser loaded, its icon included (the admin's pages ask for
        # /favicon.ico): nothing missing in the server's log.
        assert not re.findall(r'"GET [^"]*" 404', demo.log.read_text()), demo.log_tail()


def check_members_look_like_people(page: Page, site: Demo) -> None:
    """Every listed member: a linked display name, an avatar that loaded; staff in colour."""
    from playwright.sync_api import expect

    block = page.locator("aside section.whos-online")
    members = block.locator(".whos-online-members li")
    assert members.count() >= 10
    for item in members.all():
        link = item.locator("a")
        expect(link).to_have_attribute("href", re.compile(r"^/members/\d+/$"))
        expect(link.locator("bdi")).not_to_have_text(re.compile(r"@|^\s*$"))
        avatar = item.locator("img.whos-online-avatar")
        expect(avatar).to_have_attribute("src", re.compile(r"^/avatars/\d+\.svg$"))
        expect(avatar).to_have_js_property("complete", True)
        assert avatar.evaluate("img => img.naturalWidth") > 0, "the avatar did not load"
    # No hidden member for a member's eyes; the moderator in the staff colour.
    expect(block.get_by_text("Heidi Huang")).to_have_count(0)
    olivia = members.filter(has_text="Olivia Okafor")
    expect(olivia).to_have_class(re.compile(r"\bwhos-online-role-staff\b"))
    expect(olivia).to_have_css("color", STAFF_COLOUR)
    check_contrast(page, "aside")
    # A name links to that member's profile, which shows the same name.
    href = members.filter(has_text="Alice Archer").locator("a").get_attribute("href")
    profile = page.context.new_page()
    try:
        profile.goto(f"{site.url}{href}")
        expect(profile.get_by_role("heading", level=1)).to_have_text("Alice Archer")
    finally:
        profile.close()


def test_a_closed_tab_keeps_its_member_and_a_logout_is_said_in_another_members_block(
    browser: Browser, demo: Demo
) -> None:
    from playwright.sync_api import expect

    with server_log_on_failure(demo):
        alice = log_in(browser, demo, "alice")
        bob = log_in(browser, demo, "bob")
        try:
            block = alice.locator("aside section.whos-online")
            bob_in_alice = block.locator(".whos-online-members li", has_text=NAMES["bob"])
            summary = block.locator(".whos-online-summary")
            said = alice.locator("aside section.whos-online + p.whos-online-announcement")
            expect(said).to_have_attribute("aria-live", "polite")
            expect(bob_in_alice).to_have_class(re.compile(r"\bwhos-online-online\b"))
            members = member_count(summary.inner_text())

            # He closes his tab within his cookie's life: he may be browsing on pages
            # without a live block, so he stays listed (tests/test_realtime_browser.py
            # shows a tab closed past it turning its member idle).
            bob.close()
            alice.wait_for_timeout(2_000)  # a push would have come by now
            expect(bob_in_alice).to_have_class(re.compile(r"\bwhos-online-online\b"))
            check_contrast(alice, "aside")

            log_out(bob.context.new_page(), demo)
            expect(bob_in_alice).to_have_count(0, timeout=PUSH_TIMEOUT)
            expect(said).to_contain_text(f"{NAMES['bob']} left.")
            expect(summary).to_contain_text(f"{members - 1} members")
            alice.screenshot(path=str(site_file(demo, "demo-left.png")))
            alice.set_viewport_size(PHONE)
            assert alice.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
            alice.screenshot(path=str(site_file(demo, "demo-phone.png")), full_page=True)
        finally:
            alice.context.close()
            bob.context.close()


def test_a_logout_while_a_page_loads_is_said_when_its_socket_opens(
    browser: Browser, demo: Demo
) -> None:
    """Bob logs out after alice's page is rendered, before its live.js runs: her block's
    first update (the socket's first state) takes him away and says so."""
    from playwright.sync_api import Route, expect

    with server_log_on_failure(demo):
        bob = log_in(browser, demo, "bob")
        alice = log_in(browser, demo, "alice")
        held: list[Route] = []
        try:
            alice.route("**/whos_online/live.js", lambda route: held.append(route))  # waits
            alice.goto(f"{demo.url}/", wait_until="commit")
            block = alice.locator("aside section.whos-online")
            bob_in_alice = block.locator(".whos-online-members li", has_text=NAMES["bob"])
            expect(bob_in_alice).to_have_count(1)  # as rendered
            log_out(bob, demo)
            assert len(held) == 1 and alice.evaluate("!window.whosOnlineLive")
            held[0].continue_()
            expect(bob_in_alice).to_have_count(0, timeout=PUSH_TIMEOUT)
            said = alice.locator("aside section.whos-online + p.whos-online-announcement")
            expect(said).to_contain_text(f"{NAMES['bob']} left.")
        finally:
            alice.context.close()
            bob.context.close()


def test_a_polling_block_says_who_joined_and_left(browser: Browser, demo: Demo) -> None:
    from playwright.sync_api import expect

    with server_log_on_failure(demo):
        alice = log_in(browser, demo, "alice")
        # A browser without WebSocket: the block polls the JSON endpoint every 10 s.
        alice.context.add_init_script("window.WebSocket = undefined")
        alice.reload()
        block = alice.locator("aside section.whos-online")
        bob_in_alice = block.locator(".whos-online-members li", has_text=NAMES["bob"])
        summary = block.locator(".whos-online-summary")
        said = alice.locator("aside section.whos-online + p.whos-online-announcement")
        bob: Page | None = None
        try:
            expect(said).to_have_attribute("aria-live", "polite")
            with alice.expect_response(re.compile(r"/whos-online/$"), timeout=LIVE_TIMEOUT):
                pass  # the first poll: it says what changed since the render (maybe idles)
            expect(said).not_to_contain_text(NAMES["bob"])
            bob = log_in(browser, demo, "bob")
            expect(bob_in_alice).to_have_count(1, timeout=LIVE_TIMEOUT)
            expect(said).to_contain_text(f"{NAMES['bob']} joined.")
            members = member_count(summary.inner_text())

            log_out(bob, demo)
            expect(bob_in_alice).to_have_count(0, timeout=LIVE_TIMEOUT)
            expect(said).to_contain_text(f"{NAMES['bob']} left.")
            expect(summary).to_contain_text(f"{members - 1} members")
        finally:
            alice.context.close()
            if bob is not None:
                bob.context.close()


def log_out(page: Page, site: Demo) -> None:
    """Log out through the demo's header button."""
    from playwright.sync_api import expect

    page.goto(f"{site.url}/")
    page.locator("header").get_by_role("button", name="Log out").click()
    expect(page.locator("header .account")).to_contain_text("Log in")


def test_on_a_phone_the_block_is_on_the_first_screen_and_the_admin_page_reads_whole(
    browser: Browser, demo: Demo
) -> None:
    """At 390 × 844 CSS px: the demo's block starts within the first screen; the admin's
    Online-now page fits the screen and tells a touch screen nothing about hovering. Screenshots: home-phone.png and admin-phone-touch.png in the run's folder
    (with the admin-phone.png of the test above, the whole admin page on a phone)."""
    from playwright.sync_api import expect

    with server_log_on_failure(demo):
        page = log_in(browser, demo, "admin")
        try:
            page.set_viewport_size(PHONE)
            page.reload()
            block = page.locator("aside section.whos-online")
            expect(block).to_be_visible()
            box = block.bounding_box()
            assert box is not None and box["y"] < PHONE["height"], box
            page.screenshot(path=str(site_file(demo, "home-phone.png")))
        finally:
            page.context.close()
        context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
        context.set_default_timeout(STEP_TIMEOUT)
        try:
            page = context.new_page()
            page.goto(f"{demo.url}/accounts/login/")
            page.locator("#id_username").fill("admin")
            page.locator("#id_password").fill(PASSWORD)
            page.locator("main").get_by_role("button", name="Log in").click()
            page.goto(f"{demo.url}/admin/whos_online/onlinenow/")
            expect(page.locator("table.whos-online-members")).to_be_visible()
            assert page.evaluate("matchMedia('(hover: none)').matches")
            expect(page.get_by_text("Hover over the chart")).to_be_hidden()
            expect(page.get_by_text("Tap the chart for the counts at each moment.")).to_be_visible()
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
            # No two of the chart's labels overlap (the 0 and the first time, once).
            chart = page.locator("svg.whos-online-chart")
            boxes = chart.locator("text:visible").evaluate_all(BOXES_JS)
            overlaps = [
                (a["text"], b["text"])
                for i, a in enumerate(boxes)
                for b in boxes[i + 1 :]
                if a["left"] < b["right"] and b["left"] < a["right"]
                and a["top"] < b["bottom"] and b["top"] < a["bottom"]
            ]  # fmt: skip
            assert len(boxes) >= 8 and not overlaps, (overlaps, boxes)
            # A tap on the chart reads what a hover's tooltip says: the column tapped.
            reading = page.locator(".whos-online-reading")
            expect(reading).to_have_text(re.compile(r"^\d\d:\d\d: \d+ members?, \d+ guests?$"))
            column = chart.locator(".whos-online-hover rect").first
            column.scroll_into_view_if_needed()
            box = column.bounding_box()
            assert box is not None
            page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            expect(reading).to_have_text(column.locator("title").text_content() or "?")
            # The day table: one line per day, the counts clear of the date.
            days = page.locator("table.whos-online-days td")
            assert days.count() >= 4 * 2
            assert all(len(lines) == 1 for lines in days.evaluate_all(LINES_JS))
            gaps = page.locator("table.whos-online-days tbody tr").evaluate_all(GAPS_JS)
            assert min(gaps) >= 16, gaps  # CSS px between a day's date and its members count
            # Not full_page: capturing the whole page drops the touch emulation.
            page.locator(".whos-online-legend").scroll_into_view_if_needed()
            page.screenshot(path=str(site_file(demo, "admin-phone-touch.png")))
        finally:
            context.close()


# Each element's box in CSS px, with its text.
BOXES_JS = """elements => elements.map(e => {
  const r = e.getBoundingClientRect();
  return {text: e.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
})"""
# Per row: CSS px from the end of its first cell's text to the start of its second's.
GAPS_JS = """rows => rows.map(row => {
  const text = cell => { const r = document.createRange(); r.selectNodeContents(cell); return r.getBoundingClientRect(); };
  return text(row.cells[1]).left - text(row.cells[0]).right;
})"""
# Each element's text, split where the browser wrapped it (one rectangle per line box).
LINES_JS = """codes => codes.map(code => {
  const text = code.firstChild, range = document.createRange(), lines = [];
  let top = null;
  for (let i = 0; i < text.length; i++) {
    range.setStart(text, i);
    range.setEnd(text, i + 1);
    const y = Math.round(range.getBoundingClientRect().top);
    if (y !== top) { lines.push(""); top = y; }
    lines[lines.length - 1] += text.data[i];
  }
  return lines;
})"""
