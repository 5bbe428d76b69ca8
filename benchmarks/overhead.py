"""kernelopt's own time per candidate, against bare git doing the same bookkeeping.

A run is driven through ``Runner.try_candidate`` with a target that measures
nothing (it reads the knob file and returns a number), so what is timed is
kernelopt: the proposer's view of the run (rebuilt per candidate by the run
loop, also shown on its own as "proposer view"), writing the candidate,
committing it, the attempt ref, deciding, the note, the revert. The time spent
inside the target is subtracted anyway.
Every candidate is a tie (the same metric as BEST), the path most candidates
of a long run take. The floor is the same bookkeeping as plain git commands:
write the file, add, write-tree, commit-tree, update-ref, notes add, reset.

Both are timed with 10, 100 and 1,000 prior attempts in the run.

    python benchmarks/overhead.py            # 10, 100, 1000 prior attempts
    python benchmarks/overhead.py --quick    # 10 and 100 only
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kernelopt.loop import Runner
from kernelopt.measurement import Measurement
from kernelopt.program import load_program
from kernelopt.proposers.base import Candidate, signature_of
from kernelopt.targets.base import Target

SAMPLES = 40
PROGRAM = """---
name: overhead
target:
  kind: command
  command: "true"
  knobs: {file: knobs.json, space: {X: [0]}}
metric: {name: time, better: lower}
device: {kind: none}
decide: {max_consecutive_regressions: 1000000}
---
"""


@dataclass
class NoOpTarget(Target):
    """A deterministic target that costs nothing: every candidate measures 100."""

    deterministic: bool = True
    device: str = "none"
    spent: float = 0.0

    def measure(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        t0 = time.perf_counter()
        json.loads((tree / "knobs.json").read_text())
        result = Measurement(status="ok", metrics={"time": 100.0}, deterministic=True)
        self.spent += time.perf_counter() - t0
        return result


def git(cwd: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, input=input, capture_output=True, text=True, check=True
    ).stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Bench")
    git(path, "config", "user.email", "bench@example.com")
    (path / "knobs.json").write_text('{"X": 0}\n')
    (path / "programs").mkdir()
    (path / "programs" / "overhead.md").write_text(PROGRAM)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return path


class KerneloptSide:
    """Candidates through the real runner."""

    def __init__(self, root: Path):
        self.target = NoOpTarget()
        program = load_program(root / "programs" / "overhead.md")
        self.runner = Runner(program, root, self.target, tag="bench")
        self.runner.open()
        baseline = self.runner.ensure_baseline()
        assert baseline is not None and baseline.verdict == "baseline", baseline
        self.count = 0
        self.proposer_view: list[float] = []

    def candidate(self) -> float:
        self.count += 1
        knobs = {"X": self.count}
        candidate = Candidate(
            kind="knob",
            hypothesis=f"X -> {self.count}",
            files={"knobs.json": json.dumps(knobs) + "\n"},
            knobs=knobs,
            signature=signature_of(knobs),
        )
        spent = self.target.spent
        t0 = time.perf_counter()
        # What `kernelopt run` does per candidate: the proposer's view of the run,
        # then the candidate itself.
        self.runner.proposer_state()
        t1 = time.perf_counter()
        result = self.runner.try_candidate(candidate)
        elapsed = time.perf_counter() - t0 - (self.target.spent - spent)
        self.proposer_view.append(t1 - t0)
        assert result.verdict == "tie", result
        return elapsed


class GitFloor:
    """The same bookkeeping with bare git plumbing, nothing else."""

    def __init__(self, root: Path):
        self.root = root
        self.best = git(root, "rev-parse", "HEAD").strip()
        self.count = 0

    def candidate(self) -> float:
        self.count += 1
        n = self.count
        t0 = time.perf_counter()
        (self.root / "knobs.json").write_text(json.dumps({"X": n}) + "\n")
        git(self.root, "add", "-A")
        tree = git(self.root, "write-tree").strip()
        sha = git(self.root, "commit-tree", tree, "-p", self.best, "-m", f"attempt {n}").strip()
        git(self.root, "update-ref", f"refs/floor/attempts/{n}", sha)
        note = json.dumps({"attempt": n, "verdict": "tie", "metric": 100.0})
        git(self.root, "notes", "--ref", "floor", "add", "-f", "-F", "-", sha, input=note)
        git(self.root, "reset", "-q", "--hard", self.best)
        return time.perf_counter() - t0


def timed(candidate: Callable[[], float], samples: int) -> list[float]:
    return [candidate() for _ in range(samples)]


def grow(candidate: Callable[[], float], side_count: Callable[[], int], to: int) -> None:
    while side_count() < to:
        candidate()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only 10 and 100 prior attempts")
    parser.add_argument("--samples", type=int, default=SAMPLES, help="candidates timed per size")
    args = parser.parse_args()
    sizes = (10, 100) if args.quick else (10, 100, 1000)

    with tempfile.TemporaryDirectory() as tmp:
        ours = KerneloptSide(make_repo(Path(tmp) / "kernelopt"))
        floor = GitFloor(make_repo(Path(tmp) / "floor"))
        rows = []
        for size in sizes:
            grow(ours.candidate, lambda: ours.count, size)
            grow(floor.candidate, lambda: floor.count, size)
            # Interleaved so that both sides see the same machine load.
            mine, base = [], []
            ours.proposer_view.clear()
            for _ in range(args.samples):
                mine.append(ours.candidate())
                base.append(floor.candidate())
            rows.append((size, mine, base, statistics.median(ours.proposer_view)))

    print(f"per candidate, {args.samples} candidates timed at each history length (ms)")
    print(
        f"{'prior':>6}  {'kernelopt med':>13} {'p95':>7}  {'git floor med':>13} {'p95':>7}"
        f"  {'ratio':>6}  {'proposer view':>13}"
    )
    for size, mine, base, view in rows:
        ratio = statistics.median(mine) / statistics.median(base)
        print(
            f"{size:>6}  {statistics.median(mine) * 1e3:>13.1f} {p95(mine) * 1e3:>7.1f}"
            f"  {statistics.median(base) * 1e3:>13.1f} {p95(base) * 1e3:>7.1f}"
            f"  {ratio:5.2f}x  {view * 1e3:>13.2f}"
        )
    first, last = rows[0], rows[-1]
    growth = statistics.median(last[1]) / statistics.median(first[1])
    print(
        f"ratio to the floor at {last[0]} prior attempts: "
        f"{statistics.median(last[1]) / statistics.median(last[2]):.2f}x (goal <= 2x); "
        f"kernelopt growth {first[0]} -> {last[0]}: {growth:.2f}x"
    )


if __name__ == "__main__":
    main()
