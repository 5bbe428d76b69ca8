"""Fitting the cost model's named parameters to (kernel, device MFU) pairs."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from kernelopt.ir.knobs_io import ir_for_workload
from kernelopt.ir.render import render_ir
from kernelopt.ir.sample import sample
from kernelopt.sim import DEFAULT_PARAMS
from kernelopt.sim.calibrate import (
    CalibrationProblem,
    calibrate,
    mean_error,
    spearman,
    trace_kernel,
)
from kernelopt.workload import load_workload

WORKLOAD = Path(__file__).resolve().parents[1] / "neuron" / "kernels" / "workload.py"
HIDDEN = {"dma_hwdge_fixed_ns": 800.0, "dma_bytes_per_ns": 19.0, "sync_latency_ns": 90.0}


def _pairs(tmp_path: Path, count: int) -> list:
    """Kernels of several knob states, 'measured' on a device whose parameters differ."""
    workload = load_workload(WORKLOAD, require=("f_numpy", "INPUT_SPECS"))
    base = ir_for_workload(WORKLOAD)
    rng = random.Random(0)
    device = dataclasses.replace(DEFAULT_PARAMS, **HIDDEN)
    pairs, seen = [], set()
    for i in range(count * 10):
        ir = base if i == 0 else sample(base, rng)
        source = render_ir(ir)
        if source in seen:
            continue
        seen.add(source)
        path = tmp_path / f"k{i}.py"
        path.write_text(source)
        traced = trace_kernel(i, 0.0, path, workload, None, ())
        pairs.append(dataclasses.replace(traced, measured=traced.mfu(device)))
        if len(pairs) == count:
            break
    return pairs


def test_the_fit_recovers_a_device_whose_parameters_differ(tmp_path: Path) -> None:
    pairs = _pairs(tmp_path, 8)
    params, figures = calibrate(pairs)
    assert figures["pairs"] == 8 and figures["folds"] == 5
    assert figures["error_before"] > 0.2
    assert figures["error_after"] <= figures["error_before"] / 2
    assert figures["spearman"] is not None and figures["spearman"] > 0.8
    assert set(params) <= {
        "dma_hwdge_fixed_ns",
        "dma_fixed_ns",
        "dma_bytes_per_ns",
        "sync_latency_ns",
    }
    # The parameters can trade off against each other; what they predict is what is fitted.
    fitted = dataclasses.replace(DEFAULT_PARAMS, **params)
    assert mean_error(pairs, fitted) <= figures["error_before"] / 2


def test_too_few_measurements_cannot_be_calibrated(tmp_path: Path) -> None:
    with pytest.raises(CalibrationProblem, match="at least"):
        calibrate(_pairs(tmp_path, 2))


def test_spearman_ranks_with_ties() -> None:
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) is None


def test_a_fit_schedules_each_pair_once_per_parameter_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kernelopt.sim.schedule as schedule_module

    pairs = _pairs(tmp_path, 6)
    expected = calibrate(pairs)
    fresh = [dataclasses.replace(p) for p in pairs]  # the same pairs, nothing estimated yet
    scheduled: list[tuple[int, object]] = []
    real = schedule_module.schedule

    def counting(trace, allocations, params, **options):  # type: ignore[no-untyped-def]
        scheduled.append((id(trace), params))
        return real(trace, allocations, params, **options)

    monkeypatch.setattr(schedule_module, "schedule", counting)
    assert calibrate(fresh) == expected
    # Folds and the final fit try many of the same parameter sets: each is scheduled once.
    assert len(scheduled) == len(set(scheduled)) > len(pairs)
