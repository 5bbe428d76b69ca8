"""Survey of the knob space: per-size time for every setting, and run-to-run noise.

Runs ``bench.py`` as a tuning run would (a fresh process per measurement) for
every BLOCK x ORDER setting, then repeats one setting to measure the noise of
the fastest repeat (``time_us``, the program's metric) and of the median
repeat (``median_us``).

    python ir/cpu_stencil/survey.py [--runs 2] [--noise-runs 10] [--noise-knobs 64,rows]
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
Setting = tuple[int, str]


def run_bench(block: int, order: str) -> dict[int, dict[str, float]]:
    """One bench.py process with the given knobs: {n: {column: value}}."""
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
        return {
            int(r["n"]): {"time_us": float(r["time_us"]), "median_us": float(r["median_us"])}
            for r in csv.DictReader(rows)
        }


def survey(runs: int) -> dict[Setting, dict[int, float]]:
    table: dict[Setting, dict[int, float]] = {}
    for block, order in itertools.product(BLOCKS, ORDERS):
        samples = [run_bench(block, order) for _ in range(runs)]
        table[block, order] = {n: min(s[n]["time_us"] for s in samples) for n in samples[0]}
        cells = "  ".join(f"n={n}:{t:9.1f}" for n, t in table[block, order].items())
        print(f"BLOCK={block:<4} ORDER={order:<5} {cells}", flush=True)
    return table


def report_spread(table: dict[Setting, dict[int, float]], sizes: list[int]) -> None:
    print("\nper size: best and worst setting (time_us)")
    for n in sizes:
        ranked = sorted(table, key=lambda k: table[k][n])
        best, worst = ranked[0], ranked[-1]
        print(
            f"n={n}: best {best} {table[best][n]:.1f}  worst {worst} {table[worst][n]:.1f}  "
            f"spread x{table[worst][n] / table[best][n]:.1f}"
        )
    print("\nsingle-knob changes that help one size and hurt another (>5% each way)")
    diverging = []
    for start, other in itertools.permutations(table, 2):
        if start[0] != other[0] and start[1] != other[1]:
            continue
        change = {n: table[other][n] / table[start][n] - 1 for n in sizes}
        helped, hurt = min(change.values()), max(change.values())
        if helped < -0.05 and hurt > 0.05:
            diverging.append((min(-helped, hurt), start, other, change))
    diverging.sort(reverse=True)
    print(f"{len(diverging)} of {len(table) * (len(BLOCKS) + len(ORDERS) - 2)}; strongest:")
    for _, start, other, change in diverging[:6]:
        cells = ", ".join(f"n={n} {c:+.0%}" for n, c in change.items())
        print(f"  {start} -> {other}: {cells}")


def report_noise(setting: Setting, runs: int, sizes: list[int]) -> None:
    samples = [run_bench(*setting) for _ in range(runs)]
    print(f"\nnoise over {runs} runs of BLOCK={setting[0]} ORDER={setting[1]} (stdev / mean)")
    for column in ("time_us", "median_us"):
        cells = []
        for n in sizes:
            values = [s[n][column] for s in samples]
            cells.append(f"n={n} {statistics.stdev(values) / statistics.fmean(values):.1%}")
        means = [statistics.fmean(s[n][column] for n in sizes) for s in samples]
        overall = statistics.stdev(means) / statistics.fmean(means)
        print(f"{column:8} {'  '.join(cells)}  mean over sizes {overall:.1%}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2, help="bench runs per setting (min kept)")
    parser.add_argument("--noise-runs", type=int, default=10)
    parser.add_argument("--noise-knobs", default="64,rows", help="BLOCK,ORDER")
    parser.add_argument("--noise-only", action="store_true")
    args = parser.parse_args()
    block, order = args.noise_knobs.split(",")
    sizes = sorted(run_bench(int(block), order))
    if not args.noise_only:
        report_spread(survey(args.runs), sizes)
    report_noise((int(block), order), args.noise_runs, sizes)


if __name__ == "__main__":
    main()
