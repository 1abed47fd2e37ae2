"""The admin part's check: the page it adds lives in Django's admin."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.checks import CheckMessage, Error, Tags, register


@register(Tags.admin)
def check_django_admin(**kwargs: Any) -> list[CheckMessage]:
    if apps.is_installed("django.contrib.admin"):
        return []
    return [
        Error(
            "whos_online.contrib.admin adds a page to Django's admin, which is not installed.",
            hint='Add "django.contrib.admin" to INSTALLED_APPS, or remove '
            '"whos_online.contrib.admin".',
            id="whos_online_admin.E001",
        )
    ]
