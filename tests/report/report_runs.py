"""Real runs for the report tests: a toy benchmark and an NKI kernel on the simulator.

The toy benchmark reads its per-size times from knobs.json and writes them as
CSV, so every verdict is reached on purpose and in milliseconds: the loop,
git notes and the command target all run for real.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelopt.cli import main
from kernelopt.history import RunRepo, RunState

TOY_BENCH = """\
import json, pathlib, sys
knobs = json.loads(pathlib.Path("knobs.json").read_text())
if knobs.get("crash"):
    sys.exit("bench crashed: " + knobs["crash"])
out = pathlib.Path("results")
out.mkdir(exist_ok=True)
lines = ["n,time_us,err"]
lines += [f"{n},{t},{knobs.get('err', 0)}" for n, t in zip((64, 128), knobs["t"])]
(out / "bench.csv").write_text("\\n".join(lines) + "\\n")
"""

TOY_PROGRAM = """\
---
name: toy
target:
  kind: command
  command: python bench.py
  results: {format: csv, path: results/bench.csv}
  correct: "err == 0"
  config_columns: [n]
metric: {name: time_us, better: lower}
device: {kind: none}
decide: {noise: 2%, confirm: 2, max_consecutive_regressions: 2}
---
Make the toy faster.
"""

SCRIPT_HYPOTHESIS = 'fuse halos <script>alert("x")</script> & $\\notacommand$ tiles'

# (knobs.json content, hypothesis, expected verdict); the run stops after the last.
TOY_STEPS: tuple[tuple[dict[str, object], str, str], ...] = (
    ({"t": [80, 160]}, "smaller tiles", "keep"),
    ({"t": [70, 140]}, SCRIPT_HYPOTHESIS, "keep"),
    ({"t": [70, 139.5]}, "unroll by two", "tie"),
    ({"crash": "out of memory"}, "bigger buffers", "failed"),
    ({"t": [60, 120], "err": 1}, "skip the boundary", "incorrect"),
    ({"t": [50, 160]}, "special-case small grids", "diverged"),
    ({"t": [75, 150]}, "column order", "regression"),
    ({"t": [80, 161]}, "column order, wider", "regression"),
)


@dataclass(frozen=True)
class RecordedRun:
    root: Path
    run_id: str
    worktree: Path

    def state(self) -> RunState:
        return RunRepo(self.root, self.run_id).load_state()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _commit_all(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.output


def _toy_repo(root: Path) -> None:
    (root / "programs").mkdir()
    (root / "programs" / "toy.md").write_text(TOY_PROGRAM)
    (root / "bench.py").write_text(TOY_BENCH)
    (root / "knobs.json").write_text(json.dumps({"t": [100, 200]}))
    (root / ".gitignore").write_text("results/\n")
    _commit_all(root)


def record_toy_baselines(root: Path, tags: tuple[str, ...]) -> list[str]:
    """One toy repository with a baseline-only run per tag; returns the run ids."""
    _toy_repo(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for tag in tags:
            _invoke(["run", "programs/toy.md", "--tag", tag, "--max-candidates", "0"])
    return [f"toy-{tag}" for tag in tags]


def record_toy_run(root: Path) -> RecordedRun:
    """Baseline, then every step of TOY_STEPS through `kernelopt try`."""
    _toy_repo(root)
    worktree = root / ".git" / "kernelopt" / "worktrees" / "toy-t"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        _invoke(["run", "programs/toy.md", "--tag", "t", "--max-candidates", "0"])
        mp.chdir(worktree)
        for knobs, hypothesis, expected in TOY_STEPS:
            (worktree / "knobs.json").write_text(json.dumps(knobs))
            out = json.loads(_invoke(["try", "-m", hypothesis, "--json"]))
            assert out["verdict"] == expected, out
    return RecordedRun(root, "toy-t", worktree)


NKI_PROGRAM = """---
name: mm
target: {kind: nki, workload: ir/mm/workload.py, kernel: ir/mm/kernel.py}
metric: {name: mfu, better: higher}
---
Tune the matmul kernel.
"""
SIM_DIR = Path(__file__).parents[1] / "sim"


def record_nki_run(root: Path) -> RecordedRun:
    """A baseline and one kept edit of an NKI matmul measured on the simulator."""
    (root / "ir" / "mm").mkdir(parents=True)
    (root / "programs").mkdir()
    shutil.copy(SIM_DIR / "kernels" / "matmul_single_buffer.py", root / "ir" / "mm" / "kernel.py")
    shutil.copy(SIM_DIR / "workload_matmul.py", root / "ir" / "mm" / "workload.py")
    (root / "programs" / "mm.md").write_text(NKI_PROGRAM)
    _commit_all(root)
    worktree = root / ".git" / "kernelopt" / "worktrees" / "mm-t"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        _invoke(["run", "programs/mm.md", "--tag", "t"])
        shutil.copy(SIM_DIR / "kernels" / "matmul_hoisted.py", worktree / "ir" / "mm" / "kernel.py")
        mp.chdir(worktree)
        out = json.loads(_invoke(["try", "-m", "hoist loads so DMA overlaps compute", "--json"]))
        assert out["verdict"] == "keep", out
    return RecordedRun(root, "mm-t", worktree)
