"""How long a `kernelopt` command takes to start, against Python importing numpy.

    python benchmarks/startup.py [--repeat 7]

An agent calls `kernelopt try` and `kernelopt status` after every edit, and
the suite calls the CLI hundreds of times, so start-up is paid constantly.
Printed: the median wall time of `kernelopt --help` and `kernelopt status
--help` (which import the whole CLI), of `python -c "import numpy"` (the
floor every command pays), and their ratio; machines differ, the ratio
less so.

Goal: a command starts within 4x of importing numpy (at 9b0e1ef it was 10x,
1.0 s, when every start loaded pandas, matplotlib and paramiko; now 3.2x).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _median_s(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "kernelopt.cli"]
    floor = _median_s([sys.executable, "-c", "import numpy"], args.repeat)
    print(f"python -c 'import numpy'   {floor:6.3f} s")
    worst = 0.0
    for extra in (["--help"], ["status", "--help"]):
        took = _median_s([*cli, *extra], args.repeat)
        worst = max(worst, took)
        print(f"kernelopt {' '.join(extra):<16} {took:6.3f} s  ({took / floor:.1f}x numpy)")
    print(f"slowest start: {worst / floor:.1f}x importing numpy (goal <= 4x)")


if __name__ == "__main__":
    main()
