"""The defaults of the two callable settings a site often extends: ``is_bot``
(``WHOS_ONLINE_IS_BOT``) and ``default_card`` (``WHOS_ONLINE_MEMBER_CARD``). A site's own
filter or card calls these and adds to what they answer."""

from __future__ import annotations

from whos_online.store.members import default_card
from whos_online.visitors.bots import is_bot

__all__ = ["is_bot", "default_card"]
