"""The docs and the README stay true to the code: the settings reference is generated
from the one table, and what the README shows is what the tested docs say."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import django
import pytest
from django.template import engines

import whos_online
from tests.conftest import BrowserClient
from whos_online import presence
from whos_online.settings_table import DEFAULTS, REMOVED_SETTINGS, SETTINGS, Setting

ROOT = Path(whos_online.__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import settings_reference  # noqa: E402  (docs/_ext: the Sphinx extension)


def test_the_settings_page_is_the_generated_reference() -> None:
    page = (DOCS / "reference" / "settings.md").read_text()
    assert page.count(settings_reference.MARKER) == 1
    assert "WHOS_ONLINE_" not in page.replace(settings_reference.MARKER, "")  # none by hand


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.name)
def test_every_setting_is_in_the_generated_reference(setting: Setting) -> None:
    """A row of the table and a section: a heading, its type, its default as Python writes
    it, its check and its description."""
    table, *sections = re.split(r"^(?=\(whos_online_)", settings_reference.reference(), flags=re.M)
    name, default = setting.name, repr(DEFAULTS[setting.name])
    assert f"| [`{name}`](#{name.lower()}) | `{default}` |\n" in table
    [section] = [s for s in sections if s.startswith(f"({name.lower()})=\n")]
    assert f"## `{name}`\n" in section
    assert f"**Type:** {setting.takes} · **Default:** `{default}` · " in section
    assert f"**Checked by:** [`{setting.check}`](checks.md#{setting.check[-4:].lower()})" in section
    assert setting.doc in section


def test_the_reference_ends_with_each_removed_setting_and_what_covers_it() -> None:
    _, removed = settings_reference.reference().split("\n## Removed settings\n")
    assert "[`whos_online.W011`](checks.md#w011)" in removed
    assert [line for line in removed.splitlines() if line.startswith("- ")] == [
        f"- `{name}`: {instead}." for name, instead in REMOVED_SETTINGS.items()
    ]
    assert not set(REMOVED_SETTINGS) & set(DEFAULTS)  # no longer in the table


def test_every_check_a_setting_names_has_its_anchor() -> None:
    checks = (DOCS / "reference" / "checks.md").read_text()
    for check in {setting.check for setting in SETTINGS} | {"whos_online.W011"}:
        assert f"({check[-4:].lower()})=\n## `{check}`\n" in checks


def code_blocks(text: str) -> list[str]:
    """Fenced code blocks, de-indented from their list item."""
    blocks = []
    for body in re.findall(r"^ *```\w+\n(.*?)^ *```", text, re.M | re.S):
        lines = body.splitlines()
        indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
        blocks.append("\n".join(line[indent:] for line in lines))
    return blocks


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


def test_the_readme_keeps_ci_s_test_command() -> None:
    """.ci/run says it runs the README's command."""
    readme = (ROOT / "README.md").read_text()
    assert "REDIS_URL=redis://127.0.0.1:6379/15 python3 dev.py test" in readme
    assert "python3 dev.py test" in (ROOT / ".ci" / "run").read_text()


def snippets(page: str, language: str) -> list[str]:
    """A docs page's snippets in ``language``."""
    found = re.findall(rf"^```{language}\n(.*?)^```", (DOCS / page).read_text(), re.M | re.S)
    return list(found)


def test_the_api_overview_runs_as_written(redis_db: Any, people: Any, rf: Any) -> None:
    """Each line of the reference's overview, with its names bound to real users."""
    alice, bob = people("alice", "bob", is_staff=True)
    request = rf.get("/")
    request.user = alice
    (overview,) = snippets("reference/api.md", "python")
    names: dict[str, Any] = {"user": alice, "alice": alice, "bob": bob, "request": request}
    exec(compile(overview, "docs/reference/api.md", "exec"), names)  # noqa: S102
    assert (names["users"], names["guests"]) == (0, 0)  # nobody stale to prune
    assert presence.status(alice) == "offline"  # the overview forgot them
    assert presence.peak() is None  # and reset the peak


def test_the_presence_dots_template_renders_a_dot_per_member(redis_db: Any, people: Any) -> None:
    alice, bob = people("alice", "bob")
    presence.record_user(alice)
    (template,) = snippets("howto/presence-dots.md", "django")
    html = engines["django"].from_string(template).render({"page_obj": [alice, bob]})
    assert re.findall(r'<span class="(.*?)"></span> (\w+)', html) == [
        ("dot dot-online", "alice"),
        ("dot dot-offline", "bob"),
    ]


def test_the_jinja2_template_renders_the_blocks_and_dots(redis_db: Any, people: Any) -> None:
    alice, bob = people("alice", "bob")
    presence.record_user(alice)
    presence.record_user(bob, room="thread:42")
    (template,) = snippets("howto/jinja2.md", "jinja")
    thread = SimpleNamespace(pk=42)
    html = engines["jinja2"].from_string(template).render({"thread": thread, "members": [alice]})
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


def install_recipe(page: str, monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """A how-to's two-file snippet as a site would have it: ``accounts/presence.py`` importable
    as ``accounts.presence``, and the ``settings.py`` lines applied to the settings."""
    (snippet, *_) = [s for s in snippets(page, "python") if s.startswith("# settings.py\n")]
    files = dict(re.findall(r"^# (\S+\.py)\n(.*?)(?=^# \S+\.py\n|\Z)", snippet, re.M | re.S))
    module = ModuleType("accounts.presence")
    exec(compile(files["accounts/presence.py"], page, "exec"), module.__dict__)  # noqa: S102
    monkeypatch.setitem(sys.modules, "accounts", ModuleType("accounts"))
    monkeypatch.setitem(sys.modules, "accounts.presence", module)
    lines: dict[str, Any] = {}
    exec(compile(files["settings.py"], page, "exec"), lines)  # noqa: S102
    for name, value in lines.items():
        if name.startswith("WHOS_ONLINE_"):
            setattr(settings, name, value)


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
    [member] = presence.online_users()
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
    assert presence.guest_count() == 1
