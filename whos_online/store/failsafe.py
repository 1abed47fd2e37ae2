"""Fail-open calls into Redis for code that runs inside someone else's request: a circuit breaker.

Who's online is decoration: when Redis is gone, slow or refuses writes, pages must
still render at their usual speed. States are named as resilience4j names them:
CLOSED (calls go to Redis), OPEN (calls skip Redis until a back-off ends) and
HALF_OPEN (one call per process probes Redis; every other call skips at once).

Two circuits per process, because reads and writes fail apart:

- ``reads`` gates every call. It opens when Redis is gone (a connection error,
  a timeout), slow (SLOW_CALLS_TO_OPEN calls in a row slower than the slow
  budget, ``conf.slow_call``, 0.4 × ``WHOS_ONLINE_SOCKET_TIMEOUT``: one slow
  call on a healthy Redis is not enough),
  or fails a read.
- ``writes`` gates writes only. It opens when Redis answers a write with an
  error (a READONLY replica, OOM under ``maxmemory`` with ``noeviction``), so
  such a Redis still serves the block, counts and statuses.

A call still in flight after the slow budget makes every other call skip
Redis, so when Redis freezes only the requests already waiting and those
arriving within the budget wait, not every request that arrives while the
first timeout is pending.

A call's time is the time this process spent waiting during it: its wall
time less the CPU time the process used meanwhile (``time.process_time``,
every thread). A busy process (a burst of connects, threads queueing for the
GIL, a blocked event loop) makes calls long but not waiting, so it never reads
as a slow Redis; a frozen or slow Redis leaves the process idle while it waits.

A circuit's first back-off is FIRST_BACKOFF; each failed probe doubles it up to
``conf.backoff`` (5 s), each wait shortened by a random JITTER so processes do
not probe in step. A blip costs seconds; a long outage one probe per maximum
back-off. One outage (from a circuit opening until both are closed) logs one
ERROR line with the error (its traceback at DEBUG) and one WARNING at recovery.

A cache alias that gives no Redis (``CacheAliasError``) is no outage but a
mistake in the settings: no Redis was tried, and waiting will not mend it. It
is logged once per process as that mistake, with the setting to fix, and
leaves both circuits alone: calls skip Redis, pages render.

Why not a library: pybreaker and circuitbreaker (threads), purgatory and
aiobreaker (asyncio) count exceptions only (no slow-call threshold), keep one
state per breaker (no reads failing apart from writes), and none documents a
non-blocking half-open permit shared by threads and coroutines, which is what
keeps an ASGI worker from queueing on a sick Redis.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, Literal, ParamSpec, TypeVar

from redis.exceptions import RedisClusterException, RedisError, ResponseError

from whos_online.conf import SLOW_SHARE_OF_TIMEOUT, conf
from whos_online.store.connection import CacheAliasError

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

State = Literal["CLOSED", "OPEN", "HALF_OPEN"]
CLOSED: State = "CLOSED"
OPEN: State = "OPEN"
HALF_OPEN: State = "HALF_OPEN"

FIRST_BACKOFF = 1.0  # seconds (never more than conf.backoff)
SLOW_CALLS_TO_OPEN = 5
JITTER = (0.75, 1.0)  # each wait is the back-off times a factor drawn from here


class _Circuit:
    """One circuit's state. Only ``Breaker`` uses it, always under its lock."""

    def __init__(self) -> None:
        self.state: State = CLOSED
        self.opened_at = 0.0
        self.retry_at = 0.0
        self.backoff = 0.0  # the current back-off before jitter; 0 while closed
        self.slow = 0  # slow calls in a row while closed

    def admit(self, now: float) -> State | None:
        """CLOSED: pass; HALF_OPEN: this call is the probe; None: skip Redis."""
        if self.state == CLOSED:
            return CLOSED
        # A clock that went backwards ends the back-off rather than stretching it.
        if self.state == OPEN and not self.opened_at <= now < self.retry_at:
            self.state = HALF_OPEN
            return HALF_OPEN
        return None

    def release(self, now: float) -> None:
        """The probe did not reach Redis (another circuit skipped it): let the next call probe."""
        self.state, self.retry_at = OPEN, now

    def succeeded(self, ticket: State) -> None:
        if ticket == HALF_OPEN:
            self.state, self.backoff = CLOSED, 0.0
        if self.state == CLOSED:
            self.slow = 0

    def slowed(self, ticket: State, now: float) -> None:
        if ticket == HALF_OPEN:
            self.failed(ticket, now)
        elif self.state == CLOSED:
            self.slow += 1
            if self.slow >= SLOW_CALLS_TO_OPEN:
                self.failed(ticket, now)

    def failed(self, ticket: State, now: float) -> None:
        # A call admitted while closed that fails after another call opened the
        # circuit changes nothing: the back-off grows only with failed probes.
        if ticket == HALF_OPEN or self.state == CLOSED:
            grown = self.backoff * 2 if ticket == HALF_OPEN else FIRST_BACKOFF
            self.backoff = min(grown, conf.backoff)
            self.state, self.slow, self.opened_at = OPEN, 0, now
            self.retry_at = now + self.backoff * random.uniform(*JITTER)


@dataclass(frozen=True)
class _Ticket:
    """A call let through: its state in each circuit (``writes`` None for a read)."""

    reads: State
    writes: State | None
    started: float
    cpu: float  # the process's CPU time when it started

    def waited(self, now: float, cpu: float) -> float:
        """Seconds the process waited since the call started (wall time less CPU time)."""
        return now - self.started - max(cpu - self.cpu, 0.0)


class Breaker:
    """The per-process state behind :func:`call` and :func:`write`.

    The lock is held for a few attribute updates, never across a Redis call, so
    admission is a non-blocking try: threads and coroutines (through their
    threads) never queue behind a call that waits on Redis.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Back to healthy, forgetting any outage (for tests and benchmarks)."""
        with self.lock:
            self.reads = _Circuit()
            self.writes = _Circuit()
            self.in_flight: dict[object, _Ticket] = {}
            self.outage_since: float | None = None
            self.mistakes: set[str] = set()  # the configuration errors logged

    def misconfigured(self, error: CacheAliasError) -> None:
        """Log ``error`` the first time this process meets it: a mistake, not an outage."""
        with self.lock:
            first = str(error) not in self.mistakes
            self.mistakes.add(str(error))
        if first:
            logger.error(
                "whos_online is misconfigured, and records and shows nobody until the "
                "setting is fixed (no Redis was tried; nothing to retry): %s",
                error,
            )

    def admit(self, write: bool) -> tuple[object, _Ticket] | None:
        now, cpu = time.time(), time.process_time()
        with self.lock:
            budget = conf.slow_call
            if any(ticket.waited(now, cpu) > budget for ticket in self.in_flight.values()):
                return None  # a call is already stuck on Redis: do not join it
            reads = self.reads.admit(now)
            if reads is None:
                return None
            writes = self.writes.admit(now) if write else None
            if write and writes is None:
                if reads == HALF_OPEN:
                    self.reads.release(now)
                return None
            token, ticket = object(), _Ticket(reads, writes, now, cpu)
            self.in_flight[token] = ticket
        return token, ticket

    def done(self, token: object, ticket: _Ticket, error: BaseException | None) -> None:
        """Record how an admitted call went; ``error`` is the Redis error it raised, if any."""
        now, cpu = time.time(), time.process_time()
        answered = error is None or isinstance(error, ResponseError)
        with self.lock:
            self.in_flight.pop(token, None)
            if not answered or (error is not None and ticket.writes is None):
                self.reads.failed(ticket.reads, now)  # gone, or a read failed
                if ticket.writes == HALF_OPEN:
                    self.writes.release(now)
            else:
                if ticket.waited(now, cpu) > conf.slow_call:
                    self.reads.slowed(ticket.reads, now)
                else:
                    self.reads.succeeded(ticket.reads)
                if ticket.writes is not None:
                    if error is None:
                        self.writes.succeeded(ticket.writes)
                    else:
                        self.writes.failed(ticket.writes, now)
            started, ended = self._outage_changes(now)
        if started:
            self._log_outage(error, now - ticket.started)
        if ended is not None:
            logger.warning("Redis answers again; whos_online resumed after %.1f s.", ended)

    def abandon(self, token: object, ticket: _Ticket) -> None:
        """The call raised something other than a Redis error: no verdict on Redis."""
        now = time.time()
        with self.lock:
            self.in_flight.pop(token, None)
            if ticket.reads == HALF_OPEN:
                self.reads.release(now)
            if ticket.writes == HALF_OPEN:
                self.writes.release(now)

    def _outage_changes(self, now: float) -> tuple[bool, float | None]:
        """(an outage began, the length of one that ended); under the lock."""
        healthy = self.reads.state == CLOSED and self.writes.state == CLOSED
        since = self.outage_since
        if since is None and not healthy:
            self.outage_since = now
            return True, None
        if since is not None and healthy:
            self.outage_since = None
            return False, max(now - since, 0.0)
        return False, None

    def _log_outage(self, error: BaseException | None, took: float) -> None:
        retry = (
            f"retrying after {min(FIRST_BACKOFF, conf.backoff):g} s, then at growing intervals "
            f"up to {conf.backoff:g} s"
        )
        if error is None:
            logger.error(
                "Redis is slow (%d calls in a row over %g s, %g × WHOS_ONLINE_SOCKET_TIMEOUT; "
                "the last %.3f s: Redis, the network or this process is overloaded); "
                "whos_online skips it until it answers in time, %s.",
                SLOW_CALLS_TO_OPEN,
                conf.slow_call,
                SLOW_SHARE_OF_TIMEOUT,
                took,
                retry,
            )
            return
        if self.reads.state == CLOSED:
            what = "Redis refuses writes"
            effect = (
                "whos_online still shows who is online but records nobody until it accepts them"
            )
        else:
            what, effect = "Redis is unavailable", "whos_online skips it until it answers"
        logger.error(
            "%s (%s: %s); %s again, %s.",
            what,
            type(error).__name__,
            error,
            effect,
            retry,
        )
        logger.debug("The error that began the outage:", exc_info=error)


breaker = Breaker()


class Unavailable:
    """What the fail-open calls return when Redis failed or is being skipped.

    Falsy, and never a value of the functions they run, so a None those return
    ("never seen" from ``last_seen``, "no peak yet" from ``peak``) stays apart
    from "Redis is down".
    """

    __slots__ = ()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "failsafe.UNAVAILABLE"


UNAVAILABLE = Unavailable()


def call(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T | Unavailable:
    """Return ``func(*args, **kwargs)`` (a read), or UNAVAILABLE if Redis failed or is
    being skipped."""
    return _run(func, False, *args, **kwargs)


def write(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T | Unavailable:
    """Return ``func(*args, **kwargs)`` (a write), or UNAVAILABLE if Redis failed, is
    being skipped or refuses writes (READONLY, OOM)."""
    return _run(func, True, *args, **kwargs)


def _run(
    func: Callable[P, T], is_write: bool, /, *args: P.args, **kwargs: P.kwargs
) -> T | Unavailable:
    admitted = breaker.admit(is_write)
    if admitted is None:
        return UNAVAILABLE
    token, ticket = admitted
    try:
        result = func(*args, **kwargs)
    except CacheAliasError as exc:  # a RedisError, but no Redis was tried
        breaker.abandon(token, ticket)
        breaker.misconfigured(exc)
        return UNAVAILABLE
    # Cluster clients raise their own family too (e.g. no reachable startup node).
    except (RedisError, RedisClusterException) as exc:
        breaker.done(token, ticket, exc)
        return UNAVAILABLE
    except BaseException:
        breaker.abandon(token, ticket)
        raise
    breaker.done(token, ticket, None)
    return result
