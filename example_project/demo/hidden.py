"""The demo's WHOS_ONLINE_IS_HIDDEN rule: carol and heidi prefer not to be listed.

A real site would read a profile field; a fixed set keeps the demo simple. It
goes by login (``carol``, or ``carol@example.com`` on the email-login site).
"""

from __future__ import annotations

from typing import Any

from demo.people import login_of

HIDDEN = frozenset({"carol", "heidi"})


def is_hidden(user: Any) -> bool:
    return login_of(user) in HIDDEN
