"""The demo site the README sends newcomers to still starts and passes its checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MANAGE = Path(__file__).resolve().parent.parent / "example_project" / "manage.py"


# Visits every demo page with Django's test client, in one process (the embedded
# fakeredis lives in that process's memory), as a guest, a member and staff.
TOUR = """
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from whos_online import presence

settings.ALLOWED_HOSTS = ["testserver"]
call_command("migrate", verbosity=0)
call_command("simulate_visitors", "--members", "12", "--guests", "5")  # heidi among them
presence.prune()
User.objects.create_user("admin", password="demo", is_staff=True)
User.objects.create_user("alice", password="demo")
browser = {"User-Agent": "Mozilla/5.0 Firefox/140.0"}
pages = ["/", "/about/", "/members/", "/members/dave/", "/thread/", "/whos-online/"]
for who in ("guest", "alice", "admin"):
    client = Client(headers=browser)
    if who != "guest":
        client.login(username=who, password="demo")
    for page in pages + (["/admin/whos_online/onlinenow/"] if who == "admin" else []):
        response = client.get(page)
        print(who, page, response.status_code, response.content.decode().count("heidi"))
"""


def manage(*args: str, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, str(MANAGE), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_demo_settings_pass_every_check() -> None:
    result = manage("check", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr


def test_simulate_visitors_records_them_on_the_embedded_redis() -> None:
    result = manage("simulate_visitors", "--members", "3", "--guests", "2")
    assert result.returncode == 0, result.stderr
    assert "Recorded 3 member(s) and 2 guest(s)" in result.stdout


def test_every_demo_page_renders_and_hides_the_hidden_member(tmp_path: Path) -> None:
    result = manage("shell", "-c", TOUR, DEMO_DATABASE=str(tmp_path / "demo.sqlite3"))
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines() if line.count(" ") == 3]
    assert len(lines) == 3 * 6 + 1
    assert all(status == "200" for _, _, status, _ in lines), lines
    heidi = {(who, page): int(count) for who, page, _, count in lines}
    # heidi is a hidden simulated member: never named to guests or members...
    assert heidi[("guest", "/")] == 0 and heidi[("alice", "/thread/")] == 0
    # ...but listed (and marked) for staff, in the block and on the admin page
    assert heidi[("admin", "/")] > 0 and heidi[("admin", "/admin/whos_online/onlinenow/")] > 0
