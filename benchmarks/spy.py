"""What crosses the wire: Redis round trips (with their command names and durations) and SQL statements.

A round trip is one call of redis-py's ``AbstractConnection.send_packed_command``
(a pipeline or a script call is one, as in tests/conftest.py's ``round_trips``);
it lasts until the last reply read for it. The patches are on the classes, so
threads (sync_to_async under ASGI) are counted too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from django.db.backends.utils import CursorWrapper
from redis.connection import AbstractConnection


@dataclass
class RoundTrip:
    commands: list[str]
    sent_ns: int
    done_ns: int = 0

    @property
    def seconds(self) -> float:
        return max(self.done_ns - self.sent_ns, 0) / 1e9


@dataclass
class Spy:
    trips: list[RoundTrip] = field(default_factory=list)
    queries: int = 0

    def __enter__(self) -> Spy:
        send = AbstractConnection.send_packed_command
        read = AbstractConnection.read_response
        execute, executemany = CursorWrapper.execute, CursorWrapper.executemany
        self._originals = (send, read, execute, executemany)
        trips = self.trips

        def spy_send(conn: Any, command: Any, check_health: bool = True) -> Any:
            trips.append(RoundTrip(command_names(command), time.perf_counter_ns()))
            return send(conn, command, check_health)

        def spy_read(conn: Any, *args: Any, **kwargs: Any) -> Any:
            response = read(conn, *args, **kwargs)
            if trips:
                trips[-1].done_ns = time.perf_counter_ns()
            return response

        def counted(original: Callable[..., Any]) -> Callable[..., Any]:
            def spy_execute(cursor: Any, *args: Any, **kwargs: Any) -> Any:
                self.queries += 1
                return original(cursor, *args, **kwargs)

            return spy_execute

        AbstractConnection.send_packed_command = spy_send  # type: ignore[method-assign]
        AbstractConnection.read_response = spy_read  # type: ignore[method-assign, assignment]
        CursorWrapper.execute = counted(execute)  # type: ignore[method-assign]
        CursorWrapper.executemany = counted(executemany)  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        send, read, execute, executemany = self._originals
        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
        AbstractConnection.read_response = read  # type: ignore[method-assign]
        CursorWrapper.execute = execute  # type: ignore[method-assign]
        CursorWrapper.executemany = executemany  # type: ignore[method-assign]


def command_names(packed: Any) -> list[str]:
    """Names of the commands in one packed send (RESP arrays of bulk strings)."""
    chunks = [packed] if isinstance(packed, (bytes, str, memoryview)) else packed
    data = b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)
    names, pos = [], 0
    while pos < len(data) and data[pos : pos + 1] == b"*":
        end = data.index(b"\r\n", pos)
        count, pos = int(data[pos + 1 : end]), end + 2
        for i in range(count):
            end = data.index(b"\r\n", pos)
            length, start = int(data[pos + 1 : end]), end + 2
            if i == 0:
                names.append(data[start : start + length].decode("ascii", "replace").upper())
            pos = start + length + 2
    return names
