"""The docs and the README stay true to the code: the settings reference says what the
one table declares, and what the README shows is what the tested docs say."""

from __future__ import annotations

import copy
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from io import StringIO
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import django
import pytest
import time_machine
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.template import engines
from django.urls import path

import whos_online
from tests import online_now, test_admin
from tests.conftest import NOW, BrowserClient
from tests.test_consumers import DEADLINE, eventually, listed, run, tab, until
from tests.test_realtime_trust import refused
from whos_online import presence
from whos_online.settings_table import DEFAULTS, REMOVED, SETTINGS

ROOT = Path(whos_online.__file__).resolve().parent.parent
DOCS = ROOT / "docs"


SETTINGS_SECTION = (DOCS / "reference" / "core.md").read_text().split("\n## Settings\n")[1]
SETTINGS_SECTION = SETTINGS_SECTION.split("\n## ")[0]
ENTRY = re.compile(
    r"^\((?P<anchor>\w+)\)=\n#### `(?P<name>\w+)`\n\n\*\*Type:\*\* .+ ·\n"
    r"\*\*Default:\*\* `(?P<default>.*)` ·\n"
    r"\*\*Checked by:\*\* \[`(?P<check>[\w.]+)`\]\(#(?P<check_anchor>\w+)\)\n\n\S",
    re.M,
)


def test_the_reference_has_an_entry_per_setting_with_its_default_and_check() -> None:
    """Written by hand, held to the table: an entry per setting (its anchor, heading,
    default as Python writes it and check, then what it does) and a row in the summary."""
    entries = [found.groups() for found in ENTRY.finditer(SETTINGS_SECTION)]
    assert sorted(entries) == sorted(
        (s.name.lower(), s.name, repr(s.default), s.check, s.check[-4:].lower()) for s in SETTINGS
    )
    rows = re.findall(r"^\| \[`(\w+)`\]\(#(\w+)\) \| `(.*)` \|$", SETTINGS_SECTION, re.M)
    assert sorted(rows) == sorted((name, name.lower(), repr(d)) for name, d in DEFAULTS.items())


def test_the_reference_names_no_setting_the_table_lacks_and_every_removed_one() -> None:
    named = set(re.findall(r"WHOS_ONLINE_\w+", SETTINGS_SECTION))
    assert named == {*DEFAULTS, *REMOVED}
    removed = SETTINGS_SECTION.split("\n### Removed settings\n")[1]
    assert re.findall(r"^- `(\w+)`: ", removed, re.M) == list(REMOVED)


def test_the_settings_every_site_sets_come_first() -> None:
    headings = re.findall(r"^#{3,4} `?(.+?)`?$", SETTINGS_SECTION, re.M)
    assert headings[:2] == ["Every site", "WHOS_ONLINE_CACHE_ALIAS"]
    assert headings[-1] == "Removed settings"


def test_every_check_a_setting_names_has_its_anchor() -> None:
    checks = (DOCS / "reference" / "core.md").read_text()
    for check in {setting.check for setting in SETTINGS} | {"whos_online.W015"}:
        assert f"({check[-4:].lower()})=\n### `{check}`\n" in checks


def code_blocks(text: str, language: str = r"\w+") -> list[str]:
    """Fenced code blocks (in ``language``), de-indented from their list item."""
    found = re.findall(rf"^ *```{language}\n(.*?)^ *```", text, re.M | re.S)
    return [textwrap.dedent(body) for body in found]


@pytest.mark.parametrize("block", code_blocks((ROOT / "README.md").read_text()))
def test_each_readme_snippet_is_in_the_tested_tutorial_or_contributing_page(block: str) -> None:
    """The README's setup is the tutorial's, which tests/test_fresh_site.py runs word for word;
    its commands (their comments aside) are the contributing page's."""
    tested = code_blocks((DOCS / "tutorial.md").read_text())
    contributing = "\n".join(code_blocks((DOCS / "contributing.md").read_text()))
    commands = {line.split("#")[0].strip() for line in contributing.splitlines()}
    assert (
        block in tested or {line.split("#")[0].strip() for line in block.splitlines()} <= commands
    )


def test_the_readme_links_to_pages_in_the_repository() -> None:
    """Read on GitHub or in a checkout, every link works: no docs host exists before the release."""
    links = re.findall(r"\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    local = [link for link in links if not link.startswith("https://")]
    assert "docs/tutorial.md" in local
    assert all((ROOT / link.split("#")[0]).exists() for link in local), local
    assert not [link for link in links if "readthedocs" in link]


def test_the_readme_keeps_ci_s_commands() -> None:
    """.ci/run runs the README's setup and everything commands."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    for command in ("python3 dev.py setup", "python3 dev.py test --all"):
        assert f"\n{command} " in readme and f" {command}\n" in ci


def snippets(page: str, language: str) -> list[str]:
    """A docs page's snippets in ``language``."""
    return code_blocks((DOCS / page).read_text(), language)


def test_the_api_overview_runs_as_written(redis_db: Any, people: Any, rf: Any) -> None:
    """Each line of the reference's overview, with its names bound to real users."""
    alice, bob = people("alice", "bob", is_staff=True)
    request = rf.get("/")
    request.user = alice
    (overview,) = snippets("reference/core.md", "python")
    names: dict[str, Any] = {"user": alice, "alice": alice, "bob": bob, "request": request}
    exec(compile(overview, "docs/reference/core.md", "exec"), names)  # noqa: S102
    assert (names["users"], names["guests"]) == (0, 0)  # nobody stale to prune
    assert presence.status(alice) == "offline"  # the overview forgot them


def test_the_presence_dots_template_renders_a_dot_per_member(redis_db: Any, people: Any) -> None:
    alice, bob = people("alice", "bob")
    presence.record_user(alice)
    (template,) = snippets("howto/presence-dots.md", "django")
    html = engines["django"].from_string(template).render({"page_obj": [alice, bob]})
    assert re.findall(r'<span class="(.*?)"></span> (\w+)', html) == [
        ("dot dot-online", "alice"),
        ("dot dot-offline", "bob"),
    ]


def test_the_jinja2_template_renders_the_blocks_and_dots(
    redis_db: Any, people: Any, settings: Any, tmp_path: Path
) -> None:
    """The how-to's engine (after the site's Django one) loads its template from
    ``BASE_DIR / "jinja2"``."""
    (engine,) = snippets("howto/jinja2.md", "python")
    site = run_snippet(engine, "docs/howto/jinja2.md", "settings", BASE_DIR=tmp_path)
    settings.TEMPLATES = [settings.TEMPLATES[0], *site.TEMPLATES]
    (template,) = snippets("howto/jinja2.md", "jinja")
    (tmp_path / "jinja2").mkdir()
    (tmp_path / "jinja2" / "thread.html").write_text(template)
    alice, bob = people("alice", "bob")
    presence.record_user(alice)
    presence.record_user(bob, room="thread:42")
    thread = SimpleNamespace(pk=42)
    page = engines["jinja2"].get_template("thread.html")
    html = page.render({"thread": thread, "members": [alice]})
    text = " ".join(html.split())
    assert "1 user online: 1 member, 0 guests" in text
    assert "1 here now: 1 member, 0 guests" in text
    assert '<span class="dot dot-online"></span> alice' in text


def test_the_full_name_card_recipe_shows_full_names(
    redis_db: Any, people: Any, settings: Any
) -> None:
    (recipe, *_) = snippets("howto/member-cards.md", "python")
    names: dict[str, Any] = {}
    exec(compile(recipe, "docs/howto/member-cards.md", "exec"), names)  # noqa: S102
    settings.WHOS_ONLINE_MEMBER_CARD = names["full_name_card"]
    (alice,) = people("alice", first_name="Alice", last_name="Archer")
    presence.record_user(alice)
    html = engines["django"].from_string("{% load whos_online %}{% whos_online %}").render({})
    assert f'<a href="/people/{alice.pk}/"><bdi>Alice Archer</bdi></a>' in html


def test_the_rooms_tag_lists_who_is_in_the_thread(redis_db: Any, people: Any) -> None:
    alice, bob = people("alice", "bob")
    presence.record_user(alice, room=("thread", 42))
    presence.record_user(bob, room=("thread", 7))
    (template,) = snippets("howto/rooms.md", "django")
    html = engines["django"].from_string(template).render({"thread": SimpleNamespace(pk=42)})
    assert "1 here now: 1 member, 0 guests" in " ".join(html.split())
    assert re.findall(r"<bdi>(\w+)</bdi>", html) == ["alice"]


def test_the_celery_beat_schedule_names_the_registered_task() -> None:
    from celery import current_app

    from whos_online import tasks  # noqa: F401  (registers the task, as autodiscovery does)

    (schedule, *_) = snippets("howto/scheduling.md", "python")
    names: dict[str, Any] = {}
    exec(compile(schedule, "docs/howto/scheduling.md", "exec"), names)  # noqa: S102
    (entry,) = names["CELERY_BEAT_SCHEDULE"].values()
    assert entry["task"] in current_app.tasks


# Django's tasks framework exists from Django 6.0; the matrix runs this on 6.x.
if django.VERSION >= (6, 0):

    def test_the_django_task_snippet_prunes(redis_db: Any) -> None:
        (_, enqueue) = snippets("howto/scheduling.md", "python")
        names: dict[str, Any] = {}
        exec(compile(enqueue, "docs/howto/scheduling.md", "exec"), names)  # noqa: S102
        pruned = names["django_prune"].enqueue().return_value  # the immediate backend
        assert sorted(pruned) == ["batches", "guests", "users"]
        assert (pruned["users"], pruned["guests"]) == (0, 0)


def install_recipe(
    page: str,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    ports: Sequence[int] = (),
    number: int = 0,
) -> None:
    """A how-to's snippet of files as a site would have it: each ``# package/module.py``
    importable as ``package.module``, and the ``settings.py`` lines applied to the settings.
    Its example servers are this test's at ``ports`` (see ``on_loopback``); ``number``
    picks the page's recipe, counting its snippets that start with ``# settings.py``."""
    snippet = [s for s in snippets(page, "python") if s.startswith("# settings.py\n")][number]
    snippet = on_loopback(snippet, ports)
    files = dict(re.findall(r"^# (\S+\.py)\n(.*?)(?=^# \S+\.py\n|\Z)", snippet, re.M | re.S))
    for file, source in files.items():
        if file != "settings.py":
            package, _, name = file.removesuffix(".py").rpartition("/")
            if package not in sys.modules:
                monkeypatch.setitem(sys.modules, package, ModuleType(package))
            module = run_snippet(source, page, f"{package}.{name}")
            monkeypatch.setitem(sys.modules, module.__name__, module)
    apply_settings(files["settings.py"], page, settings)


def run_snippet(snippet: str, page: str, name: str, **defined: Any) -> ModuleType:
    """``snippet`` run as the module ``name`` (what it defines, its attributes), after what
    the site's file ``defined`` before it."""
    module = ModuleType(name)
    vars(module).update(defined)
    exec(compile(snippet, page, "exec"), module.__dict__)  # noqa: S102
    return module


def apply_settings(source: str, page: str, settings: Any) -> None:
    """What the settings.py lines ``source`` set, set on the settings."""
    for name, value in vars(run_snippet(source, page, "settings")).items():
        if name.isupper():
            setattr(settings, name, value)


EXAMPLE_SERVER = re.compile(r'"10\.0\.0\.\d+", \d+')


def on_loopback(snippet: str, ports: Sequence[int]) -> str:
    """``snippet`` with its example servers (``"10.0.0.1", 7000``…) replaced, in order, by
    this test's on 127.0.0.1 at ``ports``: what a reader puts in their own servers' place."""
    assert len(EXAMPLE_SERVER.findall(snippet)) == len(ports)
    local = iter(ports)
    return EXAMPLE_SERVER.sub(lambda _: f'"127.0.0.1", {next(local)}', snippet)


def test_the_hidden_members_recipe_hides_who_asked(
    redis_db: Any, people: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_recipe("howto/hidden-members.md", monkeypatch, settings)
    alice, bob = people("alice", "bob")
    alice.profile = SimpleNamespace(hide_online_status=True)
    bob.profile = SimpleNamespace(hide_online_status=False)
    presence.record_user(alice)
    presence.record_user(bob)
    html = engines["django"].from_string("{% load whos_online %}{% whos_online %}").render({})
    assert "2 members (1 hidden)" in " ".join(html.split())
    assert re.findall(r"<bdi>(\w+)</bdi>", html) == ["bob"]


def test_the_member_card_recipe_shows_the_profile(
    redis_db: Any, people: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_recipe("howto/member-cards.md", monkeypatch, settings)
    (alice,) = people("alice", is_staff=True)
    alice.profile = SimpleNamespace(
        display_name="Alice Archer",
        get_absolute_url=lambda: "/people/alice/",
        avatar=SimpleNamespace(url="/media/alice.png"),
    )
    presence.record_user(alice)
    [member] = online_now.online_users()
    assert (member.name, member.url, member.avatar, member["role"]) == (
        "Alice Archer",
        "/people/alice/",
        "/media/alice.png",
        "staff",
    )


def test_the_monitors_recipe_counts_no_monitor_and_still_no_crawler(
    redis_db: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, round_trips: Any
) -> None:
    """Through the middleware: no Redis call and no cookie for a monitor or a crawler; a
    browser that merely mentions a monitor is a guest."""
    install_recipe("howto/proxies.md", monkeypatch, settings)
    for agent in ["our-monitor/2.0", "Mozilla/5.0 (Synthetic test)", "kube-probe/1.29", "curl/8"]:
        response = BrowserClient().get("/", headers={"User-Agent": agent})
        assert "online" not in response.cookies
    assert round_trips.count == 0
    response = BrowserClient().get("/", headers={"User-Agent": "Mozilla/5.0 our-monitor/2"})
    assert "online" in response.cookies
    assert online_now.guest_count() == 1


def holds(value: Any, wanted: Any) -> bool:
    """A field matches: a set of members holds ``wanted``, a pk equals it (a room names it
    as text)."""
    return wanted in value if isinstance(value, set) else str(value) == str(wanted)


class Rows:
    """A model's ``objects``: rows in memory, ``filter(**fields)``, ``first()``, ``exists()``."""

    def __init__(self, *rows: SimpleNamespace) -> None:
        self.rows = rows

    def filter(self, **fields: Any) -> Rows:
        return Rows(
            *(r for r in self.rows if all(holds(getattr(r, f), v) for f, v in fields.items()))
        )

    def first(self) -> SimpleNamespace | None:
        return self.rows[0] if self.rows else None

    def exists(self) -> bool:
        return bool(self.rows)


@pytest.fixture
def forum(people: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The docs' ``forum.models`` and its members alice and bob: a thread is a real model
    (auth's Group stands in, for ``get_object_or_404``); topic 1 is public, topic 2 staff's,
    conversation 3 alice's and bob's."""
    alice, bob = people("alice", "bob")
    models = ModuleType("forum.models")
    models.Thread = Group  # type: ignore[attr-defined]
    models.Topic = SimpleNamespace(  # type: ignore[attr-defined]
        objects=Rows(
            SimpleNamespace(pk=1, can_read=lambda user: True),
            SimpleNamespace(pk=2, can_read=lambda user: user.is_staff),
        )
    )
    models.Conversation = SimpleNamespace(  # type: ignore[attr-defined]
        objects=Rows(SimpleNamespace(pk=3, members={alice.pk, bob.pk}))
    )
    monkeypatch.setitem(sys.modules, "forum", ModuleType("forum"))
    monkeypatch.setitem(sys.modules, "forum.models", models)
    return [alice, bob]


def serve(urlpatterns: list[Any], monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """``urlpatterns`` are the site's URLconf."""
    urls = ModuleType("site_urls")
    urls.urlpatterns = urlpatterns  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, urls.__name__, urls)
    settings.ROOT_URLCONF = urls.__name__


def test_the_in_room_view_and_its_template_list_the_threads_readers(
    redis_db: Any, forum: list[Any], monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Path
) -> None:
    """The decorated view as a site's views.py, served at a thread's URL, renders the
    how-to's template as templates/thread.html."""
    (view, *_) = snippets("howto/rooms.md", "python")
    (template,) = snippets("howto/rooms.md", "django")
    (tmp_path / "thread.html").write_text(template)
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path]}, *settings.TEMPLATES[1:]]
    views = run_snippet(view, "docs/howto/rooms.md", "forum.views")
    serve([path("thread/<int:pk>/", views.thread)], monkeypatch, settings)
    thread, other = Group.objects.create(name="general"), Group.objects.create(name="news")
    for reader, opened in zip(forum, (thread, other)):
        client = BrowserClient()
        client.force_login(reader)
        html = " ".join(client.get(f"/thread/{opened.pk}/").content.decode().split())
        assert "1 here now: 1 member, 0 guests" in html
        assert re.findall(r"<bdi>(\w+)</bdi>", html) == [reader.username]


def test_the_room_access_example_refuses_with_4403_and_serves_whom_it_lets_in(
    redis_db: Any, forum: list[Any], monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The policy example as the site's forum/presence.py, named in its settings, on the
    ready consumer's routes."""
    install_recipe("howto/live.md", monkeypatch, settings)
    alice, bob = forum

    async def scenario() -> None:
        assert await refused(alice, "/ws/whos-online/topic:2/") == 4403  # staff's topic
        assert await refused(None, "/ws/whos-online/pm:3/") == 4403  # not a member's
        assert await refused(alice, "/ws/whos-online/lounge/") == 4403  # no such room
        guest = await tab(None, "/ws/whos-online/topic:1/")
        state = await until(guest, lambda m: m["type"] == "presence_state")
        assert (state["room"], state["users"]) == ("topic:1", 0)
        reader = await tab(bob, "/ws/whos-online/topic:1/")
        seen = await until(guest, lambda m: str(bob.pk) in m["joins"])
        assert "<bdi>bob</bdi>" in seen["html"]
        conversation = await tab(alice, "/ws/whos-online/pm:3/")
        assert (await until(conversation, lambda m: str(alice.pk) in m["joins"]))["room"] == "pm:3"
        for socket in (guest, reader, conversation):
            await socket.disconnect()

    run(scenario)


def test_the_chat_consumer_example_puts_its_member_in_its_routes_room(
    redis_db: Any, forum: list[Any], monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The mixin example, routed as a site routes its chat, under the room access example:
    alice joins topic 1 through the site's own consumer."""
    install_recipe("howto/live.md", monkeypatch, settings)
    (mixin,) = [s for s in snippets("howto/live.md", "python") if "PresenceMixin" in s]
    consumer = run_snippet(mixin, "docs/howto/live.md", "forum.consumers").ChatConsumer
    routes = URLRouter([path("chat/<room>/", consumer.as_asgi())])
    alice, _ = forum

    async def scenario() -> None:
        chat = WebsocketCommunicator(routes, "/chat/topic:1/")
        chat.scope["user"] = alice
        assert (await chat.connect(timeout=DEADLINE))[0]
        await eventually(lambda: listed("topic:1") == {"alice": "online"})
        await chat.disconnect()

    run(scenario)


def test_the_live_blocks_urls_serve_what_the_block_polls(
    redis_db: Any, people: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The URLconf snippet as the site's urls.py; the live tag the how-to names points its
    script at the endpoint, which answers as the script asks."""
    (urls, *_) = snippets("howto/live.md", "python")
    site_urls = run_snippet(urls, "docs/howto/live.md", "mysite.urls", urlpatterns=[])
    serve(site_urls.urlpatterns, monkeypatch, settings)
    live = (DOCS / "howto" / "live.md").read_text()
    (tag,) = set(re.findall(r"`(\{% whos_online live=\d+ %\})`", live))
    (alice,) = people("alice")
    presence.record_user(alice)
    html = engines["django"].from_string("{% load whos_online %}" + tag).render({})
    (url,) = re.findall(r'data-whos-online-url="([^"]+)"', html)
    polled = BrowserClient().get(url, headers={"X-Whos-Online": "poll"})
    assert [member["name"] for member in polled.json()["members"]] == ["alice"]


def test_the_admin_pages_cron_line_prunes_and_draws_the_chart(
    redis_db: Any, people: Any, settings: Any
) -> None:
    """The crontab entry's command, minus the schedule and the cd: it prints nothing, prunes
    who left and samples the counts the admin's chart draws."""
    (entry,) = snippets("howto/admin.md", "cron")
    python, manage, *command = shlex.split(entry.split("&&", 1)[1])
    assert (python, manage) == (".venv/bin/python", "manage.py")
    settings.WHOS_ONLINE_MAX_AGE = 600
    (alice,) = people("alice")
    out = StringIO()
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(alice)
        call_command(*command, stdout=out)
        traveller.shift(601)  # alice left the window
        call_command(*command, stdout=out)
        assert redis_db.zrange(f"{settings.WHOS_ONLINE_KEY_PREFIX}:users", 0, -1) == []
        html = test_admin.staff().get(test_admin.PAGE).content.decode()
    assert out.getvalue() == ""
    samples = re.findall(r"<title>\d\d:\d\d: ([^<]*)</title>", html)  # the chart's, on hover
    assert samples == ["1 member, 0 guests", "0 members, 0 guests"]


@pytest.mark.parametrize("redis_db", ["real"], indirect=True)
def test_the_channel_layer_keeps_an_idle_socket_past_redis_py_s_read_timeout(
    redis_db: Any,
) -> None:
    """The how-to's CHANNEL_LAYERS: a receive waits as long as nothing comes, past the
    5 s redis-py 8 reads with by default, instead of failing (which closes the socket)."""
    import asyncio

    from channels_redis.core import RedisChannelLayer

    (snippet,) = [s for s in snippets("howto/live.md", "python") if "CHANNEL_LAYERS" in s]
    layer = run_snippet(snippet, "docs/howto/live.md", "settings").CHANNEL_LAYERS["default"]
    options = redis_db.get_connection_kwargs()
    (host,) = layer["CONFIG"]["hosts"]
    host["address"] = f"redis://{options['host']}:{options['port']}/{options.get('db', 0)}"

    async def idle() -> None:
        channels = RedisChannelLayer(hosts=[host], prefix=f"docs-layer-{id(host)}")
        try:
            with pytest.raises(asyncio.TimeoutError):  # asyncio's: nothing came, no error
                await asyncio.wait_for(channels.receive(await channels.new_channel()), 6)
        finally:
            await channels.flush()

    assert layer["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    asyncio.run(idle())


def test_the_access_recipes_show_each_viewer_what_they_say(
    redis_db: Any, people: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The access how-to's recipes, installed one after the other, on real pages: names to
    members, staff-only presence (a ticket tracker), a page's own restriction (a CMS)."""
    alice, customer = people("alice", "customer")
    (agent,) = people("agent", is_staff=True)
    presence.record_user(alice, room="thread:1")
    member, agent_page, guest = BrowserClient(), BrowserClient(), BrowserClient()
    member.force_login(customer)
    agent_page.force_login(agent)

    install_recipe("howto/access.md", monkeypatch, settings)  # names to members
    assert "<bdi>alice</bdi>" in member.get("/thread/1/").content.decode()
    html = guest.get("/thread/1/").content.decode()
    assert "2 here now: 2 members, 0 guests" in html and "alice" not in html

    install_recipe("howto/access.md", monkeypatch, settings, number=1)  # staff only
    ticket = member.get("/thread/2/")
    assert ticket.status_code == 200 and b"whos-here" not in ticket.content
    assert online_now.user_count(room="thread:2") == 0  # the customer was not put in the room
    assert "<bdi>customer</bdi>" not in agent_page.get("/thread/2/").content.decode()
    assert online_now.user_count(room="thread:2") == 1  # the agent is

    install_recipe("howto/access.md", monkeypatch, settings, number=2)  # a help desk
    site = member.get("/block/").content.decode()
    assert "alice" not in site and "customer" not in site and "members" in site
    assert "<bdi>customer</bdi>" in agent_page.get("/block/").content.decode()
    assert b"whos-here" not in member.get("/thread/2/").content
    assert "<bdi>agent</bdi>" in agent_page.get("/thread/2/").content.decode()

    install_recipe("howto/access.md", monkeypatch, settings, number=3)  # a model's own rule
    # A person's page (its room "auth.user:<pk>") is shown to them and to staff only.
    page = f"/people/{customer.pk}/"
    assert b"whos-here" not in BrowserClient().get(page).content
    assert "<bdi>customer</bdi>" in member.get(page).content.decode()
    assert "<bdi>agent</bdi>" in agent_page.get(page).content.decode()
    assert online_now.user_count(room=f"auth.user:{customer.pk}") == 2
    assert online_now.guest_count(room=f"auth.user:{customer.pk}") == 0

    own = run_snippet(snippets("howto/access.md", "python")[-1], "docs/howto/access.md", "site")
    answers = [own.access(user, room) for user in (agent, customer) for room in ("ticket:1", None)]
    assert answers == ["join", "see", None, "see"]


def ticket_pages(monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Path) -> None:
    """The how-to's settings line on a site with the stand-in app ``tests.ticket_app``
    installed, its pages served: the dashboard, a public article and the login page."""
    from django.contrib.auth.views import LoginView
    from django.views.generic import TemplateView

    (line,) = snippets("howto/third-party-templates.md", "python")
    site = run_snippet(line, "docs/howto/third-party-templates.md", "settings",
                       TEMPLATES=copy.deepcopy(settings.TEMPLATES), BASE_DIR=tmp_path)  # fmt: skip
    settings.TEMPLATES = site.TEMPLATES
    settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, "tests.ticket_app"]
    pages = [
        path("tickets/", TemplateView.as_view(template_name="tickets/dashboard.html")),
        path("kb/", TemplateView.as_view(template_name="tickets/article.html")),
        path("login/", LoginView.as_view(template_name="tickets/login.html")),
    ]
    serve(pages, monkeypatch, settings)


def override(tmp_path: Path, template: str) -> None:
    """``template`` saved where its first line says, in the project's templates folder."""
    name = re.match(r"\{# templates/(\S+) #\}\n", template)
    assert name, template
    (tmp_path / "templates" / name[1]).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "templates" / name[1]).write_text(template)


def test_the_third_party_base_override_shows_the_block_on_the_apps_pages(
    redis_db: Any, people: Any, monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Path
) -> None:
    ticket_pages(monkeypatch, settings, tmp_path)
    (plain, members_only) = snippets("howto/third-party-templates.md", "django")
    override(tmp_path, plain)
    (alice,) = people("alice")
    member = BrowserClient()
    member.force_login(alice)
    for url in ("/tickets/", "/kb/"):
        page = " ".join(member.get(url).content.decode().split())
        # the block, in the footer the app's own text still ends
        assert re.search(r"<footer><aside class=\"tickets-column\"><link rel=\"stylesheet\" "
                         r"href=\"/static/whos_online/whos_online.css\"><section "
                         r"class=\"whos-online\".*</section> ?</aside><p class=\"tickets-column\">"
                         r"Ticket tracker</p></footer>", page), page  # fmt: skip
        assert "<bdi>alice</bdi>" in page and page.startswith("<!DOCTYPE html>")
    assert "Your tickets" in member.get("/tickets/").content.decode()  # the page's own body
    guest = BrowserClient()
    assert "<bdi>alice</bdi>" in guest.get("/kb/").content.decode()  # a public page: everyone
    assert "whos-online" not in guest.get("/login/").content.decode()  # its own base: none
    override(tmp_path, members_only)
    for loader in engines["django"].engine.template_loaders:
        loader.reset()  # the cached loader's: as a restarted site reads it
    assert "whos-online" not in guest.get("/kb/").content.decode()
    assert "<bdi>alice</bdi>" in member.get("/kb/").content.decode()


def test_the_free_block_command_finds_the_one_no_page_fills() -> None:
    """The how-to's grep, on the stand-in app: each block and how many templates name it."""
    (command,) = snippets("howto/third-party-templates.md", "sh")
    command = command.replace("tickets", "tests.ticket_app")
    path_with_venv = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PATH": path_with_venv}, check=True)  # fmt: skip
    counts = {line.split()[-1]: int(line.split()[0]) for line in done.stdout.splitlines()}
    assert counts["tickets_footer"] == 1 and counts["tickets_head"] == 1
    assert counts["tickets_body"] > 1 and counts["tickets_js"] > 1
