"""From a run's notes to pandas frames: the one place that knows the note layout."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from kernelopt.decide import Verdict, gain
from kernelopt.history import AttemptRecord, RunState
from kernelopt.report.verdicts import BROKEN, group_of

# Profile fields compared between BEST and the baseline, in the order shown,
# in three kinds: shares of the kernel's time, shares of the hardware's peak,
# and plain counts. The two kinds of percentage answer different questions
# and are never drawn on one axis.
TIME_PERCENT = "time_percent"
PEAK_PERCENT = "peak_percent"
COUNT = "count"
PROFILE_TIME_FIELDS = (
    "tensor_engine_active_time_percent",
    "vector_engine_active_time_percent",
    "scalar_engine_active_time_percent",
    "gpsimd_engine_active_time_percent",
    "dma_active_time_percent",
)
PROFILE_PEAK_FIELDS = (
    "mfu_estimated_percent",  # FLOP/s of the peak
    "mbu_estimated_percent",  # HBM bandwidth of the peak
)
PROFILE_COUNT_FIELDS = (
    "total_time",
    "hbm_read_bytes",
    "hbm_write_bytes",
    "dma_transfer_count",
    "dma_transfer_total_bytes",
    "instruction_count",
)

ATTEMPT_COLUMNS = [
    "attempt",
    "commit",
    "kind",
    "verdict",
    "group",
    "metric",
    "best_metric",
    "previous_best",
    "best_beside",
    "pairs",
    "gain",
    "hypothesis",
    "reason",
    "error",
    "log_tail",
    "time",
    "device",
    "consecutive_regressions",
    "recent_regressions",
]


@dataclass(frozen=True)
class StopInfo:
    """Why and when the run stopped, with what it stopped on."""

    reason: str
    time: str
    recent_regressions: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class RunFrames:
    """Everything the report draws, as tables.

    ``better`` is "higher" or "lower". Frames are empty (with their columns)
    when the run has nothing of that kind, e.g. no config classes.
    """

    run_id: str
    metric_name: str
    better: str
    device: str
    attempts: pd.DataFrame
    kept: pd.DataFrame
    classes: pd.DataFrame
    class_summary: pd.DataFrame
    profile: pd.DataFrame
    stop: StopInfo | None
    baseline_metric: float | None
    best_metric: float | None
    # BEST is named by the best ref (the run branch's commit at BEST, as `git log`,
    # status and the notes name it); best_attempt is the attempt that was measured.
    best_commit: str | None
    best_attempt: int | None = None

    @property
    def improvement(self) -> float | None:
        """BEST vs the baseline, positive = better."""
        if self.baseline_metric is None or self.best_metric is None:
            return None
        return gain(self.best_metric, self.baseline_metric, self.better)


def _number(value: Any) -> float:
    """A note's number as a float, NaN where the note has none."""
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def infer_better(records: Sequence[AttemptRecord]) -> str:
    """Whether higher or lower is better, read off the notes' signed gains.

    A note's gain is positive when the candidate beat the previous best, so
    any note where both moved says which direction the run optimises.
    """
    for record in records:
        note = record.note
        g, metric, previous = note.get("gain"), note.get("metric"), note.get("previous_best")
        if g is None or metric is None or previous is None:
            continue
        if g == 0 or metric == previous:
            continue
        return "higher" if (metric > previous) == (g > 0) else "lower"
    return "higher"


def attempts_frame(records: Sequence[AttemptRecord]) -> pd.DataFrame:
    rows = []
    for r in records:
        note = r.note
        counters = note.get("counters") or {}
        basis = note.get("basis") or {}
        remeasured = basis.get("against") == "remeasured"
        rows.append(
            {
                "attempt": r.attempt,
                "commit": r.commit,
                "kind": str(note.get("kind", "")),
                "verdict": r.verdict,
                "group": group_of(r.verdict),
                "metric": _number(note.get("metric")),
                "best_metric": _number(note.get("best_metric")),
                "previous_best": _number(note.get("previous_best")),
                "best_beside": _number(basis.get("best")) if remeasured else math.nan,
                "pairs": int(basis.get("pairs") or 0) if remeasured else 0,
                "gain": _number(note.get("gain")),
                "hypothesis": str(note.get("hypothesis", "")),
                "reason": str(note.get("reason") or ""),
                "error": str(
                    note.get("error") or (note.get("measurement") or {}).get("error") or ""
                ),
                # The benchmark's own words about a failure live in its log tail.
                "log_tail": str((note.get("measurement") or {}).get("log_tail") or "")
                if group_of(r.verdict) == BROKEN
                else "",
                "time": str(note.get("time", "")),
                "device": str(note.get("device", "")),
                "consecutive_regressions": int(counters.get("consecutive_regressions", 0)),
                "recent_regressions": len(counters.get("recent_regressions") or ()),
            }
        )
    return pd.DataFrame(rows, columns=ATTEMPT_COLUMNS)


def kept_frame(attempts: pd.DataFrame, baseline: float | None, better: str) -> pd.DataFrame:
    """Kept attempts with their gain over the BEST they replaced and over the baseline."""
    kept = attempts[attempts["verdict"] == Verdict.KEEP].copy()
    kept["gain_vs_baseline"] = [
        gain(m, baseline, better) if baseline is not None and not math.isnan(m) else math.nan
        for m in kept["metric"]
    ]
    return kept[
        [
            "attempt",
            "commit",
            "hypothesis",
            "metric",
            "best_beside",
            "pairs",
            "previous_best",
            "verdict",
            "gain",
            "gain_vs_baseline",
        ]
    ]


def _classes_of(record: AttemptRecord) -> dict[str, float]:
    extra = record.measurement.get("extra") or {}
    return {str(k): _number(v) for k, v in (extra.get("classes") or {}).items()}


def classes_frame(
    records: Sequence[AttemptRecord], baseline: AttemptRecord | None, better: str
) -> pd.DataFrame:
    """One row per (attempt, config class) with the class's metric and change vs baseline."""
    base = _classes_of(baseline) if baseline else {}
    rows = []
    for r in records:
        for name, value in _classes_of(r).items():
            ref = base.get(name)
            change = (
                gain(value, ref, better)
                if ref is not None and not math.isnan(ref) and not math.isnan(value)
                else math.nan
            )
            rows.append(
                {
                    "attempt": r.attempt,
                    "verdict": r.verdict,
                    "group": group_of(r.verdict),
                    "class": name,
                    "metric": value,
                    "change_vs_baseline": change,
                }
            )
    return pd.DataFrame(
        rows, columns=["attempt", "verdict", "group", "class", "metric", "change_vs_baseline"]
    )


def class_summary_frame(
    baseline: AttemptRecord | None, best: AttemptRecord | None, better: str
) -> pd.DataFrame:
    base = _classes_of(baseline) if baseline else {}
    top = _classes_of(best) if best else {}
    rows = []
    for name in sorted(set(base) | set(top), key=_class_sort_key):
        b, t = base.get(name, math.nan), top.get(name, math.nan)
        change = gain(t, b, better) if not (math.isnan(b) or math.isnan(t)) else math.nan
        rows.append({"class": name, "baseline": b, "best": t, "change": change})
    return pd.DataFrame(rows, columns=["class", "baseline", "best", "change"])


def _class_sort_key(name: str) -> tuple[str, float, str]:
    """Sort "n=256" before "n=1024": numerically where the value is a number."""
    key, _, value = name.partition("=")
    try:
        return (key, float(value), "")
    except ValueError:
        return (key, math.inf, value)


def profile_frame(baseline: AttemptRecord | None, best: AttemptRecord | None) -> pd.DataFrame:
    """Profile fields of the baseline and BEST, where both measurements carry a profile."""
    columns = ["field", "baseline", "best", "kind"]
    base = (baseline.measurement.get("profile") or {}) if baseline else {}
    top = (best.measurement.get("profile") or {}) if best else {}
    if not base or not top:
        return pd.DataFrame([], columns=columns)
    rows = []
    groups = (
        (PROFILE_PEAK_FIELDS, PEAK_PERCENT),
        (PROFILE_TIME_FIELDS, TIME_PERCENT),
        (PROFILE_COUNT_FIELDS, COUNT),
    )
    for fields, kind in groups:
        for name in fields:
            if name in base or name in top:
                rows.append(
                    {
                        "field": name,
                        "baseline": _number(base.get(name)),
                        "best": _number(top.get(name)),
                        "kind": kind,
                    }
                )
    return pd.DataFrame(rows, columns=columns)


def stop_info(state: RunState) -> StopInfo | None:
    if not state.stop:
        return None
    recent = tuple(state.counters.recent_regressions)
    return StopInfo(
        reason=str(state.stop.get("reason", "stopped")),
        time=str(state.stop.get("time", "")),
        recent_regressions=recent,
    )


def run_frames(state: RunState, better: str | None = None) -> RunFrames:
    """All frames of one run. ``better`` defaults to what the notes imply."""
    records = state.attempts
    better = better or infer_better(records)
    baseline, best = state.baseline, state.best
    attempts = attempts_frame(records)
    baseline_metric = state.baseline_metric
    metric_name = next(
        (str(r.note["metric_name"]) for r in records if r.note.get("metric_name")), "metric"
    )
    devices = [d for d in attempts["device"].unique() if d]
    return RunFrames(
        run_id=state.run_id,
        metric_name=metric_name,
        better=better,
        device=", ".join(devices),
        attempts=attempts,
        kept=kept_frame(attempts, baseline_metric, better),
        classes=classes_frame(records, baseline, better),
        class_summary=class_summary_frame(baseline, best, better),
        profile=profile_frame(baseline, best),
        stop=stop_info(state),
        baseline_metric=baseline_metric,
        best_metric=state.best_metric,
        best_commit=state.best_commit if best else None,
        best_attempt=best.attempt if best else None,
    )
