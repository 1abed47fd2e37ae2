"""The admin's chart of online counts over a day: inline SVG drawn on the server."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from whos_online.presence import Sample

WIDTH, HEIGHT = 720, 200
# Room for the axis labels inside the viewBox.
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 10, 24


@dataclass(frozen=True)
class Chart:
    """What the template needs to draw two polylines and their axes."""

    width: int
    height: int
    members: str  # SVG polyline points
    guests: str
    top: int  # the value at the top of the y axis
    start: datetime
    end: datetime
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    baseline: int = HEIGHT - BOTTOM


def draw(samples: list[Sample]) -> Chart | None:
    """Scale the samples to the chart's box; None with fewer than two (no line to draw)."""
    if len(samples) < 2:
        return None
    start, end = samples[0].at, samples[-1].at
    span = max((end - start).total_seconds(), 1.0)
    top = max(max(s.users for s in samples), max(s.guests for s in samples), 1)

    def x(sample: Sample) -> float:
        return LEFT + (sample.at - start).total_seconds() / span * (WIDTH - LEFT - RIGHT)

    def y(value: int) -> float:
        return HEIGHT - BOTTOM - value / top * (HEIGHT - TOP - BOTTOM)

    def points(values: list[int]) -> str:
        return " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in zip(samples, values))

    return Chart(
        width=WIDTH,
        height=HEIGHT,
        members=points([s.users for s in samples]),
        guests=points([s.guests for s in samples]),
        top=top,
        start=start,
        end=end,
    )
