"""Redis connections that report what they send, for counting round trips.

Given to the pools through redis-py's public ``connection_class`` option: in a
cache alias's ``CONNECTION_POOL_KWARGS`` (whos_online builds its client from
them) or RedisCluster.from_url's arguments. Every alias on a server must name
the same class (tests/settings.py's too): whos_online keeps its client per
server for the life of the process, so the first alias's class stays.
"""

from __future__ import annotations

from typing import Any, ClassVar

import redis
from fakeredis import FakeRedisConnection


class Counted:
    """Hands each payload it sends to every list in ``sinks``: ``send_packed_command``
    is the one write of a round trip, a command or a whole pipeline."""

    sinks: ClassVar[list[list[bytes]]] = []

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if self.sinks:
            chunks = command if isinstance(command, (list, tuple)) else [command]
            payload = b"".join(bytes(chunk) for chunk in chunks)
            for sink in self.sinks:
                sink.append(payload)
        super().send_packed_command(command, check_health)  # type: ignore[misc]


class CountedConnection(Counted, redis.Connection):
    pass


# fakeredis and redis-py type read_response apart in some of their versions.
class CountedFakeConnection(Counted, FakeRedisConnection):  # type: ignore[misc, unused-ignore]
    pass
