"""The typed wrappers of the WebSocket presence scripts (lua/heartbeat.lua,
lua/disconnect.lua, lua/check.lua), apart from the store's in :mod:`whos_online.store.scripts`,
which holds every script."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from whos_online.store.scripts import CHECK, DISCONNECT, HEARTBEAT


class Beat(NamedTuple):
    """One connection in one namespace, as a heartbeat writes it."""

    live: str
    left: str
    # The index (see conf.kept_key) of member_set, and the namespace's other one.
    kept: str
    other_kept: str
    connections: str
    member_set: str
    changed: str
    pk: str
    connection_id: str
    room: str


def heartbeat(
    client: Any,
    *,
    cards: str,
    rooms_key: str,
    beats: Sequence[Beat],
    generation: str,
    now: float,
    connections_ttl: int,
    ttl: int,
    beat_cutoff: float,
    channel: str,
) -> tuple[Any, bool]:
    """Mark each of ``beats`` alive at ``now`` (see lua/heartbeat.lua); one round trip.

    Returns Redis's generation, and whether it began with this call (Redis had lost
    its data: nobody was beaten).
    """
    keys = [cards, rooms_key]
    args: list[Any] = [now, connections_ttl, ttl, beat_cutoff, channel]
    for beat in beats:
        keys += beat[:7]
        args += [beat.pk, beat.connection_id, beat.room]
    began, lost = HEARTBEAT(client, [*keys, generation], args)
    return began, bool(lost)


class Closed(NamedTuple):
    """A closed connection's keys in one namespace."""

    live: str
    left: str
    kept_users: str
    kept_hidden: str
    users: str
    hidden: str
    connections: str
    changed: str
    room: str


def disconnect(
    client: Any,
    *,
    rooms_key: str,
    namespaces: Sequence[Closed],
    now: float,
    beat_cutoff: float,
    ttl: int,
    pk: str,
    connection_id: str,
    channel: str,
) -> None:
    """The connection ``connection_id`` of ``pk`` closed (see lua/disconnect.lua)."""
    keys = [rooms_key]
    for closed in namespaces:
        keys += closed[:8]
    rooms = [closed.room for closed in namespaces]
    DISCONNECT(client, keys, [now, beat_cutoff, ttl, pk, connection_id, channel, *rooms])


class Checked(NamedTuple):
    """A namespace a hub checks."""

    live: str
    left: str
    kept_users: str
    kept_hidden: str
    changed: str
    room: str


def check(
    client: Any,
    *,
    namespaces: Sequence[Checked],
    generation: str,
    beat_cutoff: float,
    now: float,
    ttl: int,
    channel: str,
) -> tuple[list[Any], Any, bool]:
    """Sweep ``namespaces`` for dead processes' connections: each one's change mark,
    Redis's generation, and whether it began with this call (Redis had lost its data)."""
    keys = [key for checked in namespaces for key in checked[:5]]
    rooms = [checked.room for checked in namespaces]
    *marks, began, lost = CHECK(
        client, [*keys, generation], [beat_cutoff, now, ttl, channel, *rooms]
    )
    return marks, began, bool(lost)
