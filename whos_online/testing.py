"""For a site's tests: forget what this process keeps between requests.

The breaker and the kept block reads are per process: call ``reset()`` before and
after each test (docs/howto/testing.md).
"""

from __future__ import annotations

from whos_online.rendering import blockcache
from whos_online.store import failsafe


def reset() -> None:
    """Close the breaker and forget the kept block reads."""
    failsafe.breaker.reset()
    blockcache.clear()
