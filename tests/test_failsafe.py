"""Redis failures never break the site: the breaker fails open, backs off, and logs once.

The first tests go through pages against a dead, hung or wrong Redis; the rest
drive ``failsafe.call`` and ``failsafe.write`` directly with functions that
raise what redis-py raises, or that block like a call waiting on a hung Redis,
from many threads and coroutines at once. Time is travelled, never slept.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import time_machine
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from tests import online_now
from tests.conftest import FAKE_CACHE, NOW, BrowserClient, django_redis_cache, socket_timeout
from tests.counted import Wire
from tests.test_faults import answers_again, log_records, the_error
from whos_online import presence
from whos_online.conf import Settings
from whos_online.store import failsafe

pytestmark = pytest.mark.django_db

UNAVAILABLE = "Who's online is unavailable right now."


def outage_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What a site logging whos_online at WARNING sees."""
    return [
        r
        for r in caplog.records
        if r.name.startswith("whos_online") and r.levelno >= logging.WARNING
    ]


# -- through pages ----------------------------------------------------------------------


def test_dead_redis_pages_render_and_the_error_is_logged_once(
    dead_redis: None, caplog: pytest.LogCaptureFixture
) -> None:
    client = BrowserClient()
    for _ in range(5):
        response = client.get("/block/")
        assert response.status_code == 200
        assert "unavailable" in response.content.decode()
        assert "online" not in response.cookies  # so the visit is retried later
    assert isinstance(the_error(caplog), redis.ConnectionError)
    [record] = outage_records(caplog)
    assert record.getMessage().startswith("Redis is unavailable (ConnectionError: ")


def test_back_off_starts_short_then_recovers_by_itself(
    dead_redis: None,
    settings: Any,
    wire: Wire,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with time_machine.travel(NOW, tick=False) as traveller:
        BrowserClient().get("/")
        assert wire.connects == 1
        for _ in range(10):
            BrowserClient().get("/block/")
        assert wire.connects == 1  # N requests do not cost N timeouts
        traveller.shift(failsafe.FIRST_BACKOFF)  # a second, not the longest back-off
        BrowserClient().get("/")
        assert wire.connects == 2  # tried again, still down: no second log record
        assert len(log_records(caplog, logging.ERROR)) == 1

        settings.CACHES = {"default": FAKE_CACHE}  # Redis is back
        BrowserClient().get("/")
        assert online_now.guest_count() == 0  # still inside the second back-off
        traveller.shift(2 * failsafe.FIRST_BACKOFF)
        response = BrowserClient().get("/", REMOTE_ADDR="203.0.113.9")
        assert "online" in response.cookies
        assert online_now.guest_count() == 1
        assert len(answers_again(caplog)) == 1


@pytest.mark.parametrize(
    "cache_options",
    [{}, {"SOCKET_CONNECT_TIMEOUT": 30, "CONNECTION_POOL_KWARGS": {"socket_timeout": 30}}],
)
def test_a_hung_redis_costs_one_socket_timeout_whatever_the_other_options(
    settings: Any,
    black_hole: int,
    cache_options: dict[str, Any],
    wire: Wire,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings.CACHES = {
        "default": django_redis_cache(f"redis://127.0.0.1:{black_hole}/0", **cache_options)
    }
    socket_timeout(settings, 0.2)
    assert BrowserClient().get("/block/").status_code == 200
    assert BrowserClient().get("/block/").status_code == 200
    # One wait, bounded by the socket timeout: with the others it would hang for 30 s.
    assert wire.timeouts == [0.2]
    assert isinstance(the_error(caplog), redis.TimeoutError)


def test_a_write_refused_for_a_wrong_key_type_fails_open_and_the_block_still_shows(
    redis_db: redis.Redis, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    redis_db.set(f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests", "not a sorted set")
    response = BrowserClient().get("/")
    assert response.status_code == 200 and "online" not in response.cookies
    assert isinstance(the_error(caplog), redis.ResponseError)
    assert "1 guest" not in BrowserClient().get("/block/").content.decode()


def test_a_read_redis_failed_is_unavailable_not_the_none_of_never_seen(dead_redis: None) -> None:
    assert failsafe.call(presence.last_seen, 10_000) is failsafe.UNAVAILABLE
    assert failsafe.call(presence.peak) is failsafe.UNAVAILABLE
    assert repr(failsafe.UNAVAILABLE) == "failsafe.UNAVAILABLE" and not failsafe.UNAVAILABLE


def test_a_member_never_seen_and_no_peak_yet_are_none_with_redis_up(redis_db: redis.Redis) -> None:
    assert failsafe.call(presence.last_seen, 10_000) is None
    assert failsafe.call(presence.peak) is None


def test_login_and_logout_work_while_redis_is_down(dead_redis: None) -> None:
    User.objects.create_user("alice", password="pw")
    client = BrowserClient()
    assert client.login(username="alice", password="pw")  # user_logged_in fails open
    assert client.get("/").status_code == 200
    client.logout()  # user_logged_out fails open
    assert client.get("/").status_code == 200


# -- the breaker itself ---------------------------------------------------------------------


class FakeRedis:
    """Stands in for a Redis call: counts calls, raises ``error`` if set, else answers "ok".

    ``hang`` makes each call block until ``release()``, as a call waiting on a
    frozen Redis does; ``takes`` makes each call last that long on the travelled clock;
    ``busy`` makes each call last that long too, the process working all along (as
    threads queueing for the GIL or a busy event loop do) while Redis answers at once.
    """

    def __init__(self, traveller: Any = None) -> None:
        self.calls = 0
        self.error: BaseException | None = None
        self.hang = False
        self.takes = 0.0
        self.busy = 0.0
        self.traveller = traveller
        self.entered = threading.Event()
        self.arrived = threading.Semaphore(0)  # released by each call that hangs
        self.released = threading.Event()
        self.lock = threading.Lock()

    def __call__(self) -> str:
        with self.lock:
            self.calls += 1
        if self.hang:
            self.entered.set()
            self.arrived.release()
            assert self.released.wait(10), "never released"
        if self.takes:
            self.traveller.shift(self.takes)
        if self.busy:
            work(self.busy)
            self.traveller.shift(self.busy)
        if self.error is not None:
            raise self.error
        return "ok"

    def release(self) -> None:
        self.released.set()


def work(seconds: float) -> None:
    """Use ``seconds`` of this thread's CPU time (the wall clock is travelled apart)."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


@pytest.fixture
def traveller() -> Iterator[Any]:
    with time_machine.travel(NOW, tick=False) as travelling:
        yield travelling


@pytest.fixture
def fake(traveller: Any) -> FakeRedis:
    return FakeRedis(traveller)


def in_threads(count: int, target: Callable[[], Any]) -> tuple[list[threading.Thread], list[Any]]:
    results: list[Any] = []

    def run() -> None:
        results.append(target())

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, results


def waiting_call(fake: FakeRedis) -> threading.Thread:
    """A call, on a thread, that waits on Redis until ``fake.release()``."""
    fake.hang = True
    [thread], _ = in_threads(1, lambda: failsafe.call(fake))
    assert fake.arrived.acquire(timeout=10)
    fake.hang = False
    return thread


def open_the_reads(fake: FakeRedis, traveller: Any) -> None:
    """A connection error opens the breaker; then travel to when a probe is due."""
    fake.error = redis.ConnectionError("Connection refused.")
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    traveller.shift(failsafe.FIRST_BACKOFF)
    fake.error = None
    fake.calls = 0


def test_half_open_lets_exactly_one_thread_probe_the_others_skip_at_once(
    fake: FakeRedis, traveller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    open_the_reads(fake, traveller)
    fake.hang = True
    [probe], probed = in_threads(1, lambda: failsafe.call(fake))
    assert fake.entered.wait(10)
    # Forty more requests while the probe waits on Redis: none joins it.
    others, results = in_threads(40, lambda: failsafe.write(fake))
    for thread in others:
        thread.join(10)
    assert results == [failsafe.UNAVAILABLE] * 40 and fake.calls == 1
    fake.release()
    probe.join(10)
    assert probed == ["ok"]
    assert failsafe.call(fake) == "ok" and fake.calls == 2  # closed again
    assert [r.levelname for r in outage_records(caplog)] == ["ERROR", "WARNING"]


def test_half_open_lets_exactly_one_coroutine_probe_the_others_skip_at_once(
    fake: FakeRedis, traveller: Any
) -> None:
    open_the_reads(fake, traveller)
    fake.hang = True

    async def main() -> list[Any]:
        # As an ASGI site calls Redis: from coroutines, through threads of their own.
        calls = [
            asyncio.ensure_future(sync_to_async(failsafe.call, thread_sensitive=False)(fake))
            for _ in range(40)
        ]
        while sum(task.done() for task in calls) < 39:  # all but the probe return at once
            await asyncio.sleep(0.01)
        assert fake.calls == 1 and fake.entered.is_set()
        fake.release()
        return await asyncio.gather(*calls)

    results = asyncio.run(asyncio.wait_for(main(), 10))
    assert results.count("ok") == 1 and results.count(failsafe.UNAVAILABLE) == 39


def test_half_the_window_slow_opens_the_breaker_fewer_do_not(
    fake: FakeRedis, traveller: Any, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A stall that slows the calls in flight (at most a thread pool's worth) is no outage."""
    socket_timeout(settings, 0.25)  # a slow-call budget of 0.1 s
    slow, window = failsafe.SLOW_CALLS_TO_OPEN, failsafe.SLOW_WINDOW
    for takes, count in [(0.15, slow - 1), (0.05, window - slow + 1), (0.15, slow - 1)]:
        fake.takes = takes
        for _ in range(count):
            assert failsafe.call(fake) == "ok"  # slow answers are still used
    assert outage_records(caplog) == []  # the first slow calls left the window
    assert failsafe.call(fake) == "ok"  # half the last window: open
    calls = fake.calls
    assert (
        failsafe.call(fake) is failsafe.UNAVAILABLE and failsafe.write(fake) is failsafe.UNAVAILABLE
    )
    assert fake.calls == calls
    [record] = outage_records(caplog)
    assert record.getMessage().startswith(
        f"Redis is slow ({slow} of the last {window} calls waited over 0.1 s, "
        "0.4 × the socket timeout;"
    )

    # The probe is slow too: open again, for twice as long.
    traveller.shift(failsafe.FIRST_BACKOFF)
    assert failsafe.call(fake) == "ok"
    traveller.shift(failsafe.FIRST_BACKOFF)
    assert failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == calls + 1
    traveller.shift(failsafe.FIRST_BACKOFF)
    fake.takes = 0.0
    assert failsafe.call(fake) == "ok" and failsafe.call(fake) == "ok"
    assert len(answers_again(caplog)) == 1


@pytest.mark.parametrize(
    "error", [redis.exceptions.ReadOnlyError("READONLY"), redis.exceptions.OutOfMemoryError("OOM")]
)
def test_refused_writes_open_the_writes_only(
    fake: FakeRedis, traveller: Any, error: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    fake.error = error
    assert failsafe.write(fake) is failsafe.UNAVAILABLE
    fake.error = None
    for _ in range(10):
        assert failsafe.write(fake) is failsafe.UNAVAILABLE  # skipped: no call
        assert failsafe.call(fake) == "ok"  # reads go on
    assert fake.calls == 11
    traveller.shift(failsafe.FIRST_BACKOFF)
    assert failsafe.write(fake) == "ok"  # the probe: writes work again
    assert [r.levelname for r in outage_records(caplog)] == ["ERROR", "WARNING"]
    assert "refuses writes" in outage_records(caplog)[0].getMessage()


def test_a_redis_that_is_gone_fails_reads_and_writes(fake: FakeRedis) -> None:
    fake.error = redis.TimeoutError("Timeout reading from socket")
    assert failsafe.write(fake) is failsafe.UNAVAILABLE
    fake.error = None
    assert (
        failsafe.call(fake) is failsafe.UNAVAILABLE and failsafe.write(fake) is failsafe.UNAVAILABLE
    )
    assert fake.calls == 1


def test_the_back_off_doubles_with_jitter_up_to_5_s_by_default(
    fake: FakeRedis, traveller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """However long the outage, a process retries at least every 5 s: a repaired Redis
    is used again within 5 s, at one probe per process per 3.75-5 s meanwhile."""
    fake.error = redis.ConnectionError("Connection refused.")
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    for backoff in (1, 2, 4, 5, 5, 5):
        calls = fake.calls
        traveller.shift(backoff * failsafe.JITTER[0] - 0.01)  # before the earliest retry
        assert failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == calls
        traveller.shift(backoff * (1 - failsafe.JITTER[0]) + 0.02)  # the latest retry is due
        assert (
            failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == calls + 1
        )  # one probe, failed
    assert [r.levelname for r in outage_records(caplog)] == ["ERROR"]
    fake.error = None
    traveller.shift(5)
    assert failsafe.call(fake) == "ok"
    fake.error = redis.ConnectionError("Connection refused.")
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    traveller.shift(failsafe.FIRST_BACKOFF)  # a new outage starts short again
    assert failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == 10
    assert [r.levelname for r in outage_records(caplog)] == ["ERROR", "WARNING", "ERROR"]


@pytest.mark.parametrize(
    "fault",
    ["refused", "timeout", "read-only", "out-of-memory", "slow"],
)
def test_one_error_line_and_one_warning_per_outage_whatever_the_fault(
    fake: FakeRedis,
    traveller: Any,
    settings: Any,
    fault: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Many calls over several failed probes, then recovery: two records, no traceback."""
    monkeypatch.setattr(Settings, "backoff", 4)
    socket_timeout(settings, 0.25)  # the default: 0.2 s is slow
    fake.error = {
        "refused": redis.ConnectionError("Error 111 connecting. Connection refused."),
        "timeout": redis.TimeoutError("Timeout reading from socket"),
        "read-only": redis.exceptions.ReadOnlyError("You can't write against a read only replica."),
        "out-of-memory": redis.exceptions.OutOfMemoryError("command not allowed when used memory"),
        "slow": None,
    }[fault]
    fake.takes = 0.2 if fault == "slow" else 0.0
    for _ in range(20):
        for _ in range(10):
            failsafe.write(fake)
            failsafe.call(fake)
        traveller.shift(1)
    fake.error, fake.takes = None, 0.0
    traveller.shift(4)
    assert failsafe.write(fake) == "ok"
    records = outage_records(caplog)
    assert [r.levelname for r in records] == ["ERROR", "WARNING"]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in records)


def test_a_probe_that_raises_something_else_hands_the_permit_on(
    fake: FakeRedis, traveller: Any
) -> None:
    open_the_reads(fake, traveller)
    fake.error = ValueError("not an IP address")  # a caller's bug, not Redis's
    with pytest.raises(ValueError):
        failsafe.call(fake)
    fake.error = None
    assert failsafe.call(fake) == "ok"  # the next call probes, and closes it
    assert failsafe.write(fake) == "ok"


# -- exact thresholds, waits and log lines ----------------------------------------------------

REFUSED = redis.ConnectionError("Connection refused.")


@pytest.fixture
def jitter(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Pin the random factor to the earliest or the latest end of its range."""

    def pin(end: str) -> None:
        pick = {"earliest": min, "latest": max}[end]
        monkeypatch.setattr(failsafe.random, "uniform", lambda a, b: pick(a, b))

    return pin


def probes_at(fake: FakeRedis, traveller: Any, wait: float) -> None:
    """Redis still fails: skipped until exactly ``wait`` seconds on, then probed once."""
    calls = fake.calls
    traveller.shift(wait - 1 / 64)
    assert failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == calls
    traveller.shift(1 / 64)
    assert failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == calls + 1


@pytest.mark.parametrize(("end", "factor"), [("earliest", 0.75), ("latest", 1.0)])
def test_each_wait_is_the_back_off_times_a_factor_between_three_quarters_and_one(
    fake: FakeRedis,
    traveller: Any,
    settings: Any,
    jitter: Any,
    end: str,
    factor: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "backoff", 5)
    jitter(end)
    fake.error = REFUSED
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    assert (
        failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == 1
    )  # the same instant: skipped
    for backoff in (1, 2, 4, 5, 5):
        probes_at(fake, traveller, backoff * factor)


@pytest.mark.parametrize("backoff", [0.5, 0])
def test_the_setting_caps_the_first_wait_too_and_zero_retries_every_call(
    fake: FakeRedis,
    traveller: Any,
    settings: Any,
    jitter: Any,
    backoff: float,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "backoff", backoff)
    jitter("latest")
    fake.error = REFUSED
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    if backoff:
        probes_at(fake, traveller, backoff)
    else:
        assert (
            failsafe.call(fake) is failsafe.UNAVAILABLE
            and failsafe.call(fake) is failsafe.UNAVAILABLE
            and fake.calls == 3
        )
    [record] = outage_records(caplog)
    assert record.getMessage().endswith(
        f"retrying after {backoff:g} s, then at growing intervals up to {backoff:g} s."
    )


def test_the_error_line_and_the_recovery_line_say_what_happened(
    fake: FakeRedis, traveller: Any, jitter: Any, caplog: pytest.LogCaptureFixture
) -> None:
    jitter("latest")
    fake.error = REFUSED
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    traveller.shift(1)
    fake.error = None
    assert failsafe.call(fake) == "ok"
    assert [r.getMessage() for r in outage_records(caplog)] == [
        "Redis is unavailable (ConnectionError: Connection refused.); whos_online skips it "
        "until it answers again, retrying after 1 s, then at growing intervals up to 5 s.",
        "Redis answers again; whos_online resumed after 1.0 s.",
    ]
    [traceback] = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert traceback.getMessage() == "The error that began the outage:"
    assert traceback.exc_info is not None and traceback.exc_info[1] is REFUSED


def test_a_clock_that_goes_back_ends_the_back_off(
    fake: FakeRedis, traveller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    fake.error = REFUSED
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    traveller.shift(-10)
    fake.error = None
    assert failsafe.call(fake) == "ok" and fake.calls == 2
    assert answers_again(caplog)[0].getMessage().endswith("resumed after 0.0 s.")


def test_a_read_that_redis_refuses_opens_the_reads(
    fake: FakeRedis, caplog: pytest.LogCaptureFixture
) -> None:
    fake.error = redis.ResponseError("WRONGTYPE Operation against a key")
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    fake.error = None
    assert (
        failsafe.call(fake) is failsafe.UNAVAILABLE
        and failsafe.write(fake) is failsafe.UNAVAILABLE
        and fake.calls == 1
    )
    [record] = outage_records(caplog)
    assert record.getMessage().startswith(
        "Redis is unavailable (ResponseError: WRONGTYPE Operation against a key); "
    )


def test_the_refused_writes_line_says_reads_go_on(
    fake: FakeRedis, caplog: pytest.LogCaptureFixture
) -> None:
    fake.error = redis.exceptions.ReadOnlyError("READONLY")
    assert failsafe.write(fake) is failsafe.UNAVAILABLE
    [record] = outage_records(caplog)
    assert record.getMessage() == (
        "Redis refuses writes (ReadOnlyError: READONLY); whos_online still shows who is online "
        "but records nobody until it accepts them again, retrying after 1 s, then at growing "
        "intervals up to 5 s."
    )


def test_ten_slow_calls_from_the_start_open_the_breaker_and_the_line_says_so(
    fake: FakeRedis, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    socket_timeout(settings, 0.25)  # a slow-call budget of 0.1 s
    fake.takes = 0.15
    for _ in range(10):
        assert failsafe.call(fake) == "ok"
    assert failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == 10
    [record] = outage_records(caplog)
    assert record.getMessage() == (
        "Redis is slow (10 of the last 20 calls waited over 0.1 s, 0.4 × the socket "
        "timeout; the last took 0.150 s); whos_online skips it until it "
        "answers in time, retrying after 1 s, then at growing intervals up to 5 s."
    )


def test_a_busy_process_is_not_a_slow_redis(
    fake: FakeRedis, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 38: calls made long by the process's own work (a burst of connects) never
    open the breaker, though each lasts past the budget."""
    socket_timeout(settings, 0.025)  # a slow-call budget of 0.01 s
    fake.busy = 0.02
    for _ in range(failsafe.SLOW_CALLS_TO_OPEN + 1):
        assert failsafe.call(fake) == "ok" and failsafe.write(fake) == "ok"
    assert fake.calls == 2 * (failsafe.SLOW_CALLS_TO_OPEN + 1)
    assert outage_records(caplog) == []


def test_a_call_that_takes_exactly_the_budget_is_in_time(fake: FakeRedis, settings: Any) -> None:
    socket_timeout(settings, 1.25)  # a slow-call budget of 0.5 s
    fake.takes = 0.5
    for _ in range(6):
        assert failsafe.call(fake) == "ok"


def test_a_write_refused_while_the_reads_probe_is_due_hands_the_probe_back(
    fake: FakeRedis, traveller: Any, jitter: Any
) -> None:
    jitter("latest")
    fake.error = redis.exceptions.ReadOnlyError("READONLY")
    assert failsafe.write(fake) is failsafe.UNAVAILABLE
    traveller.shift(1)
    assert failsafe.write(fake) is failsafe.UNAVAILABLE  # the writes' probe, refused: 2 s more
    fake.error = REFUSED
    assert failsafe.call(fake) is failsafe.UNAVAILABLE  # Redis is gone too: the reads wait 1 s
    traveller.shift(1)
    fake.error = None
    assert failsafe.write(fake) is failsafe.UNAVAILABLE and fake.calls == 3  # writes still wait
    assert failsafe.call(fake) == "ok"  # so the read probes


@pytest.mark.parametrize("writes", ["closed", "probing"])
def test_a_write_that_finds_redis_gone_waits_for_the_reads_only(
    fake: FakeRedis, traveller: Any, jitter: Any, writes: str, caplog: pytest.LogCaptureFixture
) -> None:
    jitter("latest")
    if writes == "probing":
        fake.error = redis.exceptions.ReadOnlyError("READONLY")
        assert failsafe.write(fake) is failsafe.UNAVAILABLE
        traveller.shift(1)
    fake.error = REFUSED
    assert failsafe.write(fake) is failsafe.UNAVAILABLE
    traveller.shift(1)
    fake.error = None
    assert failsafe.call(fake) == "ok"
    assert len(answers_again(caplog)) == (writes == "closed")
    assert failsafe.write(fake) == "ok"
    assert len(answers_again(caplog)) == 1


def test_a_call_that_raises_something_else_leaves_a_closed_breaker_as_it_was(
    fake: FakeRedis, traveller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    fake.error = ValueError("not an IP address")
    for run in (failsafe.write, failsafe.call):
        with pytest.raises(ValueError):
            run(fake)
    traveller.shift(1)  # past the slow budget: neither call is still in flight
    fake.error = None
    assert failsafe.write(fake) == "ok" and failsafe.call(fake) == "ok"
    assert outage_records(caplog) == []
    fake.error = ValueError("not an IP address")
    with pytest.raises(ValueError):
        failsafe.call(fake)
    fake.error = REFUSED
    assert failsafe.call(fake) is failsafe.UNAVAILABLE
    calls = fake.calls
    assert (
        failsafe.call(fake) is failsafe.UNAVAILABLE and fake.calls == calls
    )  # the usual first back-off


def test_a_write_probe_that_raises_something_else_hands_the_permit_on(
    fake: FakeRedis, traveller: Any
) -> None:
    fake.error = redis.exceptions.ReadOnlyError("READONLY")
    assert failsafe.write(fake) is failsafe.UNAVAILABLE
    traveller.shift(1)
    fake.error = ValueError("not an IP address")
    with pytest.raises(ValueError):
        failsafe.write(fake)
    fake.error = None
    assert failsafe.write(fake) == "ok"


def test_a_new_process_trusts_redis_from_its_first_call(
    fake: FakeRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(failsafe, "breaker", failsafe.Breaker())  # as made at import
    assert failsafe.call(fake) == "ok" and failsafe.write(fake) == "ok"
