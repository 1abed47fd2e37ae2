from __future__ import annotations

from django.apps import AppConfig


class ChannelsConfig(AppConfig):
    name = "whos_online.contrib.channels"
    label = "whos_online_channels"  # Channels' own app is "channels"
    verbose_name = "Who's online: WebSockets"

    def ready(self) -> None:
        from whos_online.contrib.channels import checks  # noqa: F401  (registers them)
