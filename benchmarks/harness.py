"""Interleaved timing: every case runs in every round, in slices shuffled together.

The machine is shared and drifts, so no case is timed in one block: a round
gives each case the same number of slices of about ``slice_ms`` each, and the
slices of all cases run in one shuffled order, so a slow patch of the machine is
shared out. A case's figure for a round is its total time over its operations in
that round; reports use medians over rounds and ratios taken within a round.
Each slice runs under the case's own settings (``override_settings``, entered
outside the timed part) and starts with one untimed operation, so that the
caches the switch emptied (Django's settings, whos_online's conf) are warm as
in a real process; then a garbage collection; its inputs are built beforehand.
"""

from __future__ import annotations

import collections
import gc
import random
import statistics
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from django.test.utils import override_settings
from spy import Spy


class Runner(Protocol):
    def inputs(self, n: int) -> list[Any]:
        """What n operations need (requests, ...), built before the clock starts."""

    def timed(self, inputs: list[Any]) -> int:
        """Run one operation per input; return the nanoseconds they took."""

    def check(self, inputs: list[Any]) -> None:
        """Run them untimed and raise CheckFailed unless each does what the case claims."""


class CheckFailed(Exception):
    pass


@dataclass(eq=False)
class Case:
    label: str
    group: str  # "WSGI", "ASGI", "render" or "Redis"
    runner: Runner
    implementation: str = ""
    online: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    target_trips: int | None = None
    slice_size: int = 1
    us_per_op: list[float] = field(default_factory=list)  # one per kept round
    trips: float = float("nan")
    queries: float = float("nan")
    commands: collections.Counter[str] = field(default_factory=collections.Counter)

    @contextmanager
    def active(self) -> Iterator[None]:
        with override_settings(**self.overrides):
            yield

    def time_ops(self, n: int) -> int:
        """Time n operations, after one untimed: switching settings empties Django's caches."""
        with self.active():
            primer, *inputs = self.runner.inputs(n + 1)
            self.runner.timed([primer])
            gc.collect()
            return self.runner.timed(inputs)

    @property
    def median_us(self) -> float:
        return statistics.median(self.us_per_op)


def count(cases: list[Case], n: int) -> None:
    """One untimed pass: Redis round trips, commands and SQL statements per operation.

    It also checks that each case does what it claims, and raises CheckFailed if
    not; a round-trip count off its target is reported, not raised.
    """
    for case in cases:
        with case.active():
            inputs = case.runner.inputs(n)
            with Spy() as spy:
                case.runner.check(inputs)
        case.trips = len(spy.trips) / n
        case.queries = spy.queries / n
        case.commands = collections.Counter("+".join(t.commands) for t in spy.trips)


def calibrate(cases: list[Case], slice_ms: float) -> None:
    """Warm each case up and size its slices to last about slice_ms."""
    for case in cases:
        n, spent = 1, 0
        while spent < 20e6 and n < 4096:  # at least 20 ms of warm-up, in doubling batches
            spent = case.time_ops(n)
            n *= 2
        per_op = spent / (n // 2)
        case.slice_size = max(1, min(2000, round(slice_ms * 1e6 / per_op)))


def run_rounds(
    cases: list[Case],
    rounds: int,
    slices: int,
    seed: int,
    round_failed: Callable[[], str | None],
) -> list[str]:
    """Time every case in interleaved rounds; return why rounds were dropped, if any were.

    ``round_failed`` is asked after each round; a round it objects to (e.g. Redis
    failed, so whos_online skipped it) is not kept.
    """
    rng = random.Random(seed)
    dropped: list[str] = []
    for round_no in range(1, rounds + 1):
        order = [case for case in cases for _ in range(slices)]
        rng.shuffle(order)
        spent = dict.fromkeys(cases, 0)
        for case in order:
            spent[case] += case.time_ops(case.slice_size)
        failure = round_failed()
        if failure is not None:
            dropped.append(f"round {round_no}: {failure}")
            print(f"round {round_no}/{rounds} dropped: {failure}", file=sys.stderr)
            continue
        for case in cases:
            case.us_per_op.append(spent[case] / (slices * case.slice_size) / 1000)
        print(f"round {round_no}/{rounds} done", file=sys.stderr, flush=True)
    return dropped


def per_round(case: Case, reference: Case) -> list[float]:
    """The case's time divided by the reference's, round by round."""
    return [a / b for a, b in zip(case.us_per_op, reference.us_per_op)]


def per_round_extra(case: Case, reference: Case) -> list[float]:
    """The case's time minus the reference's (µs), round by round."""
    return [a - b for a, b in zip(case.us_per_op, reference.us_per_op)]
