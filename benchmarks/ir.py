"""KernelIR candidate throughput: sample -> validate -> render on one core.

Each candidate is one joint draw of the three knobs (over the rewrite
variants in turn), its full validity report, and its rendered NKI source,
for the shipped 2048^3 bf16 matmul. Prints candidates per second (the goal
is at least 1,000) and the per-stage split.

    python benchmarks/ir.py [--workload ir/matmul/workload.py] [--count 3000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from kernelopt.ir import (
    REWRITES,
    enumerate_rewrite_combinations,
    ir_for_workload,
    render_ir,
    sample,
    validity_report,
)

ROOT = Path(__file__).resolve().parents[1]


def run(workload: Path, count: int, seed: int) -> tuple[float, float, float, int]:
    base = ir_for_workload(workload)
    variants = [ir for _, ir in enumerate_rewrite_combinations(base, list(REWRITES.values()))]
    rng = random.Random(seed)
    t_sample = t_validate = t_render = 0.0
    chars = 0
    for i in range(count):
        t0 = time.perf_counter()
        ir = sample(variants[i % len(variants)], rng)
        t1 = time.perf_counter()
        report = validity_report(ir)
        t2 = time.perf_counter()
        assert not report, report
        chars += len(render_ir(ir))
        t3 = time.perf_counter()
        t_sample += t1 - t0
        t_validate += t2 - t1
        t_render += t3 - t2
    return t_sample, t_validate, t_render, chars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=Path, default=ROOT / "ir/matmul/workload.py")
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    best = None
    for repeat in range(args.repeats):
        stages = run(args.workload, args.count, seed=repeat)
        total = sum(stages[:3])
        # The fastest repeat is the one least disturbed by other work on the machine.
        if best is None or total < sum(best[:3]):
            best = stages
    assert best is not None
    t_sample, t_validate, t_render, chars = best
    total = t_sample + t_validate + t_render
    print(
        f"workload: {args.workload.relative_to(ROOT) if args.workload.is_relative_to(ROOT) else args.workload}"
    )
    print(f"candidates: {args.count} (fastest of {args.repeats} repeats)")
    print(f"candidates_per_second: {args.count / total:.0f}")
    print(f"sample_us: {t_sample / args.count * 1e6:.1f}")
    print(f"validate_us: {t_validate / args.count * 1e6:.1f}")
    print(f"render_us: {t_render / args.count * 1e6:.1f}")
    print(f"mean_source_chars: {chars / args.count:.0f}")


if __name__ == "__main__":
    main()
