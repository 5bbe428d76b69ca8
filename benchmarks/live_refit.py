"""How long one live refit of a screened run takes, by number of pairs.

    python benchmarks/live_refit.py [--workload tests/neuron/kernels/workload.py] [--pairs 10 20]

A live refit (kernelopt/proposers/live_calibration.py) is `calibrate()` on
every pair so far: a k-fold cross-validated fit plus a final one, each
rescheduling every pair's trace for every parameter set tried. Here the pairs
are knob states of the workload drawn at random, traced once, "measured" on
the fake Trn2 device's model (the simulator with its hidden parameters,
kernelopt/testing/fake_trn2/hardware.py), without noise. Printed per size:
the seconds calibrate() took and its figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from kernelopt.ir import ir_for_workload, render_ir, sample  # noqa: E402
from kernelopt.sim.calibrate import Traced, calibrate, traced_text  # noqa: E402
from kernelopt.testing.fake_trn2 import hardware  # noqa: E402


def pairs(workload: Path, count: int, seed: int = 0) -> list[Traced]:
    """``count`` distinct knob states of ``workload``, traced, with the fake device's MFU."""
    text = workload.read_text()
    base = ir_for_workload(workload)
    rng = random.Random(seed)
    device = hardware.params()
    found: list[Traced] = []
    seen: set[str] = set()
    for i in range(count * 20):
        source = render_ir(base if i == 0 else sample(base, rng))
        if source in seen:
            continue
        seen.add(source)
        traced = traced_text(len(found), 0.0, source, text, None, ())
        if traced is not None:
            found.append(dataclasses.replace(traced, measured=traced.mfu(device)))
        if len(found) == count:
            break
    return found


def timed_refits(workload: Path, sizes: list[int]) -> list[dict]:
    every = pairs(workload, max(sizes))
    rows = []
    for size in sizes:
        started = time.perf_counter()
        _, figures = calibrate(every[:size])
        rows.append({"pairs": size, "seconds": time.perf_counter() - started, **figures})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="tests/neuron/kernels/workload.py")
    ap.add_argument("--pairs", type=int, nargs="+", default=[10, 20])
    args = ap.parse_args()
    for row in timed_refits(Path(args.workload), args.pairs):
        rho = "n/a" if row["spearman"] is None else f"{row['spearman']:.2f}"
        print(
            f"{args.workload}: {row['pairs']} pairs, refit {row['seconds']:.2f} s "
            f"(error {row['error_before']:.2f} -> {row['error_after']:.2f} pp, ρ {rho})"
        )


if __name__ == "__main__":
    main()
