"""The profile figure of a real NKI run, read back as matplotlib objects."""

from __future__ import annotations

import dataclasses

import pytest
from matplotlib.axes import Axes
from report_runs import RecordedRun

from kernelopt.report.frames import PEAK_PERCENT, TIME_PERCENT, RunFrames, run_frames
from kernelopt.report.plots import profile_figure

TIME_FIELDS = {
    "tensor": "tensor_engine_active_time_percent",
    "vector": "vector_engine_active_time_percent",
    "scalar": "scalar_engine_active_time_percent",
    "gpsimd": "gpsimd_engine_active_time_percent",
    "DMA": "dma_active_time_percent",
}
PEAK_FIELDS = {
    "MFU\n(FLOP/s)": "mfu_estimated_percent",
    "MBU\n(HBM bandwidth)": "mbu_estimated_percent",
}


@pytest.fixture(scope="module")
def frames(nki_run: RecordedRun) -> RunFrames:
    return run_frames(nki_run.state())


def _bars(ax: Axes, n: int) -> tuple[list[float], list[float]]:
    """Heights of the baseline bars and the BEST bars of one panel."""
    baseline, best = ax.containers
    assert [b.get_label() for b in (baseline, best)] == ["baseline", "best"]
    assert len(baseline) == len(best) == n
    return [r.get_height() for r in baseline], [r.get_height() for r in best]


def test_time_shares_and_utilisation_of_peak_sit_on_separate_axes(
    frames: RunFrames, nki_run: RecordedRun
) -> None:
    state = nki_run.state()
    assert state.baseline is not None and state.best is not None
    base = state.baseline.measurement["profile"]
    best = state.best.measurement["profile"]
    fig = profile_figure(frames)
    assert fig is not None
    time_ax, peak_ax = fig.axes
    assert time_ax.get_ylabel() == "active, % of the kernel's time"
    assert peak_ax.get_ylabel() == "% of the hardware's peak"
    for ax, fields in ((time_ax, TIME_FIELDS), (peak_ax, PEAK_FIELDS)):
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert labels == list(fields), labels
        heights = _bars(ax, len(fields))
        assert heights[0] == pytest.approx([base[fields[label]] for label in labels])
        assert heights[1] == pytest.approx([best[fields[label]] for label in labels])
    # the kept edit moved both kinds of number, so each panel shows a real change
    assert base["mfu_estimated_percent"] != best["mfu_estimated_percent"]
    assert base["dma_active_time_percent"] != best["dma_active_time_percent"]


def test_a_profile_with_one_kind_of_percentage_draws_one_panel(frames: RunFrames) -> None:
    for kind, label in ((TIME_PERCENT, "kernel's time"), (PEAK_PERCENT, "peak")):
        only = frames.profile[frames.profile["kind"] != kind]
        fig = profile_figure(dataclasses.replace(frames, profile=only))
        assert fig is not None and len(fig.axes) == 1
        assert label not in fig.axes[0].get_ylabel()
    counts_only = frames.profile[frames.profile["kind"] == "count"]
    assert profile_figure(dataclasses.replace(frames, profile=counts_only)) is None
