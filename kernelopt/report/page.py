"""The report page: one self-contained HTML file with inline CSS and no scripts.

Every piece of text that came from a note (hypotheses, errors, class names,
stop reasons) passes through ``html.escape``: hypotheses are written by
people and agents and may hold anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import kernelopt.report.html_parts as h
from kernelopt.report.frames import RunFrames

METRIC_CAPTION = (
    "Filled: kept. Hollow: measured and discarded (tie, regression, diverged). "
    "Crosses: failed or incorrect; those without a number sit in the grey band. "
    "Noisy targets judge a candidate against BEST re-measured beside it, so a "
    "verdict can differ from the distance to the running-best line."
)


@dataclass(frozen=True)
class Figures:
    """The PNGs the page shows; None where the run has nothing to draw."""

    metric: Path
    counters: Path
    gains: Path | None = None
    classes: Path | None = None
    profile: Path | None = None


CSS = """
:root { --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb; --bg: #f8fafc; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1060px; margin: 0 auto; padding: 28px 24px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 10px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
.sub { color: var(--muted); margin: 0 0 18px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(140px, 1fr)); gap: 12px; }
.card { background: white; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 20px; font-weight: 600; margin-top: 2px; }
.good { color: #15803d; } .bad { color: #b91c1c; }
figure { margin: 12px 0; background: white; border: 1px solid var(--line); border-radius: 8px;
  padding: 8px; }
figure img { display: block; width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 12px; padding: 4px 6px 2px; }
div.table { overflow-x: auto; background: white; border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
tr:last-child td { border-bottom: none; }
th { background: #f1f5f9; font-weight: 600; white-space: nowrap; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.word { white-space: nowrap; }
td.text { overflow-wrap: anywhere; min-width: 12em; }
code { font: 12px/1.3 ui-monospace, "DejaVu Sans Mono", monospace; }
code.sha { white-space: nowrap; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: white;
  font-size: 12px; font-weight: 600; }
.stop { background: #fff7ed; border: 1px solid #fed7aa; border-radius: 8px; padding: 12px 16px; }
.stop p { margin: 4px 0; }
p.best { margin: 14px 0 0; }
.ledger { color: var(--muted); }
.why { color: var(--muted); font-size: 12px; }
.err { color: #92400e; font-size: 12px; }
details summary { cursor: pointer; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0 0; font-size: 12px; }
footer { color: var(--muted); font-size: 12px; margin-top: 32px; }
"""


def _cards(frames: RunFrames) -> str:
    df = frames.attempts
    counts = df["verdict"].value_counts()
    kept = int(counts.get("keep", 0))
    improvement = frames.improvement
    items = [
        ("best " + frames.metric_name, escape(h.fmt_metric(frames.best_metric)), ""),
        ("baseline", escape(h.fmt_metric(frames.baseline_metric)), ""),
        ("vs baseline", escape(h.fmt_gain(improvement) or "n/a"), h.gain_class(improvement)),
        ("attempts", f"{int((df['attempt'] > 0).sum())}", ""),  # the baseline is not one
        ("kept", f"{kept}", ""),
        ("status", "stopped" if frames.stop else "open", ""),
    ]
    cards = "".join(
        f'<div class="card"><div class="k">{escape(k)}</div><div class="v {cls}">{v}</div></div>'
        for k, v, cls in items
    )
    return f'<div class="cards">{cards}</div>'


def _best_line(frames: RunFrames) -> str:
    """BEST by the best ref's commit (as git log and status name it), with its attempt."""
    if frames.best_commit is None:
        return "<b>BEST:</b> none yet"
    parts = [
        f"<b>BEST:</b> {h.commit(frames.best_commit)} (attempt #{frames.best_attempt}) "
        f"{escape(frames.metric_name)} {escape(h.fmt_metric(frames.best_metric))} "
        f"({escape(h.fmt_gain(frames.improvement) or 'n/a')} vs baseline "
        f"{escape(h.fmt_metric(frames.baseline_metric))})"
    ]
    return " ".join(parts)


def _stop_section(frames: RunFrames) -> str:
    stop = frames.stop
    if stop is None:
        return ""
    parts = [
        "<h2>Stop Summary</h2>",
        '<div class="stop">',
        f"<p><b>Reason:</b> {escape(stop.reason)}</p>",
        f"<p><b>Time:</b> {escape(stop.time)}</p>",
        f"<p>{_best_line(frames)}</p>",
        "</div>",
    ]
    if stop.recent_regressions:
        parts.append("<p>The regressions it stopped on:</p>")
        parts.append(
            h.table(
                [
                    ("attempt", h.NUM),
                    ("hypothesis", h.TEXT),
                    ("files", h.TEXT),
                    ("best -> candidate", h.NUM),
                    ("gain", h.NUM),
                    ("classes", h.TEXT),
                ],
                (
                    [
                        escape(str(r.get("attempt", ""))),
                        escape(str(r.get("hypothesis", ""))),
                        escape(", ".join(str(f) for f in r.get("files") or ())),
                        escape(
                            f"{h.fmt_metric(h.as_float(r.get('best')))} -> {h.fmt_metric(h.as_float(r.get('candidate')))}"
                        ),
                        h.gain_cell(h.as_float(r.get("gain"))),
                        escape(str(r.get("notes", ""))),
                    ]
                    for r in stop.recent_regressions
                ),
            )
        )
    return "".join(parts)


def _kept_section(frames: RunFrames, figures: Figures, out: Path, embed: bool) -> str:
    if frames.kept.empty:
        return "<h2>Kept changes</h2><p>No change beat the baseline yet.</p>"
    table = h.table(
        [
            ("attempt", h.NUM),
            ("commit", h.WORD),
            ("hypothesis", h.TEXT),
            (frames.metric_name, h.NUM),
            ("vs BEST", h.NUM),
            ("gain", h.NUM),
            ("vs baseline", h.NUM),
        ],
        (
            [
                str(int(r.attempt)),
                h.commit(r.commit),
                escape(r.hypothesis),
                escape(h.fmt_metric(r.metric)),
                escape(_compared_with(r)),
                h.gain_cell(r.gain),
                h.gain_cell(r.gain_vs_baseline),
            ]
            for r in frames.kept.itertuples()
        ),
    )
    img = h.img(figures.gains, "gain of each kept change", out, embed) if figures.gains else ""
    return f"<h2>Kept changes</h2>{img}{table}"


def _classes_section(frames: RunFrames, figures: Figures, out: Path, embed: bool) -> str:
    if frames.class_summary.empty:
        return ""
    table = h.table(
        [("class", h.TEXT), ("baseline", h.NUM), ("best", h.NUM), ("change", h.NUM)],
        (
            [
                escape(r["class"]),
                escape(h.fmt_metric(r["baseline"])),
                escape(h.fmt_metric(r["best"])),
                h.gain_cell(r["change"]),
            ]
            for r in frames.class_summary.to_dict("records")
        ),
    )
    img = (
        h.img(figures.classes, "config classes over attempts", out, embed)
        if figures.classes
        else ""
    )
    return f"<h2>Config classes</h2>{img}{table}"


def _profile_section(frames: RunFrames, figures: Figures, out: Path, embed: bool) -> str:
    if frames.profile.empty:
        return ""
    table = h.table(
        [("field", h.WORD), ("baseline", h.NUM), ("best", h.NUM)],
        (
            [
                f"<code>{escape(r['field'])}</code>",
                escape(h.fmt_metric(r["baseline"])),
                escape(h.fmt_metric(r["best"])),
            ]
            for r in frames.profile.to_dict("records")
        ),
    )
    img = (
        h.img(figures.profile, "profile of BEST vs baseline", out, embed) if figures.profile else ""
    )
    return f"<h2>Profile</h2>{img}{table}"


def _calibration_section(calibration: Mapping[str, Any] | None) -> str:
    """A screened run's live refit: the model against the device, and what it fitted."""
    if not calibration:
        return ""
    from kernelopt.proposers.live_calibration import live_summary

    params = calibration.get("params") or {}
    table = h.table(
        [("Trn2 parameter the estimates use", h.WORD), ("value", h.NUM)],
        (
            [f"<code>{escape(str(name))}</code>", escape(h.fmt_metric(h.as_float(value)))]
            for name, value in sorted(params.items())
        ),
    )
    before = calibration.get("error_before")
    note = (
        f"<p>Before the fit the simulator was off by {before:.2f} pp MFU on the same "
        "measurements; the error above is on held-out measurements of a k-fold "
        "cross-validation (docs/screening.md).</p>"
        if isinstance(before, int | float)
        else ""
    )
    return f"<h2>Screening model</h2><p>{escape(live_summary(dict(calibration)))}</p>{note}" + (
        table if params else ""
    )


def _attempts_section(frames: RunFrames) -> str:
    table = h.table(
        [
            ("#", h.NUM),
            ("commit", h.WORD),
            ("kind", h.WORD),
            ("verdict", h.WORD),
            (frames.metric_name, h.NUM),
            ("vs BEST", h.NUM),
            ("gain", h.NUM),
            ("hypothesis / why", h.TEXT),
            ("error", h.TEXT),
        ],
        (
            [
                str(int(r.attempt)),
                h.commit(r.commit),
                escape(r.kind),
                h.badge(r.verdict),
                escape(h.fmt_metric(r.metric)),
                escape(_compared_with(r)),
                h.gain_cell(r.gain, r.verdict),
                _hypothesis_and_reason(r),
                h.error_cell(r.error, r.log_tail),
            ]
            for r in frames.attempts.itertuples()
        ),
    )
    return f"<h2>Every attempt</h2>{table}"


def _hypothesis_and_reason(r: Any) -> str:
    """The hypothesis, and under it the rule that decided the verdict (one column for
    both keeps the table within the page at 1,400 px, as `kernelopt log --wide` does)."""
    reason = r.reason if isinstance(r.reason, str) else ""
    why = f'<br><span class="why">why: {escape(reason)}</span>' if reason else ""
    return escape(r.hypothesis) + why


def _compared_with(r: Any) -> str:
    """The BEST figure a verdict was decided on: re-measured beside it (with its pairs),
    else BEST's estimate."""
    if r.pairs:
        return f"{h.fmt_metric(r.best_beside)} ({int(r.pairs)} pair{'s' if r.pairs != 1 else ''})"
    if r.verdict == "baseline" or r.previous_best != r.previous_best:  # NaN
        return ""
    return h.fmt_metric(r.previous_best)


def render_page(
    frames: RunFrames,
    figures: Figures,
    out: Path,
    *,
    embed: bool = False,
    context: Mapping[str, str] | None = None,
    calibration: Mapping[str, Any] | None = None,
) -> str:
    """The whole page. ``out`` is where the page lives (image paths are relative to it)."""
    direction = "higher is better" if frames.better == "higher" else "lower is better"
    meta = [f"metric {frames.metric_name} ({direction})"]
    if frames.device:
        meta.append(f"device {frames.device}")
    for key, value in (context or {}).items():
        meta.append(f"{key} {value}")
    title = f"kernelopt run {frames.run_id}"
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">{escape(" · ".join(meta))}</p>',
        _cards(frames),
        f'<p class="best">{_best_line(frames)}</p>' if frames.stop is None else "",
        _stop_section(frames),
        "<h2>Metric over attempts</h2>",
        h.img(figures.metric, "metric of every attempt", out, embed, METRIC_CAPTION),
        _kept_section(frames, figures, out, embed),
        _classes_section(frames, figures, out, embed),
        "<h2>Regression counters</h2>",
        h.img(figures.counters, "regression counters over attempts", out, embed),
        _profile_section(frames, figures, out, embed),
        _calibration_section(calibration),
        _attempts_section(frames),
        "<footer>Generated by kernelopt report from the run's git notes "
        "(refs/notes/kernelopt).</footer>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )


__all__ = ["Figures", "render_page"]
