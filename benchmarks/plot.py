"""docs/benchmarks.png: cost per request (÷ bare Django) and per block, against people online."""

from __future__ import annotations

import statistics
from pathlib import Path

from runner import Case, ratio

COLORS = {"whos_online": "tab:green", "naive sorted set": "tab:orange", "cache dict": "tab:red"}


def plot(c: dict[str, Case], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 5), constrained_layout=True)
    for interface, style in (("WSGI", "-"), ("ASGI", "--")):
        bare = c[f"{interface}: bare"]
        for label, prefix, color in (
            ("whos_online, recording (no cookie)", "recording guest", COLORS["whos_online"]),
            ("naive sorted set, every request", "naive sorted set", COLORS["naive sorted set"]),
            ("cache dict, every request", "cache dict", COLORS["cache dict"]),
        ):
            series = sorted(series_of(c, f"{interface}: {prefix}, ").items())
            left.plot(
                [n for n, _ in series],
                [ratio(case, bare).median for _, case in series],
                style,
                marker="o",
                color=color,
                label=f"{label} ({interface})",
            )
        throttled = ratio(c[f"{interface}: throttled guest"], bare).median
        left.axhline(
            throttled,
            linestyle=style,
            color="tab:blue",
            label=f"whos_online, valid cookie ({interface})",
        )
    left.axhline(1.0, color="grey", linewidth=0.8)
    left.set(ylabel="time per request ÷ bare Django", title="Cost per request")
    for label, prefix, color in (
        ("whos_online, miss (one round trip)", "whos_online", COLORS["whos_online"]),
        ("naive sorted set", "naive sorted set", COLORS["naive sorted set"]),
        ("cache dict", "cache dict", COLORS["cache dict"]),
    ):
        series = sorted(
            series_of(c, f"{prefix}, ", "miss" if prefix == "whos_online" else "").items()
        )
        right.plot(
            [n for n, _ in series],
            [statistics.median(case.us) / 1000 for _, case in series],
            marker="o",
            color=color,
            label=label,
        )
    cached = sorted(series_of(c, "whos_online, ", "cached").items())
    if cached:
        right.plot(
            [n for n, _ in cached],
            [statistics.median(case.us) / 1000 for _, case in cached],
            "--",
            marker="o",
            color=COLORS["whos_online"],
            label="whos_online, per-process cache",
        )
    ping = statistics.median(c["PING"].us) / 1000
    right.axhline(ping, color="grey", linewidth=0.8, label="one Redis round trip (PING)")
    right.set(ylabel="ms per rendered block", title="Rendering the block")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    for axes in (left, right):
        axes.set(xscale="log", yscale="log", xlabel="people online: N members and N guests")
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
        axes.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axes.yaxis.set_major_formatter(plain)
        axes.yaxis.set_minor_formatter(FuncFormatter(lambda value, _: ""))
        axes.legend(fontsize=7)
        axes.grid(True, which="major", linewidth=0.3)
    figure.suptitle(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def series_of(c: dict[str, Case], prefix: str, suffix: str = "") -> dict[int, Case]:
    """{N: case} of the cases named "<prefix>N online", or "<prefix>N online, <suffix>" if given.

    Exactly: "recording guest, 1,000 online, hiredis" is not a point of "recording guest, ".
    """
    tail = f", {suffix}" if suffix else ""
    found = {}
    for name, case in c.items():
        number, online, rest = name.removeprefix(prefix).partition(" online")
        if (
            name.startswith(prefix)
            and online
            and rest == tail
            and number.replace(",", "").isdigit()
        ):
            found[int(number.replace(",", ""))] = case
    return found
