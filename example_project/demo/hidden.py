"""The demo's WHOS_ONLINE_IS_HIDDEN rule: carol and heidi prefer not to be listed.

A real site would read a profile field; a fixed set keeps the demo database-free.
"""

from __future__ import annotations

from typing import Any

HIDDEN = frozenset({"carol", "heidi"})


def is_hidden(user: Any) -> bool:
    return user.get_username() in HIDDEN
