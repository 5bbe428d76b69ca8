"""How good the NKI knob proposer is on `sim`, against random sampling and a large enumeration.

For each workload (default: the three shipped ones), three searches are scored by
the simulator's MFU estimate (trace-only mode: the numerics gate is the same
for every valid state and is checked by the tests):

- kernelopt: `NkiKnobProposer`, fed back with keep/discard decisions as the
  runner makes them on a deterministic device;
- random: joint samples (`kernelopt.ir.sample`, any rewrite variant) at the same budget;
- reference: the best of a large random enumeration (`--reference` states),
  standing in for exhaustive search, which is out of reach at this size.

    python benchmarks/tuning.py [--workload ir/matmul/workload.py ...] [--budgets 50 200]
                                [--reference 1500] [--seeds 0 1 2 3 4] [--metric roofline_percent]

Every shipped workload is scored unless --workload names some; "wins" counts
the seeds where kernelopt is at least as good as random at that budget.

With --runs, each shipped nki program is instead run as `kernelopt run` runs it,
its stop rules included, once per seed (`--seeds 3`: seeds 0..2; default 10),
and the table shows per seed the best reached, candidates used, the attempt
that reached the best, how the run ended, measured regressions and ties,
against the best known state (tuning_runs.py):

    python benchmarks/tuning.py --runs [--seeds 3] [--program matmul ...] [--trace-only]

With --runs and --workload, each named workload is instead started as a new user
would (`kernelopt init --kind nki --workload W`: a program, its first knobs
screened on sim) and run with --budget candidates (default 20), once per seed;
the table is the same, "best" the roofline % (or MFU) reached:

    python benchmarks/tuning.py --runs --workload tests/ir/llm_workloads/rmsnorm_slow.py \
        --budget 20 --seeds 10 --trace-only

--trace-only times each kernel with the simulator's cost model but without
its array math (about five times faster; the same figures), and checks the
numerics of every run's best kernel in full afterwards.

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
from kernelopt.ir.mac import compute_mac_count, roofline_work  # noqa: E402
from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations  # noqa: E402
from kernelopt.proposers.base import Observation, ProposerState  # noqa: E402
from kernelopt.proposers.nki import NkiKnobProposer  # noqa: E402
from kernelopt.sim import SimError, run_kernel  # noqa: E402
from kernelopt.sim.roofline import roofline_fields  # noqa: E402
from kernelopt.sim.trn2 import DEFAULT_PARAMS  # noqa: E402

METRIC_KEYS = {"mfu": "mfu_estimated_percent", "time": "total_time"}
from kernelopt.workload import load_workload, make_inputs  # noqa: E402


class Scorer:
    """A metric (MFU, or percent of roofline for the math's work) and the profile of a
    kernel source on sim, cached by source text."""

    def __init__(self, workload, metric: str = "mfu") -> None:
        self.inputs = make_inputs(workload.input_specs, 0)
        self.macs = compute_mac_count(workload.f_nkigym, workload.input_specs)
        self.work = roofline_work(workload.f_nkigym, workload.input_specs)
        self.key = METRIC_KEYS.get(metric, metric)
        self.cache: dict[str, tuple[float | None, dict]] = {}
        self._scratch = tempfile.TemporaryDirectory(prefix="kernelopt-tuning-")
        self.dir = Path(self._scratch.name)
        self.count = 0

    def __call__(self, source: str) -> float | None:
        return self.measure(source)[0]

    def measure(self, source: str) -> tuple[float | None, dict]:
        if source not in self.cache:
            self.count += 1
            path = self.dir / f"k{self.count}.py"
            path.write_text(source)
            try:
                run = run_kernel(path, self.inputs, compute=False, mac_count=self.macs)
                profile = {**run.profile, **roofline_fields(run.profile, self.work, DEFAULT_PARAMS)}
                self.cache[source] = (float(profile[self.key]), profile)
            except SimError:  # capacity and the like: a failed candidate
                self.cache[source] = (None, {})
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
            mfu, profile = scorer.measure(source)
            kept = mfu is not None and (best is None or mfu > best)
            verdict = "keep" if kept else ("failed" if mfu is None else "regression")
            if kept:
                best, best_knobs = mfu, cand.knobs
            tried.add(cand.signature or "")
            obs = Observation(
                len(curve) + 1, "knob", verdict, mfu, cand.knobs, cand.signature, profile
            )
            history.append(obs)
            proposer.observe([obs])
            curve.append(best or 0.0)
    return curve


def random_search(
    workload, scorer: Scorer, budget: int, seed: int, *, fit_only: bool = False
) -> list[float]:
    base_ir = ir_for_workload(workload)
    variants = [ir for _, ir in enumerate_rewrite_combinations(base_ir, list(REWRITES.values()))]
    rng = random.Random(seed)
    best = scorer(render_ir(base_ir)) or 0.0
    seen: set[str] = set()
    curve: list[float] = []
    misses = 0
    while len(curve) < budget and misses < 50 * budget:
        ir = sample(rng.choice(variants), rng)
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


SHIPPED = ("ir/matmul/workload.py", "ir/matmul_lhs_rhs/workload.py", "ir/matmul_gelu/workload.py")
REFERENCE_SEED = 1_000_003  # the enumeration is the same whatever --seeds says


def at(curve: list[float], n: int) -> float:
    return curve[min(n, len(curve)) - 1] if curve else 0.0


def score_workload(
    path: str, budgets: list[int], reference: int, seeds: list[int], metric: str = "mfu"
) -> dict:
    """Curves of both searches per seed, and the reference best over everything simulated."""
    workload = load_workload(path)
    scorer = Scorer(workload, metric)
    top = max(budgets)
    t0 = time.monotonic()
    ours = {s: proposer_search(workload, scorer, top, s) for s in seeds}
    t1 = time.monotonic()
    rand = {s: random_search(workload, scorer, top, s + 1) for s in seeds}
    t2 = time.monotonic()
    enum = random_search(workload, scorer, reference, REFERENCE_SEED, fit_only=True)
    t3 = time.monotonic()
    ref_best = max([enum[-1] if enum else 0.0] + [max(c) for c in (*ours.values(), *rand.values())])
    rows = [
        {
            "workload": path,
            "budget": n,
            "reference": ref_best,
            "kernelopt": {s: at(ours[s], n) for s in seeds},
            "random": {s: at(rand[s], n) for s in seeds},
        }
        for n in budgets
    ]
    return {
        "rows": rows,
        "enumerated": len(enum),
        "seconds": {"kernelopt": t1 - t0, "random": t2 - t1, "reference": t3 - t2},
        "simulated": scorer.count,
    }


def _spread(values: dict[int, float], ref: float) -> str:
    ratios = [v / ref for v in values.values()]
    mean = sum(ratios) / len(ratios)
    return f"{mean:>6.1%} [{min(ratios):.1%}..{max(ratios):.1%}]"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workload", dest="workloads", action="append", default=None)
    parser.add_argument("--budgets", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--reference", type=int, default=1500)
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--runs", action="store_true", help="run each shipped nki program")
    parser.add_argument("--program", dest="programs", action="append", default=None)
    parser.add_argument(
        "--budget", type=int, default=20, help="--runs --workload: candidates per run"
    )
    parser.add_argument(
        "--trace-only",
        action="store_true",
        help="--runs: time kernels without array math; each run's best is checked in full",
    )
    parser.add_argument(
        "--metric",
        default="mfu",
        help="workload mode: mfu (default) or any sim profile field, e.g. roofline_percent",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs:
        from tuning_runs import print_runs, run_programs

        # One number means that many seeds (0..N-1); several name the seeds.
        seeds = args.seeds or [10]
        seeds = list(range(seeds[0])) if len(seeds) == 1 else seeds
        if args.workloads:
            from tuning_runs import workload_runs

            results = workload_runs(
                args.workloads, seeds, args.budget, args.reference, args.trace_only
            )
        else:
            results = run_programs(seeds, args.reference, args.programs, args.trace_only)
        print(json.dumps(results, indent=1)) if args.json else print_runs(results)
        return
    args.seeds = args.seeds or [0]
    results = {
        w: score_workload(w, args.budgets, args.reference, args.seeds, args.metric)
        for w in args.workloads or SHIPPED
    }
    if args.json:
        print(json.dumps([row for r in results.values() for row in r["rows"]]))
        return
    print(
        f"sim {args.metric} (%), best after N candidates, seeds {' '.join(map(str, args.seeds))}; "
        "ratios to the reference as mean [min..max] over seeds"
    )
    for path, result in results.items():
        print(
            f"\n{path}: reference = best of {result['enumerated']} fitting random states "
            "and both searches"
        )
        print(f"{'N':>5} {'reference':>10} {'kernelopt/ref':>24} {'random/ref':>24} {'wins':>6}")
        for r in result["rows"]:
            ref = r["reference"]
            wins = sum(r["kernelopt"][s] >= r["random"][s] for s in args.seeds)
            print(
                f"{r['budget']:>5} {ref:>10.2f} {_spread(r['kernelopt'], ref):>24} "
                f"{_spread(r['random'], ref):>24} {wins:>3}/{len(args.seeds)}"
            )
        sec = result["seconds"]
        print(
            f"time: kernelopt {sec['kernelopt']:.1f}s, random {sec['random']:.1f}s, "
            f"reference {sec['reference']:.1f}s ({result['simulated']} distinct kernels simulated)"
        )
    print("\ngoal: kernelopt >= 95% of reference within 200 candidates, and ahead of random")


if __name__ == "__main__":
    main()
