"""Fitting the cost model's named parameters to a run's device measurements.

Every measured attempt of a run is a pair: the kernel its commit holds, and
the MFU the device measured for it. Each kernel is traced by the simulator
once; a parameter set is then judged by rescheduling those traces (the fitted
parameters move latencies and bandwidths, not what the kernel does or where
its buffers live). Fitted are a few named Trn2Params fields, never per-kernel
factors, in log space within a factor of four of the simulator's values,
by a coordinate search.

``error_before`` is the mean absolute MFU error (percentage points) of the
simulator as it stands, ``error_after`` the same on held-out pairs of a
k-fold cross-validation (each fold predicted by a fit to the others), and
``spearman`` the rank correlation of those held-out predictions with the
device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params

FITTED = ("dma_hwdge_fixed_ns", "dma_fixed_ns", "dma_bytes_per_ns", "sync_latency_ns")
BOUND = math.log(4.0)  # each parameter stays within 4x of where it started
FOLDS = 5
MIN_PAIRS = 4


class CalibrationProblem(ValueError):
    """The run cannot be calibrated from (too few measurements, no kernel)."""


@dataclass(frozen=True)
class Traced:
    """One measured attempt: its kernel traced once, and what the device said."""

    attempt: int
    measured: float
    trace: Any
    allocations: Any
    mac_count: int | None
    fp32_inputs: bool
    in_order: bool
    # Estimates by parameter set. A fit asks again for sets it tried before (every
    # fold and the final fit start alike, and each pair is in all but one fold):
    # about 3x fewer schedules with 10 pairs, 4.7x with 20.
    _estimates: dict[Trn2Params, float] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def mfu(self, params: Trn2Params) -> float:
        if params not in self._estimates:
            self._estimates[params] = self._schedule(params)
        return self._estimates[params]

    def _schedule(self, params: Trn2Params) -> float:
        from kernelopt.sim.profile import build_profile
        from kernelopt.sim.schedule import schedule

        timeline = schedule(self.trace, self.allocations, params, in_order=self.in_order)
        profile = build_profile(
            self.trace, timeline, params, mac_count=self.mac_count, fp32_inputs=self.fp32_inputs
        )
        return float(profile.get("mfu_estimated_percent") or 0.0)


def trace_kernel(
    attempt: int,
    measured: float,
    kernel: Path,
    workload: Any,
    func: str | None,
    compiler_args: Sequence[str],
) -> Traced:
    """Run ``kernel`` once on the simulator (no array math) and keep its trace."""
    from kernelopt.sim.compiler import compiler_options
    from kernelopt.sim.runner import run_kernel
    from kernelopt.targets.nki import mac_count_of
    from kernelopt.workload import make_inputs

    inputs = make_inputs(workload.input_specs, 0)
    macs = mac_count_of(workload)
    run = run_kernel(
        kernel, inputs, func=func, compute=False, mac_count=macs, compiler_args=compiler_args
    )
    floats = [a.dtype for a in map(np.asarray, inputs.values()) if a.dtype.kind in "fV"]
    return Traced(
        attempt=attempt,
        measured=measured,
        trace=run.trace,
        allocations=run.allocations,
        mac_count=macs,
        fp32_inputs=bool(floats) and all(d.itemsize >= 4 for d in floats),
        in_order=not compiler_options(compiler_args).instruction_scheduling,
    )


def _params(base: Trn2Params, names: Sequence[str], logs: Sequence[float]) -> Trn2Params:
    import dataclasses

    values = {
        n: getattr(base, n) * math.exp(max(-BOUND, min(BOUND, x)))
        for n, x in zip(names, logs, strict=True)
    }
    return dataclasses.replace(base, **values)


def mean_error(pairs: Sequence[Traced], params: Trn2Params) -> float:
    return float(np.mean([abs(p.mfu(params) - p.measured) for p in pairs]))


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Rank correlation (average ranks for ties); None when either side is constant."""
    if len(a) < 2:
        return None

    def ranks(values: Sequence[float]) -> np.ndarray:
        order = np.argsort(values, kind="stable")
        r = np.empty(len(values))
        r[order] = np.arange(len(values), dtype=float)
        for v in set(values):  # ties share their mean rank
            same = [i for i, x in enumerate(values) if x == v]
            r[same] = r[same].mean()
        return r

    ra, rb = ranks(list(a)), ranks(list(b))
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def _minimise(objective: Callable[[np.ndarray], float], size: int) -> np.ndarray:
    """argmin over [-BOUND, BOUND]^size from 0, by coordinate search.

    One optimiser whatever else is installed, so a run calibrates to the same
    parameters on every machine (the objective is a mean absolute error: flat
    in places, with kinks, where a simplex method stalls).
    """
    return _coordinate_search(objective, np.zeros(size))


def _coordinate_search(objective: Callable[[np.ndarray], float], start: np.ndarray) -> np.ndarray:
    best, value, step = start.copy(), objective(start), BOUND / 2
    while step > 0.01:
        moved = False
        for i in range(len(best)):
            for sign in (1.0, -1.0):
                trial = best.copy()
                trial[i] = max(-BOUND, min(BOUND, trial[i] + sign * step))
                if (v := objective(trial)) < value:
                    best, value, moved = trial, v, True
        if not moved:
            step /= 2
    return best


def sensitive(pairs: Sequence[Traced], base: Trn2Params, names: Sequence[str]) -> list[str]:
    """The parameters that move some estimate at all (the others cannot be fitted)."""
    before = [p.mfu(base) for p in pairs]
    moving = []
    for name in names:
        after = [p.mfu(_params(base, [name], [math.log(2.0)])) for p in pairs]
        if any(abs(x - y) > 1e-9 for x, y in zip(before, after, strict=True)):
            moving.append(name)
    return moving


def fit(pairs: Sequence[Traced], base: Trn2Params, names: Sequence[str]) -> Trn2Params:
    if not names:
        return base
    logs = _minimise(lambda x: mean_error(pairs, _params(base, names, x)), len(names))
    return _params(base, names, logs)


def calibrate(
    pairs: Sequence[Traced], base: Trn2Params = DEFAULT_PARAMS, names: Sequence[str] = FITTED
) -> tuple[dict[str, float], dict[str, Any]]:
    """(fitted parameters, figures): a k-fold cross-validated fit, then one on every pair."""
    if len(pairs) < MIN_PAIRS:
        raise CalibrationProblem(
            f"{len(pairs)} measured attempts; calibration needs at least {MIN_PAIRS}"
        )
    names = sensitive(pairs, base, names)
    folds = min(FOLDS, len(pairs))
    predicted = [0.0] * len(pairs)
    for k in range(folds):
        train = [p for i, p in enumerate(pairs) if i % folds != k]
        params = fit(train, base, names)
        for i, p in enumerate(pairs):
            if i % folds == k:
                predicted[i] = p.mfu(params)
    measured = [p.measured for p in pairs]
    before = [p.mfu(base) for p in pairs]
    final = fit(pairs, base, names)
    figures = {
        "pairs": len(pairs),
        "folds": folds,
        "fitted": list(names),
        "error_before": float(np.mean([abs(b - m) for b, m in zip(before, measured, strict=True)])),
        "error_after": float(
            np.mean([abs(p - m) for p, m in zip(predicted, measured, strict=True)])
        ),
        "spearman_before": spearman(before, measured),
        "spearman": spearman(predicted, measured),
    }
    return {n: float(getattr(final, n)) for n in names}, figures


def traced_text(
    attempt: int,
    measured: float,
    kernel_text: str,
    workload_text: str,
    func: str | None,
    compiler_args: Sequence[str],
) -> Traced | None:
    """A pair from the texts of a kernel and its workload; None when the simulator cannot
    trace it (then it is no pair)."""
    import tempfile

    from kernelopt.sim.errors import SimError
    from kernelopt.workload import WorkloadError, load_workload

    with tempfile.TemporaryDirectory(prefix="kernelopt-calibrate-") as tmp:
        kernel, workload = Path(tmp) / "kernel.py", Path(tmp) / "workload.py"
        kernel.write_text(kernel_text)
        workload.write_text(workload_text)
        try:
            loaded = load_workload(workload, require=("f_numpy", "INPUT_SPECS"))
            return trace_kernel(attempt, measured, kernel, loaded, func, compiler_args)
        except (SimError, WorkloadError):
            return None


def run_pairs(root: Path, run_id: str) -> list[Traced]:
    """The run's measured attempts (device MFU) with their committed kernels traced."""
    from kernelopt.history import RunRepo, committed_text
    from kernelopt.session import program_for_run

    program = program_for_run(root, run_id)
    target = program.target
    if target.kind != "nki" or not target.kernel or not target.workload:
        raise CalibrationProblem(f"run {run_id} does not tune an nki kernel")
    pairs = []
    for record in RunRepo(root, run_id).load_state().attempts:
        m = record.measurement
        mfu = (m.get("metrics") or {}).get("mfu")
        if m.get("status") != "ok" or not isinstance(mfu, int | float):
            continue
        kernel = committed_text(root, record.commit, target.kernel)
        workload_text = committed_text(root, record.commit, target.workload)
        if not kernel:
            continue
        pair = traced_text(
            record.attempt,
            float(mfu),
            kernel,
            workload_text or "",
            target.func,
            program.device.neuron.compiler_args,
        )
        if pair is not None:
            pairs.append(pair)
    return pairs
