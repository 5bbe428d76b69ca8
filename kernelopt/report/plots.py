"""The report's pictures, drawn with matplotlib's Agg renderer.

Figures are built with ``matplotlib.figure.Figure`` directly, never through
pyplot: pyplot keeps a global registry of open figures and picks a GUI
backend, neither of which a headless report wants.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from kernelopt.decide import Verdict
from kernelopt.report.frames import PEAK_PERCENT, TIME_PERCENT, RunFrames
from kernelopt.report.verdicts import BROKEN, DISCARDED, colour_of

WIDTH_IN = 9.0
DPI = 110
INK = "#1f2937"
GRID = "#e5e7eb"
# Legends sit right of the plot so they never hide a point.
LEGEND_OUTSIDE: Mapping[str, Any] = MappingProxyType(
    {"fontsize": 8, "frameon": False, "loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}
)
MAX_BARS = 30
CLASS_COLOURS = ("#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#65a30d")


def _figure(height: float = 4.2) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    _style(ax)
    return fig, ax


def _style(ax: Axes) -> None:
    ax.grid(True, color=GRID, linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(colors=INK, labelsize=9)


def _plain(text: str) -> str:
    """Text from notes shown literally: an even number of "$" would be read as math."""
    return text.replace("$", r"\$")


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, format="png", facecolor="white")
    return path


def _direction(frames: RunFrames) -> str:
    return "higher is better" if frames.better == "higher" else "lower is better"


def metric_over_attempts(frames: RunFrames, path: Path) -> Path:
    """Every attempt's metric, the running best as a step line, and the baseline."""
    df = frames.attempts
    fig, ax = _figure()
    measured = df[df["metric"].notna()]
    if frames.baseline_metric is not None:
        ax.axhline(
            frames.baseline_metric, color=colour_of(Verdict.BASELINE), linestyle="--", linewidth=1
        )
    best = df[df["best_metric"].notna()]
    if not best.empty:
        # BEST's figure at each verdict (its estimate with the samples taken beside
        # the candidate), then after it: a keep steps down from what it was compared to.
        xs: list[float] = []
        ys: list[float] = []
        for row in best.itertuples():
            if row.previous_best == row.previous_best:  # not NaN
                xs.append(row.attempt)
                ys.append(row.previous_best)
            xs.append(row.attempt)
            ys.append(row.best_metric)
        ax.step(
            xs,
            ys,
            where="post",
            color=colour_of(Verdict.KEEP),
            linewidth=2,
        )
    for verdict, part in measured.groupby("verdict", sort=False):
        colour = colour_of(str(verdict))
        group = part["group"].iloc[0]
        if verdict == Verdict.BASELINE:
            style = {"marker": "*", "s": 180, "color": colour}
        elif group == DISCARDED:
            style = {"marker": "o", "s": 46, "facecolors": "white", "edgecolors": colour}
        elif group == BROKEN:
            style = {"marker": "X", "s": 60, "color": colour}
        else:
            style = {"marker": "o", "s": 60, "color": colour, "edgecolors": "white"}
        ax.scatter(part["attempt"], part["metric"], zorder=3, linewidths=1.5, **style)
    if _spans_decades(measured["metric"]):
        ax.set_yscale("log")
    floor = df[df["metric"].isna()]
    if not floor.empty:
        _no_metric_band(ax, floor)
    ax.set_xlabel("attempt", color=INK)
    ax.set_ylabel(_plain(f"{frames.metric_name} ({_direction(frames)})"), color=INK)
    ax.set_title(_plain(f"{frames.metric_name} of every attempt"), color=INK, loc="left")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(handles=_verdict_legend(df), **LEGEND_OUTSIDE)
    return _save(fig, path)


def _no_metric_band(ax: Axes, floor: pd.DataFrame) -> None:
    """Attempts without a number (crashes, wrong answers) in a shaded band under the data.

    They are seen without pretending to have a value. The band is laid out in
    the axis' own scale so it works on a log axis too.
    """
    scale = ax.yaxis.get_transform()
    lo, hi = scale.transform(ax.get_ylim())
    span = (hi - lo) or 1.0
    top, bottom, middle = scale.inverted().transform(
        [lo - 0.04 * span, lo - 0.16 * span, lo - 0.10 * span]
    )
    ax.set_ylim(bottom, ax.get_ylim()[1])
    ax.axhspan(bottom, top, color="#f3f4f6", zorder=0)
    ax.annotate(
        "no metric",
        (0.005, middle),
        xycoords=("axes fraction", "data"),
        va="center",
        fontsize=7,
        color="#6b7280",
    )
    for verdict, part in floor.groupby("verdict", sort=False):
        ax.scatter(
            part["attempt"],
            [middle] * len(part),
            marker="X",
            s=60,
            color=colour_of(str(verdict)),
            zorder=3,
        )


def _spans_decades(values: pd.Series) -> bool:
    """A log axis when one wild attempt would otherwise flatten all the others."""
    positive = values[values > 0]
    return len(positive) == len(values) and len(values) > 1 and positive.max() > 20 * positive.min()


def _verdict_legend(df: pd.DataFrame) -> list[Line2D]:
    handles = [
        Line2D([], [], color=colour_of(Verdict.KEEP), linewidth=2, label="running best"),
        Line2D(
            [], [], color=colour_of(Verdict.BASELINE), linestyle="--", linewidth=1, label="baseline"
        ),
    ]
    for verdict in dict.fromkeys(df["verdict"]):
        group = df.loc[df["verdict"] == verdict, "group"].iloc[0]
        colour = colour_of(verdict)
        marker = "*" if verdict == Verdict.BASELINE else ("X" if group == BROKEN else "o")
        face = "white" if group == DISCARDED else colour
        handles.append(
            Line2D(
                [],
                [],
                linestyle="",
                marker=marker,
                markersize=8,
                markerfacecolor=face,
                markeredgecolor=colour,
                label=verdict,
            )
        )
    return handles


def gain_per_keep(frames: RunFrames, path: Path) -> Path | None:
    """One bar per kept attempt: its gain over the BEST it replaced, labelled by hypothesis."""
    kept = frames.kept
    if kept.empty:
        return None
    title = "Gain of each kept change"
    if len(kept) > MAX_BARS:
        # A long night keeps many changes; the picture shows the ones that
        # mattered most, in attempt order, and the table lists them all.
        kept = kept.loc[kept["gain"].fillna(0.0).nlargest(MAX_BARS).index].sort_values("attempt")
        title = f"The {MAX_BARS} largest gains of {len(frames.kept)} kept changes"
    height = max(2.4, 0.55 * len(kept) + 1.4)
    fig, ax = _figure(height)
    labels = [
        _plain(f"#{a} " + textwrap.shorten(h or "(no hypothesis)", width=60, placeholder="..."))
        for a, h in zip(kept["attempt"], kept["hypothesis"], strict=True)
    ]
    gains = [0.0 if math.isnan(g) else 100.0 * g for g in kept["gain"]]
    ys = list(range(len(kept)))[::-1]
    ax.barh(ys, gains, color=colour_of(Verdict.KEEP), height=0.6)
    ax.set_yticks(ys, labels=labels)
    for y, g in zip(ys, gains, strict=True):
        ax.annotate(
            f"{g:+.1f}%",
            (g, y),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
            color=INK,
        )
    ax.set_ylim(-0.8, len(kept) - 0.2)
    ax.set_xlabel("gain over the BEST it replaced (%)", color=INK)
    ax.set_title(title, color=INK, loc="left")
    ax.margins(x=0.15)
    return _save(fig, path)


def classes_over_attempts(frames: RunFrames, path: Path) -> Path | None:
    """Each config class's change vs its baseline, per measured attempt."""
    df = frames.classes.dropna(subset=["change_vs_baseline"])
    if df.empty:
        return None
    fig, ax = _figure()
    ax.axhline(0, color=colour_of(Verdict.BASELINE), linestyle="--", linewidth=1)
    names = list(frames.class_summary["class"]) or sorted(df["class"].unique())
    handles = []
    last = int(frames.attempts["attempt"].max())
    for i, name in enumerate(names):
        part = df[df["class"] == name]
        if part.empty:
            continue
        colour = CLASS_COLOURS[i % len(CLASS_COLOURS)]
        kept = part[part["verdict"].isin((Verdict.BASELINE, Verdict.KEEP))]
        if not kept.empty:
            # The class's value at BEST holds until the last attempt of the run.
            changes = list(100 * kept["change_vs_baseline"])
            xs = [*kept["attempt"], last]
            ax.step(xs, [*changes, changes[-1]], where="post", color=colour, linewidth=1.8)
        other = part[~part["verdict"].isin((Verdict.BASELINE, Verdict.KEEP))]
        ax.scatter(
            other["attempt"],
            100 * other["change_vs_baseline"],
            marker="o",
            s=30,
            facecolors="white",
            edgecolors=colour,
            linewidths=1.3,
            zorder=3,
        )
        ax.scatter(kept["attempt"], 100 * kept["change_vs_baseline"], s=40, color=colour, zorder=3)
        handles.append(Line2D([], [], color=colour, marker="o", label=_plain(name)))
    ax.set_xlabel("attempt", color=INK)
    ax.set_ylabel("change vs baseline (%, + = better)", color=INK)
    ax.set_title("Config classes: filled = kept, hollow = discarded", color=INK, loc="left")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(handles=handles, **LEGEND_OUTSIDE)
    return _save(fig, path)


def counters_over_attempts(frames: RunFrames, path: Path, limit: int | None = None) -> Path:
    """Consecutive regressions after each attempt, against the stop limit."""
    df = frames.attempts
    fig, ax = _figure(3.2)
    ax.bar(
        df["attempt"],
        df["consecutive_regressions"],
        width=0.6,
        color=colour_of("regression"),
        label="consecutive regressions",
    )
    ax.plot(
        df["attempt"],
        df["recent_regressions"],
        color="#f59e0b",
        linewidth=1.5,
        marker="o",
        markersize=4,
        label="regressions in the recent window",
    )
    if limit is not None:
        ax.axhline(limit, color=INK, linestyle="--", linewidth=1, label=f"stop at {limit}")
    top = max(
        [
            int(df["consecutive_regressions"].max() or 0),
            int(df["recent_regressions"].max() or 0),
            limit or 0,
            1,
        ]
    )
    ax.set_ylim(0, top + 0.6)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("attempt", color=INK)
    ax.set_title("Regression counters", color=INK, loc="left")
    ax.legend(**LEGEND_OUTSIDE)
    return _save(fig, path)


PROFILE_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "mfu_estimated_percent": "MFU\n(FLOP/s)",
        "mbu_estimated_percent": "MBU\n(HBM bandwidth)",
        "tensor_engine_active_time_percent": "tensor",
        "vector_engine_active_time_percent": "vector",
        "scalar_engine_active_time_percent": "scalar",
        "gpsimd_engine_active_time_percent": "gpsimd",
        "dma_active_time_percent": "DMA",
    }
)
TIME_AXIS = "active, % of the kernel's time"
PEAK_AXIS = "% of the hardware's peak"


def profile_figure(frames: RunFrames) -> Figure | None:
    """BEST next to the baseline in two panels with their own axes.

    Left: how much of the kernel's time each engine and the DMA queues were
    busy. Right: MFU and MBU, achieved FLOP/s and HBM bandwidth as shares of
    the hardware's peak. Both are percentages of different wholes, so they
    never share an axis.
    """
    panels = [
        (frames.profile[frames.profile["kind"] == kind], title, label)
        for kind, title, label in (
            (TIME_PERCENT, "Engines and DMA queues: busy time", TIME_AXIS),
            (PEAK_PERCENT, "Utilisation of peak", PEAK_AXIS),
        )
    ]
    panels = [panel for panel in panels if not panel[0].empty]
    if not panels:
        return None
    fig = Figure(figsize=(WIDTH_IN, 3.8), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, len(panels), width_ratios=[max(len(df), 3) for df, _, _ in panels])
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, (df, title, label) in zip(axes, panels, strict=True):
        _style(ax)
        _profile_bars(ax, df)
        ax.set_ylabel(label, color=INK)
        ax.set_title(title, color=INK, loc="left", fontsize=10)
    fig.suptitle("Profile: BEST vs baseline", color=INK, x=0.01, ha="left")
    axes[-1].legend(**LEGEND_OUTSIDE)
    return fig


def _profile_bars(ax: Axes, df: pd.DataFrame) -> None:
    xs = list(range(len(df)))
    width = 0.38
    pairs = (
        ("baseline", colour_of(Verdict.BASELINE), -width / 2),
        ("best", colour_of(Verdict.KEEP), width / 2),
    )
    for column, colour, offset in pairs:
        values = df[column].fillna(0.0)
        bars = ax.bar([x + offset for x in xs], values, width=width, color=colour, label=column)
        ax.bar_label(bars, fmt="%.0f", fontsize=7, color=INK, padding=2)
    ax.set_xticks(xs, labels=[PROFILE_LABELS.get(f, f) for f in df["field"]])
    ax.set_ylim(0, max(100.0, float(df[["baseline", "best"]].max().max()) * 1.1))


def profile_best_vs_baseline(frames: RunFrames, path: Path) -> Path | None:
    """The profile figure as a PNG, or None when BEST or the baseline has no profile."""
    fig = profile_figure(frames)
    return None if fig is None else _save(fig, path)
