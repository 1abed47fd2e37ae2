"""The demo site the README sends newcomers to still starts, passes its checks and leaks nothing.

It runs on two settings modules: ``demo.settings`` (Django's User, the demo's
member card) and ``demo.settings_email`` (an email-login custom user model, the
package's default card). Both are toured page by page as a guest, a member and
staff.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import passes_on_its_own_settings

ROOT = Path(__file__).resolve().parent.parent
MANAGE = ROOT / "example_project" / "manage.py"
SETTINGS = ("demo.settings", "demo.settings_email")


# Visits every demo page with Django's test client, in one process (the embedded
# fakeredis lives in that process's memory), as a guest, a member and staff, and
# prints one JSON line per page.
TOUR = r"""
import json, re
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from demo.people import ACCOUNTS, PASSWORD, get_or_create, login_for
from whos_online import presence

settings.ALLOWED_HOSTS = ["testserver"]
call_command("migrate", verbosity=0)
for person in ACCOUNTS:
    get_or_create(person, password=PASSWORD)
call_command("simulate_visitors", "--members", "12", "--guests", "5")  # heidi among them
presence.prune()
User = get_user_model()
pk = {
    login: User._default_manager.get(**{User.USERNAME_FIELD: login_for(login)}).pk
    for login in ("heidi", "dave", "olivia")
}
# The hidden member by name, login, email, profile link or avatar.
heidi = re.compile(
    rf"heidi|/members/{pk['heidi']}/|/avatars/{pk['heidi']}\.svg", re.IGNORECASE
)
blocks = re.compile(r'<section class="whos-(?:online|here)".*?</section>', re.DOTALL)
dot = re.compile(r'presence-dot presence-(\w+)')
browser = {"User-Agent": "Mozilla/5.0 Firefox/140.0"}
pages = [
    "/", "/about/", "/members/", f"/members/{pk['dave']}/", "/thread/", "/whos-online/",
    f"/avatars/{pk['dave']}.svg", "/accounts/login/",
]
for who in ("guest", "alice", "admin"):
    client = Client(headers=browser)
    if who != "guest":
        assert client.login(username=login_for(who), password=PASSWORD)
    extra = ["/admin/whos_online/onlinenow/"] if who == "admin" else []
    for page in [*pages, *extra, f"/members/{pk['heidi']}/"]:
        response = client.get(page)
        body = response.content.decode()
        shown = body if page == "/whos-online/" else "".join(blocks.findall(body))
        print(json.dumps({
            "who": who,
            "page": "heidi's profile" if page == f"/members/{pk['heidi']}/" else page,
            "status": response.status_code,
            "heidi": len(heidi.findall(body)),
            "at_in_block": shown.count("@"),
            "blocks": len(blocks.findall(body)),
            "dot": (dot.findall(body) or [None])[0],
            "staff_coloured": body.count(f'role-staff"><img class="whos-online-avatar" src="/avatars/{pk["olivia"]}.svg"'),
        }))
"""


def manage(
    *args: str, settings: str = "demo.settings", **env_extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(env_extra, DJANGO_SETTINGS_MODULE=settings)
    return subprocess.run(
        [sys.executable, str(MANAGE), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def check_ids(output: str) -> set[str]:
    return set(re.findall(r"\((\w+\.[EW]\d{3})\)", output))


def test_demo_settings_pass_every_check() -> None:
    result = manage("check", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr


def test_the_email_login_demo_passes_every_check() -> None:
    result = manage("check", "--fail-level", "WARNING", settings="demo.settings_email")
    assert result.returncode == 0, result.stderr
    assert check_ids(result.stdout + result.stderr) == set(), result.stderr


def test_simulate_visitors_records_them_on_the_embedded_redis(tmp_path: Path) -> None:
    database = str(tmp_path / "demo.sqlite3")
    unmigrated = manage("simulate_visitors", DEMO_DATABASE=database)
    assert unmigrated.returncode == 1
    assert "run `manage.py migrate` first" in unmigrated.stderr

    assert manage("migrate", DEMO_DATABASE=database).returncode == 0
    result = manage(
        "simulate_visitors", "--members", "3", "--guests", "2", "-v", "2", DEMO_DATABASE=database
    )
    assert result.returncode == 0, result.stderr
    assert "Recorded 3 member(s) and 2 guest(s)" in result.stdout
    assert "Members: " in result.stdout


# The home page's "Simulate more visitors" button, clicked four times; the
# block's member count after each click.
CLICKS = r"""
import re
from django.conf import settings
from django.core.management import call_command
from django.test import Client
settings.ALLOWED_HOSTS = ["testserver"]
call_command("migrate", verbosity=0)
client = Client(headers={"User-Agent": "Mozilla/5.0 Firefox/140.0"})
for _ in range(4):
    assert client.post("/simulate/").status_code == 302
    summary = re.search(r'whos-online-summary">(.*?)</p>', client.get("/").content.decode(), re.S)
    print(re.search(r"(\d+) members?", summary.group(1)).group(1))
"""


def test_the_simulate_button_adds_members_each_time(tmp_path: Path) -> None:
    result = manage("shell", "-v", "0", "-c", CLICKS, DEMO_DATABASE=str(tmp_path / "demo.sqlite3"))
    assert result.returncode == 0, result.stderr
    # 5 a click: first the demo's named people who are not online, then nameless ones.
    assert result.stdout.split() == ["5", "10", "15", "20"]


# `manage.py demo`'s stand-in for cron, its sleeps made clock shifts (time-machine); after
# its second turn, the admin page as staff.
CRON = r"""
from datetime import datetime, timezone
import time_machine
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from demo.management.commands import demo
from demo.people import PASSWORD, STAFF_LOGIN, login_for
settings.ALLOWED_HOSTS = ["testserver"]
call_command("migrate", verbosity=0)
demo.Command().create_users()
client = Client(headers={"User-Agent": "Mozilla/5.0 Firefox/140.0"})
assert client.login(username=login_for(STAFF_LOGIN), password=PASSWORD)
class Stop(Exception):
    pass
with time_machine.travel(datetime(2026, 5, 4, 12, tzinfo=timezone.utc), tick=False) as clock:
    slept = []
    def sleep(seconds):
        clock.shift(seconds)
        slept.append(seconds)
        if len(slept) == 2:
            raise Stop
    demo.time.sleep = sleep
    try:
        demo.stand_in_for_cron()
    except Stop:
        pass
    page = client.get("/admin/whos_online/onlinenow/").content.decode()
print(slept, "<polyline" in page, "One sample so far" in page)
"""


def test_the_demos_chart_draws_its_line_half_a_minute_after_the_start(tmp_path: Path) -> None:
    """Cron's every minute would leave a newcomer's first look at the chart empty."""
    result = manage("shell", "-v", "0", "-c", CRON, DEMO_DATABASE=str(tmp_path / "demo.sqlite3"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[30,", "30]", "True", "False"]


# The demo's pages as a guest, alice and staff: what a phone and the browser's
# icon request get, and whether a page still asks a logged-in visitor to log in.
PAGES_AS = r"""
import json, re
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from demo.people import ACCOUNTS, PASSWORD, get_or_create, login_for
settings.ALLOWED_HOSTS = ["testserver"]
call_command("migrate", verbosity=0)
for person in ACCOUNTS:
    get_or_create(person, password=PASSWORD)
for who in ("guest", "alice", "admin"):
    client = Client(headers={"User-Agent": "Mozilla/5.0 Firefox/140.0"})
    if who != "guest":
        assert client.login(username=login_for(who), password=PASSWORD)
    for page in ("/", "/about/", "/members/", "/thread/"):
        body = client.get(page).content.decode()
        icon = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', body)
        text = re.sub(r"<[^>]+>", " ", body).lower()
        print(json.dumps({
            "who": who, "page": page, "log_in": " ".join(text.split()).count("log in"),
            "viewport": '<meta name="viewport" content="width=device-width' in body,
            "icon": icon and client.get(icon.group(1))["Content-Type"],
        }))
print(json.dumps({"favicon.ico": client.get("/favicon.ico")["Content-Type"]}))
"""


def test_the_demo_reads_right_for_who_is_logged_in_and_on_a_phone(tmp_path: Path) -> None:
    result = manage("shell", "-v", "0", "-c", PAGES_AS, DEMO_DATABASE=str(tmp_path / "db"))
    assert result.returncode == 0, result.stderr
    *pages, favicon = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(pages) == 12
    # An icon on every page (and where the admin's pages look for one): no 404 per page.
    assert all(page["icon"] == "image/svg+xml" for page in pages), pages
    assert favicon == {"favicon.ico": "image/svg+xml"}
    assert all(page["viewport"] for page in pages)
    # Guests are invited to log in; whoever is logged in is not asked again.
    assert all(page["log_in"] for page in pages if page["who"] == "guest")
    assert not [p for p in pages if p["who"] != "guest" and p["log_in"]], pages


# A profile of a member nobody has seen, read with Redis up (the embedded one), then
# with the cache alias on a port where nothing answers: its dot and its "last seen".
PROFILE = r"""
import json, re, socket
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, override_settings
settings.ALLOWED_HOSTS = ["testserver"]
call_command("migrate", verbosity=0)
pk = get_user_model().objects.create_user("nobody").pk
def profile():
    body = Client().get(f"/members/{pk}/").content.decode()
    text = " ".join(re.sub(r"<[^>]+>", " ", body.split("</h1>")[1].split("</p>")[0]).split())
    print(json.dumps([re.search(r"presence-dot presence-(\w+)", body).group(1), text]))
profile()
with socket.socket() as sock:
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
down = {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": f"redis://127.0.0.1:{port}/0"}
with override_settings(CACHES={"default": down}):
    profile()
"""


def test_a_profile_says_unavailable_while_redis_is_down_and_not_seen_while_it_is_up(
    tmp_path: Path,
) -> None:
    result = manage("shell", "-v", "0", "-c", PROFILE, DEMO_DATABASE=str(tmp_path / "db"))
    assert result.returncode == 0, result.stderr
    up, down = [json.loads(line) for line in result.stdout.splitlines()]
    assert up == ["offline", "Not seen in the last week."]
    assert down == ["unavailable", "Last seen: unavailable right now (Redis is down)."]


def tour(settings: str, database: Path) -> dict[tuple[str, str], dict[str, Any]]:
    result = manage("shell", "-c", TOUR, settings=settings, DEMO_DATABASE=str(database))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {(row["who"], row["page"]): row for row in rows}


@pytest.mark.parametrize("settings", SETTINGS)
def test_every_demo_page_renders_and_hides_the_hidden_member(settings: str, tmp_path: Path) -> None:
    pages = tour(settings, tmp_path / "demo.sqlite3")
    assert len(pages) == 3 * 9 + 1
    assert all(row["status"] == 200 for row in pages.values()), pages
    # Every HTML page has the block (the thread has the room's too).
    for (who, page), row in pages.items():
        if page.startswith("/members/") or page in ("/", "/about/", "/accounts/login/"):
            assert row["blocks"] == 1, (who, page)
    assert pages[("guest", "/thread/")]["blocks"] == 2
    # heidi is a hidden simulated member: never named (nor linked, nor her avatar)
    # to guests or members on any page: the blocks, the members page, a profile,
    # the JSON...
    for who in ("guest", "alice"):
        for (viewer, page), row in pages.items():
            if viewer == who and page != "heidi's profile":
                assert row["heidi"] == 0, (who, page)
        # ...and on her own profile (public, like any) she reads as offline, never seen.
        assert pages[(who, "heidi's profile")]["dot"] == "offline"
    # ...but listed (and marked) for staff, in the block, the members page, the JSON
    # and the admin page, and online on her profile.
    for page in ("/", "/members/", "/whos-online/", "/admin/whos_online/onlinenow/"):
        assert pages[("admin", page)]["heidi"] > 0, page
    assert pages[("admin", "heidi's profile")]["dot"] == "online"
    # No email address in any block or in the JSON, on either site.
    assert all(row["at_in_block"] == 0 for row in pages.values()), pages
    if settings == "demo.settings":
        # The demo card: olivia, a moderator, in the staff colour with her initials avatar.
        assert pages[("guest", "/")]["staff_coloured"] == 1


def test_the_email_login_suite_passes_on_its_own_settings() -> None:
    """tests/test_email_login.py needs another user model, so another process."""
    print(passes_on_its_own_settings("tests.settings_email", "tests/test_email_login.py"))
