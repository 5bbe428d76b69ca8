"""`kernelopt run` on device neuron, end to end, with the fake Trn2 toolchain on this machine.

gate (neuron-ls) -> compile (neuronx-cc) -> run -> profile (neuron-profile) -> parse -> decide,
and the compiler baseline as a reference row beside the baseline.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from benchmarks_support.gitrepo import git
from benchmarks_support.gitrepo import run_kernelopt as kernelopt

from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"
DOUBLES = Path(__file__).resolve().parents[1] / "neuron" / "sdk_doubles"

PROGRAM = """---
name: trn
target: {{kind: nki, workload: ir/small/workload.py, kernel: ir/small/kernel.py}}
metric: {{name: mfu, better: higher}}
device:
  kind: neuron
  hosts: [localhost]
  python: {python}
  poll: 0.2s
  max_wait: 2s
  neuron: {{activate: {activate}, compile_timeout: 60s}}
decide: {{noise: 1%, confirm: 2, max_samples: 3}}
timeout: 2m
---
Tune the small kernel on Trainium2.
"""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, FakeTrn2, dict[str, str]]:
    fake = FakeTrn2(tmp_path / "fake-trn2").install()
    fake.configure(monitor_period_s=0.1)
    activate = tmp_path / "activate"
    # The host's Neuron environment: the fake tools, and nkipy for the compiler baseline.
    activate.write_text(f'. "{fake.activate_path}"\nexport PYTHONPATH="{DOUBLES}:$PYTHONPATH"\n')
    root = tmp_path / "repo"
    (root / "ir" / "small").mkdir(parents=True)
    (root / "programs").mkdir()
    shutil.copy(KERNELS / "workload.py", root / "ir" / "small" / "workload.py")
    shutil.copy(KERNELS / "kernel.py", root / "ir" / "small" / "kernel.py")
    (root / "programs" / "trn.md").write_text(
        PROGRAM.format(python=sys.executable, activate=activate)
    )
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    env = fake.env()
    env["KERNELOPT_LOCK_DIR"] = str(tmp_path / "locks")
    return root, fake, env


def test_a_run_on_neuron_measures_with_the_tools_and_records_the_reference(
    setup: tuple[Path, FakeTrn2, dict[str, str]],
) -> None:
    root, fake, env = setup
    proc = kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "device neuron" in proc.stdout.splitlines()[0]
    note = json.loads(
        git(
            root,
            "notes",
            "--ref",
            "refs/notes/kernelopt",
            "show",
            "refs/kernelopt/trn-t/attempts/0",
        )
    )
    assert note["verdict"] == "baseline" and note["device"] == "neuron"
    m = note["measurement"]
    assert m["status"] == "ok" and 0 < m["metrics"]["mfu"] <= 100
    assert m["device"].startswith("neuron")
    # Percent fields arrive as fractions from neuron-profile and are converted once.
    assert 1 < m["profile"]["tensor_engine_active_time_percent"] <= 100
    assert Path(m["artifacts"]["neff"]).exists() and Path(m["artifacts"]["ntff"]).exists()
    tools = {call["tool"] for call in fake.calls()}
    assert {"neuron-ls", "neuronx-cc", "neuron-profile"} <= tools
    # The compiler baseline is measured once, through nkipy, and stands beside the baseline.
    ledger = (root / ".git" / "kernelopt" / "worktrees" / "trn-t" / "performance.md").read_text()
    reference = [line for line in ledger.splitlines() if "| reference |" in line]
    assert len(reference) == 1 and "mfu" in reference[0] and "n/a" not in reference[0]
    status = json.loads(kernelopt(root, "status", "--json", env=env).stdout)
    assert status["reference"]["metric"] > 0


def test_a_compile_error_is_a_failed_attempt_with_the_compilers_message(
    setup: tuple[Path, FakeTrn2, dict[str, str]],
) -> None:
    root, _, env = setup
    assert kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env).returncode == 0
    worktree = root / ".git" / "kernelopt" / "worktrees" / "trn-t"
    shutil.copy(KERNELS / "kernel_psum_oom.py", worktree / "ir" / "small" / "kernel.py")
    proc = kernelopt(worktree, "try", "-m", "hold every accumulator in PSUM", "--json", env=env)
    data = json.loads(proc.stdout)
    assert proc.returncode in (12, 13), proc.stdout + proc.stderr
    assert data["verdict"] in ("failed", "incorrect")
    assert "psum" in data["error"].lower()
