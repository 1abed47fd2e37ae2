"""The admin's chart of online counts over a day: inline SVG drawn on the server; the
template only places what is computed here."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.dateformat import format as format_date
from django.utils.translation import gettext, ngettext

from whos_online.contrib.admin.stats import Sample

WIDTH, HEIGHT = 720, 240
# Room for the y labels (left), the peak's label (top) and the x labels (bottom).
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 22, 24
# Tick spacings tried for the time axis, smallest first: hourly over a day.
TIME_STEPS = [60, 5 * 60, 10 * 60, 15 * 60, 30 * 60, 3600, 2 * 3600, 3 * 3600, 6 * 3600]
MAX_TIME_TICKS = 24
MIN_SPAN = 3600
MAX_TIME_LABELS = 12
# Hover targets: one per sample up to this many, then every n-th sample, so a
# day of one-a-minute samples stays a light page.
MAX_HOVER = 288
TIME_FORMAT = "H:i"  # no "a.m." whose period would follow a sentence's
# Within this of an edge the busiest label runs away from it: room for the label
# at the larger font of narrow screens (the admin template's stylesheet).
LABEL_ROOM = 160


@dataclass(frozen=True)
class Tick:
    """A gridline: its position, and its label (empty for an unlabelled one)."""

    at: float
    label: str


@dataclass(frozen=True)
class Hover:
    """A transparent column over one sample whose SVG <title> gives its values."""

    x: float
    width: float
    title: str


@dataclass(frozen=True)
class PeakMark:
    """The sample with the most people online, marked on both lines, labelled with the total."""

    x: float
    members_y: float
    guests_y: float
    label: str
    title: str
    anchor: str  # of the label: kept inside the chart near either edge


@dataclass(frozen=True)
class Chart:
    """What the template needs: two polylines, gridlines with labels, the peak, hovers."""

    members: str  # SVG polyline points
    guests: str
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    peak: PeakMark
    hovers: list[Hover]
    title: str  # the time axis's span, from its first to its last moment
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    top_edge: int = TOP
    baseline: int = HEIGHT - BOTTOM
    plot_height: int = HEIGHT - TOP - BOTTOM


def counts_text(users: int, guests: int) -> str:
    """ "1 member, 3 guests", with each language's plural forms."""
    return gettext("%(members)s, %(guests)s") % {
        "members": ngettext("%(count)d member", "%(count)d members", users) % {"count": users},
        "guests": ngettext("%(count)d guest", "%(count)d guests", guests) % {"count": guests},
    }


def clock(at: datetime) -> str:
    return format_date(timezone.localtime(at), TIME_FORMAT)


def draw(samples: list[Sample]) -> Chart | None:
    """Scale the samples to the chart's box; None with fewer than two (no line to draw)."""
    if len(samples) < 2:
        return None
    # At least the hour up to the last sample: a new site's first samples sit at
    # the right end of a readable time axis instead of stretching across it.
    end = samples[-1].at
    start = min(samples[0].at, end - timedelta(seconds=MIN_SPAN))
    span = (end - start).total_seconds()
    highest = max(max(s.users, s.guests) for s in samples)
    step, top = _value_scale(highest)

    def x(at: datetime) -> float:
        return LEFT + (at - start).total_seconds() / span * (WIDTH - LEFT - RIGHT)

    def y(value: float) -> float:
        return HEIGHT - BOTTOM - value / top * (HEIGHT - TOP - BOTTOM)

    def points(values: list[int]) -> str:
        return " ".join(f"{x(s.at):.1f},{y(v):.1f}" for s, v in zip(samples, values))

    best = max(samples, key=lambda s: s.users + s.guests)
    total = best.users + best.guests
    peak_x = x(best.at)
    peak = PeakMark(
        x=round(peak_x, 1),
        members_y=round(y(best.users), 1),
        guests_y=round(y(best.guests), 1),
        label=ngettext(
            "busiest: %(count)d online at %(time)s", "busiest: %(count)d online at %(time)s", total
        )
        % {"count": total, "time": clock(best.at)},
        title=gettext("Busiest: %(total)d online at %(time)s (%(counts)s)")
        % {"total": total, "time": clock(best.at), "counts": counts_text(best.users, best.guests)},
        anchor="start"
        if peak_x < LEFT + LABEL_ROOM
        else "end"
        if peak_x > WIDTH - RIGHT - LABEL_ROOM
        else "middle",
    )
    return Chart(
        members=points([s.users for s in samples]),
        guests=points([s.guests for s in samples]),
        x_ticks=[Tick(round(x(at), 1), label) for at, label in _time_ticks(start, end)],
        y_ticks=[Tick(round(y(value), 1), str(value)) for value in range(0, top + 1, step)],
        peak=peak,
        hovers=_hovers(samples, x),
        title=gettext("Online counts from %(start)s to %(end)s")
        % {"start": clock(start), "end": clock(end)},
    )


def _value_scale(highest: int) -> tuple[int, int]:
    """(step, top): 1, 2 or 5 times a power of ten, with headroom above the highest
    value so a line at the maximum is never drawn on the chart's top edge."""
    wanted = max(highest * 1.1, 4)
    magnitude = 1
    while True:
        for base in (1, 2, 5):
            step = base * magnitude
            if math.ceil(wanted / step) <= 6:
                return step, math.ceil(wanted / step) * step
        magnitude *= 10


def _time_ticks(start: datetime, end: datetime) -> list[tuple[datetime, str]]:
    """Gridlines at whole steps of local time (hourly over a day), every few labelled."""
    span = (end - start).total_seconds()
    step = next((s for s in TIME_STEPS if span / s <= MAX_TIME_TICKS), TIME_STEPS[-1])
    local = timezone.localtime(start)
    # The first whole step of local time from start; steps of wall-clock time
    # from there fall on whole local hours (or minutes) too.
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    first = midnight + timedelta(
        seconds=math.ceil((local - midnight).total_seconds() / step) * step
    )
    count = int((end - first).total_seconds() // step) + 1
    moments = [first + timedelta(seconds=i * step) for i in range(count)]
    every = math.ceil(len(moments) / MAX_TIME_LABELS)
    return [(at, clock(at) if i % every == 0 else "") for i, at in enumerate(moments)]


def _hovers(samples: list[Sample], x: Callable[[datetime], float]) -> list[Hover]:
    """Columns that tile the plot, one per shown sample, each titled with its values."""
    shown = samples[:: math.ceil(len(samples) / MAX_HOVER)]
    centres = [x(s.at) for s in shown]
    middles = [(a + b) / 2 for a, b in zip(centres, centres[1:])]
    # The outer columns as wide as their neighbours' halves, not to the chart's edges.
    first = max(LEFT, 2 * centres[0] - middles[0])
    last = min(WIDTH - RIGHT, 2 * centres[-1] - middles[-1])
    edges = [first, *middles, last]
    return [
        Hover(
            x=round(edges[i], 1),
            width=round(edges[i + 1] - edges[i], 1),
            title=f"{clock(s.at)}: {counts_text(s.users, s.guests)}",
        )
        for i, s in enumerate(shown)
    ]
