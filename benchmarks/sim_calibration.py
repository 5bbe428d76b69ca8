"""How well the simulator times kernels the way Trainium2 and Trainium1 do.

    python benchmarks/sim_calibration.py                 # every case, both chips, LOFO
    python benchmarks/sim_calibration.py rung2 silu      # cases whose name contains a word
    python benchmarks/sim_calibration.py --chip trn1     # one chip
    python benchmarks/sim_calibration.py --no-lofo       # skip the leave-one-family-out fits
    python benchmarks/sim_calibration.py --search scoreboard  # re-pick searched kernel arguments

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
  that the model orders the other way, and how many of those pairs are two
  versions of one kernel (one family: a ladder is judged within itself);
- the per-engine active-time error (pp) where the source gives it;
- the public kernels that do not compile (``FAILURES`` in cases.py): the
  simulator must refuse each with the same reason;
- for sources timed from the host (``Timing.host`` in cases.py), the host's
  per-execution cost: added to the simulated time before scoring, estimated
  per runner from the runner's other families (``sim_calibration_scoring``);
- with ``--search``, for cases whose source tuned kernel arguments it does
  not publish (``Case.search``), the alternative the model times fastest,
  and whether ``cases.py`` still records that pick (it times the recorded one
  otherwise: the search traces every alternative, ~5x slower);
- leave-one-family-out: for each family, the chip's fitted parameters
  (``LOFO_FITTED``) are fitted on every other family (mean |log time
  ratio|) and the family left out is scored with them, as time error (%) and
  MFU error (pp), per family and on average. A change that helps the suite
  but hurts these held-out figures fits the suite, not the chip.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import itertools
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from sim_calibration_scoring import Traced, host_costs, lofo, scored_host_us

from kernelopt.sim import SimError, run_kernel
from kernelopt.sim.chips import chip_params
from kernelopt.sim.compiler import compiler_options
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


def trace_case(case: Any, search: bool = False) -> Traced:
    """Trace a case with its recorded kernel arguments; with ``search``, a case with
    ``search`` alternatives is traced with each and the one the model times fastest at
    the chip's default parameters is kept (the source's tuner reported its fastest)."""
    if not (search and case.search):
        return _trace(case, case.kernel_kwargs)
    started = time.perf_counter()
    params = chip_params(case.chip)
    best: Traced | None = None
    for alternative in case.search:
        try:
            traced = _trace(case, {**case.kernel_kwargs, **alternative})
        except SimError:  # the tuner skips what does not compile (out of SBUF)
            continue
        if best is None or traced.device_ms(params) < best.device_ms(params):
            best = traced
    if best is None:
        raise SimError(f"{case.label}: no searched alternative compiles")
    return dataclasses.replace(best, wall_s=time.perf_counter() - started)


def report_search(traced: Sequence[Traced]) -> None:
    """The searched cases' picks against the arguments cases.py records."""
    stale = 0
    for t in traced:
        if not t.case.search:
            continue
        keys = sorted({k for alternative in t.case.search for k in alternative})
        picked = {k: t.kernel_kwargs.get(k) for k in keys}
        recorded = {k: t.case.kernel_kwargs.get(k) for k in keys}
        stale += picked != recorded
        note = "" if picked == recorded else f"  (cases.py records {recorded})"
        print(f"  search {t.case.label}: {picked}{note}")
    print(f"search_stale_picks: {stale}")


def _trace(case: Any, kernel_kwargs: dict[str, Any]) -> Traced:
    workload = load_workload(HERE / case.workload, require=("f_numpy", "INPUT_SPECS"))
    shapes = case.shapes or {}
    # Trace-only: zeros of the right dtype are enough (and cost no memory).
    inputs = {
        name: np.zeros(shapes.get(name, shape), numpy_dtype(dtype))
        for name, (shape, dtype) in workload.input_specs.items()
    }
    kwargs = {**(getattr(workload.module, "KERNEL_KWARGS", None) or {}), **kernel_kwargs}
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
        kernel_kwargs=kwargs,
    )


def report_failures(chip: str, failures: Sequence[Any]) -> None:
    """Public kernels that do not compile: the simulator must refuse each one too."""
    for failure in failures:
        workload = load_workload(HERE / failure.workload, require=("f_numpy", "INPUT_SPECS"))
        inputs = {
            name: np.zeros(shape, numpy_dtype(dtype))
            for name, (shape, dtype) in workload.input_specs.items()
        }
        try:
            run_kernel(
                HERE / failure.kernel,
                inputs,
                compute=False,
                params=chip_params(chip),
                kernel_kwargs=failure.kernel_kwargs,
            )
            verdict = "RUNS (the hardware's compiler refused it)"
        except SimError as error:
            refused = re.search(failure.message, str(error)) is not None
            verdict = "refused, as on hardware" if refused else f"refused otherwise: {error}"
        print(f"{chip}_fails_to_compile {failure.name}: {verdict}")


def report_chip(chip: str, traced: list[Traced], with_lofo: bool) -> None:
    params = chip_params(chip)
    host = scored_host_us(traced, params)
    print(f"\nchip: {chip}")
    print(
        f"{'kernel':<32} {'family':<16} {'measured':>10} {'sim':>10} {'error':>8}"
        f"  {'engines sim/measured (active %)':<40} wall_s"
    )
    mfu_names, mfu_meas, mfu_sim, mfu_err = [], [], [], []
    lat_names, lat_meas, lat_sim, lat_err = [], [], [], []
    engine_err: list[float] = []
    for t in traced:
        p, case, host_us = t.profile(params), t.case, host[t.case.label]
        unit, err = t.error(params, host_us)
        sim_ms = t.measured_ms(params, host_us)
        if unit == "pp":
            mfu = t.mfu(params, host_us)
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
        for slow, fast in wrong:
            print(f"  measured {slow} slower than {fast}, simulated the other way")
        # A ladder (versions of one kernel, one family) is judged within itself.
        family = {t.case.label: t.case.family for t in traced}
        within = [(a, b) for a, b in wrong if family[a] == family[b]]
        print(f"{chip}_latency_misordered_pairs_10pct_within_a_family: {len(within)}")
    _report_host_costs(chip, traced, params)
    if engine_err:
        print(f"{chip}_engine_active_mean_abs_error_pp: {np.mean(np.abs(engine_err)):.1f}")
        print(f"{chip}_engine_active_mean_error_pp: {np.mean(engine_err):+.1f}")
    if with_lofo and len({t.case.family for t in traced}) > 1:
        _report_lofo(chip, traced, params)


def _report_host_costs(chip: str, traced: list[Traced], params: Any) -> None:
    """Per host-timed family: the host cost it was scored with (from its runner's
    other families) and its own median gap, which that estimate must predict."""
    for family in sorted({t.case.family for t in traced if t.case.timing.host}):
        own = [t for t in traced if t.case.family == family and t.case.measured_ms is not None]
        runner = own[0].case.timing.runner
        estimate = host_costs(traced, params, family).get(runner)
        gap = np.median([1e3 * (t.case.measured_ms - t.device_ms(params)) for t in own])
        shown = "none (no other family)" if estimate is None else f"{estimate:.1f}"
        print(f"{chip}_{family}_host_us_scored: {shown}")
        print(f"{chip}_{family}_median_measured_minus_device_us: {gap:.1f}")


def _report_lofo(chip: str, traced: list[Traced], params: Any) -> None:
    names = LOFO_FITTED[chip]
    print(f"{chip}_lofo_fitted: {', '.join(names)}")
    print(f"{'  left out':<20} {'time %':>8} {'held-out':>9} {'MFU pp':>8} {'held-out':>9}")
    folds = lofo(traced, params, names)
    for f in folds:
        mfu = "" if f.mfu_default is None else f"{f.mfu_default:>8.2f} {f.mfu_held_out:>9.2f}"
        print(f"  {f.family:<18} {f.time_default:>7.1f}% {f.time_held_out:>8.1f}% {mfu}")
    print(
        f"{chip}_lofo_mean_time_error_default_percent: {np.mean([f.time_default for f in folds]):.1f}"
    )
    print(
        f"{chip}_lofo_mean_time_error_held_out_percent: "
        f"{np.mean([f.time_held_out for f in folds]):.1f}"
    )
    mfu_folds = [f for f in folds if f.mfu_default is not None]
    if mfu_folds:
        print(
            f"{chip}_lofo_mean_mfu_error_default_pp: "
            f"{np.mean([f.mfu_default for f in mfu_folds]):.2f}"
        )
        print(
            f"{chip}_lofo_mean_mfu_error_held_out_pp: "
            f"{np.mean([f.mfu_held_out for f in mfu_folds]):.2f}"
        )


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="example: python benchmarks/sim_calibration.py --chip trn2 --no-lofo rung",
    )
    parser.add_argument("words", nargs="*", help="only the cases whose name contains a word")
    parser.add_argument("--chip", choices=("trn2", "trn1"), help="one chip (default: both)")
    parser.add_argument("--no-lofo", action="store_true", help="skip the leave-one-family-out fits")
    parser.add_argument(
        "--search", action="store_true", help="re-pick searched kernel arguments (~5x slower)"
    )
    opts = parser.parse_args(list(argv))
    with_lofo, search, words = not opts.no_lofo, opts.search, opts.words
    chips = (opts.chip,) if opts.chip else ("trn2", "trn1")
    cases = [
        c
        for c in load_cases().CASES
        if c.chip in chips and (not words or any(w in c.label for w in words))
    ]
    failures = [
        f
        for f in load_cases().FAILURES
        if f.chip in chips and (not words or any(w in f.name for w in words))
    ]
    print("benchmark: sim calibration against public Trn2 and Trn1 measurements")
    for chip in chips:
        traced = [trace_case(c, search) for c in cases if c.chip == chip]
        if traced:
            report_chip(chip, traced, with_lofo)
            if search:
                report_search(traced)
        report_failures(chip, [f for f in failures if f.chip == chip])


if __name__ == "__main__":
    main(sys.argv[1:])
