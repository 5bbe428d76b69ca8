"""A compiler-baseline row that nothing on the host can build is skipped with its
reason, not failed; the device time's roofline is the simulator's roofline at the
LNC's peak rates."""

from __future__ import annotations

import pytest

from kernelopt.ledger import Labels, kept_rows
from kernelopt.measurement import SKIPPED, STATUSES, Measurement
from kernelopt.neuron.record import to_measurement
from kernelopt.neuron.work import device_roofline
from kernelopt.sim.roofline import RooflineWork

LABELS = Labels("r1", "programs/p.md", "ir/k/kernel.py", "k", "mfu", "higher")
WHY = "neither nkipy nor its predecessor neuronpy: install nkipy there"


def _note(reference: dict) -> dict:
    return {
        "verdict": "baseline",
        "device": "neuron",
        "time": "2026-11-01",
        "metric": 40.0,
        "reference": reference,
    }


def test_a_skipped_reference_row_says_skipped_and_why() -> None:
    assert SKIPPED in STATUSES
    skipped = kept_rows(
        _note({"what": "f_numpy (nkipy)", "metric": None, "why": WHY, "skipped": True}),
        "abc1234",
        LABELS,
    )
    row = next(line for line in skipped.splitlines() if "| reference |" in line)
    assert "| skipped |" in row and WHY in row
    failed = kept_rows(
        _note({"what": "f_numpy (nkipy)", "metric": None, "why": "boom"}), "abc1234", LABELS
    )
    assert "| n/a |" in next(line for line in failed.splitlines() if "| reference |" in line)


def test_a_skipped_driver_record_is_a_skipped_measurement() -> None:
    record = {"stage": "compile", "status": "skipped", "error": WHY}
    m = to_measurement(
        record, None, host="h", device="neuron@0", duration_s=0.0, artifacts={}, extra={}
    )
    assert isinstance(m, Measurement) and m.status == SKIPPED and m.error == WHY


def test_the_roofline_of_a_device_time_scales_with_the_lnc() -> None:
    work = RooflineWork(tensor_macs=2048**3, hbm_bytes=3 * 2048 * 2048 * 2)
    one, two = device_roofline(work, 0.25e-3, 1), device_roofline(work, 0.25e-3, 2)
    assert one["roofline_bound"] == "tensor"
    # 2048^3 MACs at 128 x 128 x 2.4e9 MACs/s per physical core.
    assert one["roofline_time"] == pytest.approx(2048**3 / (128 * 128 * 2.4e9), rel=1e-3)
    assert two["roofline_time"] == pytest.approx(one["roofline_time"] / 2)
    assert one["roofline_percent"] == pytest.approx(100 * one["roofline_time"] / 0.25e-3)
    ok = {"status": "ok", "min_s": 0.25e-3, "macs": 2048**3, "lnc": 1, "roofline": one}
    m = to_measurement(
        {"status": "ok"}, ok, host="h", device="neuron@0", duration_s=0.0, artifacts={}, extra={}
    )
    assert m.metrics["roofline_percent"] == pytest.approx(one["roofline_percent"])
    assert m.profile["roofline_bound"] == "tensor"
