"""WebSocket presence: a mixin for a site's own consumers, and the ready consumer.

A member is online while any of their connections is open: the mixin records
them once the consumer has accepted the socket, this process's hub
(:mod:`whos_online.realtime.hub`) beats for all its sockets at once, and the
last socket to close takes them off "online" at once. A site's own consumer
gets presence by inheriting the mixin::

    class ChatConsumer(PresenceMixin, AsyncJsonWebsocketConsumer): ...

``WhosOnlineConsumer`` is routed by :mod:`whos_online.realtime.routing` and
pushes the who's-online block (site-wide or of a room the site declared: see
:mod:`whos_online.access`) to the page as it changes. Redis errors
never reach a socket: every call goes through :mod:`whos_online.store.failsafe`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import AnonymousUser

from whos_online.access import REFUSED, TOO_MANY_CONNECTIONS, RoomAccess, room_access
from whos_online.realtime.hub import View, get_hub
from whos_online.realtime.language import socket_language
from whos_online.rendering.announcements import shown_in_query
from whos_online.room_names import room_name
from whos_online.store import failsafe, reading, sockets

logger = logging.getLogger(__name__)


class PresenceMixin:
    """Tracks the connection's member (anonymous sockets are not tracked) while it is open.

    Only a socket the consumer accepted, and did not close, by the end of its
    ``connect()`` is recorded: a refused or failed connect never shows. The
    room is the URL route's ``room`` argument (override ``presence_room`` to
    choose another), joined only where ``WHOS_ONLINE_ACCESS`` allows it;
    otherwise the member is on the site only. Whatever ends the consumer (a
    close, an exception, a cancellation) ends its presence: the hub stops
    beating for it at once.
    """

    scope: dict[str, Any]
    presence_connection: sockets.Connection | None = None
    _accepted = _closed = False
    _access: tuple[RoomAccess | None] | None = None  # asked once per connection

    def presence_room(self) -> str | None:
        """The room this connection is in, or None for the site only."""
        room = self.scope.get("url_route", {}).get("kwargs", {}).get("room")
        return room_name(room) if room else None  # named as in_room names it

    def presence_user(self) -> Any:
        return self.scope.get("user") or AnonymousUser()

    async def presence_access(self) -> RoomAccess | None:
        """What ``WHOS_ONLINE_ACCESS`` allows this socket in its room (None: nothing)."""
        if self._access is None:
            ask = database_sync_to_async(room_access)
            self._access = (await ask(self.presence_user(), self.presence_room()),)
        return self._access[0]

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
        if room is not None:
            access = await self.presence_access()
            room = room if access is not None and access.join else None
        # The site's callables (hidden? the card) may read the database: Django's thread.
        connection = await database_sync_to_async(sockets.open_connection)(user, room)
        hub = get_hub()
        if not hub.track(connection):
            logger.debug("whos_online: member %s has too many connections", connection.pk)
            return
        self.presence_connection = connection
        # Redis only, on a worker thread; a skipped record is retried by the hub.
        recorded = await asyncio.to_thread(failsafe.write, sockets.connect, connection)
        if isinstance(recorded, failsafe.Unavailable):
            hub.record_later(connection)

    async def _presence_leave(self) -> None:
        connection, self.presence_connection = self.presence_connection, None
        if connection is not None:
            hub = get_hub()
            hub.untrack(connection)
            # Kept until Redis takes it (by the hub, once it answers), also if this task
            # is cancelled while it waits.
            closed_at = time.time()
            hub.leave_later(connection, closed_at)
            written = await asyncio.to_thread(
                failsafe.write, sockets.disconnect, connection, closed_at
            )
            if not isinstance(written, failsafe.Unavailable):
                hub.left(connection)


class WhosOnlineConsumer(PresenceMixin, AsyncWebsocketConsumer):  # type: ignore[misc]
    """Pushes who is online (``ws/whos-online/``) or in a room (``ws/whos-online/<room>/``).

    The site list or a room the site has not allowed this user (``WHOS_ONLINE_ACCESS``) is
    closed with code 4403 before anything is sent, and a member with too many
    sockets in this process with 4429. On subscribing the page gets
    ``presence_state`` (every listed member's card as "joins", and the change since the
    members its URL's ``shown`` parameter lists, said as ``announce``), then a
    ``presence_diff`` within a second of each change: the members who joined
    and left (a changed card, e.g. online to idle, is both), the counts, and
    the block rendered by its template, all in the language of the page
    (:func:`whos_online.realtime.socket_language`). A count-only socket is sent no card
    and no name. Hidden members are sent to staff alone, as everywhere else.
    """

    view: View | None = None
    _shown = ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._unsubscribe()

    async def connect(self) -> None:
        access = await self.presence_access()
        user = self.presence_user()
        # Accepted, then closed: a browser sees the code (a refused handshake is only a 403).
        await self.accept()
        if access is None:
            await self.close(code=REFUSED)
            return
        if user.is_authenticated and get_hub().is_full(str(user.pk)):
            await self.close(code=TOO_MANY_CONNECTIONS)
            return
        self.view = View(self.presence_room(), reading.is_staff(user), access.names)
        # The members the page showed (?shown=, from its data-whos-online-shown): the first
        # state says what changed since the page was rendered; in the page's language.
        self._shown = shown_in_query(self.scope.get("query_string", b""))

    async def websocket_connect(self, message: Any) -> None:
        """Subscribes once the member is recorded: the view's first read, which every
        subscriber of it in this process shares, then shows their own join."""
        await super().websocket_connect(message)
        if self.view is not None and not self._closed:
            get_hub().subscribe(self.view, self, self._shown, socket_language(self.scope))

    async def disconnect(self, code: int) -> None:
        self._unsubscribe()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Clients send nothing (the server beats for them): whatever they send is ignored."""

    async def presence_message(self, text: str) -> None:
        await self.send(text_data=text)

    def _unsubscribe(self) -> None:
        view, self.view = self.view, None
        if view is not None:
            get_hub().unsubscribe(view, self)
