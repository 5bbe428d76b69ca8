"""Benchmark for the tiled stencil: the fixed measuring side of this example.

Reads the knobs from ``knobs.json`` next to this file, runs ``kernel.stencil`` on
each grid size, checks it against an untiled reference (``err`` is the largest
absolute difference) and writes one row per size to ``results/cpu_stencil.csv``
under the tree root, then prints a ``key: value`` summary. ``time_us`` is the
fastest timed repeat: on a shared machine the slower repeats mostly measure
other processes; ``median_us`` is kept alongside for reference.

Environment (for quick checks; a tuning run uses the defaults):
  CPU_STENCIL_SIZES    comma-separated grid sizes (default 256,512,1024)
  CPU_STENCIL_REPEATS  most timed repeats per size (default 30)
  CPU_STENCIL_KNOBS    another knobs file to read instead of knobs.json
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import sys
import time
from pathlib import Path

# The stencil never calls BLAS; without this, importing numpy starts a BLAS
# thread pool that competes for the shared cores while we time.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = ROOT / "results" / "cpu_stencil.csv"
STEPS = 4
# Repeat until this much time is spent on one size (at least twice): fast
# settings get many tries at an undisturbed run, hopeless ones stay cheap.
BUDGET_PER_SIZE_S = 0.15

sys.path.insert(0, str(HERE))
from kernel import jacobi_step, stencil  # noqa: E402


def reference(grid: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        grid = jacobi_step(grid)
    return grid


def load_knobs() -> tuple[int, str]:
    path = Path(os.environ.get("CPU_STENCIL_KNOBS") or HERE / "knobs.json")
    knobs = json.loads(path.read_text())
    return int(knobs["BLOCK"]), str(knobs["ORDER"])


def measure(n: int, block: int, order: str, repeats: int) -> dict[str, object]:
    grid = np.random.default_rng(n).random((n, n), dtype=np.float32)
    expected = reference(grid, STEPS)
    result = stencil(grid, STEPS, block, order)
    err = float(np.max(np.abs(result.astype(np.float64) - expected)))
    times = []
    spent = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        stencil(grid, STEPS, block, order)
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
        if spent > BUDGET_PER_SIZE_S and len(times) >= 2:
            break
    return {
        "n": n,
        "block": block,
        "order": order,
        "time_us": round(min(times) * 1e6, 2),
        "median_us": round(statistics.median(times) * 1e6, 2),
        "err": err,
    }


def main() -> None:
    sizes = [int(s) for s in os.environ.get("CPU_STENCIL_SIZES", "256,512,1024").split(",")]
    repeats = int(os.environ.get("CPU_STENCIL_REPEATS", "30"))
    block, order = load_knobs()
    rows = [measure(n, block, order, repeats) for n in sizes]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for row in rows:
        print(
            f"n={row['n']} block={block} order={order} time_us={row['time_us']} err={row['err']:.3g}"
        )
    print(f"time_us: {statistics.fmean(float(r['time_us']) for r in rows):.2f}")
    print(f"max_err: {max(float(r['err']) for r in rows):.3g}")


if __name__ == "__main__":
    main()
