"""Runs the toy benchmark does not produce: empty, wild numbers, hostile names."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from kernelopt.history import AttemptRecord, RunState
from kernelopt.report import write_report
from kernelopt.report.build import ReportError
from kernelopt.report.plots import _spans_decades


def _note(attempt: int, verdict: str, metric: float | None, **extra: object) -> AttemptRecord:
    note: dict[str, object] = {
        "attempt": attempt,
        "verdict": verdict,
        "kind": "edit",
        "metric_name": "gflops",
        "metric": metric,
        "hypothesis": f"idea {attempt}",
        **extra,
    }
    return AttemptRecord(attempt, f"{attempt:040x}", note)


def test_a_run_without_attempts_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="r-x has no recorded attempts"):
        write_report(RunState("r-x", None), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_wild_metrics_and_odd_class_names_still_draw(tmp_path: Path) -> None:
    classes = {"shape=$a$": 1.0, "shape=<b>": 2.0}
    records = (
        _note(0, "baseline", 10.0, best_metric=10.0,
              measurement={"extra": {"classes": classes}}),
        _note(1, "regression", 0.01, best_metric=10.0, previous_best=10.0, gain=-0.999,
              measurement={"extra": {"classes": {"shape=$a$": 0.01}}}),
        _note(2, "interrupted", None, best_metric=10.0, error="stopped\nby Ctrl-C"),
        _note(3, "keep", 5000.0, best_metric=5000.0, previous_best=10.0, gain=499.0,
              hypothesis="$x^2$ & <i>",
              measurement={"extra": {"classes": {"shape=$a$": 3.0, "shape=<b>": 9.0}}}),
    )  # fmt: skip
    report = write_report(RunState("r-y", records[-1].commit, records), tmp_path)
    html = report.index.read_text()
    assert "shape=&lt;b&gt;" in html and "&lt;i&gt;" in html and "<i>" not in html
    assert "higher is better" in html  # read off the signed gains
    assert "stopped\nby Ctrl-C" in html  # the whole error is one click away
    for png in report.files[1:]:
        with Image.open(png) as image:
            assert image.width > 600


def test_log_axis_only_when_values_span_decades() -> None:
    assert _spans_decades(pd.Series([0.01, 10.0, 5000.0]))
    assert not _spans_decades(pd.Series([100.0, 150.0, 120.0]))
    assert not _spans_decades(pd.Series([-1.0, 100.0]))  # a log axis cannot show it


def _keeps(count: int) -> tuple[AttemptRecord, ...]:
    records = [_note(0, "baseline", 100.0, best_metric=100.0)]
    metric = 100.0
    for n in range(1, count + 1):
        better = metric * (1.0 + n / 1000)
        records.append(
            _note(n, "keep", better, best_metric=better, previous_best=metric, gain=n / 1000)
        )
        metric = better
    return tuple(records)


def test_many_keeps_plot_the_largest_gains_and_list_them_all(tmp_path: Path) -> None:
    heights = {}
    for count in (30, 40):
        records = _keeps(count)
        report = write_report(RunState("r", records[-1].commit, records), tmp_path / str(count))
        with Image.open(report.out / "gains.png") as image:
            heights[count] = image.height
        html = report.index.read_text()
        assert all(r.commit in html for r in records)  # the tables list every keep
    assert heights[40] == heights[30]  # the picture stops growing at 30 bars
