from __future__ import annotations

from django.apps import AppConfig


class WhosOnlineConfig(AppConfig):
    name = "whos_online"
    verbose_name = "Who's online"

    def ready(self) -> None:
        from whos_online import checks, signals  # noqa: F401  (registers them)
