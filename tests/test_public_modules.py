"""Users touch only public modules: every name the docs give lives where they say, none
of them sends a site into the internals, and ``whos_online.testing`` resets what a
site's tests need."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import django
import pytest
import redis
import time_machine
from django.contrib.auth.models import User

from tests.conftest import NOW, BrowserClient, django_redis_cache
from whos_online import presence, testing

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# What a site reads: its own pages (the explanation pages and the contributing guide may
# name the internal files they explain).
USERS_PAGES = [
    ROOT / "README.md",
    DOCS / "index.md",
    DOCS / "tutorial.md",
    *sorted((DOCS / "howto").glob("*.md")),
    *sorted((DOCS / "reference").glob("*.md")),
]
INTERNAL = re.compile(r"whos_online[./](store|rendering|visitors|rooms)\b")
DOTTED = re.compile(r"(?<![\w/])whos_online(?:\.\w+)+")
FROM_IMPORT = re.compile(r"^\s*from (whos_online(?:\.\w+)*) import ([\w, ]+)$", re.M)
# The reference's ``.. automodule:: whos_online.contrib.channels`` and its ``:members: a, b``
# (continued on lines indented deeper than the option).
AUTOMODULE = re.compile(
    r"^\.\. automodule:: (\S+)\n +:members: ([\w, ]+(?:\n {5,}[\w, ]+)*)$", re.M
)
NOT_PYTHON = re.compile(r"whos_online\.([EW]\d{3}|prune)$")  # check ids, the Celery task


def documented_names() -> dict[str, set[str]]:
    """Each dotted name the users' pages give (``whos_online.presence.peak``, or a name a
    snippet imports), and the pages that give it."""
    found: dict[str, set[str]] = defaultdict(set)
    for page in USERS_PAGES:
        text = page.read_text()
        names = set(DOTTED.findall(text))
        for module, imported in [*FROM_IMPORT.findall(text), *AUTOMODULE.findall(text)]:
            names |= {f"{module}.{name}" for name in re.findall(r"\w+", imported)}
        for name in names:
            if not NOT_PYTHON.match(name):
                found[name].add(str(page.relative_to(ROOT)))
    return found


def resolve(dotted: str) -> Any:
    """What ``dotted`` names: its longest importable module, then attributes."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(dotted)


def test_the_users_pages_name_no_internal_module() -> None:
    named = {
        f"{page.relative_to(ROOT)}:{number}": line
        for page in USERS_PAGES
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if INTERNAL.search(line)
    }
    assert named == {}


# Django's tasks framework exists from Django 6.0, and so does the task the how-to names;
# the matrix runs that one on 6.x. The Wagtail recipe's module needs Wagtail: nox's
# wagtail session resolves its names.
HAS_WAGTAIL = importlib.util.find_spec("wagtail") is not None
ON_THIS_DJANGO = sorted(
    name
    for name in documented_names()
    if (name != "whos_online.tasks.django_prune" or django.VERSION >= (6, 0))
    and (HAS_WAGTAIL or not name.startswith("whos_online.contrib.wagtail.pages"))
)


@pytest.mark.parametrize("name", ON_THIS_DJANGO)
def test_every_name_the_docs_give_is_there(name: str) -> None:
    resolve(name)


def test_the_docs_give_the_public_names_and_each_one_home() -> None:
    names = documented_names()
    for expected in [
        "whos_online.presence.in_room",
        "whos_online.presence.fail_open",
        "whos_online.presence.Peak",
        "whos_online.defaults.default_card",
        "whos_online.defaults.is_bot",
        "whos_online.contrib.channels.consumers.PresenceMixin",
        "whos_online.push.open_connection",
        "whos_online.push.notices",
        "whos_online.testing.reset",
    ]:
        assert expected in names, expected
    homes = defaultdict(set)
    for name in ON_THIS_DJANGO:
        module, _, attribute = name.rpartition(".")
        if module != "whos_online" and not isinstance(resolve(name), type(presence)):
            homes[attribute].add(module)
    assert {name: sorted(modules) for name, modules in homes.items() if len(modules) > 1} == {}


def public_names(module: ModuleType) -> set[str]:
    """Its ``__all__``, or the functions and classes it defines."""
    defined = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    }
    return set(getattr(module, "__all__", defined))


def test_the_public_modules_share_no_name() -> None:
    from whos_online import access, defaults, push
    from whos_online.contrib.channels import consumers

    public = {module.__name__: public_names(module) for module in (presence, push, consumers)}
    public |= {module.__name__: public_names(module) for module in (access, defaults, testing)}
    assert public["whos_online.testing"] == {"reset"}
    shared = {
        (first, second): public[first] & public[second]
        for first in public
        for second in public
        if first < second
    }
    assert all(not names for names in shared.values()), shared


def block_members(client: BrowserClient) -> list[str] | str:
    """The names the block lists on a page, or its "unavailable" sentence."""
    html = client.get("/block/").content.decode()
    if "unavailable right now" in html:
        return "unavailable"
    return re.findall(r"<bdi>(\w+)</bdi>", html)


def test_reset_closes_the_breaker_a_failed_test_left_open(
    redis_db: redis.Redis, settings: Any, closed_port: int
) -> None:
    """Redis failed in one test and answers in the next: without ``reset`` the pages still
    skip it until the breaker's back-off ends."""
    working = settings.CACHES
    (alice,) = [User.objects.create_user("alice")]
    reader = BrowserClient()
    reader.force_login(alice)
    with time_machine.travel(NOW, tick=False):
        settings.CACHES = {"default": django_redis_cache(f"redis://127.0.0.1:{closed_port}/0")}
        assert block_members(reader) == "unavailable"
        settings.CACHES = working  # the next test: Redis answers
        presence.record_user(alice)
        assert block_members(reader) == "unavailable"  # the breaker is still open
        testing.reset()
        assert block_members(reader) == ["alice"]


def test_reset_forgets_the_kept_block_read(
    redis_db: redis.Redis, settings: Any, kept_block_reads: Any
) -> None:
    """A block read is kept for a second: without ``reset`` the next test's page would
    show it instead of what that test recorded."""
    kept_block_reads(1.0)
    alice, bob = (User.objects.create_user(name) for name in ("alice", "bob"))
    reader = BrowserClient()
    reader.force_login(alice)
    with time_machine.travel(NOW, tick=False):
        assert block_members(reader) == ["alice"]  # recorded, and the read kept
        presence.record_user(bob)  # not through a page: the kept read does not hold him
        assert block_members(reader) == ["alice"]
        testing.reset()
        assert sorted(block_members(reader)) == ["alice", "bob"]
