"""Members as people: the card (``WHOS_ONLINE_MEMBER_CARD``) recorded with each visit
beside the member's pk, so the block shows names, links and avatars with no SQL query,
and the Member that templates get back.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import FieldDoesNotExist
from django.db.models import EmailField
from django.utils.translation import gettext

from whos_online.conf import conf
from whos_online.store.connection import text
from whos_online.store.status import Status

# Caps that keep one card small whatever the callable returns (bytes of JSON,
# characters per field, extra fields): a card is written on every record.
MAX_CARD_BYTES = 2048
MAX_NAME = 150
MAX_URL = 500
MAX_EXTRA_FIELDS = 5
MAX_EXTRA = 100
CARD_FIELDS = ("name", "url", "avatar")

# Bidi embeddings, overrides and isolates, and the marks: they can make a name
# display as another ("\u202enimda" shows as "admin").
BIDI_CONTROLS = dict.fromkeys(
    [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
)


def default_card(user: Any) -> dict[str, Any]:
    """The handle the site itself shows everyone: never a real name, never an email address.

    A forum shows "bob", not "Robert Jones": the username, unless the model logs
    in by email address; then the short name; anything that looks like an
    email address is passed over, and with nothing left the block shows a
    neutral "Member #pk". The URL is ``get_absolute_url()`` when the model
    defines it.
    """
    by_email = logs_in_by_email(type(user))
    methods = ("get_short_name",) if by_email else ("get_username", "get_short_name")
    name = ""
    for method in methods:
        candidate = getattr(user, method, None)
        value = str(candidate() or "").strip() if callable(candidate) else ""
        if value and "@" not in value:
            name = value
            break
    absolute_url = getattr(user, "get_absolute_url", None)
    return {"name": name, "url": absolute_url() if callable(absolute_url) else None}


def logs_in_by_email(model: type) -> bool:
    """Whether the model's login id is an email address (an EmailField, or named like one)."""
    login = str(getattr(model, "USERNAME_FIELD", ""))
    try:
        field = model._meta.get_field(login)  # type: ignore[attr-defined]
    except (AttributeError, FieldDoesNotExist):
        field = None
    return "email" in login or isinstance(field, EmailField)


def card_of(user: Any) -> tuple[str, bool]:
    """``user``'s card as stored (``WHOS_ONLINE_MEMBER_CARD``), and whether it asks that they
    be hidden (``"hidden": True``): both come from the one call, which may read the database."""
    card = conf.member_card(user)
    return card_json(card), bool(card.get("hidden"))


def card_json(card: dict[str, Any]) -> str:
    """The card as stored: known fields capped, unsafe URLs dropped, at most MAX_CARD_BYTES."""
    clean: dict[str, Any] = {"name": str(card.get("name") or "")[:MAX_NAME]}
    for key in ("url", "avatar"):
        url = _safe_url(card.get(key))
        if url:
            clean[key] = url
    extras = {
        str(key)[:MAX_EXTRA]: _scalar(value)
        for key, value in card.items()
        if key not in (*CARD_FIELDS, "where", "hidden")
    }
    clean.update(list(extras.items())[:MAX_EXTRA_FIELDS])
    text = json.dumps(clean, ensure_ascii=False, separators=(",", ":"))
    if len(text.encode()) > MAX_CARD_BYTES:
        # Extras go first; name and links always fit.
        kept = {key: clean[key] for key in CARD_FIELDS if key in clean}
        text = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
    return text


@dataclass(frozen=True)
class Member:
    """One member as templates and the API see them.

    ``name`` is safe to display: bidi controls are removed and an empty or
    invisible name becomes "Member #pk". Extra card fields (e.g. ``role``) are
    reachable as ``member.role`` in templates and ``member["role"]`` in Python.
    """

    pk: str
    display_name: str
    url: str | None
    avatar: str | None
    last_seen: datetime
    status: Status
    hidden: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        shown = self.display_name.translate(BIDI_CONTROLS)
        # A letter or digit first (most names) is visible: no need to look at every character.
        if shown[:1].isalnum():
            return shown
        if not any(unicodedata.category(char)[0] in "LNPS" for char in shown):
            return gettext("Member #%(pk)s") % {"pk": self.pk}
        return shown

    def __getitem__(self, key: str) -> Any:
        # Django templates try item lookup first: extras, then the attributes.
        return self.extra[key]

    def __str__(self) -> str:
        return self.name

    def as_json(self) -> dict[str, Any]:
        """What the live endpoint sends about this member."""
        return {
            "pk": self.pk,
            "name": self.name,
            "url": self.url,
            "avatar": self.avatar,
            "status": self.status,
            "hidden": self.hidden,
            **self.extra,
        }


def read_member(pk: Any, seen: float, raw_card: Any, status: Status, hidden: bool) -> Member:
    """Build a Member from what Redis returned: its pk, last sign and card. A card that
    is none (None, or false in a listing) or not a JSON object reads as an empty card."""
    try:
        card = json.loads(raw_card) if raw_card else {}
    except ValueError:
        card = {}
    if not isinstance(card, dict):
        card = {}
    card.pop("where", None)  # the staff's page of WHOS_ONLINE_TRACK_PAGES, in older cards
    return Member(
        pk=text(pk),
        display_name=str(card.pop("name", "") or ""),
        url=card.pop("url", None),
        avatar=card.pop("avatar", None),
        last_seen=datetime.fromtimestamp(seen, tz=timezone.utc),
        status=status,
        hidden=hidden,
        extra=card,
    )


def _safe_url(value: Any) -> str | None:
    """The URL if it is http(s) or site-relative: never ``javascript:`` in an href."""
    if not value:
        return None
    url = str(value)[:MAX_URL]
    scheme = urlsplit(url).scheme.lower()
    return url if scheme in ("", "http", "https") else None


def _scalar(value: Any) -> Any:
    return (
        value if isinstance(value, (bool, int, float)) or value is None else str(value)[:MAX_EXTRA]
    )
