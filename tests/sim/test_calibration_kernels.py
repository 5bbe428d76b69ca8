"""The calibration kernels compute what their workloads say, at smaller shapes.

benchmarks/sim_calibration.py times them trace-only at the measured shapes;
this checks their numbers against f_numpy (every kernel derives its loop
counts from the input shapes).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from benchmarks_support.modules import load_module

from kernelopt.sim import SimError, check_kernel, run_kernel
from kernelopt.sim.chips import chip_params
from kernelopt.workload import load_workload, numpy_dtype

CALIBRATION = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration"


MODULE = load_module("kernelopt_calibration_cases", CALIBRATION / "cases.py")
CASES = MODULE.CASES


def test_every_calibration_kernel_has_a_case():
    kernels = {p.name for p in CALIBRATION.glob("*.py")} - {"case_types.py"}
    kernels = {k for k in kernels if not k.startswith(("workload_", "cases"))}
    assert kernels == {c.kernel for c in CASES}
    assert {f.kernel for f in MODULE.FAILURES} <= kernels


@pytest.mark.parametrize("failure", MODULE.FAILURES, ids=lambda f: f.name)
def test_a_kernel_that_does_not_compile_fails_on_the_simulator_too(failure):
    # At the measured shape: capacity failures depend on it (3 MiB of PSUM at 2048^3).
    workload = load_workload(CALIBRATION / failure.workload, require=("f_numpy", "INPUT_SPECS"))
    inputs = {
        name: np.zeros(shape, numpy_dtype(dtype))
        for name, (shape, dtype) in workload.input_specs.items()
    }
    with pytest.raises(SimError, match=failure.message):
        run_kernel(
            CALIBRATION / failure.kernel,
            inputs,
            compute=False,
            params=chip_params(failure.chip),
            kernel_kwargs=failure.kernel_kwargs,
        )
    # The same kernel at a depth that fits runs: the refusal is about capacity.
    fits = {k: v - 1 if isinstance(v, int) else v for k, v in failure.kernel_kwargs.items()}
    run_kernel(
        CALIBRATION / failure.kernel,
        inputs,
        compute=False,
        params=chip_params(failure.chip),
        kernel_kwargs=fits,
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_calibration_kernel_numerics(case):
    workload = load_workload(CALIBRATION / case.workload, require=("f_numpy", "INPUT_SPECS"))
    shapes = case.small or {name: (1024, 1024) for name in workload.input_specs}
    small = {name: (shapes[name], dtype) for name, (_, dtype) in workload.input_specs.items()}
    report = check_kernel(
        CALIBRATION / case.kernel,
        dataclasses.replace(workload, input_specs=small),
        kernel_kwargs=case.small_kwargs,
    )
    assert report.error is None, report.error
    assert report.correct
