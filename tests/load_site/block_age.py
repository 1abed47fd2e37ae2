"""How old the block on a page is, for tests/test_resilience.py: no page may show one
read more than ``blockcache.STALE_IF_ERROR`` seconds before it asked for it.

A page shows figures, not their age, so the test site wraps ``blockcache.entry``,
where the ``{% whos_online %}`` tag gets the entry it shows, and keeps per request
how long before the ask that entry's Redis read was sent. whos_online itself is
unchanged: the wrapper only looks.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any, Callable

from whos_online.rendering import blockcache

_age: ContextVar[float | None] = ContextVar("block_age", default=None)
_read = blockcache.entry


def _read_and_date(*args: Any, **kwargs: Any) -> blockcache.Cached | None:
    asked = time.time()
    entry = _read(*args, **kwargs)
    if entry is not None:
        _age.set(asked - entry.sent_at)
    return entry


blockcache.entry = _read_and_date


def measure(render: Callable[[], str]) -> tuple[str, float | None]:
    """``render()``, and the age of the block it showed (None: it showed none)."""
    token = _age.set(None)
    try:
        return render(), _age.get()
    finally:
        _age.reset(token)
