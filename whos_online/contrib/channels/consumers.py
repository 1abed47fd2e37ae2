"""WebSocket presence: a mixin for a site's own consumers, and the ready consumer.

A member is online while any of their connections is open: the mixin records them,
this process's hub (:mod:`whos_online.contrib.channels.hub`) beats for all its sockets at
once, and the last socket to close takes them off "online" at once. Redis errors
never reach a socket: every call goes through :mod:`whos_online.store.failsafe`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import AnonymousUser

from whos_online import push
from whos_online.access import REFUSED, TOO_MANY_CONNECTIONS, RoomAccess, room_access
from whos_online.contrib.channels.hub import View, get_hub, heartbeat
from whos_online.contrib.channels.language import socket_language
from whos_online.room_names import room_name
from whos_online.store import failsafe, reading

logger = logging.getLogger(__name__)


class PresenceMixin:
    """Tracks the connection's member (anonymous sockets are not tracked) while it is open.

    Only a socket the consumer accepted, and did not close, by the end of its
    ``connect()`` is recorded. The room is the URL route's ``room`` argument
    (override ``presence_room`` to choose another), joined only where
    ``WHOS_ONLINE_ACCESS`` allows it; otherwise the member is on the site only.
    Whatever ends the consumer (a close, an exception, a cancellation) ends its
    presence.
    """

    scope: dict[str, Any]
    presence_connection: push.Connection | None = None
    # What ``WHOS_ONLINE_ACCESS`` allows this socket in its room (None: nothing), asked as
    # it connects.
    presence_access: RoomAccess | None = None
    _accepted = _closed = False

    def presence_room(self) -> str | None:
        """The room this connection is in, or None for the site only."""
        room = self.scope.get("url_route", {}).get("kwargs", {}).get("room")
        return room_name(room) if room else None  # named as in_room names it

    def presence_user(self) -> Any:
        return self.scope.get("user") or AnonymousUser()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)  # type: ignore[misc]
        finally:  # also when the consumer raised or was cancelled
            await self._presence_leave()

    async def accept(self, *args: Any, **kwargs: Any) -> None:
        await super().accept(*args, **kwargs)  # type: ignore[misc]
        self._accepted = True

    async def close(self, *args: Any, **kwargs: Any) -> None:
        self._closed = True
        await super().close(*args, **kwargs)  # type: ignore[misc]

    async def websocket_connect(self, message: Any) -> None:
        ask = database_sync_to_async(room_access)
        self.presence_access = await ask(self.presence_user(), self.presence_room())
        await super().websocket_connect(message)  # type: ignore[misc]
        if self._accepted and not self._closed:
            await self._presence_join()

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        await self._presence_leave()
        await super().websocket_disconnect(message)  # type: ignore[misc]

    async def _presence_join(self) -> None:
        user = self.presence_user()
        if not user.is_authenticated:
            return
        room = self.presence_room()
        if self.presence_access is None or not self.presence_access.join:
            room = None
        # The site's callables (hidden? the card) may read the database: Django's thread.
        connection = await database_sync_to_async(push.open_connection)(user, room)
        hub = get_hub()
        if not hub.track(connection):
            logger.debug("whos_online: member %s has too many connections", connection.pk)
            return
        self.presence_connection = connection
        recorded = await asyncio.to_thread(failsafe.write, push.connect, connection, heartbeat())
        if isinstance(recorded, failsafe.Unavailable):
            hub.beat_soon()

    async def _presence_leave(self) -> None:
        """Whatever ends the consumer ends its presence (and the live block its subscription)."""
        connection, self.presence_connection = self.presence_connection, None
        if connection is not None:
            get_hub().untrack(connection)
            # A close Redis skips is a connection whose beats stopped: gone at the timeout.
            await asyncio.to_thread(failsafe.write, push.disconnect, connection)


class WhosOnlineConsumer(PresenceMixin, AsyncWebsocketConsumer):  # type: ignore[misc]
    """Pushes who is online (``ws/whos-online/``) or in a room (``ws/whos-online/<room>/``).

    A socket ``WHOS_ONLINE_ACCESS`` refuses is closed with code 4403 before anything
    is sent, a member's socket past their cap in this process with 4429. Then the
    page gets ``presence_state``, and a ``presence_diff`` within a second of each
    change, in the page's language (docs/reference/messages.md); a count-only socket
    gets no card and no name, and hidden members go to staff alone.
    """

    view: View | None = None

    async def connect(self) -> None:
        access, user = self.presence_access, self.presence_user()
        # Accepted, then closed: a browser sees the code (a refused handshake is only a 403).
        await self.accept()
        if access is None:
            await self.close(code=REFUSED)
            return
        if user.is_authenticated and get_hub().is_full(str(user.pk)):
            await self.close(code=TOO_MANY_CONNECTIONS)
            return
        self.view = View(self.presence_room(), reading.is_staff(user), access.names)

    async def websocket_connect(self, message: Any) -> None:
        """Subscribes once the member is recorded, so the first read shows their own join;
        the first state says what changed since the page's ``?shown=`` members."""
        await super().websocket_connect(message)
        if self.view is not None and not self._closed:
            shown = shown_in_query(self.scope.get("query_string", b""))
            get_hub().subscribe(self.view, self, shown, socket_language(self.scope))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Clients send nothing (the server beats for them): whatever they send is ignored."""

    async def presence_message(self, text: str) -> None:
        await self.send(text_data=text)

    async def _presence_leave(self) -> None:
        view, self.view = self.view, None
        if view is not None:
            get_hub().unsubscribe(view, self)
        await super()._presence_leave()


def shown_in_query(query: bytes) -> str:
    """The ``shown`` parameter of a socket's query string, taken as it is (it is
    URL-encoded already, as the header is; ``since_shown`` bounds it): "" when missing
    or repeated."""
    values = [
        value
        for name, _, value in (part.partition(b"=") for part in query.split(b"&"))
        if name == b"shown"
    ]
    return values[0].decode("ascii", "replace") if len(values) == 1 else ""
