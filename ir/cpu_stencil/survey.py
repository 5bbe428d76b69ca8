"""Survey of the knob space: per-size time for every setting, and run-to-run noise.

Runs ``bench.py`` as a tuning run would (a fresh process per measurement) for
every BLOCK x ORDER setting, then repeats one setting to measure the noise.

    python ir/cpu_stencil/survey.py [--runs 2] [--noise-runs 10]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BLOCKS = (16, 32, 48, 64, 96, 128, 256, 512)
ORDERS = ("rows", "cols", "tiles")


def run_bench(block: int, order: str) -> dict[int, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"BLOCK": block, "ORDER": order}, handle)
    env = {**os.environ, "CPU_STENCIL_KNOBS": handle.name}
    try:
        subprocess.run(
            [sys.executable, str(HERE / "bench.py")],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
    finally:
        os.unlink(handle.name)
    with (ROOT / "results" / "cpu_stencil.csv").open() as rows:
        return {int(r["n"]): float(r["time_us"]) for r in csv.DictReader(rows)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--noise-runs", type=int, default=10)
    parser.add_argument("--noise-knobs", default="64,rows")
    args = parser.parse_args()

    table: dict[tuple[int, str], dict[int, float]] = {}
    for block, order in itertools.product(BLOCKS, ORDERS):
        runs = [run_bench(block, order) for _ in range(args.runs)]
        table[block, order] = {n: min(r[n] for r in runs) for n in runs[0]}
        cells = "  ".join(f"n={n}:{t:9.1f}" for n, t in table[block, order].items())
        print(f"BLOCK={block:<4} ORDER={order:<5} {cells}", flush=True)

    sizes = sorted(next(iter(table.values())))
    print("\nper size: best and worst setting (time_us)")
    for n in sizes:
        ranked = sorted(table, key=lambda k: table[k][n])
        best, worst = ranked[0], ranked[-1]
        print(
            f"n={n}: best {best} {table[best][n]:.1f}  worst {worst} {table[worst][n]:.1f}  "
            f"spread x{table[worst][n] / table[best][n]:.1f}"
        )

    block, order = args.noise_knobs.split(",")
    noise = [run_bench(int(block), order) for _ in range(args.noise_runs)]
    print(f"\nnoise over {args.noise_runs} runs of BLOCK={block} ORDER={order}")
    for n in sizes:
        values = [r[n] for r in noise]
        cv = statistics.stdev(values) / statistics.fmean(values) * 100
        print(
            f"n={n}: mean {statistics.fmean(values):.1f} us  stdev {cv:.1f}%  "
            f"range {min(values):.1f}..{max(values):.1f}"
        )
    means = [statistics.fmean(r.values()) for r in noise]
    cv = statistics.stdev(means) / statistics.fmean(means) * 100
    print(f"mean over sizes: {statistics.fmean(means):.1f} us  stdev {cv:.1f}%")
    print(json.dumps({"noise_runs": args.noise_runs}))


if __name__ == "__main__":
    main()
