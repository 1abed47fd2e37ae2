"""The demo's WHOS_ONLINE_MEMBER_CARD: what the block knows about each member.

Made from the user on every record (at most once per half window per
member) and stored in Redis beside their pk, so the block shows names,
links and avatars with no SQL query. The demo shows full names with a profile
link (the docs' recipe, howto/member-cards.md: whos_online's default shows only the username), plus
a generated initials avatar and a role for staff, which its CSS colours as
phpBB colours moderators and administrators. carol and heidi prefer not to be
listed: their cards say "hidden" (a real site would read a profile field; a fixed
set keeps the demo simple, by login: ``carol``, or ``carol@example.com`` on the
email-login site).
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from demo.people import login_of
from whos_online.store import members

HIDDEN = frozenset({"carol", "heidi"})


def default_card(user: Any) -> dict[str, Any]:
    """whos_online's own card, hidden for carol and heidi (the email-login demo's)."""
    return {**members.default_card(user), "hidden": login_of(user) in HIDDEN}


def member_card(user: Any) -> dict[str, Any]:
    card = {
        "name": user.get_full_name() or user.get_username(),
        "url": reverse("profile", args=[user.pk]),
        "avatar": reverse("avatar", args=[user.pk]),
        "hidden": login_of(user) in HIDDEN,
    }
    if user.is_superuser:
        card["role"] = "admin"
    elif user.is_staff:
        card["role"] = "staff"
    return card
