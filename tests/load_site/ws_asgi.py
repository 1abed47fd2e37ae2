"""WebSockets for tests/test_realtime_load.py: members named by the URL, not by a session.

Two thousand logins would measure the session backend; the load test measures
presence. ``/ws/chat/?member=N`` is a site's own consumer with the presence
mixin (what most sockets of a chat site are); whos_online's routes are the
subscribers. ``LOAD_SITE_POLL=1`` serves them as the previous design did (see
benchmarks/rooms_push.py).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qs

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.load_site.settings")
os.environ.setdefault("LOAD_SITE_WEBSOCKET_URL", "/ws/whos-online/")
get_asgi_application()  # sets Django up

from channels.generic.websocket import AsyncJsonWebsocketConsumer  # noqa: E402
from channels.middleware import BaseMiddleware  # noqa: E402
from channels.routing import URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from whos_online.contrib.channels.consumers import PresenceMixin  # noqa: E402
from whos_online.contrib.channels.routing import websocket_urlpatterns  # noqa: E402


class Member:
    """Enough of a user for presence: a pk, a name, logged in."""

    is_authenticated = True
    is_staff = False

    def __init__(self, pk: str) -> None:
        self.pk = pk

    def get_username(self) -> str:
        return f"member{self.pk}"


class MemberFromQuery(BaseMiddleware):  # type: ignore[misc]
    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        pk = parse_qs(scope["query_string"].decode()).get("member", ["0"])[0]
        return await super().__call__({**scope, "user": Member(pk)}, receive, send)


class ChatConsumer(PresenceMixin, AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    async def connect(self) -> None:
        await self.accept()


if os.environ.get("LOAD_SITE_POLL"):
    # benchmarks/rooms_push.py: the design before notices, every view read every tick.
    from whos_online.contrib.channels import hub

    notified_tick = hub.Hub.tick

    async def polling_tick(self: hub.Hub) -> None:
        self.changed(everywhere=True)
        await notified_tick(self)

    hub.Hub.tick = polling_tick  # type: ignore[method-assign]


application = MemberFromQuery(
    URLRouter([path("ws/chat/", ChatConsumer.as_asgi()), *websocket_urlpatterns])
)
