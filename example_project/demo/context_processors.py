"""What every demo page shows about the visitor and the demo accounts."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from demo.cards import member_card
from demo.people import PASSWORD, login_for
from whos_online.conf import conf


def demo(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    # The header greets you by the name the block shows, not by your login
    # (an email address on the email-login site).
    name = ""
    if user is not None and user.is_authenticated:
        name = conf.member_card(user).get("name") or f"Member #{user.pk}"
    return {
        "viewer_name": name,
        "demo_logins": {login: login_for(login) for login in ("alice", "bob", "carol", "admin")},
        "demo_password": PASSWORD,
        # The staff colours' legend, where the demo's card (which sets roles) is in use.
        "roles_shown": conf.member_card is member_card,
    }
