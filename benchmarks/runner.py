"""The shared runner: cases timed in interleaved rounds, and what crosses the wire.

The machine is shared and drifts, so no case is timed in one block. Each round
gives every case the same number of slices of about ``slice_ms``, runs the
slices of all cases in one shuffled order, and keeps each case's fastest slice
(time per operation) for that round, as timeit does: on a machine shared with
other jobs a slice is often preempted, and the fastest is the least disturbed. Ratios are taken within a round (both sides saw the same machine)
and reported as the median over rounds, with the range.

A slice enters its case's settings, runs one untimed operation (the switch
empties Django's and whos_online's settings caches) and collects garbage before
the clock starts. Round trips are calls of redis-py's ``send_packed_command``
(a pipeline or a script call is one), counted with SQL statements in one
untimed pass before the timing.
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db.backends.utils import CursorWrapper
from django.test.utils import override_settings
from redis.connection import AbstractConnection


@dataclass(eq=False)
class Case:
    """``run(n)`` performs n operations; ``check()`` raises unless one does what the case claims."""

    name: str
    run: Callable[[int], object]
    settings: dict[str, Any] = field(default_factory=dict)
    check: Callable[[], object] = lambda: None
    slice_size: int = 1
    us: list[float] = field(default_factory=list)  # µs per operation, one per round
    trips: float = 0.0  # Redis round trips per operation
    queries: float = 0.0  # SQL statements per operation

    def time(self, n: int, clock: Callable[[], int] = time.perf_counter_ns) -> int:
        with override_settings(**self.settings):
            self.run(1)
            gc.collect()
            start = clock()
            self.run(n)
            return clock() - start


def count(case: Case, n: int = 16) -> None:
    """Check the case, then count its round trips and SQL statements per operation."""
    trips = queries = 0

    def send(conn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal trips
        trips += 1
        return sent(conn, *args, **kwargs)

    def execute(cursor: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal queries
        queries += 1
        return executed(cursor, *args, **kwargs)

    sent, executed = AbstractConnection.send_packed_command, CursorWrapper.execute
    with override_settings(**case.settings):
        case.check()
        case.run(1)  # counted at steady state: a new server's NOSCRIPT answers come before
        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
        CursorWrapper.execute = execute  # type: ignore[method-assign]
        try:
            case.run(n)
        finally:
            AbstractConnection.send_packed_command = sent  # type: ignore[method-assign]
            CursorWrapper.execute = executed  # type: ignore[method-assign]
    case.trips, case.queries = trips / n, queries / n


def size(case: Case, slice_ms: float) -> None:
    """Warm the case up and set its slice size: the operations that take about ``slice_ms``."""
    n, spent = 1, 0
    while spent < 20e6 and n < 4096:  # at least 20 ms of warm-up, in doubling batches
        spent, n = case.time(n), n * 2
    case.slice_size = max(1, round(slice_ms * 1e6 / (spent / (n // 2))))


def run(cases: list[Case], rounds: int, slices: int, slice_ms: float, seed: int) -> None:
    """Size each case's slice (warming it up), then time every case in interleaved rounds."""
    for case in cases:
        size(case, slice_ms)
    gc.collect()
    gc.freeze()  # what setup built lives all run: out of the collector's way
    rng = random.Random(seed)
    for number in range(1, rounds + 1):
        order = [case for case in cases for _ in range(slices)]
        rng.shuffle(order)
        per_op: dict[Case, list[float]] = {case: [] for case in cases}
        for case in order:
            per_op[case].append(case.time(case.slice_size) / case.slice_size / 1000)
        for case in cases:
            case.us.append(min(per_op[case]))
        print(f"round {number}/{rounds}", file=sys.stderr, flush=True, end="\r")
    gc.unfreeze()


@dataclass(frozen=True)
class Figure:
    """A median over rounds with its range: ``format(figure, ".2f")`` gives "1.02 (0.98–1.07)"."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def __format__(self, spec: str) -> str:
        low, high = min(self.values), max(self.values)
        return f"{self.median:{spec}} ({low:{spec}}–{high:{spec}})"


def ratio(case: Case, reference: Case) -> Figure:
    """The case's time over the reference's, round by round."""
    return Figure(tuple(a / b for a, b in zip(case.us, reference.us)))


def extra(case: Case, reference: Case) -> Figure:
    """The case's time minus the reference's (µs), round by round."""
    return Figure(tuple(a - b for a, b in zip(case.us, reference.us)))


def us(case: Case) -> str:
    return f"{statistics.median(case.us):,.0f}"


def table(header: list[str], rows: list[list[Any]], align: str = "---:") -> list[str]:
    """A Markdown table; columns after the first are aligned as ``align`` says."""
    lines = ["| " + " | ".join(header) + " |", "|---" + f"|{align}" * (len(header) - 1) + "|"]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows] + [""]


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"
