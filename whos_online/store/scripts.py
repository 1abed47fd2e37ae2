"""The Lua scripts whos_online runs in Redis, where a step must be atomic.

Each script is a file in ``whos_online/store/lua/`` whose first lines name its KEYS
and ARGV. A script touches only the keys it declares in KEYS, which Redis's
scripting contract asks of every script and Redis Cluster relies on: they all
share one hash slot there (one namespace: see WHOS_ONLINE_KEY_PREFIX). Key
names are made in Python only (``whos_online.conf``); a script is given them
whole, and its KEYS and ARGV by position, as its header lists them.

A line ``--@include lib/<name>.lua`` is replaced by that file before the script is
hashed: Redis's Lua has no ``require``, and an include keeps each script one
``EVALSHA`` (see docs/explanation/design.md).
"""

from __future__ import annotations

import hashlib
import re
from importlib.resources import files
from typing import Any, Mapping, Sequence

from redis.exceptions import NoScriptError, ResponseError

INCLUDE = re.compile(r"^--@include (\S+)$", re.MULTILINE)


def lua(name: str) -> str:
    """The text of ``whos_online/store/lua/<name>``, with its includes put in."""
    text = files("whos_online.store").joinpath("lua", name).read_text(encoding="utf-8")
    return INCLUDE.sub(lambda match: lua(match[1]).rstrip("\n"), text)


class Script:
    """A script run by EVALSHA, its text sent only to a server that answers NOSCRIPT.

    Sending the text with every EVAL cost more than the rest of a recording
    request's Redis call. On NOSCRIPT (a new or restarted server, a failover,
    ``SCRIPT FLUSH``) it falls back to one EVAL, which Redis routes like any
    keyed command, runs, and caches for the next EVALSHA. Not redis-py's
    ``register_script``: its fallback is ``SCRIPT LOAD``, which RedisCluster
    sends to every master, so one master down would stop every namespace.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.text = lua(f"{name}.lua")
        self.sha = hashlib.sha1(self.text.encode()).hexdigest()

    def __call__(self, client: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return client.eval(self.text, len(keys), *keys, *args)

    def read(
        self, client: Any, keys: Sequence[str], args: Sequence[Any], *, hyperloglogs: bool = False
    ) -> Any:
        """Run a script that only reads, read-only (EVALSHA_RO): Redis then refuses any
        write in it, and a replica runs it. Not with ``hyperloglogs`` to count (Redis
        refuses PFCOUNT there: it may cache its count in the key), nor on a server
        without EVALSHA_RO (Redis 6.2, fakeredis): then it runs as EVALSHA."""
        if not hyperloglogs and _server(client) not in WITHOUT_RO:
            try:
                try:
                    return client.evalsha_ro(self.sha, len(keys), *keys, *args)
                except NoScriptError:
                    return client.eval_ro(self.text, len(keys), *keys, *args)
            except ResponseError as error:
                if "unknown command" not in str(error).lower():
                    raise
                WITHOUT_RO.add(_server(client))
        return self(client, keys, args)


# The servers that answered that they have no EVALSHA_RO: reads there run as EVALSHA.
WITHOUT_RO: set[tuple[Any, ...]] = set()


def _server(client: Any) -> tuple[Any, ...]:
    """The server a client talks to (a new client for the same server, after a setting
    changed, need not ask again)."""
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    return kwargs.get("host"), kwargs.get("port"), kwargs.get("path")


PRUNE_BATCH = Script("prune_batch")
PRUNE_ROOMS = Script("prune_rooms")
RECORD = Script("record")
LEAVE_ROOM = Script("leave_room")
UNRECORD = Script("unrecord")
DROP_ROOMS = Script("drop_rooms")
FORGET = Script("forget")
COUNT_AND_RAISE_PEAK = Script("count_and_raise_peak")
SUMMARY = Script("summary")
COUNT_EACH = Script("count_each")
HEARTBEAT = Script("heartbeat")
DISCONNECT = Script("disconnect")
CHECK = Script("check")


def drop_rooms(client: Any, *, rooms_key: str, rooms: Mapping[str, Sequence[str]]) -> int:
    """Delete the keys of ``rooms`` (room -> its keys, as many for each) not registered
    again in ``rooms_key``; how many rooms' keys were deleted."""
    keys = [key for room_keys in rooms.values() for key in room_keys]
    return int(DROP_ROOMS(client, [rooms_key, *keys], list(rooms)))
