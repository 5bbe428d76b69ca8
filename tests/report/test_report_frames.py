"""Frames read from real notes, and the direction rule on hand-made ones."""

from __future__ import annotations

import math

import pytest
from report_runs import TOY_STEPS, RecordedRun, git

from kernelopt.history import AttemptRecord
from kernelopt.report.frames import infer_better, profile_frame, run_frames


def _record(attempt: int, **note: object) -> AttemptRecord:
    return AttemptRecord(attempt, f"{attempt:040x}", dict(note))


def test_attempt_frame_follows_the_notes(toy_run: RecordedRun) -> None:
    frames = run_frames(toy_run.state())
    df = frames.attempts
    assert list(df["verdict"]) == ["baseline", *(v for _, _, v in TOY_STEPS)]
    assert list(df["group"]) == [
        "kept", "kept", "kept", "discarded", "failed", "failed",
        "discarded", "discarded", "discarded",
    ]  # fmt: skip
    failed = df[df["verdict"] == "failed"].iloc[0]
    assert math.isnan(failed["metric"]) and "status 1" in failed["error"]
    assert "bench crashed: out of memory" in failed["log_tail"]
    assert df["log_tail"][df["group"] != "failed"].eq("").all()
    assert list(df["consecutive_regressions"])[-2:] == [1, 2]
    assert frames.metric_name == "time_us" and frames.better == "lower"
    assert frames.baseline_metric == 150 and frames.best_metric == 105
    assert frames.improvement == pytest.approx(0.3)


def test_kept_and_class_frames(toy_run: RecordedRun) -> None:
    frames = run_frames(toy_run.state())
    assert list(frames.kept["attempt"]) == [1, 2]
    assert list(frames.kept["gain"]) == pytest.approx([0.2, 0.125])
    assert list(frames.kept["gain_vs_baseline"]) == pytest.approx([0.2, 0.3])
    summary = frames.class_summary.set_index("class")
    assert list(summary.index) == ["n=64", "n=128"]  # numeric order, not text order
    assert summary.loc["n=128", "best"] == 140
    diverged = frames.classes[frames.classes["verdict"] == "diverged"].set_index("class")
    assert diverged.loc["n=64", "change_vs_baseline"] == pytest.approx(0.5)
    assert diverged.loc["n=128", "change_vs_baseline"] == pytest.approx(0.2)
    assert frames.stop is not None and "consecutive" in frames.stop.reason
    assert [r["attempt"] for r in frames.stop.recent_regressions] == [7, 8]
    assert frames.profile.empty  # a command target has no profile


@pytest.mark.parametrize(
    ("metric", "previous", "gain", "better"),
    [(12.0, 10.0, 0.2, "higher"), (8.0, 10.0, 0.2, "lower"), (12.0, 10.0, -0.2, "lower")],
)
def test_direction_is_read_off_signed_gains(
    metric: float, previous: float, gain: float, better: str
) -> None:
    records = [
        _record(0, verdict="baseline", metric=10.0, gain=None),
        _record(1, verdict="tie", metric=10.0, previous_best=10.0, gain=0.0),
        _record(2, verdict="keep", metric=metric, previous_best=previous, gain=gain),
    ]
    assert infer_better(records) == better


def test_profile_frame_needs_both_profiles() -> None:
    profile = {"dma_active_time_percent": 40.0, "hbm_read_bytes": 1024}
    with_profile = _record(0, measurement={"profile": profile})
    without = _record(1, measurement={"profile": {}})
    assert profile_frame(with_profile, without).empty
    df = profile_frame(with_profile, with_profile)
    assert list(df["field"]) == ["dma_active_time_percent", "hbm_read_bytes"]
    assert list(df["kind"]) == ["time_percent", "count"]


def test_best_is_named_by_the_best_ref_as_everywhere(
    toy_run: RecordedRun,
) -> None:
    frames = run_frames(toy_run.state())
    candidate = git(toy_run.root, "rev-parse", "refs/kernelopt/toy-t/attempts/2").strip()
    ledger = git(toy_run.root, "rev-parse", "refs/kernelopt/toy-t/best").strip()
    assert candidate != ledger
    assert (frames.best_attempt, frames.best_commit) == (2, ledger)
