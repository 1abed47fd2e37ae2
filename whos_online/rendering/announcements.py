"""What a change in a block says to a screen reader: a short sentence ("Bob left."),
never the list, for the polite live region ``live.js`` puts beside a live block.

A push says the diff between the hub's last two reads of a view
(:mod:`whos_online.contrib.channels.hub`); a poll says the change from the members the
browser's block showed (sent back in the ``X-Whos-Online-Shown`` header, from the
previous poll's ``members`` or the rendered block's ``data-whos-online-shown``) to
the new read, and a socket's first state the change from the rendered block's (its
URL's ``shown`` parameter, in the same form as the header). All in the same words,
translated.
"""

from __future__ import annotations

import json
import string
from typing import Any
from urllib.parse import unquote

from django.utils.translation import gettext_lazy, ngettext_lazy

from whos_online.store.reading import Summary

# The header a poll sends: the members its block showed, as URL-encoded JSON
# ``[[pk, name, status], ...]``. A longer one is ignored (the change goes unsaid).
SHOWN_HEADER = "X-Whos-Online-Shown"
MAX_SHOWN = 8000
# What ``encodeURIComponent`` (and so the header) leaves as it is.
UNRESERVED = (string.ascii_letters + string.digits + "-_.!~*'()").encode()

Cards = dict[str, dict[str, Any]]

# One member by name, several by number.
JOINED = (
    gettext_lazy("%(name)s joined."),
    ngettext_lazy("%(count)d person joined.", "%(count)d people joined.", "count"),
)
LEFT = (
    gettext_lazy("%(name)s left."),
    ngettext_lazy("%(count)d person left.", "%(count)d people left.", "count"),
)
IDLE = (
    gettext_lazy("%(name)s is idle."),
    ngettext_lazy("%(count)d person is idle.", "%(count)d people are idle.", "count"),
)
BACK = (
    gettext_lazy("%(name)s is back."),
    ngettext_lazy("%(count)d person is back.", "%(count)d people are back.", "count"),
)


def announce(joins: Cards, leaves: Cards) -> str:
    """A diff in short sentences: a member only in ``joins`` joined, only in ``leaves``
    left; one in both whose status changed is idle, or back (other card changes, e.g. a
    new name, say nothing)."""
    changed = [(card, leaves[pk]["status"]) for pk, card in joins.items() if pk in leaves]
    changes = [
        (JOINED, [card for pk, card in joins.items() if pk not in leaves]),
        (LEFT, [card for pk, card in leaves.items() if pk not in joins]),
        (IDLE, [card for card, was in changed if card["status"] == "idle" != was]),
        (BACK, [card for card, was in changed if card["status"] == "online" != was]),
    ]
    return " ".join(
        one % {"name": cards[0]["name"]} if len(cards) == 1 else several % {"count": len(cards)}
        for (one, several), cards in changes
        if cards
    )


def diff(old: Cards, new: Cards) -> tuple[Cards, Cards]:
    """Phoenix-style: a member whose card changed (e.g. their status) leaves and joins again."""
    joins = {pk: card for pk, card in new.items() if old.get(pk) != card}
    leaves = {pk: card for pk, card in old.items() if new.get(pk) != card}
    return joins, leaves


def since_shown(shown: str | None, online: Summary) -> str:
    """The change from the members a polling block showed (``SHOWN_HEADER``) to
    ``online``'s. Nothing on a first poll (no header), for a malformed or too long
    header, or when the new list is cut at its limit (names come and go with it)."""
    if not shown or len(shown) > MAX_SHOWN or online.more:
        return ""
    try:
        old = {
            str(pk): {"name": str(name), "status": status}
            for pk, name, status in json.loads(unquote(shown))
        }
    except (ValueError, TypeError, RecursionError):  # RecursionError: "[[[[..." 4000 deep
        return ""
    new = {str(m.pk): {"name": m.name, "status": m.status} for m in online.members}
    return announce(*diff(old, new))


def shown(online: Summary) -> str:
    """The members ``online`` lists as ASCII JSON ``[[pk, name, status], ...]``, for a
    rendered block's ``data-whos-online-shown``, which ``live.js`` URL-encodes into the
    header's value: "" for a list cut at its limit, or one whose value would pass
    ``MAX_SHOWN`` (``since_shown`` ignores either)."""
    if online.more:
        return ""
    cards = json.dumps([[m.pk, m.name, m.status] for m in online.members], separators=(",", ":"))
    # URL-encoded, each character but the unreserved takes three: counted, not built
    # (quote() costs ~250 us for 100 members, this ~5 us).
    encoded = len(cards) + 2 * len(cards.encode().translate(None, UNRESERVED))
    return cards if encoded <= MAX_SHOWN else ""
