"""For a site's tests: forget what this process keeps between requests.

The circuit breaker and the kept block reads are per process, so a test that
breaks Redis, or reads the block, leaves them to the next test. Call ``reset()``
before and after each test (see the how-to "Test a site that uses whos_online").
"""

from __future__ import annotations

from whos_online.rendering import blockcache
from whos_online.store import failsafe


def reset() -> None:
    """Close the breaker and forget the kept block reads."""
    failsafe.breaker.reset()
    blockcache.clear()
