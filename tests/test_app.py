"""The app's config, its version and its one model: no table, no migration to make, named in the admin."""

from __future__ import annotations

from importlib.metadata import version
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

import whos_online
from tests.conftest import BrowserClient

pytestmark = pytest.mark.django_db


def test_the_version_is_the_one_pip_installed() -> None:
    # pyproject.toml reads it from whos_online.__version__ (hatch's dynamic version).
    assert whos_online.__version__ == version("whos-online")


def test_the_model_matches_the_shipped_migration() -> None:
    # A table, or a changed name, would need a migration the site never got.
    call_command("makemigrations", "whos_online", "--check", "--dry-run", stdout=StringIO())


def test_the_admin_index_names_the_app_and_its_page() -> None:
    client = BrowserClient()
    client.force_login(User.objects.create_superuser("boss"))
    html = client.get("/admin/").content.decode()
    assert "Who&#x27;s online" in html
    assert '<a href="/admin/whos_online/onlinenow/">Online now</a>' in html
