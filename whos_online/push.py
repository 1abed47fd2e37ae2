"""The seam for pushing who is online to open pages: what changed, and in which room,
as Redis publishes it, and the connections that keep a member online while a push of
theirs is open. ``whos_online.contrib.channels`` (WebSockets) is built on it, and so
can a site's own push (docs/howto/server-sent-events.md).

``notices()`` yields a ``Notice`` for each change of a namespace's members (a join,
a leave, a status or card changing): read ``presence.summary(room=...)`` again and
compare it with what the page was sent to tell who joined and who left.

A member is online while any of their connections is alive: ``open_connection`` (it
runs ``WHOS_ONLINE_MEMBER_CARD``, so call it where Django manages database
connections), then ``connect``, ``heartbeat`` every ``every`` seconds (the push's own
interval, 25 by default: pushes with different intervals coexist), and ``disconnect``
when it closes; a connection without a beat for 2.4 × ``every`` is gone (its process
died), which ``check`` sweeps. ``connected`` lists the
members with a live connection. Each call is one Redis round trip (``connect`` one
per namespace and a beat) and raises ``redis.exceptions.RedisError`` when Redis
fails: run it through ``presence.fail_open`` where it must not.
"""

from __future__ import annotations

from whos_online.store.sockets import (
    Connection,
    Notice,
    check,
    connect,
    connected,
    disconnect,
    heartbeat,
    notices,
    open_connection,
)

__all__ = [
    "notices",
    "Notice",
    "open_connection",
    "connect",
    "heartbeat",
    "disconnect",
    "check",
    "connected",
    "Connection",
]
