from __future__ import annotations

from django.apps import AppConfig


class AdminConfig(AppConfig):
    name = "whos_online.contrib.admin"
    label = "whos_online_admin"  # Django's own admin is "admin"
    verbose_name = "Who's online: admin page"

    def ready(self) -> None:
        from whos_online.contrib.admin import checks  # noqa: F401  (registers it)
