"""What ``pip install whos-online`` gets: the wheel and sdist built by the project's backend.

Built from a copy of the project whose ``.gitignore`` leaves the compiled
catalogs out, as it often does for build output, so the test proves the catalogs
ship however the tree is set up. (The nox session ``package`` builds the real
artifacts in isolation and runs ``twine check`` on them.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import whos_online

ROOT = Path(whos_online.__file__).resolve().parent.parent
VERSION = whos_online.__version__
# Every compiled catalog the package ships (tests/test_catalogs.py checks which).
CATALOGS = {
    path.relative_to(ROOT).as_posix()
    for path in (ROOT / "whos_online" / "locale").glob("*/LC_MESSAGES/django.mo")
}
# The Lua scripts (whos_online/store/scripts.py reads them at import) and their shared parts.
LUA = {
    path.relative_to(ROOT).as_posix()
    for path in (ROOT / "whos_online" / "store" / "lua").rglob("*.lua")
}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source") / "whos_online"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", ".nox", "dist", "build", "__pycache__", "*.sqlite3", ".*_cache"
        ),
    )
    with open(source / ".gitignore", "a") as ignore:
        ignore.write("*.mo\n")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-d", str(out)], cwd=source, check=True
    )
    return out


def test_the_wheel_has_the_app_its_data_and_the_catalogs(dist: Path) -> None:
    with zipfile.ZipFile(dist / f"whos_online-{VERSION}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
        metadata = Parser().parsestr(
            wheel.read(f"whos_online-{VERSION}.dist-info/METADATA").decode()
        )
    assert CATALOGS <= names
    assert LUA <= names and "whos_online/store/lua/lib/leave.lua" in LUA
    assert {
        "whos_online/py.typed",
        "whos_online/migrations/0001_initial.py",
        "whos_online/static/whos_online/live.js",
        "whos_online/static/whos_online/whos_online.css",
        "whos_online/templates/whos_online/whos_online.html",
        "whos_online/contrib/admin/templates/admin/whos_online/chart.html",
        "whos_online/contrib/admin/static/whos_online/chart.js",
        "whos_online/management/commands/whos_online_prune.py",
    } <= names
    assert not [name for name in names if name.startswith(("tests/", "example_project/"))]
    assert not [name for name in names if "__pycache__" in name]
    # The version is written once, in whos_online/__init__.py.
    assert metadata["Version"] == VERSION
    # PyPI's sidebar: the repository, the docs, the changelog and the issues.
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL"))
    assert sorted(urls) == ["Changelog", "Documentation", "Homepage", "Issues"]
    assert urls["Documentation"] == "https://whos-online.readthedocs.io/"
    assert all(urls[name].startswith(urls["Homepage"]) for name in ("Changelog", "Issues"))
    # The users' extras only: the developers' tools are dependency groups, never published.
    assert sorted(metadata.get_all("Provides-Extra")) == [
        "channels",
        "django-redis",
        "hiredis",
        "wagtail",
    ]
    # Django's own RedisCache needs nothing more: django-redis is an extra.
    assert not any(
        r.startswith("django-redis") and "extra" not in r for r in metadata.get_all("Requires-Dist")
    )
    # The crawler list comes with every install: crawlers are not counted by default.
    assert any(
        r.startswith("crawler-user-agents") and "extra" not in r
        for r in metadata.get_all("Requires-Dist")
    )


def test_the_sdist_carries_its_tests_and_what_they_run(dist: Path) -> None:
    with tarfile.open(dist / f"whos_online-{VERSION}.tar.gz") as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert CATALOGS <= names and LUA <= names
    assert {
        "pyproject.toml",
        "README.md",
        "docs/tutorial.md",  # tests/test_fresh_site.py follows its setup
        "docs/howto/live.md",  # and the WebSocket how-to's
        "LICENSE",
        "CHANGELOG.md",
        "tests/conftest.py",
        "tests/declared_keys.lua",  # conftest.py reads it
        "tests/jinja2/page.html",
        "example_project/manage.py",  # tests/test_example_project.py and the browser test
    } <= names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".sqlite3")]
    assert not [name for name in names if name.startswith("docs/_build/")]  # a local build


def test_whos_online_imports_nothing_of_wagtail() -> None:
    """wagtail_hooks.py is Wagtail's to import, wagtail_pages.py the site's to name: a site
    without Wagtail loads every other module (apps, tags, admin, views) without it."""
    code = (
        "import sys, django; django.setup();"
        "import whos_online.contrib.admin.admin, whos_online.templatetags.whos_online;"
        "import whos_online.urls;"
        "import whos_online.contrib.jinja2, whos_online.access;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'wagtail'))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
