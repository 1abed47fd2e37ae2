"""The Lua scripts whos_online runs in Redis, where a step must be atomic, and
one typed wrapper per script.

Each script is a file in ``whos_online/store/lua/`` whose first lines name its KEYS
and ARGV. A script touches only the keys it declares in KEYS, which Redis's
scripting contract asks of every script and Redis Cluster relies on: they all
share one hash slot there (one namespace: see WHOS_ONLINE_KEY_PREFIX). Key
names are made in Python only (``whos_online.conf``); a script is given them
whole, and its KEYS and ARGV by position, as its header lists them. A wrapper
takes them by keyword and returns a typed reply, so no caller counts positions.

Shared parts: a line ``--@include lib/<name>.lua`` is replaced by that file (a
few local functions, each under a header saying what it does) before the script
is hashed and sent. Redis runs one text per script, without ``require`` (its Lua
has no module loader), and Redis 7's ``FUNCTION LOAD`` libraries would need 7.0
and a load on every master of a Cluster before the first call; an include costs
neither, and keeps each script one ``EVALSHA``. That is all the preprocessor
does: no conditionals, no parameters, an included file may include another.
"""

from __future__ import annotations

import hashlib
import re
from importlib.resources import files
from typing import Any, NamedTuple, Sequence

from redis.exceptions import NoScriptError, ResponseError

from whos_online.conf import conf
from whos_online.store.connection import text

# A line ``--@include lib/name.lua`` in a script is replaced by that file (see above).
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


def channel() -> str:
    """The channel the scripts publish a changed namespace on: none ('') unless the site
    has WebSockets (``WHOS_ONLINE_WEBSOCKET_URL``), since only their hub listens."""
    return conf.notices_channel if conf.websocket_url else ""


class Pruned(NamedTuple):
    """A PRUNE_BATCH call: how many members it removed and passed over (a socket keeps
    them: the next call reads past them), and whether members below the bound remain."""

    removed: int
    passed: int
    more: bool


def prune_batch(
    client: Any,
    *,
    key: str,
    cards: str | None,
    below: float,
    limit: int,
    sockets: Sequence[str] | None = None,
    skip: int = 0,
) -> Pruned:
    """Remove the members of ``key`` scored below ``below`` (and their ``cards``, if the
    set has them) that no sign in ``sockets`` (live, left and the set's index; None for
    guests) keeps, among the ``limit`` oldest after the ``skip`` oldest."""
    live, left, kept = sockets or (key, key, key)
    removed, passed, more = PRUNE_BATCH(
        client, [key, cards or key, live, left, kept], [below, limit, skip]
    )
    return Pruned(int(removed), int(passed), bool(more))


class RoomsPruned(NamedTuple):
    """How many members a PRUNE_ROOMS call removed, and whether it stopped at its limit."""

    removed: int
    more: bool


def prune_rooms(client: Any, *, keys: Sequence[str], below: float, limit: int) -> RoomsPruned:
    """Remove at most ``limit`` members and guests scored below ``below`` from the rooms'
    sets ``keys`` (seven per room: users, hidden, guests, then a conf.SocketKeys)."""
    removed, more = PRUNE_ROOMS(client, keys, [below, limit])
    return RoomsPruned(int(removed), bool(more))


class RecordKeys(NamedTuple):
    """The keys one record writes, in lua/record.lua's order; None: not used."""

    # The visitor's sorted set; None in approximate guest counting (the counters only).
    into: str | None
    changed: str
    # A member's other set (listed <-> hidden), cards and the guests they were.
    drop_from: str | None = None
    cards: str | None = None
    guests: str | None = None
    # The site's peak, for a capped record on the site (a flood takes its peak back).
    peak: str | None = None
    # The rooms' registry (a room's record); the member's rooms (a member's room record).
    rooms: str | None = None
    member_rooms: str | None = None
    # The guests and change mark of the room of the same kind a guest left.
    left_guests: str | None = None
    left_changed: str | None = None
    # The indexes (see conf.kept_key) of ``into`` and ``drop_from``: a member's record only.
    kept: str | None = None
    kept_from: str | None = None


class RecordArgs(NamedTuple):
    """A record's other arguments, in lua/record.lua's order; None: not used."""

    now: float
    member: str
    ttl: int
    window: float
    channel: str
    counted_since: float | None = None
    cap: int | None = None
    trim: int | None = None
    room: str | None = None
    max_rooms: int | None = None
    card: str | None = None
    keep_card: str | None = None
    guest: str | None = None
    left_room: str | None = None


class Recorded(NamedTuple):
    """RECORD's reply: the visitor's score before (None if none or not kept), whether
    the guest cap refused them, the room of the same kind a member left (None if
    none) and the rooms dropped over the rooms' cap, whose keys are still to delete."""

    before: float | None
    refused: bool
    left: str | None
    dropped: list[str]


def record(
    client: Any,
    *,
    keys: RecordKeys,
    args: RecordArgs,
    counters: Sequence[tuple[str, int]] = (),
) -> Recorded:
    """Record a visitor as seen now (see lua/record.lua), also into the HyperLogLogs
    ``counters`` (key, TTL); one round trip.

    A key the record does not use is sent as ``keys.changed`` again (a key of the
    same namespace, for Redis Cluster), an argument as ''.
    """
    before, refused, left, dropped = RECORD(
        client,
        [*(keys.changed if key is None else key for key in keys), *(key for key, _ in counters)],
        [
            *("" if arg is None else arg for arg in args),
            "" if keys.into is None else "1",
            *(ttl for _, ttl in counters),
        ],
    )
    return Recorded(
        None if before is None else float(before),
        bool(refused),
        None if left is None else text(left),
        [text(name) for name in dropped],
    )


class RoomMemberKeys(NamedTuple):
    """A room's keys that list members (its sets, their indexes), and its change mark."""

    users: str
    hidden: str
    kept_users: str
    kept_hidden: str
    changed: str


def leave_room(
    client: Any,
    *,
    member_rooms: str,
    keys: RoomMemberKeys,
    pk: str,
    room: str,
    kind: str,
    now: float,
    ttl: int,
    channel: str,
) -> bool:
    """The member ``pk`` leaves ``room`` unless their rooms name it again; whether they
    were listed there."""
    return bool(LEAVE_ROOM(client, [member_rooms, *keys], [pk, room, kind, now, ttl, channel]))


def drop_rooms(client: Any, *, rooms_key: str, rooms: dict[str, Sequence[str]]) -> int:
    """Delete the keys of ``rooms`` (room -> its keys, as many for each) not registered
    again in ``rooms_key``; how many rooms' keys were deleted."""
    keys = [key for room_keys in rooms.values() for key in room_keys]
    return int(DROP_ROOMS(client, [rooms_key, *keys], list(rooms)))


class ForgetKeys(NamedTuple):
    """What a logout writes; see lua/forget.lua."""

    users: str
    hidden: str
    kept_users: str
    kept_hidden: str
    cards: str
    changed: str
    member_rooms: str
    # Each room the member is in -> its keys.
    rooms: dict[str, RoomMemberKeys]


def remove_member(
    client: Any, *, keys: ForgetKeys, pk: str, now: float, ttl: int, channel: str
) -> bool:
    """The member ``pk`` out of the site and the rooms of ``keys``; whether they were
    listed on the site."""
    room_keys = [key for keys_of_room in keys.rooms.values() for key in keys_of_room]
    declared = [*keys[:6], keys.member_rooms, *room_keys]
    return bool(FORGET(client, declared, [pk, now, ttl, channel, *keys.rooms]))


class Counted(NamedTuple):
    """A namespace's counts inside the window and its peak (None when it has none)."""

    users: int
    hidden: int
    guests: int
    peak_count: Any
    peak_at: Any


def count_and_raise_peak(
    client: Any,
    *,
    keys: Sequence[str],
    sockets: Sequence[str],
    buckets: Sequence[str],
    window_start: float,
    now: float,
    peak_ttl: int,
    guest_cap: int,
) -> Counted:
    """Count the namespace ``keys`` (a conf.Keys; ``sockets``: its conf.SocketKeys;
    ``buckets``: its window's guest HyperLogLogs in approximate mode) and, given a
    ``peak_ttl``, raise its peak if they beat it; without one, it only reads."""
    keys_and_args = ([*keys, *sockets, *buckets], [window_start, now, peak_ttl, guest_cap])
    if peak_ttl:
        users, hidden, guests, count, at = COUNT_AND_RAISE_PEAK(client, *keys_and_args)
    else:
        users, hidden, guests, count, at = COUNT_AND_RAISE_PEAK.read(
            client, *keys_and_args, hyperloglogs=bool(buckets)
        )
    return Counted(int(users), int(hidden), int(guests), count, at)


class SummaryKeys(NamedTuple):
    """What the block reads; see lua/summary.lua."""

    # A conf.Keys: users, hidden, guests, peak, cards.
    namespace: Sequence[str]
    # A conf.SocketKeys: live, left, kept users, kept hidden.
    sockets: Sequence[str]
    # The window's guest HyperLogLogs (approximate mode), or none.
    buckets: Sequence[str]
    # A day count's: the guests' 24 hour HyperLogLogs and their past hours' union
    # (see counting.past_hours), then the members'; or none.
    hours: Sequence[str]


def read_summary(
    client: Any,
    *,
    keys: SummaryKeys,
    window_start: float,
    now: float,
    peak: bool,
    limit: int,
    include_hidden: bool,
    day_start: float | None,
    beat_cutoff: float,
    guest_cap: int,
) -> list[Any]:
    """What the block shows, in one round trip, as lua/summary.lua returns it; with
    ``peak`` (the site), its peak as it stands with the count now. It writes nothing."""
    hyperloglogs = [*keys.buckets, *keys.hours]
    reply: list[Any] = SUMMARY.read(
        client,
        [*keys.namespace, *keys.sockets, *hyperloglogs],
        [
            window_start,
            now,
            int(peak),
            limit,
            int(include_hidden),
            len(keys.buckets),
            "" if day_start is None else day_start,
            beat_cutoff,
            guest_cap,
        ],
        hyperloglogs=bool(hyperloglogs),
    )
    return reply


def count_each(client: Any, *, keys: Sequence[str]) -> list[int]:
    """The count of each HyperLogLog of ``keys``, in one round trip."""
    return [int(count) for count in COUNT_EACH(client, keys, [])]
