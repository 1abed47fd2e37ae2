"""The tutorial's setup, word for word, on a fresh ``django-admin startproject``.

Each step's snippet is read from docs/tutorial.md (and the WebSocket how-to's from
docs/howto/live.md), so the docs cannot drift from what works. The project runs in subprocesses of this venv's Python, as a site
and its cron would, against fakeredis or the real Redis; the Real-time section's
site is also opened in Chromium, where a second member appears without a reload.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

import whos_online
from tests.conftest import BROWSER, REDIS_URL
from tests.load_site.uvicorn import free_port, listening
from tests.redis_server import wait_for
from tests.test_bots import GOOGLEBOT
from tests.test_browser import browser  # noqa: F401 (the fixture, used by name below)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(whos_online.__file__).resolve().parent.parent
TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text()
SETUP = re.search(r"^## Set up whos_online\n(.*?)^## ", TUTORIAL, re.M | re.S)
assert SETUP, "docs/tutorial.md has no setup section"
URLS = "# mysite/urls.py\n"
SECOND = re.search(r"^## Watch a second member arrive\n(.*?)^## ", TUTORIAL, re.M | re.S)
assert SECOND, "docs/tutorial.md has no second member section"
LOGIN_TEMPLATE = "{# templates/registration/login.html #}\n"
LOGOUT_FORM = "{# templates/base.html, just before </body> #}\n"


def snippets(language: str, section: str = SETUP.group(1)) -> list[str]:
    """The tutorial's setup snippets (or ``section``'s) in ``language``, de-indented from
    their list item."""
    found = []
    for lang, body in re.findall(r"^ *```(\w+)\n(.*?)^ *```", section, re.M | re.S):
        if lang == language:
            lines = body.splitlines()
            indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
            found.append("\n".join(line[indent:] for line in lines) + "\n")
    return found


def settings_snippets(section: str = SETUP.group(1)) -> list[str]:
    """The Python snippets that go at the end of settings.py (the others name their file)."""
    return [snippet for snippet in snippets("python", section) if not snippet.startswith(URLS)]


def urls_snippet(section: str = SETUP.group(1)) -> str:
    """What a section adds at the end of mysite/urls.py."""
    (urls,) = [snippet for snippet in snippets("python", section) if snippet.startswith(URLS)]
    return urls


def add_login_page(path: Path) -> None:
    """The second member section's steps: the login page's URLs, settings and template, and
    the logout button just before the base template's </body>."""
    second = SECOND.group(1)
    with open(path / "mysite" / "urls.py", "a") as urls:
        urls.write(urls_snippet(second))
    with open(path / "mysite" / "settings.py", "a") as settings:
        settings.write("\n" + "\n".join(settings_snippets(second)))
    template, logout = snippets("django", second)
    assert template.startswith(LOGIN_TEMPLATE) and logout.startswith(LOGOUT_FORM)
    (path / "templates" / "registration").mkdir()
    (path / "templates" / "registration" / "login.html").write_text(template)
    base = path / "templates" / "base.html"
    assert base.read_text().count("</body>") == 1
    base.write_text(base.read_text().replace("</body>", logout + "</body>"))


def test_the_shell_lines_before_the_venv_name_python3_which_debian_has() -> None:
    """Stock Debian and Ubuntu have ``python3`` and no ``python`` until a venv is active."""
    start = re.search(r"^## Start a project\n(.*?)^## ", TUTORIAL, re.M | re.S)
    assert start, "docs/tutorial.md has no Start a project section"
    lines = [line for block in snippets("sh", start.group(1)) for line in block.splitlines()]
    activate = lines.index(". .venv/bin/activate")
    assert not [line for line in lines[:activate] if line.split()[0] == "python"]


def manage_commands() -> list[list[str]]:
    """The ``python manage.py …`` command lines of the Setup's shell steps."""
    lines = [line for block in snippets("sh") for line in block.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("python manage.py")]


def cron_command() -> list[str]:
    """The cron line's command, run with this venv's Python instead of /srv/mysite's."""
    (line,) = snippets("cron")
    argv = shlex.split(line.split("&&", 1)[1])
    assert argv[0].endswith("/python")
    return argv[1:]


class Site:
    """A fresh startproject with the tutorial's settings appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.settings = path / "mysite" / "settings.py"
        self.quickstart = self.settings.read_text()

    def configure(self, *snippets: str, **overrides: Any) -> None:
        """The quickstart settings, then this test's (its Redis, its key prefix)."""
        lines = [*snippets, *(f"{name} = {value}" for name, value in overrides.items())]
        self.settings.write_text(self.quickstart + "\n# The test's\n" + "\n".join(lines) + "\n")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("DJANGO_SETTINGS_MODULE")  # pytest-django's; manage.py sets the site's
        return subprocess.run(
            [sys.executable, *args], cwd=self.path, env=env, capture_output=True, text=True
        )

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("manage.py", *args)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    path = tmp_path_factory.mktemp("fresh")
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "mysite", str(path)],
        check=True,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
    )
    settings = path / "mysite" / "settings.py"
    # A site without DEFAULT_AUTO_FIELD, as older projects are (Django 6's
    # startproject no longer writes it).
    text = re.sub(r"^DEFAULT_AUTO_FIELD = .*\n", "", settings.read_text(), flags=re.M)
    assert "DEFAULT_AUTO_FIELD" not in text
    settings.write_text(text + "\n" + "\n".join(settings_snippets()))
    urls = urls_snippet()
    (path / "mysite" / "urls.py").write_text((path / "mysite" / "urls.py").read_text() + urls)
    (template,) = snippets("django")
    (path / "templates").mkdir()
    (path / "templates" / "base.html").write_text(template)
    add_login_page(path)
    created = Site(path)
    commands = manage_commands()
    assert commands == [["manage.py", "migrate"]]
    for command in commands:
        done = created.run(*command)
        assert done.returncode == 0, done.stderr
    return created


# The testing how-to's settings: the whos_online cache on fakeredis.
(FAKEREDIS,) = re.findall(
    r"^```python\n(.*?)^```", (ROOT / "docs" / "howto" / "testing.md").read_text(), re.M | re.S
)


def use(site: Site, redis_db: redis.Redis, settings: Any, **more: Any) -> None:
    """Point the site at this test's Redis (fakeredis: its own, in the subprocess, set up
    word for word as docs/howto/testing.md says)."""
    overrides: dict[str, Any] = {"WHOS_ONLINE_KEY_PREFIX": repr(settings.WHOS_ONLINE_KEY_PREFIX)}
    if settings.CACHES["default"]["LOCATION"] == REDIS_URL:
        overrides['CACHES["whos_online"]["LOCATION"]'] = repr(REDIS_URL)
        site.configure(**overrides, **more)
    else:
        site.configure(FAKEREDIS, **overrides, **more)


CURL = "curl/8.14.1"
# Run in the site's shell: a browser, Googlebot and curl visit, then the
# tutorial's template renders.
VISITS = """
from django.template import engines
from django.test import Client
for name, agent in {agents!r}.items():
    response = Client(headers={{"User-Agent": agent, "Host": "localhost"}}).get("/admin/login/")
    print(name, response.status_code, sorted(response.cookies))
print(engines["django"].from_string({template!r}).render())
"""


def test_the_quickstart_counts_a_visitor_but_no_crawler_and_checks_clean(
    site: Site, redis_db: redis.Redis, settings: Any
) -> None:
    use(site, redis_db, settings)
    check = site.manage("check")
    assert (check.returncode, check.stderr) == (0, "")
    assert check.stdout == "System check identified no issues (0 silenced).\n"
    (template,) = snippets("django")
    agents = {"browser": BROWSER, "googlebot": GOOGLEBOT, "curl": CURL}
    shell = site.manage("shell", "-v", "0", "-c", VISITS.format(agents=agents, template=template))
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[:3] == [
        "browser 200 ['csrftoken', 'online']",
        "googlebot 200 ['csrftoken']",
        "curl 200 ['csrftoken']",
    ]
    assert "1 user online: 0 members, 1 guest" in " ".join(shell.stdout.split())


# Run in the site's shell: the tutorial's last step, a superuser logs in and opens the home page.
MEMBER_VISIT = """
from django.contrib.auth import get_user_model
from django.test import Client
get_user_model().objects.create_superuser({name!r}, password="tutorial")
client = Client(headers={{"User-Agent": {agent!r}, "Host": "localhost"}})
assert client.login(username={name!r}, password="tutorial")
print(client.get("/").content.decode())
"""


def member_visit(site: Site, redis_db: redis.Redis, settings: Any, script: str) -> tuple[str, str]:
    """``script`` run in the site's shell for a new member: their name, and what it printed."""
    use(site, redis_db, settings)
    name = f"member{uuid.uuid4().hex[:8]}"
    shell = site.manage("shell", "-v", "0", "-c", script.format(name=name, agent=BROWSER))
    assert shell.returncode == 0, shell.stderr
    return name, shell.stdout


def assert_block_lists(page: str, name: str, summary: str) -> None:
    text = " ".join(page.split())
    assert summary in text
    assert f"<bdi>{name}</bdi>" in text


def test_the_tutorials_home_page_lists_who_logged_in(
    site: Site, redis_db: redis.Redis, settings: Any
) -> None:
    name, page = member_visit(site, redis_db, settings, MEMBER_VISIT)
    assert page.lstrip().startswith("<!DOCTYPE html>")
    assert_block_lists(page, name, "1 user online: 1 member, 0 guests")
    assert "Most ever online: 1 user on " in " ".join(page.split())


# Run in the site's shell: an ordinary member logs in through the tutorial's login page.
LOGIN_PAGE = """
import re
from django.contrib.auth import get_user_model
from django.test import Client
get_user_model().objects.create_user({name!r}, password="tutorial")
client = Client(headers={{"User-Agent": {agent!r}, "Host": "localhost"}})
form = client.get("/accounts/login/")
print(form.status_code, 'name="username"' in form.content.decode())
done = client.post("/accounts/login/", {{"username": {name!r}, "password": "tutorial"}})
print(done.status_code, done["Location"])
home = client.get("/").content.decode()
(logout,) = re.findall(r'<form method="post" action="([^"]+)">\\s*<input[^>]*csrfmiddlewaretoken', home)
print(logout, "<button type=\\"submit\\">Log out</button>" in home)
gone = client.post(logout)
print(gone.status_code, gone["Location"])
print(client.get("/").content.decode())
print("=====")
print(home)
"""


def test_an_ordinary_member_logs_in_through_the_login_page_and_is_listed(
    site: Site, redis_db: redis.Redis, settings: Any
) -> None:
    name, printed = member_visit(site, redis_db, settings, LOGIN_PAGE)
    form, done, logout, gone, *pages = printed.splitlines()
    assert (form, done, logout, gone) == ("200 True", "302 /", "/accounts/logout/ True", "302 /")
    after, home = "\n".join(pages).split("=====\n")
    # Not "0 guests": in a Redis this fresh, the login's own request is counted as a
    # guest again (its "online" cookie predates the data; reported, not this test's).
    assert_block_lists(home, name, "1 member,")
    # Logged out with the tutorial's button: no longer listed, counted as a guest.
    assert "0 members" in " ".join(after.split()) and f"<bdi>{name}</bdi>" not in after


def test_the_cron_line_prints_nothing_even_on_a_site_with_check_warnings(
    site: Site, redis_db: redis.Redis, settings: Any
) -> None:
    use(site, redis_db, settings, WHOS_ONLINE_ROOM_MAX_AGE=900)
    assert "whos_online.W012" in site.manage("check").stderr  # the site has a warning
    cron = site.run(*cron_command())
    assert (cron.returncode, cron.stdout, cron.stderr) == (0, "", "")


def test_the_cron_line_prints_one_line_when_redis_is_down(site: Site, closed_port: int) -> None:
    site.configure(
        **{'CACHES["whos_online"]["LOCATION"]': repr(f"redis://127.0.0.1:{closed_port}/0")}
    )
    cron = site.run(*cron_command())
    assert (cron.returncode, cron.stdout) == (1, "")
    (line,) = cron.stderr.splitlines()
    assert line.startswith("CommandError: Redis failed, pruning stopped: ")


LIVE = (ROOT / "docs" / "howto" / "live.md").read_text()
REAL_TIME = re.search(r"^## Real-time presence \(WebSockets\)\n(.*?)^### ", LIVE, re.M | re.S)
assert REAL_TIME, "docs/howto/live.md has no Real-time section"
LIVE_BLOCK = re.search(r"^## Live block\n(.*?)^## ", LIVE, re.M | re.S)
assert LIVE_BLOCK, "docs/howto/live.md has no Live block section"


CHECKOUT = "/path/to/checkout"  # the tutorial's name for the checkout's root


@pytest.mark.parametrize(
    "section", [SETUP.group(1), REAL_TIME.group(1)], ids=["tutorial", "live-how-to"]
)
def test_the_install_line_installs_the_checkout_as_written(section: str, tmp_path: Path) -> None:
    """The page's pip line word for word, the tutorial's placeholder made this checkout's
    root: pip takes it (a dry run, from no index). A path into the package folder, as the
    live how-to once gave, pip refuses."""
    (line,) = [
        line for block in snippets("sh", section) for line in block.splitlines() if "pip" in line
    ]
    python, *args = shlex.split(line.replace(CHECKOUT, str(ROOT)), comments=True)
    assert (python, args[:3]) == ("python", ["-m", "pip", "install"]) and CHECKOUT in line
    dry_run = ["--dry-run", "--no-deps", "--no-index", "--no-build-isolation", "--quiet"]
    pip = subprocess.run(
        [sys.executable, *args, *dry_run], cwd=tmp_path, capture_output=True, text=True
    )
    assert pip.returncode == 0, pip.stderr


def files_of(section: str) -> dict[str, str]:
    """A section's Python snippets, one file each, by the path their first line names."""
    blocks = re.findall(r"^ *```python\n(.*?)^ *```", section, re.M | re.S)
    named = [re.match(r"# (\S+\.py)\n(.*)", textwrap.dedent(b), re.S) for b in blocks]
    return {match[1]: match[2] for match in named if match}


def real_time_files() -> dict[str, str]:
    """The files the Live block's and the Real-time section's steps write or add to."""
    return {**files_of(LIVE_BLOCK.group(1)), **files_of(REAL_TIME.group(1))}


SERVERS = {
    "runserver": ["manage.py", "runserver", "127.0.0.1:{port}", "--noreload"],  # daphne's
    "uvicorn": ["-m", "uvicorn", "--port", "{port}", "mysite.asgi:application"],
}


# s: an event (a server answering, a push) is waited for; this only bounds a failure.
EVENT_CEILING = 30


def real_time_site(path: Path, redis_db: redis.Redis, settings: Any) -> Site:
    """startproject, Setup (the tutorial's home page and base template included), then the
    Real-time section's files word for word. On a busy machine the server's Redis calls
    wait for a CPU (fakeredis runs in its process, each script compiled on first use): a
    call in flight past the slow-call budget makes the others skip Redis, and a skipped
    visit is never pushed. So a budget no wait for a CPU reaches (a socket timeout of
    30 s, a budget of 12 s): what is asserted is what is pushed, not how soon."""
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "mysite", str(path)],
        check=True,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
    )
    files = real_time_files()
    assert sorted(files) == ["mysite/asgi.py", "mysite/settings.py", "mysite/urls.py"]
    (path / "mysite" / "asgi.py").write_text(files["mysite/asgi.py"])
    urls = path / "mysite" / "urls.py"
    urls.write_text(urls.read_text() + urls_snippet() + files["mysite/urls.py"])
    (template,) = snippets("django")
    (path / "templates").mkdir()
    (path / "templates" / "base.html").write_text(template)
    add_login_page(path)
    site = Site(path)
    site.quickstart += "\n".join(settings_snippets()) + "\n" + files["mysite/settings.py"]
    use(site, redis_db, settings, **{'CACHES["whos_online"]["OPTIONS"]["socket_timeout"]': 30})
    assert site.manage("migrate", "-v", "0").returncode == 0
    return site


@contextmanager
def serving(site: Site, serve: str) -> Iterator[str]:
    """The site served as the Real-time section says, at a loopback port: its origin.
    The server's log is printed afterwards (pytest shows it when the test failed)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    log = open(site.path / "server.log", "wb")
    server = subprocess.Popen(
        [sys.executable, *(arg.format(port=port) for arg in SERVERS[serve])],
        cwd=site.path, env={**env, "PYTHONPATH": str(ROOT)}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(lambda: listening(port), timeout=EVENT_CEILING, what=serve)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()  # by its pid
        server.wait(timeout=10)
        log.close()
        print((site.path / "server.log").read_text()[-3000:])


@pytest.mark.load  # real servers (and the load extra's clients): run once, by dev.py test
@pytest.mark.parametrize("serve", SERVERS)
def test_the_real_time_section_pushes_on_a_fresh_site(
    tmp_path: Path, redis_db: redis.Redis, settings: Any, serve: str
) -> None:
    """startproject, Setup, then the Real-time section word for word, served as it says
    (runserver through daphne, or an ASGI server on asgi.py alone): a page's socket is
    pushed a visit, and a room nobody declared is refused."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    site = real_time_site(tmp_path, redis_db, settings)
    with serving(site, serve) as origin:
        base = origin.replace("http://", "ws://") + "/ws/whos-online/"
        with connect(base, origin=origin, open_timeout=EVENT_CEILING) as socket:
            assert json.loads(socket.recv(timeout=EVENT_CEILING))["type"] == "presence_state"
            page = urllib.request.Request(f"{origin}/whos-online/", headers={"User-Agent": BROWSER})
            urllib.request.urlopen(page, timeout=EVENT_CEILING).read()  # a poll: no visit
            visit = urllib.request.Request(
                f"{origin}/admin/login/", headers={"User-Agent": BROWSER}
            )
            urllib.request.urlopen(visit, timeout=EVENT_CEILING).read()
            pushed = json.loads(socket.recv(timeout=EVENT_CEILING))
            assert (pushed["type"], pushed["guests"]) == ("presence_diff", 1)
            assert "1 user online: 0 members, 1 guest" in " ".join(pushed["html"].split())
        with connect(base + "staff-only/", origin=origin, open_timeout=EVENT_CEILING) as room:
            with pytest.raises(ConnectionClosed) as closed:
                room.recv(timeout=EVENT_CEILING)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403


# The Live block's first step: the tutorial's <aside> made live.
(LIVE_ASIDE,) = re.findall(r"^ *```django\n *(.*?)\n *```", LIVE_BLOCK.group(1), re.M | re.S)
PASSWORD = "tutorial"
MEMBERS = """
from django.contrib.auth import get_user_model
for name in ("alice", "bob"):
    get_user_model().objects.create_user(name, password={password!r})
"""
PUSH_TIMEOUT = 10_000  # ms: well under the block's poll interval, so only a push is in time


@pytest.mark.browser
@pytest.mark.parametrize("redis_db", ["fake"], indirect=True)  # one browser run is enough
def test_a_browser_on_the_fresh_real_time_site_sees_a_member_arrive_without_a_reload(
    tmp_path: Path,
    redis_db: redis.Redis,
    settings: Any,
    browser: Browser,  # noqa: F811
) -> None:
    """The same fresh site, its home page's block made live as the how-to says, on
    runserver: alice's Chromium shows bob as soon as he logs in, with no reload and no
    poll (the socket pushed it), and no error in its console."""
    from playwright.sync_api import expect

    site = real_time_site(tmp_path, redis_db, settings)
    base = tmp_path / "templates" / "base.html"
    assert base.read_text().count("<aside>{% whos_online %}</aside>") == 1
    base.write_text(base.read_text().replace("<aside>{% whos_online %}</aside>", LIVE_ASIDE))
    made = site.manage("shell", "-c", MEMBERS.format(password=PASSWORD))
    assert made.returncode == 0, made.stderr
    with serving(site, "runserver") as origin:
        alice = logged_in_home(browser, origin, "alice")
        errors: list[str] = []
        alice.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        polls: list[str] = []
        alice.on("request", lambda r: polls.append(r.url) if "/whos-online/" in r.url else None)
        alice.evaluate("window.loadedOnce = true")
        members = alice.locator("aside .whos-online-members li")
        expect(members).to_have_text(["alice"])
        logged_in_home(browser, origin, "bob")
        expect(members).to_have_text(["bob", "alice"], timeout=PUSH_TIMEOUT)
        summary = alice.locator("aside .whos-online-summary")
        expect(summary).to_contain_text("2 members")
        assert alice.evaluate("window.loadedOnce") is True  # the same page, not reloaded
        assert (polls, errors) == ([], [])


def logged_in_home(chromium: Browser, origin: str, name: str) -> Page:
    """A Chromium context of its own that logged in (an ordinary member) through the
    tutorial's login page, on the home page; its block's socket is open."""
    page = chromium.new_context().new_page()
    page.set_default_timeout(PUSH_TIMEOUT)
    page.goto(f"{origin}/accounts/login/")
    page.locator("#id_username").fill(name)
    page.locator("#id_password").fill(PASSWORD)
    with page.expect_websocket(lambda socket: "/ws/whos-online/" in socket.url) as opened:
        page.locator("main [type=submit]").click()
    page.wait_for_url(f"{origin}/")
    opened.value.expect_event("framereceived")  # the first state: subscribed
    return page
