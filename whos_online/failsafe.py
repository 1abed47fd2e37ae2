"""Fail-open calls into Redis for code that runs inside someone else's request.

Who's online is decoration: when Redis fails, the page must still render. One
failure starts an outage: it is logged once, and Redis is skipped for
``WHOS_ONLINE_BACKOFF`` seconds so requests do not each wait out a timeout.
The first call that succeeds after the back-off ends the outage.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, ParamSpec, TypeVar

from redis.exceptions import RedisClusterException, RedisError

from whos_online.conf import conf

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


class _Outage:
    """Per-process state: when Redis last failed, or None while it works."""

    def __init__(self) -> None:
        self.failed_at: float | None = None
        self.lock = threading.Lock()

    def backing_off(self) -> bool:
        failed_at = self.failed_at
        if failed_at is None:
            return False
        # A clock that went backwards ends the back-off rather than stretching it.
        return failed_at <= time.time() < failed_at + conf.backoff

    def failed(self, exc: Exception) -> None:
        with self.lock:
            if self.failed_at is None:
                logger.error(
                    "Redis is unavailable (%s: %s); whos_online skips it for %s s at a time "
                    "until it answers again.",
                    type(exc).__name__,
                    exc,
                    conf.backoff,
                    exc_info=exc,
                )
            self.failed_at = time.time()

    def succeeded(self) -> None:
        with self.lock:
            if self.failed_at is not None:
                logger.warning("Redis answers again; whos_online resumed.")
                self.failed_at = None


outage = _Outage()


def call(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T | None:
    """Return ``func(*args, **kwargs)``, or None if Redis failed or is being skipped.

    ``func`` must not return None itself, so callers can tell the two apart.
    """
    if outage.backing_off():
        return None
    try:
        result = func(*args, **kwargs)
    # Cluster clients raise their own family too (e.g. no reachable startup node).
    except (RedisError, RedisClusterException) as exc:
        outage.failed(exc)
        return None
    if outage.failed_at is not None:
        outage.succeeded()
    return result
