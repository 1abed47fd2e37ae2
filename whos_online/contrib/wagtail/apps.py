from __future__ import annotations

from django.apps import AppConfig


class WagtailConfig(AppConfig):
    name = "whos_online.contrib.wagtail"
    label = "whos_online_wagtail"  # Wagtail's apps are "wagtail*"
    verbose_name = "Who's online: Wagtail"
