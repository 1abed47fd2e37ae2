from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WhosOnlineConfig(AppConfig):
    name = "whos_online"
    verbose_name = _("Who's online")
    # What the shipped migration uses; without it a site lacking
    # DEFAULT_AUTO_FIELD gets models.W042 on every command.
    default_auto_field = "django.db.models.AutoField"

    def ready(self) -> None:
        from whos_online import signals  # noqa: F401  (connects the receivers)
        from whos_online.checks import deployment, settings  # noqa: F401  (registers them)
