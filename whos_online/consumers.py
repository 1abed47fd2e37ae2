"""WebSocket presence (``pip install whos-online[channels]``): a mixin and a ready consumer.

A member is online while any of their connections is open: the mixin records
them when a socket connects, this process's ticker (:mod:`whos_online.hub`)
beats for all its sockets at once, and the last socket to close takes them off
"online" at once. A site's own consumer gets presence by inheriting the mixin::

    class ChatConsumer(PresenceMixin, AsyncJsonWebsocketConsumer): ...

``WhosOnlineConsumer`` is routed by :mod:`whos_online.routing` and pushes the
who's-online block (site-wide or of a room) to the page as it changes. Redis
errors never reach a socket: every call goes through :mod:`whos_online.failsafe`.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from whos_online import failsafe, presence
from whos_online.conf import conf, room_name
from whos_online.hub import View, get_hub


class PresenceMixin:
    """Tracks the connection's member (anonymous sockets are not tracked) while it is open.

    The work is done in ``websocket_connect`` and ``websocket_disconnect``, so
    subclasses keep ``connect``/``disconnect`` to themselves. The room is the
    URL route's ``room`` argument; override ``presence_room`` to choose another.
    """

    scope: dict[str, Any]
    presence_connection: presence.Connection | None = None

    def presence_room(self) -> str | None:
        """The room this connection is in, or None for the site only."""
        room = self.scope.get("url_route", {}).get("kwargs", {}).get("room")
        return room_name(room) if room else None  # named as in_room names it

    async def websocket_connect(self, message: dict[str, Any]) -> None:
        await super().websocket_connect(message)  # type: ignore[misc]
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            return
        connection = await database_sync_to_async(_connection)(user, self.presence_room())
        self.presence_connection = connection
        recorded = await asyncio.to_thread(failsafe.write, presence.connect, user, connection)
        # Heartbeats refresh only a recorded member: a skipped record is retried by the ticker.
        get_hub().track(connection, None if recorded is not None else user)

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        connection, self.presence_connection = self.presence_connection, None
        if connection is not None:
            get_hub().untrack(connection)
            await asyncio.to_thread(failsafe.write, presence.disconnect, connection)
        await super().websocket_disconnect(message)  # type: ignore[misc]


def _connection(user: Any, room: str | None) -> presence.Connection:
    # WHOS_ONLINE_IS_HIDDEN may read the database, hence a sync thread.
    return presence.Connection(str(user.pk), uuid.uuid4().hex, room, conf.is_hidden(user))


class WhosOnlineConsumer(PresenceMixin, AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """Pushes who is online (``ws/whos-online/``) or in a room (``ws/whos-online/<room>/``).

    On subscribing the page gets ``presence_state`` (every listed member's card
    as "joins"), then a ``presence_diff`` within a second of each change: the
    members who joined and left (a changed card, e.g. online to idle, is both),
    the counts, and the block rendered by its template. Hidden members are sent
    to staff alone, as everywhere else.
    """

    view: View | None = None

    async def connect(self) -> None:
        await self.accept()
        self.view = View(self.presence_room(), presence.is_staff(self.scope.get("user")))
        get_hub().subscribe(self.view, self)

    async def disconnect(self, code: int) -> None:
        if self.view is not None:
            get_hub().unsubscribe(self.view, self)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients send nothing: the server beats for them."""

    async def presence_message(self, text: str) -> None:
        await self.send(text_data=text)
