"""Every nki candidate is checked on several seeded input sets: right on one seed is not enough."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks_support.gitrepo import git
from benchmarks_support.gitrepo import run_kernelopt as kernelopt

# One float in [-1, 1) per seed: seeds 0 and 1 draw a positive value, seed 2 a negative one.
WORKLOAD = """
INPUT_SPECS = {"x": ((1, 1), "float32")}

def f_numpy(x):
    return x
"""

KERNEL = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy_kernel(x):
    out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:1, 0:1])
    r = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=r, op=nl.OP, data=t)
    nisa.dma_copy(dst=out[0:1, 0:1], src=r)
    return out
"""

PROGRAM = """---
name: ms
target: {kind: nki, workload: workload.py, kernel: kernel.py}
metric: {name: time, better: lower}
decide: {correctness_seeds: SEEDS}
---
Copy x.
"""


def start_run(tmp_path: Path, seeds: int) -> Path:
    root = tmp_path / "repo"
    (root / "programs").mkdir(parents=True)
    (root / "workload.py").write_text(WORKLOAD)
    (root / "kernel.py").write_text(KERNEL.replace("OP", "copy"))
    (root / "programs" / "ms.md").write_text(PROGRAM.replace("SEEDS", str(seeds)))
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    proc = kernelopt(root, "run", "programs/ms.md", "--tag", "t")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root / ".git" / "kernelopt" / "worktrees" / "ms-t"


@pytest.mark.parametrize(("seeds", "verdict"), [(3, "incorrect"), (2, "tie")])
def test_a_kernel_right_on_seed_0_but_wrong_on_seed_2(
    tmp_path: Path, seeds: int, verdict: str
) -> None:
    worktree = start_run(tmp_path, seeds)
    (worktree / "kernel.py").write_text(KERNEL.replace("OP", "relu"))
    proc = kernelopt(worktree, "try", "-m", "relu is a copy for positive inputs", "--json")
    data = json.loads(proc.stdout)
    assert data["verdict"] == verdict, proc.stdout
    note = json.loads(
        git(worktree, "notes", "--ref", "refs/notes/kernelopt", "show", data["commit"])
    )
    extra = note["measurement"]["extra"]
    assert extra["seeds"] == list(range(seeds))
    if verdict == "incorrect":
        assert "seed 2" in data["error"]
        assert extra["worst_seed"] == 2 and extra["max_abs_error"] == pytest.approx(
            0.4768, abs=1e-3
        )


def test_rel_l2_is_the_tolerance_rule_when_set(tmp_path: Path) -> None:
    from kernelopt.sim import check_kernel
    from kernelopt.workload import load_workload

    (tmp_path / "workload.py").write_text(WORKLOAD)
    (tmp_path / "kernel.py").write_text(KERNEL.replace("OP", "relu"))
    workload = load_workload(tmp_path / "workload.py", require=("f_numpy", "INPUT_SPECS"))
    wrong = check_kernel(tmp_path / "kernel.py", workload, seeds=(2,), rel_l2=0.5)
    assert not wrong.correct and "relative L2 error 1 exceeds 0.5" in (wrong.error or "")
    assert wrong.max_rel_l2_error == pytest.approx(1.0)
    loose = check_kernel(tmp_path / "kernel.py", workload, seeds=(2,), rel_l2=1.5)
    assert loose.correct
