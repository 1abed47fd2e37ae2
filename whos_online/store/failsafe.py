"""Fail-open calls into Redis for code that runs inside someone else's request: a circuit breaker.

Who's online is decoration: when Redis is gone, slow or refuses writes, pages must
still render at their usual speed. States are named as resilience4j names them:
CLOSED (calls go to Redis), OPEN (calls skip Redis until a back-off ends) and
HALF_OPEN (one call per process probes Redis; every other call skips at once).
Two circuits per process, because reads and writes fail apart: ``reads`` gates
every call and opens when Redis is gone (a connection error, a timeout), fails a
read, or is slow; ``writes`` gates writes only and opens when Redis refuses one
(READONLY, OOM), so such a Redis still serves the block, counts and statuses.

Slow: SLOW_CALLS_TO_OPEN of the last SLOW_WINDOW calls waited longer than
``conf.slow_call`` (0.4 × the socket timeout, ``conf.socket_timeout``). A call's wait is its
wall time less the CPU time of its own thread (``time.thread_time``), so other
threads' work neither hides a slow Redis nor counts as waiting; what a healthy
Redis leaves in it is the thread's turn for the GIL and a CPU. A stall slows
only the calls in flight, fewer than half the window, so it is no outage: a rate,
as resilience4j's slow-call rate (benchmarks/BREAKER.md measures both).

Each failed probe doubles the back-off up to ``conf.backoff``, with JITTER. One
outage logs one ERROR and one WARNING at recovery; a cache alias that gives no
Redis (``CacheAliasError``) is a settings mistake, logged once, not an outage.

Why not a library: pybreaker and circuitbreaker (threads), purgatory and
aiobreaker (asyncio) count exceptions only (no slow-call rate), keep one state
per breaker (no reads failing apart from writes), and none has a non-blocking
half-open permit shared by threads and coroutines.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from typing import Callable, Literal, NamedTuple, ParamSpec, TypeVar

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
SLOW_WINDOW = 20  # the last calls a closed circuit judges slowness over
SLOW_CALLS_TO_OPEN = 10
JITTER = (0.75, 1.0)  # each wait is the back-off times a factor drawn from here


class _Circuit:
    """One circuit's state. Only ``Breaker`` uses it, always under its lock."""

    def __init__(self) -> None:
        self.state: State = CLOSED
        self.opened_at = self.retry_at = 0.0
        self.backoff = 0.0  # the current back-off before jitter; 0 while closed
        self.slow: deque[bool] = deque(maxlen=SLOW_WINDOW)  # closed: was each call slow

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
        """The probe did not reach Redis or got no verdict: let the next call probe."""
        self.state, self.retry_at = OPEN, now

    def timed(self, ticket: State, now: float, slow: bool) -> None:
        """An answered call: a slow probe fails; closed, the window decides."""
        if ticket == CLOSED and self.state == CLOSED:
            self.slow.append(slow)
            slow = sum(self.slow) >= SLOW_CALLS_TO_OPEN
        self.settle(ticket, now, failed=slow)

    def settle(self, ticket: State, now: float, failed: bool) -> None:
        # A call admitted while closed that fails after another call opened the
        # circuit changes nothing: the back-off grows only with failed probes.
        if failed and (ticket == HALF_OPEN or self.state == CLOSED):
            grown = self.backoff * 2 if ticket == HALF_OPEN else FIRST_BACKOFF
            self.backoff = min(grown, conf.backoff)
            self.state, self.opened_at = OPEN, now
            self.retry_at = now + self.backoff * random.uniform(*JITTER)
            self.slow.clear()
        elif not failed and ticket == HALF_OPEN:
            self.state, self.backoff = CLOSED, 0.0


class _Ticket(NamedTuple):
    """A call let through: its state in each circuit (``writes`` None for a read)."""

    reads: State
    writes: State | None
    started: float
    cpu: float  # the calling thread's CPU time when it started


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

    def admit(self, write: bool) -> _Ticket | None:
        now = time.time()
        with self.lock:
            reads = self.reads.admit(now)
            writes = self.writes.admit(now) if write and reads is not None else None
            if reads is None or (write and writes is None):
                if reads == HALF_OPEN:
                    self.reads.release(now)
                return None
        return _Ticket(reads, writes, now, time.thread_time())

    def done(self, ticket: _Ticket, error: BaseException | None) -> None:
        """Record how an admitted call went; ``error`` is the Redis error it raised, if any."""
        now = time.time()
        took = now - ticket.started
        waited = took - (time.thread_time() - ticket.cpu)
        answered = error is None or isinstance(error, ResponseError)
        with self.lock:
            if not answered or (error is not None and ticket.writes is None):
                self.reads.settle(ticket.reads, now, failed=True)  # gone, or a read failed
                if ticket.writes == HALF_OPEN:
                    self.writes.release(now)
            else:
                self.reads.timed(ticket.reads, now, waited > conf.slow_call)
                if ticket.writes is not None:
                    self.writes.settle(ticket.writes, now, failed=error is not None)
            started, ended = self._outage_changes(now)
        if started:
            self._log_outage(error, took)
        if ended is not None:
            logger.warning("Redis answers again; whos_online resumed after %.1f s.", ended)

    def abandon(self, ticket: _Ticket) -> None:
        """The call raised something other than a Redis error: no verdict on Redis."""
        now = time.time()
        with self.lock:
            for circuit, state in ((self.reads, ticket.reads), (self.writes, ticket.writes)):
                if state == HALF_OPEN:
                    circuit.release(now)

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
            what = (
                f"Redis is slow ({SLOW_CALLS_TO_OPEN} of the last {SLOW_WINDOW} calls waited "
                f"over {conf.slow_call:g} s, {SLOW_SHARE_OF_TIMEOUT:g} × "
                f"the socket timeout; the last took {took:.3f} s)"
            )
            effect = "whos_online skips it until it answers in time"
        elif self.reads.state == CLOSED:
            what = f"Redis refuses writes ({type(error).__name__}: {error})"
            effect = "whos_online still shows who is online but records nobody until it accepts them again"
        else:
            what = f"Redis is unavailable ({type(error).__name__}: {error})"
            effect = "whos_online skips it until it answers again"
        logger.error("%s; %s, %s.", what, effect, retry)
        if error is not None:
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
    ticket = breaker.admit(is_write)
    if ticket is None:
        return UNAVAILABLE
    try:
        result = func(*args, **kwargs)
    except CacheAliasError as exc:  # a RedisError, but no Redis was tried
        breaker.abandon(ticket)
        breaker.misconfigured(exc)
        return UNAVAILABLE
    # Cluster clients raise their own family too (e.g. no reachable startup node).
    except (RedisError, RedisClusterException) as exc:
        breaker.done(ticket, exc)
        return UNAVAILABLE
    except BaseException:
        breaker.abandon(ticket)
        raise
    breaker.done(ticket, None)
    return result
