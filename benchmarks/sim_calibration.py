"""How well the simulator times kernels the way Trainium2 and Trainium1 do.

    python benchmarks/sim_calibration.py                 # every case, both chips, LOFO
    python benchmarks/sim_calibration.py rung2 silu      # cases whose name contains a word
    python benchmarks/sim_calibration.py --chip trn1     # one chip
    python benchmarks/sim_calibration.py --no-lofo       # skip the leave-one-family-out fits

Runs each kernel of ``benchmarks/calibration/cases.py`` through the
simulator (trace-only: the cost model needs no numbers; the numerics of
these kernels are checked by tests/sim/test_calibration_kernels.py at
smaller shapes) on its chip's parameter set, with the compiler options and
kernel arguments it was measured with. Per chip it prints measured vs
simulated figures per kernel, then:

- Spearman's rank correlation (MFU on trn2; latency on trn1, where most
  operators do no matrix work);
- the error: percentage points of MFU for kernels with MACs, percent of
  latency for the others; pairs far apart on hardware (>= 5 pp, >= 10 %)
  that the model orders the other way;
- the per-engine active-time error (pp) where the source gives it;
- leave-one-family-out: for each family, the chip's fitted parameters
  (``LOFO_FITTED``) are fitted on every other family (mean |log time
  ratio|) and the family left out is scored with them. A change that helps
  the suite but hurts these held-out figures fits the suite, not the chip.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from kernelopt.sim import run_kernel
from kernelopt.sim.chips import chip_params
from kernelopt.sim.compiler import compiler_options
from kernelopt.sim.profile import build_profile
from kernelopt.sim.schedule import schedule
from kernelopt.sim.trn2 import Trn2Params
from kernelopt.workload import load_workload, numpy_dtype

HERE = Path(__file__).resolve().parent / "calibration"
PAIR_GAP_PP = 5.0  # MFU pairs this far apart on hardware must be ordered the same way
PAIR_GAP_RATIO = 1.10  # latency pairs this far apart likewise
ENGINES = ("tensor", "vector", "scalar", "gpsimd")
# What a leave-one-family-out fold may fit, per chip: latencies and bandwidths
# on trn2 (as `kernelopt sim calibrate` does); on trn1 also the VectorE and
# ScalarE clocks the public record does not give.
LOFO_FITTED = {
    "trn2": ("dma_hwdge_fixed_ns", "dma_bytes_per_ns", "sync_latency_ns"),
    "trn1": ("vector_clock_hz", "scalar_clock_hz", "dma_bytes_per_ns"),
}
BOUND = math.log(4.0)  # a fitted parameter stays within 4x of the chip's value
# Folds fit on traces up to this many instructions (rescheduling is ~17k
# instructions/s, and a fold tries a few dozen parameter sets); longer ones
# are still scored when their family is left out.
LOFO_FIT_MAX_INSTRUCTIONS = 25_000


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
    names: Sequence[str],
    measured: Sequence[float],
    simulated: Sequence[float],
    far: Callable[[float, float], bool] = lambda a, b: abs(a - b) >= PAIR_GAP_PP,
) -> list[tuple[str, str]]:
    """Pairs (higher on hardware, lower on hardware) that the simulator orders the other way."""
    wrong = []
    for i, j in itertools.combinations(range(len(names)), 2):
        if not far(measured[i], measured[j]):
            continue
        hi, lo = (i, j) if measured[i] > measured[j] else (j, i)
        if simulated[hi] <= simulated[lo]:
            wrong.append((names[hi], names[lo]))
    return wrong


@dataclass
class Traced:
    """One case traced once; rescheduled for every parameter set a fit tries."""

    case: Any
    trace: Any
    allocations: Any
    fp32_inputs: bool
    in_order: bool
    wall_s: float
    _profiles: dict[Trn2Params, dict[str, Any]] = field(default_factory=dict)

    def profile(self, params: Trn2Params) -> dict[str, Any]:
        if params not in self._profiles:
            timeline = schedule(self.trace, self.allocations, params, in_order=self.in_order)
            self._profiles[params] = build_profile(
                self.trace, timeline, params, mac_count=None, fp32_inputs=self.fp32_inputs
            )
        return self._profiles[params]

    def log_ratio(self, params: Trn2Params) -> float:
        """log(simulated time / measured time); MFU cases without a time use MFU."""
        p = self.profile(params)
        if self.case.measured_ms is not None:
            return math.log(p["total_time"] * 1e3 / self.case.measured_ms)
        return math.log(self.case.measured_mfu / max(p["mfu_estimated_percent"], 1e-9))


def trace_case(case: Any) -> Traced:
    workload = load_workload(HERE / case.workload, require=("f_numpy", "INPUT_SPECS"))
    shapes = case.shapes or {}
    # Trace-only: zeros of the right dtype are enough (and cost no memory).
    inputs = {
        name: np.zeros(shapes.get(name, shape), numpy_dtype(dtype))
        for name, (shape, dtype) in workload.input_specs.items()
    }
    kwargs = {**(getattr(workload.module, "KERNEL_KWARGS", None) or {}), **case.kernel_kwargs}
    started = time.perf_counter()
    run = run_kernel(
        HERE / case.kernel,
        inputs,
        compute=False,
        compiler_args=case.compiler_args,
        params=chip_params(case.chip),
        kernel_kwargs=kwargs,
    )
    floats = [a.dtype for a in inputs.values() if a.dtype.kind in "fV"]
    return Traced(
        case=case,
        trace=run.trace,
        allocations=run.allocations,
        fp32_inputs=bool(floats) and all(d.itemsize >= 4 for d in floats),
        in_order=not compiler_options(case.compiler_args).instruction_scheduling,
        wall_s=time.perf_counter() - started,
    )


def sim_mfu(t: Traced, params: Trn2Params) -> float:
    """The simulated MFU on the measured figure's terms. With a measured time too, the
    case's own FLOP count (measured MFU x measured time) over the simulated time: the
    profile's count includes the MACs of transposes done as matmuls against an
    identity, which the measured MFU does not count."""
    p = t.profile(params)
    if t.case.measured_ms is not None and t.case.measured_mfu is not None:
        return t.case.measured_mfu * t.case.measured_ms / (p["total_time"] * 1e3)
    return float(p["mfu_estimated_percent"])


def case_error(t: Traced, params: Trn2Params) -> tuple[str, float]:
    """("pp", MFU error) for kernels with MACs and an MFU figure, else ("%", latency error)."""
    p = t.profile(params)
    if t.case.measured_mfu is not None:
        return "pp", sim_mfu(t, params) - t.case.measured_mfu
    return "%", 100 * (p["total_time"] * 1e3 / t.case.measured_ms - 1)


def _fit(
    traced: Sequence[Traced], base: Trn2Params, names: Sequence[str]
) -> tuple[Trn2Params, int]:
    """Coarse coordinate search in log space (the folds share one objective)."""

    def params_at(x: np.ndarray) -> Trn2Params:
        return dataclasses.replace(
            base, **{n: getattr(base, n) * math.exp(v) for n, v in zip(names, x, strict=True)}
        )

    def objective(x: np.ndarray) -> float:
        params = params_at(x)
        return float(np.mean([abs(t.log_ratio(params)) for t in traced]))

    best, value, step, evaluations = np.zeros(len(names)), None, BOUND / 2, 0
    value = objective(best)
    while step > 0.2:
        moved = False
        for i, sign in itertools.product(range(len(names)), (1.0, -1.0)):
            trial = best.copy()
            trial[i] = max(-BOUND, min(BOUND, trial[i] + sign * step))
            evaluations += 1
            if (v := objective(trial)) < value:
                best, value, moved = trial, v, True
        if not moved:
            step /= 2
    return params_at(best), evaluations


def report_chip(chip: str, traced: list[Traced], lofo: bool) -> None:
    params = chip_params(chip)
    print(f"\nchip: {chip}")
    print(
        f"{'kernel':<32} {'family':<16} {'measured':>10} {'sim':>10} {'error':>8}"
        f"  {'engines sim/measured (active %)':<40} wall_s"
    )
    mfu_names, mfu_meas, mfu_sim, mfu_err = [], [], [], []
    lat_names, lat_meas, lat_sim, lat_err = [], [], [], []
    engine_err: list[float] = []
    for t in traced:
        p, case = t.profile(params), t.case
        unit, err = case_error(t, params)
        sim_ms = p["total_time"] * 1e3
        if unit == "pp":
            mfu = sim_mfu(t, params)
            shown = f"{case.measured_mfu:>9.1f}% {mfu:>9.1f}% {err:>+7.1f}"
            mfu_names.append(case.label)
            mfu_meas.append(case.measured_mfu)
            mfu_sim.append(mfu)
            mfu_err.append(abs(err))
        else:
            shown = f"{case.measured_ms:>8.3f}ms {sim_ms:>8.3f}ms {err:>+6.0f}%"
        if case.measured_ms is not None:
            lat_names.append(case.label)
            lat_meas.append(case.measured_ms)
            lat_sim.append(sim_ms)
            lat_err.append(abs(100 * (sim_ms / case.measured_ms - 1)))
        engines = []
        for engine in ENGINES:
            simulated = p[f"{engine}_engine_active_time_percent"]
            if engine in case.engines:
                engine_err.append(simulated - case.engines[engine])
                engines.append(f"{engine[0].upper()} {simulated:.0f}/{case.engines[engine]:.0f}")
            elif engine == "tensor":
                engines.append(f"T {simulated:.0f}")
        print(
            f"{case.label:<32} {case.family:<16} {shown}  {', '.join(engines):<40} {t.wall_s:>6.1f}"
        )
    if len(mfu_names) > 1:
        wrong = misordered(mfu_names, mfu_meas, mfu_sim)
        print(f"{chip}_mfu_cases: {len(mfu_names)}")
        print(f"{chip}_mfu_spearman_rho: {spearman(mfu_meas, mfu_sim):.3f}")
        print(f"{chip}_mfu_mean_abs_error_pp: {np.mean(mfu_err):.2f}")
        print(f"{chip}_mfu_max_abs_error_pp: {np.max(mfu_err):.2f}")
        print(f"{chip}_mfu_misordered_pairs_5pp: {len(wrong)}")
        for hi, lo in wrong:
            print(f"  measured {hi} > {lo}, simulated the other way")
    if len(lat_names) > 1:
        wrong = misordered(
            lat_names, lat_meas, lat_sim, lambda a, b: max(a, b) >= PAIR_GAP_RATIO * min(a, b)
        )
        print(f"{chip}_latency_cases: {len(lat_names)}")
        print(f"{chip}_latency_spearman_rho: {spearman(lat_meas, lat_sim):.3f}")
        print(f"{chip}_latency_median_abs_error_percent: {np.median(lat_err):.1f}")
        print(f"{chip}_latency_mean_abs_error_percent: {np.mean(lat_err):.1f}")
        print(f"{chip}_latency_misordered_pairs_10pct: {len(wrong)}")
    # What a host-timed source adds per execution: the median of measured minus
    # simulated time per family with latencies (a diagnostic; nothing is adjusted).
    for family in sorted({t.case.family for t in traced if t.case.measured_ms is not None}):
        gaps = [
            t.case.measured_ms - t.profile(params)["total_time"] * 1e3
            for t in traced
            if t.case.family == family and t.case.measured_ms is not None
        ]
        if len(gaps) > 2:
            print(f"{chip}_{family}_median_measured_minus_sim_us: {1e3 * np.median(gaps):.1f}")
    if engine_err:
        print(f"{chip}_engine_active_mean_abs_error_pp: {np.mean(np.abs(engine_err)):.1f}")
        print(f"{chip}_engine_active_mean_error_pp: {np.mean(engine_err):+.1f}")
    families = sorted({t.case.family for t in traced})
    if lofo and len(families) > 1:
        names = LOFO_FITTED[chip]
        print(f"{chip}_lofo_fitted: {', '.join(names)}")
        print(f"{'  left out':<20} {'before':>9} {'held-out':>9}  (mean |time error| %)")
        before_all, after_all = [], []
        skipped = [t.case.label for t in traced if len(t.trace) > LOFO_FIT_MAX_INSTRUCTIONS]
        if skipped:
            print(
                f"  not fitted on (> {LOFO_FIT_MAX_INSTRUCTIONS} instructions): {', '.join(skipped)}"
            )
        for family in families:
            train = [
                t
                for t in traced
                if t.case.family != family and len(t.trace) <= LOFO_FIT_MAX_INSTRUCTIONS
            ]
            test = [t for t in traced if t.case.family == family]
            fitted, _ = _fit(train, params, names)

            def err(ts: list[Traced], ps: Trn2Params) -> float:
                return float(np.mean([100 * abs(math.exp(t.log_ratio(ps)) - 1) for t in ts]))

            before, after = err(test, params), err(test, fitted)
            before_all.append(before)
            after_all.append(after)
            print(f"  {family:<18} {before:>8.1f}% {after:>8.1f}%")
        print(f"{chip}_lofo_mean_time_error_before_percent: {np.mean(before_all):.1f}")
        print(f"{chip}_lofo_mean_time_error_held_out_percent: {np.mean(after_all):.1f}")


def main(argv: Sequence[str]) -> None:
    args = list(argv)
    lofo = "--no-lofo" not in args
    chips = ("trn2", "trn1")
    if "--chip" in args:
        chips = (args[args.index("--chip") + 1],)
        del args[args.index("--chip") : args.index("--chip") + 2]
    words = [a for a in args if not a.startswith("--")]
    cases = [
        c
        for c in load_cases().CASES
        if c.chip in chips and (not words or any(w in c.label for w in words))
    ]
    print("benchmark: sim calibration against public Trn2 and Trn1 measurements")
    for chip in chips:
        traced = [trace_case(c) for c in cases if c.chip == chip]
        if traced:
            report_chip(chip, traced, lofo)


if __name__ == "__main__":
    main(sys.argv[1:])
