"""Recording visitors: a member or a guest seen now, on the site or in a room,
and forgetting them (a logout). See :mod:`whos_online.presence` for the keys.

A record is one EVALSHA of scripts.RECORD; a member's move to another room of
the same kind, or a room that pushes the least recently visited one over
the rooms cap (``conf.max_rooms``), costs one round trip more (the room left or dropped is
known only from the record's reply, and a script touches only the keys it is
given). A guest's move costs nothing more: their cookie names the room they
leave (see ``guests.guest_rooms``).
"""

from __future__ import annotations

import math
import time
from typing import Any, NamedTuple, Sequence

from whos_online.conf import Keys, conf
from whos_online.room_names import room_kind, room_name
from whos_online.store import counting, scripts
from whos_online.store.addresses import Address, guest_id
from whos_online.store.connection import get_client, text
from whos_online.store.members import Member, card_of, read_member


class Visit(NamedTuple):
    """A recorded visit: its time (the score), the visitor's score before it
    (None if they were not in the set), for a member how the block shows them, and
    whether the guest cap refused a newcomer (a flood: nothing was written)."""

    at: float
    before: float | None
    member: Member | None = None
    refused: bool = False


def record_user(
    user: Any,
    *,
    room: str | None = None,
    guest_ip: str | Address | None = None,
) -> Visit:
    """Mark ``user`` as seen now (on the site, or in ``room``) with a fresh card.

    A member whose card says ``"hidden": True`` is kept in a set of their own:
    counted, never listed to ordinary visitors. The same write takes them out
    of the other set (so changing one's mind takes effect at the next record)
    and, given the address they browsed from as a guest (``guest_ip``), out of
    the guests, so a login never counts one person twice.
    """
    card, hidden = card_of(user)
    return record_member(str(user.pk), hidden, card, room, guest_ip)


def record_member(
    pk: str,
    hidden: bool,
    card: str,
    room: str | None,
    guest_ip: str | Address | None = None,
    *,
    keep_card: bool = False,
) -> Visit:
    """record_user's Redis part: no site callable runs here (see ``sockets.open_connection``).

    With ``keep_card``, a card already stored stays (a socket's record: the
    page's card is the fresher).
    """
    now = time.time()
    keys = conf.keys(room)
    key, other = (keys.hidden, keys.users) if hidden else (keys.users, keys.hidden)
    drop = guest_id(guest_ip) if guest_ip else ""
    counters = counting.counters("members", now, site=room is None)
    before, _ = _record(
        now,
        keys,
        key,
        pk,
        ttl=conf.retention,
        drop_from=other,
        room=room,
        card=card,
        guest=drop,
        counters=counters,
        keep_card=keep_card,
    )
    return Visit(now, before, read_member(pk, now, card, "online", hidden))


def record_guest(ip: str | Address, *, room: str | None = None, left: str | None = None) -> Visit:
    """Mark the guest at address ``ip`` as seen now, out of the room ``left`` (the one of
    the same kind they were in, which their cookie names: Redis keeps no key per guest).

    A newcomer while the guests fill the cap (``conf.max_guests``) inside the
    window is refused (``Visit.refused``), so a flood never pushes out the
    guests counted before it. In approximate mode (``WHOS_ONLINE_GUESTS``) the guest goes into
    the window's HyperLogLog bucket instead of the sorted set, uncapped (and
    the score before is not known). Raises ValueError if ``ip`` is not an IP
    address.
    """
    now = time.time()
    keys = conf.keys(room)
    counters = counting.counters("guests", now, site=room is None, live=keys.guests)
    before, refused = _record(
        now,
        keys,
        keys.guests,
        guest_id(ip),
        ttl=conf.max_age,
        keep=conf.max_guests,
        room=room,
        counters=counters,
        listed=not counting.approximate(),
        left=left,
    )
    return Visit(now, before, refused=refused)


def forget_user(user: Any) -> bool:
    """Take a member (user or pk) off the list and out of every room at once (e.g. on logout);
    True if they were on the site's list."""
    keys, pk, client = conf.keys(), member_id(user), get_client()
    member_rooms = conf.member_rooms_key(pk)
    # Two round trips (a logout is rare): a script touches only the keys it is
    # given, and the rooms' keys are known once their names are read.
    rooms = sorted({text(room) for room in client.hvals(member_rooms)})
    room_keys = [key for room in rooms for key in _room_member_keys(room)]
    declared = [keys.users, keys.hidden, *conf.socket_keys()[2:], keys.cards, member_rooms]
    return bool(scripts.FORGET(client, [*declared, *room_keys], [pk, conf.notices_channel, *rooms]))


def _room_member_keys(room: str) -> list[str]:
    """A room's keys that list members: its sets and their indexes."""
    keys = conf.keys(room)
    return [keys.users, keys.hidden, *conf.socket_keys(room)[2:]]


def forget_guest(ip: str) -> bool:
    """Take the guest at ``ip`` off the count now (e.g. on login); True if it was there.

    Always False in approximate mode: a HyperLogLog cannot remove anyone.
    """
    if counting.approximate():
        return False
    return bool(get_client().zrem(conf.keys().guests, guest_id(ip)))


# Guests over the cap dropped by one write: a short write however long the flood.
TRIM_PER_WRITE = 100


def _record(
    now: float,
    keys: Keys,
    key: str,
    member: str,
    ttl: float,
    keep: int | None = None,
    drop_from: str | None = None,
    room: str | None = None,
    card: str = "",
    guest: str = "",
    counters: Sequence[tuple[str, int]] = (),
    listed: bool = True,
    keep_card: bool = False,
    left: str | None = None,
) -> tuple[float | None, bool]:
    """One EVALSHA of scripts.RECORD (lua/record.lua lists its KEYS and ARGV), then the
    room a member left and the rooms dropped, which only its reply names. Returns
    ``member``'s score before, and whether the guest cap refused them.

    ``counters`` are the HyperLogLogs (key, TTL) ``member`` also goes into; without
    ``listed`` they are all it goes into.
    """
    client = get_client()
    into = key if listed else keys.guests
    capped = bool(keep) and listed
    member_rooms = room is not None and card
    # A key the record does not use is ``into`` again, an argument ''.
    declared = [
        into,
        drop_from or into,
        keys.cards if card else into,
        keys.guests if guest else into,
        keys.peak if capped and room is None else into,
        into if room is None else conf.rooms_key,
        conf.member_rooms_key(member) if member_rooms else into,
        into if left is None else conf.keys(left).guests,
        into if key == keys.guests else conf.kept_key(key),
        into if drop_from is None else conf.kept_key(drop_from),
    ]
    args = [
        now,
        member,
        math.ceil(ttl),
        conf.window(room),
        conf.notices_channel,
        counting.counted_since(now) if counters else "",
        keep if capped else "",
        TRIM_PER_WRITE if capped or room is not None else "",
        room_arg(room),
        "" if room is None else conf.max_rooms,
        card,
        "1" if keep_card else "",
        guest,
        "" if left is None else room_arg(left),
        "1" if listed else "",
    ]
    before, refused, moved_from, dropped = scripts.RECORD(
        client,
        [*declared, *(counter for counter, _ in counters)],
        [*args, *(counter_ttl for _, counter_ttl in counters)],
    )
    if moved_from is not None:
        moved_from = text(moved_from)
        scripts.LEAVE_ROOM(
            client,
            [conf.member_rooms_key(member), *_room_member_keys(moved_from)],
            [member, moved_from, room_kind(moved_from), conf.notices_channel],
        )
    if dropped:
        rooms = {room: conf.namespace_keys(room) for room in map(text, dropped)}
        scripts.drop_rooms(client, rooms_key=conf.rooms_key, rooms=rooms)
    return None if before is None else float(before), bool(refused)


def room_arg(room: str | None) -> str:
    """A room as the scripts' ARGV name it (as the registry keeps it); '' for the site."""
    return "" if room is None else room_name(room) or ""


def member_id(user: Any) -> str:
    """A member's id in Redis: the pk of a user object, or a pk given as it is."""
    return str(getattr(user, "pk", user))


def unrecord(visitor: tuple[str, bool], room: str | None = None) -> bool:
    """Take a visitor (a member's pk, True; a guest's id, False) back out of the site or
    ``room``, whose page was not shown (an error, a redirect), and a room's keys with
    them if nobody else is there; True if the keys went. One round trip."""
    who, is_member = visitor
    registry, name = conf.rooms_key, room_arg(room)
    in_room = is_member and room is not None
    deleted = scripts.UNRECORD(
        get_client(),
        [*conf.namespace_keys(room), registry, conf.member_rooms_key(who) if in_room else registry],
        [who, name, room_kind(name) if name else "", "1" if in_room else "", conf.notices_channel],
    )
    return bool(deleted)
