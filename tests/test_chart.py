"""The admin's chart, read off the SVG the "Online now" page returns.

The samples are made up (``stats.history`` patched) so that every scale,
gridline, label and hover column lands on a number worked out by hand. The
plot box is x 44..708 and y 22..216 of a 720 x 240 view box.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import redis
from django.contrib.auth.models import User

from tests.conftest import BrowserClient
from whos_online.contrib.admin import stats
from whos_online.contrib.admin.stats import Sample

pytestmark = pytest.mark.django_db

PAGE = "/admin/whos_online/onlinenow/"
# Half an hour off UTC: gridlines on whole local hours are not on whole UTC ones.
ZONE = "Asia/Kolkata"
START = datetime(2026, 6, 1, 9, 0, tzinfo=ZoneInfo(ZONE))
LEFT, RIGHT_EDGE, TOP_EDGE, BASELINE = 44, 708, 22, 216


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


def hhmm(seconds: float) -> str:
    return at(seconds).strftime("%H:%M")


Draw = Callable[[list[Sample]], ET.Element]


@pytest.fixture
def draw(redis_db: redis.Redis, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Draw:
    """The page's chart for these samples, as an XML tree."""
    settings.TIME_ZONE = ZONE
    client = BrowserClient()
    client.force_login(User.objects.create_user("boss", is_staff=True))

    def svg(samples: list[Sample]) -> ET.Element:
        monkeypatch.setattr(stats, "history", lambda *args: samples)
        html = client.get(PAGE).content.decode()
        found = re.search(r'<svg class="whos-online-chart".*?</svg>', html, re.DOTALL)
        assert found, "no chart on the page"
        return ET.fromstring(found.group())

    return svg


def by_class(svg: ET.Element, tag: str, name: str) -> list[ET.Element]:
    return [e for e in svg.iter(tag) if e.get("class") == name]


def x_axis(svg: ET.Element) -> list[tuple[str, str]]:
    """Each vertical gridline's x, with its label ("" if unlabelled)."""
    labels = {t.get("x"): t.text for t in by_class(svg, "text", "whos-online-tick-label")}
    return [
        (x, labels.pop(x, ""))
        for x in (e.get("x1") for e in by_class(svg, "line", "whos-online-tick"))
    ]


def y_axis(svg: ET.Element) -> list[tuple[str, str]]:
    """Each value label's y and text, from the baseline up."""
    return [(t.get("y"), t.text) for t in svg.findall("text") if t.get("text-anchor") == "end"]


def hovers(svg: ET.Element) -> list[tuple[str, str, str]]:
    (group,) = by_class(svg, "g", "whos-online-hover")
    return [(r.get("x"), r.get("width"), r.findtext("title")) for r in group.iter("rect")]


def line(svg: ET.Element, name: str) -> str:
    (polyline,) = by_class(svg, "polyline", f"whos-online-{name}")
    return polyline.get("points", "")


def test_an_hour_of_a_new_site(draw: Draw) -> None:
    """Four samples in the last 20 minutes of an hour-long axis; the busiest at 09:55."""
    svg = draw(
        [
            Sample(at(40 * 60), 1, 2),
            Sample(at(45 * 60), 0, 1),
            Sample(at(55 * 60), 2, 5),
            Sample(at(60 * 60), 1, 0),
        ]
    )
    assert svg.get("viewBox") == "0 0 720 240"
    (baseline,) = svg.findall("line")
    assert [baseline.get(k) for k in ("x1", "y1", "x2", "y2")] == ["44", "216", "708", "216"]
    # x = 44 + seconds / 3600 * 664; y = 216 - count / 6 * 194 (6 is the top: 5, and headroom).
    assert line(svg, "members") == "486.7,183.7 542.0,216.0 652.7,151.3 708.0,183.7"
    assert line(svg, "guests") == "486.7,151.3 542.0,183.7 652.7,54.3 708.0,216.0"
    assert y_axis(svg) == [
        ("216.0", "0"),
        ("183.7", "1"),
        ("151.3", "2"),
        ("119.0", "3"),
        ("86.7", "4"),
        ("54.3", "5"),
        ("22.0", "6"),
    ]
    # The gridlines span the plot box.
    across = [e for e in svg.find("g").iter("line") if not e.get("class")]
    assert [(e.get("x1"), e.get("y1"), e.get("x2"), e.get("y2")) for e in across] == [
        ("44", y, "708", y) for y, _ in y_axis(svg)
    ]
    up = by_class(svg, "line", "whos-online-tick")
    assert {(e.get("y1"), e.get("y2")) for e in up} == {("22", "216")}
    # Every 5 minutes from 09:00 to 10:00: 13 gridlines, every other one labelled.
    assert x_axis(svg) == [
        (f"{44 + m / 60 * 664:.1f}", hhmm(m * 60) if m % 10 == 0 else "") for m in range(0, 61, 5)
    ]
    # The busiest moment: 2 members and 5 guests, near the right edge.
    (peak,) = by_class(svg, "g", "whos-online-peak")
    assert peak.findtext("title") == "Busiest: 7 online at 09:55 (2 members, 5 guests)"
    assert peak.find("line").get("x1") == "652.7"
    assert [(c.get("cx"), c.get("cy"), c.get("fill")) for c in peak.iter("circle")] == [
        ("652.7", "54.3", "#ea580c"),
        ("652.7", "151.3", "#2563eb"),
    ]
    label = peak.find("text")
    assert (label.text, label.get("text-anchor"), label.get("y")) == (
        "busiest: 7 online at 09:55",
        "end",
        "22",
    )
    # Columns centred on the samples, split halfway between them; the first as
    # wide as half its gap to the next on either side, the last up to the edge.
    assert hovers(svg) == [
        ("459.0", "55.3", "09:40: 1 member, 2 guests"),
        ("514.3", "83.0", "09:45: 0 members, 1 guest"),
        ("597.3", "83.0", "09:55: 2 members, 5 guests"),
        ("680.3", "27.7", "10:00: 1 member, 0 guests"),
    ]
    (rect, *_) = svg.iter("rect")
    assert (rect.get("y"), rect.get("height")) == ("22", "194")


@pytest.mark.parametrize(
    "first, end, step, count",
    [
        (3690, 3750, 300, 12),  # the hour up to 10:02:30: 09:05 to 10:00, each labelled
        (0, 7500, 600, 13),  # 2 h 5 min: every 10 minutes, every other labelled
        (0, 5 * 3600, 900, 21),
        (0, 10 * 3600, 1800, 21),
        (0, 20 * 3600, 3600, 21),
        (0, 24 * 3600, 3600, 25),  # a whole day: still hourly, every third labelled
        # History holds a day; a host whose clock runs ahead can make it longer.
        (0, 48 * 3600, 2 * 3600, 24),  # from 10:00, on even hours
        (0, 72 * 3600, 3 * 3600, 25),
        (0, 144 * 3600, 6 * 3600, 24),  # from 12:00
        (0, 168 * 3600, 6 * 3600, 28),  # the longest step
    ],
)
def test_gridlines_fall_on_whole_local_times(
    draw: Draw, first: int, end: int, step: int, count: int
) -> None:
    svg = draw([Sample(at(first), 1, 0), Sample(at(end), 1, 0)])
    (peak,) = by_class(svg, "g", "whos-online-peak")  # the first of the busiest, singular
    assert peak.findtext("text") == f"busiest: 1 online at {hhmm(first)}"
    start = min(first, end - 3600)
    # START is 09:00 local: whole steps of local time count from midnight.
    t = math.ceil((start + 9 * 3600) / step) * step - 9 * 3600
    ticks = []
    while t <= end:
        ticks.append(t)
        t += step
    assert len(ticks) == count
    every = math.ceil(count / 12)
    assert x_axis(svg) == [
        (f"{44 + (t - start) / (end - start) * 664:.1f}", hhmm(t) if i % every == 0 else "")
        for i, t in enumerate(ticks)
    ]


@pytest.mark.parametrize(
    "highest, labels",
    [
        (1, [0, 1, 2, 3, 4]),  # at least 0..4
        (5, [0, 1, 2, 3, 4, 5, 6]),  # a tenth above the highest
        (6, [0, 2, 4, 6, 8]),
        (10, [0, 2, 4, 6, 8, 10, 12]),
        (20, [0, 5, 10, 15, 20, 25]),
        (50, [0, 10, 20, 30, 40, 50, 60]),
        (2_000_000, [0, 500_000, 1_000_000, 1_500_000, 2_000_000, 2_500_000]),
    ],
)
def test_the_value_axis_steps_by_1_2_or_5_times_a_power_of_ten(
    draw: Draw, highest: int, labels: list[int]
) -> None:
    svg = draw([Sample(at(0), 0, highest), Sample(at(3600), 0, 0)])
    top = labels[-1]
    assert y_axis(svg) == [(f"{216 - value / top * 194:.1f}", str(value)) for value in labels]


@pytest.mark.parametrize(
    "seconds, x, anchor",
    [
        (996.875, "203.5", "start"),  # within 160 of the left edge: the label runs right
        (1000, "204.0", "middle"),
        (2000, "364.0", "middle"),
        (3150, "548.0", "middle"),
        (3153.125, "548.5", "end"),  # within 160 of the right edge: it runs left
    ],
)
def test_the_busiest_label_stays_inside_the_chart(
    draw: Draw, seconds: float, x: str, anchor: str
) -> None:
    # Over 4150 s, a second is 0.16 of a unit: 1000 s is 160 units from the left.
    svg = draw([Sample(at(0), 1, 0), Sample(at(seconds), 2, 1), Sample(at(4150), 0, 2)])
    (peak,) = by_class(svg, "g", "whos-online-peak")
    label = peak.find("text")
    assert (label.get("x"), label.get("text-anchor")) == (x, anchor)


@pytest.mark.parametrize(
    "count, spacing, shown, right",
    [
        (288, 300, 288, 708.0),  # one column per sample
        (289, 300, 145, 708.0),  # past 288: every other sample
        # Every third; the last shown is two samples before the end, its column
        # as wide as its neighbour's half: not stretched to the edge.
        (579, 120, 193, 44 + 577.5 / 578 * 664),
    ],
)
def test_hover_columns_tile_a_long_day(
    draw: Draw, count: int, spacing: int, shown: int, right: float
) -> None:
    svg = draw([Sample(at(i * spacing), 1, 1) for i in range(count)])
    columns = hovers(svg)
    every = spacing * math.ceil(count / 288)
    assert [title for _, _, title in columns] == [
        f"{hhmm(i * every)}: 1 member, 1 guest" for i in range(shown)
    ]
    assert columns[0][0] == "44"
    assert float(columns[-1][0]) + float(columns[-1][1]) == pytest.approx(right, abs=0.11)
    assert line(svg, "members").count(" ") == count - 1
