"""The nki target on `sim`: a real run in a real repository, measured by the simulator."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelopt.cli import main

KERNELS = Path(__file__).parents[1] / "sim" / "kernels"
WORKLOAD = Path(__file__).parents[1] / "sim" / "workload_matmul.py"

PROGRAM = """---
name: mm
target: {kind: nki, workload: ir/mm/workload.py, kernel: ir/mm/kernel.py}
metric: {name: mfu, better: higher}
---
Tune the matmul kernel.
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ir" / "mm").mkdir(parents=True)
    (tmp_path / "programs").mkdir()
    shutil.copy(KERNELS / "matmul_single_buffer.py", tmp_path / "ir" / "mm" / "kernel.py")
    shutil.copy(WORKLOAD, tmp_path / "ir" / "mm" / "workload.py")
    (tmp_path / "programs" / "mm.md").write_text(PROGRAM)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "init")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.com")
    return tmp_path


def test_sim_baseline_then_an_overlapping_edit_is_kept(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    monkeypatch.chdir(repo)
    out = runner.invoke(main, ["run", "programs/mm.md", "--tag", "t"])
    assert out.exit_code == 0, out.output
    assert "device sim" in out.output.splitlines()[0]
    worktree = repo / ".git" / "kernelopt" / "worktrees" / "mm-t"
    baseline = json.loads(
        git(
            repo, "notes", "--ref", "refs/notes/kernelopt", "show", "refs/kernelopt/mm-t/attempts/0"
        )
    )
    assert baseline["verdict"] == "baseline" and baseline["device"] == "sim"
    assert 0 < baseline["metric"] < 100
    assert baseline["measurement"]["profile"]["mfu_estimated_percent"] == pytest.approx(
        baseline["metric"]
    )

    shutil.copy(KERNELS / "matmul_hoisted.py", worktree / "ir" / "mm" / "kernel.py")
    monkeypatch.chdir(worktree)
    out = runner.invoke(main, ["try", "-m", "hoist loads so DMA overlaps compute", "--json"])
    data = json.loads(out.output)
    assert out.exit_code == 0, out.output
    assert data["verdict"] == "keep" and data["metric"] > baseline["metric"]
    ledger = (worktree / "performance.md").read_text()
    assert "(sim)" in ledger
    reference = [line for line in ledger.splitlines() if "| reference |" in line]
    # Skipped with its reason, as a Neuron host without nkipy: not a failure of the run.
    assert len(reference) == 1 and "not measured on sim" in reference[0]
    assert "| skipped |" in reference[0]
    assert baseline["reference"]["skipped"] is True
    assert baseline["reference"]["measurement"]["status"] == "skipped"
    status = json.loads(runner.invoke(main, ["status", "--json"]).output)
    assert status["reference"]["metric"] is None and "neuronx-cc" in status["reference"]["why"]
    assert (
        status["best_metric"] == data["metric"] and status["baseline_metric"] == baseline["metric"]
    )


def test_a_kernel_breaking_an_isa_rule_fails_with_file_and_line(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    monkeypatch.chdir(repo)
    assert runner.invoke(main, ["run", "programs/mm.md", "--tag", "t"]).exit_code == 0
    worktree = repo / ".git" / "kernelopt" / "worktrees" / "mm-t"
    kernel = worktree / "ir" / "mm" / "kernel.py"
    kernel.write_text(kernel.read_text().replace("(k + 1) * 128, m", "(k + 1) * 128 + 1, m"))
    monkeypatch.chdir(worktree)
    out = runner.invoke(main, ["try", "-m", "a wrong slice", "--json"])
    data = json.loads(out.output)
    assert out.exit_code == 13 and data["verdict"] == "failed"
    assert "kernel.py:" in data["error"]
    assert git(worktree, "status", "--porcelain") == ""  # reverted to BEST


def test_wrong_numerics_are_incorrect_and_never_kept(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    monkeypatch.chdir(repo)
    assert runner.invoke(main, ["run", "programs/mm.md", "--tag", "t"]).exit_code == 0
    worktree = repo / ".git" / "kernelopt" / "worktrees" / "mm-t"
    kernel = worktree / "ir" / "mm" / "kernel.py"
    text = kernel.read_text()
    assert "accumulate=k > 0" in text
    kernel.write_text(text.replace("accumulate=k > 0", "accumulate=False"))
    monkeypatch.chdir(worktree)
    out = runner.invoke(main, ["try", "-m", "skip the accumulation", "--json"])
    data = json.loads(out.output)
    assert out.exit_code == 12 and data["verdict"] == "incorrect", out.output
    best = git(repo, "rev-parse", "refs/kernelopt/mm-t/best").strip()
    assert git(worktree, "rev-parse", "HEAD").strip() == best


def test_a_kernel_that_never_ends_times_out_and_the_run_goes_on(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = repo / "programs" / "mm.md"
    program.write_text(PROGRAM.replace("metric:", "timeout: 3s\nmetric:"))
    git(repo, "commit", "-qam", "short timeout")
    runner = CliRunner()
    monkeypatch.chdir(repo)
    assert runner.invoke(main, ["run", "programs/mm.md", "--tag", "t"]).exit_code == 0
    worktree = repo / ".git" / "kernelopt" / "worktrees" / "mm-t"
    kernel = worktree / "ir" / "mm" / "kernel.py"
    kernel.write_text(kernel.read_text().replace("    return out", "    while True:\n        pass"))
    monkeypatch.chdir(worktree)
    out = runner.invoke(main, ["try", "-m", "spin forever", "--json"])
    data = json.loads(out.output)
    assert out.exit_code == 13 and data["verdict"] == "failed"
    assert "timed out after 3 s" in data["error"]
