"""How good the NKI knob proposer is on `sim`, against random sampling and a large enumeration.

For a workload (default ir/matmul, 2048³ bf16), three searches are scored by
the simulator's MFU estimate (trace-only mode: the numerics gate is the same
for every valid state and is checked by the tests):

- kernelopt: `NkiKnobProposer`, fed back with keep/discard decisions as the
  runner makes them on a deterministic device;
- random: joint samples (`kernelopt.ir.sample`) at the same budget;
- reference: the best of a large random enumeration (`--reference` states),
  standing in for exhaustive search, which is out of reach at this size.

    python benchmarks/tuning.py [--workload ir/matmul/workload.py] [--budgets 50 200]
                                [--reference 1500] [--seed 0]

Goal: >= 95 % of the reference best within 200 candidates, and ahead of
random at equal budget.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from kernelopt.ir import ir_for_workload, knob_signature, render_ir, sample  # noqa: E402
from kernelopt.ir.footprint import fits  # noqa: E402
from kernelopt.ir.mac import compute_mac_count  # noqa: E402
from kernelopt.proposers.base import Observation, ProposerState  # noqa: E402
from kernelopt.proposers.nki import NkiKnobProposer  # noqa: E402
from kernelopt.sim import SimError, run_kernel  # noqa: E402
from kernelopt.workload import load_workload, make_inputs  # noqa: E402


class Scorer:
    """MFU of a kernel source on sim, cached by source text."""

    def __init__(self, workload) -> None:
        self.inputs = make_inputs(workload.input_specs, 0)
        self.macs = compute_mac_count(workload.f_nkigym, workload.input_specs)
        self.cache: dict[str, float | None] = {}
        self.dir = Path(tempfile.mkdtemp(prefix="kernelopt-tuning-"))
        self.count = 0

    def __call__(self, source: str) -> float | None:
        if source not in self.cache:
            self.count += 1
            path = self.dir / f"k{self.count}.py"
            path.write_text(source)
            try:
                run = run_kernel(path, self.inputs, compute=False, mac_count=self.macs)
                self.cache[source] = float(run.profile["mfu_estimated_percent"])
            except SimError:  # capacity and the like: a failed candidate
                self.cache[source] = None
        return self.cache[source]


def proposer_search(workload, scorer: Scorer, budget: int, seed: int) -> list[float]:
    """Best-so-far after each candidate, with the runner's keep rule (deterministic)."""
    proposer = NkiKnobProposer(workload, seed=seed)
    base_ir = ir_for_workload(workload)
    best = scorer(render_ir(base_ir))
    best_knobs = None
    tried: set[str] = set()
    history: list[Observation] = []
    curve: list[float] = []
    while len(curve) < budget:
        state = ProposerState(
            best_metric=best,
            best_knobs=best_knobs,
            better="higher",
            history=tuple(history),
            tried=frozenset(tried),
            seed=seed,
        )
        batch = proposer.propose(state)
        if not batch:
            break
        for cand in batch:
            if len(curve) >= budget:
                break
            source = next(text for path, text in cand.files.items() if path.endswith(".py"))
            mfu = scorer(source)
            kept = mfu is not None and (best is None or mfu > best)
            verdict = "keep" if kept else ("failed" if mfu is None else "regression")
            if kept:
                best, best_knobs = mfu, cand.knobs
            tried.add(cand.signature or "")
            obs = Observation(len(curve) + 1, "knob", verdict, mfu, cand.knobs, cand.signature)
            history.append(obs)
            proposer.observe([obs])
            curve.append(best or 0.0)
    return curve


def random_search(
    workload, scorer: Scorer, budget: int, seed: int, *, fit_only: bool = False
) -> list[float]:
    base_ir = ir_for_workload(workload)
    rng = random.Random(seed)
    best = scorer(render_ir(base_ir)) or 0.0
    seen: set[str] = set()
    curve: list[float] = []
    misses = 0
    while len(curve) < budget and misses < 50 * budget:
        ir = sample(base_ir, rng)
        sig = knob_signature(ir)
        if sig in seen or (fit_only and not fits(ir)):
            misses += 1
            continue
        seen.add(sig)
        mfu = scorer(render_ir(ir))
        if mfu is not None and mfu > best:
            best = mfu
        curve.append(best)
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workload", default="ir/matmul/workload.py")
    parser.add_argument("--budgets", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--reference", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    workload = load_workload(args.workload)
    scorer = Scorer(workload)
    top = max(args.budgets)
    t0 = time.monotonic()
    ours = proposer_search(workload, scorer, top, args.seed)
    t1 = time.monotonic()
    rand = random_search(workload, scorer, top, args.seed + 1)
    t2 = time.monotonic()
    reference = random_search(workload, scorer, args.reference, args.seed + 2, fit_only=True)
    t3 = time.monotonic()
    ref_best = max(reference[-1], max(ours), max(rand))

    def at(curve: list[float], n: int) -> float:
        return curve[min(n, len(curve)) - 1] if curve else 0.0

    rows = []
    for n in args.budgets:
        rows.append(
            {"budget": n, "kernelopt": at(ours, n), "random": at(rand, n), "reference": ref_best}
        )
    if args.json:
        print(json.dumps(rows))
        return
    print(
        f"workload {args.workload}; sim MFU (%), best after N candidates; reference = best of "
        f"{len(reference)} fitting random states and both searches"
    )
    print(
        f"{'N':>5} {'kernelopt':>10} {'random':>8} {'reference':>10} {'kernelopt/ref':>14} {'random/ref':>11}"
    )
    for r in rows:
        print(
            f"{r['budget']:>5} {r['kernelopt']:>10.2f} {r['random']:>8.2f} {r['reference']:>10.2f} "
            f"{r['kernelopt'] / r['reference']:>13.1%} {r['random'] / r['reference']:>10.1%}"
        )
    print(
        f"time: kernelopt {t1 - t0:.1f}s, random {t2 - t1:.1f}s, reference {t3 - t2:.1f}s "
        f"({scorer.count} distinct kernels simulated)"
    )
    print("goal: kernelopt >= 95% of reference within 200 candidates, and ahead of random")


if __name__ == "__main__":
    main()
