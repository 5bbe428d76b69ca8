"""Screening on the fake Trn2 device: device measurements saved, and the model corrected.

    python benchmarks/screening.py [--workload ir/matmul_gelu/workload.py] [--seeds 0 1 2 3 4]
                                   [--budget 60] [--pool 16] [--top 1] [--refresh 10]

The "device" is the fake Trn2 device (kernelopt/testing/fake_trn2/hardware.py):
it times a kernel's instruction stream with a timing model of its own
(timing.py beside it: mechanisms kernelopt's cost model does not have), plus
seeded measurement noise; the screening model is the simulator as it stands,
refitted to the measurements as the run goes. Each kernel is traced once
(trace-only: every knob state renders a correct kernel, which the tests
check), then timed by the device and estimated by the model under any
parameter set. The fit moves the model's named parameters; it cannot make
the model's structure the device's, so its held-out error need not fall.

Per seed, with the same proposer (NkiKnobProposer, same seed) and the
runner's keep rule on the noisy measurement:

- without screening: every candidate is measured, up to --budget;
- with screening: each round --pool candidates are estimated on sim and the
  --top best measured; every --refresh measurements the model's named
  parameters are refitted to the (kernel, measurement) pairs so far.

Printed: device measurements each needs to reach within 1 % of the best
device MFU either search finds (median ratio over seeds), and the sim-vs-device
error (mean absolute MFU, pp) on 40 held-out knob states after fitting to the
first 0, 10, 20 and 40 measurements of the screened search (per seed, then
the mean over seeds).

Printed with it: whether the error is halved within 20 measurements.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from kernelopt.ir import ir_for_workload, render_ir, sample  # noqa: E402
from kernelopt.ir.knobs_io import knobs_to_json  # noqa: E402
from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations  # noqa: E402
from kernelopt.proposers.base import Candidate, Observation, ProposerState  # noqa: E402
from kernelopt.proposers.nki import NkiKnobProposer  # noqa: E402
from kernelopt.proposers.screen import Screen, ScreeningProposer, ScreenLog  # noqa: E402
from kernelopt.sim import DEFAULT_PARAMS, SimError, Trn2Params  # noqa: E402
from kernelopt.sim.calibrate import FITTED, Traced, fit, sensitive, trace_kernel  # noqa: E402
from kernelopt.testing.fake_trn2 import hardware  # noqa: E402
from kernelopt.workload import load_workload  # noqa: E402

CHECKPOINTS = (0, 10, 20, 40)
HELD_OUT = 40


class Bench:
    """Kernels traced once; their device MFU (true and measured) and sim estimates."""

    def __init__(self, workload_path: Path, noise_pp: float) -> None:
        self.path = workload_path
        self.workload = load_workload(workload_path, require=("f_numpy", "INPUT_SPECS"))
        self.noise_pp = noise_pp
        self.dir = Path(tempfile.mkdtemp(prefix="kernelopt-screening-"))
        self.traced: dict[str, Traced | None] = {}
        self.device: dict[str, float | None] = {}

    def trace(self, source: str) -> Traced | None:
        if source not in self.traced:
            path = self.dir / f"k{len(self.traced)}.py"
            path.write_text(source)
            try:
                self.traced[source] = trace_kernel(0, 0.0, path, self.workload, None, ())
            except SimError:  # capacity and the like: a failed candidate
                self.traced[source] = None
        return self.traced[source]

    def true_mfu(self, source: str) -> float | None:
        """The device's MFU without noise (its own timing of the kernel's trace)."""
        if source not in self.device:
            traced = self.trace(source)
            self.device[source] = hardware.traced_mfu(traced) if traced else None
        return self.device[source]

    def measured(self, source: str, seed: int, n: int) -> float | None:
        true = self.true_mfu(source)
        if true is None:
            return None
        key = f"{seed}:{n}:{hashlib.sha1(source.encode()).hexdigest()}"
        factor = hardware.noise({"mfu_estimated_percent": true}, self.noise_pp, key, 1)[0]
        return true / factor  # the noise stretches the time

    def estimate(self, source: str, params: Trn2Params) -> dict:
        traced = self.trace(source)
        if traced is None:
            return {"status": "failed", "estimate": None, "error": "sim", "profile": {}}
        return {"status": "ok", "estimate": traced.mfu(params), "error": "", "profile": {}}


def _source(candidate: Candidate) -> str:
    return next(text for path, text in candidate.files.items() if path.endswith(".py"))


def search(bench: Bench, seed: int, budget: int, screen: tuple[int, int, int] | None) -> list:
    """(source, true MFU, measured MFU) of each device measurement, in order."""
    base_ir = ir_for_workload(bench.path)
    baseline = render_ir(base_ir)
    # As `kernelopt run` builds it: the baseline's kernel and knob state known.
    inner = NkiKnobProposer(
        bench.path, seed=seed, baseline_kernel=baseline, baseline_knobs=knobs_to_json(base_ir)
    )
    proposer = inner
    params = [DEFAULT_PARAMS]
    if screen is not None:
        pool, top, _ = screen
        log = ScreenLog(bench.dir / f"screen-{seed}-{time.monotonic_ns()}.jsonl")
        cfg = Screen(pool, top, "higher", log, _source)
        proposer = ScreeningProposer(
            inner, cfg, lambda sources: [bench.estimate(s, params[0]) for s in sources]
        )
    measured = [(baseline, bench.true_mfu(baseline), bench.measured(baseline, seed, 0))]
    best, best_knobs = measured[0][2], None
    history = [Observation(0, "knob", "baseline", best, None, None)]
    while len(measured) < budget:
        state = ProposerState(best, best_knobs, "higher", tuple(history), seed=seed)
        tried = frozenset(o.signature for o in history if o.signature)
        state = dataclasses.replace(state, tried=tried)
        batch = proposer.propose(state)
        if not batch:
            break
        for cand in batch[: budget - len(measured)]:
            source = _source(cand)
            mfu = bench.measured(source, seed, len(measured))
            measured.append((source, bench.true_mfu(source), mfu))
            kept = mfu is not None and (best is None or mfu > best)
            if kept:
                best, best_knobs = mfu, cand.knobs
            verdict = "keep" if kept else ("failed" if mfu is None else "regression")
            obs = Observation(len(measured), "knob", verdict, mfu, cand.knobs, cand.signature)
            history.append(obs)
            proposer.observe([obs])
            if screen is not None and len(measured) % screen[2] == 0:
                params[0] = refit(bench, measured)
    return measured


def refit(bench: Bench, measured: list, base: Trn2Params = DEFAULT_PARAMS) -> Trn2Params:
    """The model's named parameters fitted to the measurements so far (base with none)."""
    pairs = [
        dataclasses.replace(bench.trace(s), measured=m)
        for s, _, m in measured
        if m is not None and bench.trace(s) is not None
    ]
    if not pairs:
        return base
    return fit(pairs, base, sensitive(pairs, base, FITTED))


def reached(measured: list, target: float) -> int | None:
    """Device measurements until one within 1 % of ``target`` (None: never)."""
    for i, (_, true, _) in enumerate(measured):
        if true is not None and true >= 0.99 * target:
            return i + 1
    return None


def held_out(bench: Bench, count: int) -> list[str]:
    base = ir_for_workload(bench.path)
    variants = [ir for _, ir in enumerate_rewrite_combinations(base, list(REWRITES.values()))]
    rng, sources = random.Random(1_000_003), []
    for _ in range(count * 20):
        source = render_ir(sample(rng.choice(variants), rng))
        if source not in sources and bench.trace(source) is not None:
            sources.append(source)
        if len(sources) == count:
            break
    return sources


def calibration_errors(bench: Bench, measured: list, tests: list[str]) -> dict[int, float]:
    errors = {}
    for n in CHECKPOINTS:
        params = refit(bench, measured[:n]) if n else DEFAULT_PARAMS
        gaps = [abs(bench.trace(s).mfu(params) - bench.true_mfu(s)) for s in tests]
        errors[n] = statistics.mean(gaps)
    return errors


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="example: python benchmarks/screening.py --seeds 0 1 --budget 60",
    )
    ap.add_argument("--workload", default="ir/matmul_gelu/workload.py")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--pool", type=int, default=16)
    ap.add_argument("--top", type=int, default=1)
    ap.add_argument("--refresh", type=int, default=10)
    ap.add_argument("--noise-pp", type=float, default=0.3)
    args = ap.parse_args()
    bench = Bench(Path(args.workload), args.noise_pp)
    tests = held_out(bench, HELD_OUT)
    ratios, errors = [], []
    print(f"workload {args.workload}: pool {args.pool}, top {args.top}, budget {args.budget}")
    for seed in args.seeds:
        started = time.monotonic()
        plain = search(bench, seed, args.budget, None)
        screened = search(bench, seed, args.budget, (args.pool, args.top, args.refresh))
        target = max(t for _, t, _ in plain + screened if t is not None)
        n_plain, n_screened = reached(plain, target), reached(screened, target)
        ratio = (n_plain or args.budget + 1) / (n_screened or args.budget + 1)
        ratios.append(ratio)
        errors.append(calibration_errors(bench, screened, tests))
        print(
            f"seed {seed}: best device MFU {target:.2f}; measurements to within 1 %: "
            f"without screening {n_plain or f'>{args.budget}'}, with {n_screened or f'>{args.budget}'} "
            f"({ratio:.1f}x); held-out error after "
            + ", ".join(f"{n}: {errors[-1][n]:.2f}" for n in CHECKPOINTS)
            + f" pp; {time.monotonic() - started:.0f} s"
        )
    print(f"median measurements saved: {statistics.median(ratios):.1f}x")
    for n in CHECKPOINTS:
        mean = statistics.mean(e[n] for e in errors)
        print(f"calibration error after {n:>2} measurements: {mean:.2f} pp MFU (held-out)")
    halved = statistics.mean(e[20] for e in errors) <= statistics.mean(e[0] for e in errors) / 2
    print(f"error halved within 20 measurements: {'yes' if halved else 'no'}")


if __name__ == "__main__":
    main()
