"""Redis connections that report what they connect, send and wait for, to the Wires listening.

Given to the pools through redis-py's public ``connection_class`` option: in a
cache alias's ``CONNECTION_POOL_KWARGS`` (whos_online builds its client from
them; ``conftest.django_redis_cache`` names ``CountedConnection`` unless told
otherwise) or RedisCluster.from_url's arguments.

Only public methods are overridden (``connect``, ``send_packed_command``,
``read_response``) and only public attributes read (``is_connected``, ``port``,
``socket_timeout``), so no test depends on redis-py's private internals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

import redis
from fakeredis import FakeRedisConnection
from redis.sentinel import SentinelManagedConnection


class Wire:
    """What the counted connections did while this listened (see ``listening``).

    ``dials`` counts TCP connection attempts by port (a ``connect()`` on a
    connection that is already connected is none), ``payloads`` holds each write
    (one per round trip: a command or a whole pipeline) but a new connection's
    handshake (redis-py's HELLO, AUTH, SELECT, CLIENT SETINFO: once per connection,
    not per page), and ``timeouts`` holds,
    per wait for a reply that timed out, the timeout the connection reads with:
    it proves which setting bounded the wait without timing anything.
    """

    def __init__(self) -> None:
        self.dials: Counter[int] = Counter()
        self.payloads: list[bytes] = []
        self.timeouts: list[float | None] = []

    @property
    def connects(self) -> int:
        return sum(self.dials.values())

    @property
    def touched(self) -> bool:
        return bool(self.dials or self.payloads or self.timeouts)

    def clear(self) -> None:
        self.dials.clear()
        self.payloads.clear()
        self.timeouts.clear()


class Counted:
    """Tells every Wire in ``wires`` what this connection connects, sends and waits for."""

    wires: ClassVar[list[Wire]] = []
    # What the connection classes below give; typed here for the methods.
    is_connected: bool
    port: int
    socket_timeout: float | None
    handshaking = False

    def connect(self) -> None:
        # redis-py 4.6 (nox's oldest session) has no is_connected: there each connect(), one
        # per checkout, counts as a dial; none of the modules that session runs counts dials.
        if not getattr(self, "is_connected", False):
            for wire in self.wires:
                wire.dials[int(self.port)] += 1
        self.handshaking = True
        try:
            super().connect()  # type: ignore[misc]
        finally:
            self.handshaking = False

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if self.wires and not self.handshaking:
            chunks = command if isinstance(command, (list, tuple)) else [command]
            payload = b"".join(bytes(chunk) for chunk in chunks)
            for wire in self.wires:
                wire.payloads.append(payload)
        super().send_packed_command(command, check_health)  # type: ignore[misc]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)  # type: ignore[misc]
        except redis.TimeoutError:
            for wire in self.wires:
                wire.timeouts.append(self.socket_timeout)
            raise


Listener = TypeVar("Listener", bound=Wire)


@contextmanager
def listening(wire: Listener) -> Iterator[Listener]:
    """``wire`` hears every counted connection until the block ends."""
    Counted.wires.append(wire)
    try:
        yield wire
    finally:
        Counted.wires.remove(wire)


class CountedConnection(Counted, redis.Connection):
    pass


# A Sentinel service's connections ask the sentinels for the master as they connect.
class CountedSentinelConnection(Counted, SentinelManagedConnection):
    pass


# fakeredis and redis-py type read_response apart in some of their versions.
class CountedFakeConnection(Counted, FakeRedisConnection):  # type: ignore[misc, unused-ignore]
    pass
