"""Host-timed calibration cases are scored with a host cost taken from other families.

benchmarks/sim_calibration_scoring.py adds the host's per-execution cost of a
host-timed source to the simulated device time before comparing; the cost is
a property of the measurement, estimated per runner from the runner's other
families, never from the family being scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from benchmarks_support.modules import load_module

from kernelopt.sim.chips import chip_params

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


scoring = load_module("kernelopt_calibration_scoring", BENCHMARKS / "sim_calibration_scoring.py")
cases = load_module("kernelopt_calibration_cases", BENCHMARKS / "calibration" / "cases.py")
PARAMS = chip_params("trn2")
HOST = cases.Timing("runner-a", True, "test")


@dataclass(frozen=True)
class _Case:
    label: str
    family: str
    measured_ms: float | None
    measured_mfu: float | None
    timing: object


def _traced(label: str, family: str, device_us: float, measured_us: float, timing=HOST):
    mfu = 50.0
    case = _Case(label, family, measured_us * 1e-3, mfu * device_us / measured_us, timing)
    t = scoring.Traced(case, (), (), False, False, 0.0)
    # The profile a schedule would give: only time and MFU are read.
    t._profiles[PARAMS] = {"total_time": device_us * 1e-6, "mfu_estimated_percent": mfu}
    return t


def test_a_family_is_scored_with_the_host_cost_of_its_runners_other_families():
    traced = [
        _traced("a1", "a", 10.0, 50.0),  # gap 40
        _traced("a2", "a", 20.0, 60.0),  # gap 40
        _traced("b1", "b", 10.0, 40.0),  # gap 30
        _traced("b2", "b", 30.0, 60.0),  # gap 30
    ]
    host = scoring.scored_host_us(traced, PARAMS)
    assert host == {"a1": 30.0, "a2": 30.0, "b1": 40.0, "b2": 40.0}
    # Scored as the runner's timer would read it: device time plus the host cost.
    assert traced[0].measured_ms(PARAMS, host["a1"]) == pytest.approx(0.040)
    assert traced[0].error(PARAMS, host["a1"])[0] == "pp"
    assert traced[0].mfu(PARAMS, host["a1"]) == pytest.approx(50.0 * 10 / 40)


def test_the_host_cost_comes_from_the_runs_it_dominates():
    # A long kernel's gap also holds the model's device-time error (2 % of 3.5 ms is
    # 70 us): it does not move the estimate while host-dominated runs give one.
    traced = [
        _traced("b1", "b", 10.0, 50.0),  # gap 40, device 20 % of measured
        _traced("b2", "b", 30.0, 70.0),  # gap 40, 43 %
        _traced("b3", "b", 3000.0, 3110.0),  # gap 110, 96 %
        _traced("b4", "b", 3000.0, 3130.0),  # gap 130
        _traced("a1", "a", 10.0, 50.0),
    ]
    assert scoring.host_costs(traced, PARAMS, "a") == {"runner-a": pytest.approx(40.0)}
    # Without a host-dominated run, every run of the runner counts.
    assert scoring.host_costs(traced[2:], PARAMS, "a") == {"runner-a": pytest.approx(120.0)}


def test_device_timed_cases_get_no_host_cost_and_a_lone_family_gets_none():
    device = cases.DEVICE
    traced = [_traced("d", "dev", 10.0, 12.0, device), _traced("a", "a", 10.0, 50.0)]
    host = scoring.scored_host_us(traced, PARAMS)
    assert host == {"d": 0.0, "a": 0.0}
    assert traced[0].measured_ms(PARAMS, 99.0) == pytest.approx(0.010)


def test_a_host_cost_is_never_negative():
    traced = [_traced("a", "a", 10.0, 50.0), _traced("b", "b", 50.0, 40.0)]
    assert scoring.host_costs(traced, PARAMS, "a") == {"runner-a": 0.0}


def test_the_scoreboard_declares_host_timing_with_its_evidence():
    board = [c for c in cases.CASES if c.family.startswith("scoreboard")]
    assert board and all(c.timing.host for c in board)
    assert all("nkipy PR 22" in c.timing.evidence for c in board)
    assert not any(c.timing.host for c in cases.CASES if not c.family.startswith("scoreboard"))
