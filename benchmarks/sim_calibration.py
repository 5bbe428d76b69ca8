"""How well the simulator ranks kernels the way Trainium2 does.

    python benchmarks/sim_calibration.py            # every case
    python benchmarks/sim_calibration.py rung2 rung3  # cases whose file name contains a word

Runs each kernel of ``benchmarks/calibration/cases.py`` through the
simulator (trace-only: the cost model needs no numbers; the numerics of
these kernels are checked by tests/sim/test_calibration_kernels.py at
smaller shapes) with the compiler options it was measured with, and prints
measured vs simulated MFU per kernel, then Spearman's rank correlation, the
mean absolute error in percentage points and every pair of kernels whose
measured MFU differs by at least 5 pp but whose simulated MFU is ordered
the other way.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from kernelopt.sim import run_kernel
from kernelopt.workload import load_workload, numpy_dtype

HERE = Path(__file__).resolve().parent / "calibration"
PAIR_GAP_PP = 5.0  # pairs this far apart on hardware must be ordered the same way


def load_cases() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kernelopt_calibration_cases", HERE / "cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    result = np.empty(len(values))
    sorted_values = np.asarray(values)[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        result[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    ra, rb = ranks(a), ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def misordered(
    names: Sequence[str], measured: Sequence[float], simulated: Sequence[float]
) -> list[tuple[str, str]]:
    """Pairs (higher on hardware, lower on hardware) that the simulator orders the other way."""
    wrong = []
    for i, j in itertools.combinations(range(len(names)), 2):
        if abs(measured[i] - measured[j]) < PAIR_GAP_PP:
            continue
        hi, lo = (i, j) if measured[i] > measured[j] else (j, i)
        if simulated[hi] <= simulated[lo]:
            wrong.append((names[hi], names[lo]))
    return wrong


def simulate(case: object) -> tuple[dict, float]:
    workload = load_workload(HERE / case.workload, require=("f_numpy", "INPUT_SPECS"))
    # Trace-only: zeros of the right dtype are enough (and cost no memory).
    inputs = {
        name: np.zeros(shape, numpy_dtype(dtype))
        for name, (shape, dtype) in workload.input_specs.items()
    }
    started = time.perf_counter()
    run = run_kernel(HERE / case.kernel, inputs, compute=False, compiler_args=case.compiler_args)
    return run.profile, time.perf_counter() - started


def main(words: Sequence[str]) -> None:
    cases = [c for c in load_cases().CASES if not words or any(w in c.kernel for w in words)]
    names, measured, simulated = [], [], []
    print("benchmark: sim calibration against public Trn2 measurements")
    print(
        f"{'kernel':<28} {'measured':>9} {'sim':>7} {'error':>7}  {'tensor':>6} {'dma':>5}  wall_s  evidence"
    )
    for case in cases:
        profile, wall = simulate(case)
        mfu = profile["mfu_estimated_percent"]
        name = case.kernel.removesuffix(".py")
        names.append(name)
        measured.append(case.measured_mfu)
        simulated.append(mfu)
        print(
            f"{name:<28} {case.measured_mfu:>8.1f}% {mfu:>6.1f}% {mfu - case.measured_mfu:>+6.1f}  "
            f"{profile['tensor_engine_active_time_percent']:>5.1f}% {profile['dma_active_time_percent']:>4.0f}%"
            f"  {wall:>6.1f}  {case.evidence}"
        )
    errors = np.abs(np.asarray(simulated) - np.asarray(measured))
    wrong = misordered(names, measured, simulated)
    if len(cases) > 1:
        print(f"spearman_rho: {spearman(measured, simulated):.3f}")
    print(f"mean_abs_error_pp: {errors.mean():.2f}")
    print(f"max_abs_error_pp: {errors.max():.2f}")
    print(f"misordered_pairs_5pp: {len(wrong)}")
    for hi, lo in wrong:
        print(f"  measured {hi} > {lo}, simulated the other way")


if __name__ == "__main__":
    main(sys.argv[1:])
