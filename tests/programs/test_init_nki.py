"""`kernelopt init --kind nki` scaffolds a program whose kernel is ready to run on sim."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelopt.cli import main
from kernelopt.program import load_program
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload


def test_init_nki_writes_a_valid_program_and_a_correct_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["init", "--name", "gemm", "--kind", "nki"])
    assert out.exit_code == 0, out.output
    for rel in (
        "programs/gemm.md",
        "ir/gemm/workload.py",
        "ir/gemm/knobs.json",
        "ir/gemm/kernel.py",
    ):
        assert f"created {rel}" in out.output
    program = load_program(tmp_path / "programs" / "gemm.md")
    assert program.target.kind == "nki" and program.metric == "mfu"
    assert "kernelopt try" in program.body
    workload = load_workload(tmp_path / "ir" / "gemm" / "workload.py")
    report = check_kernel(tmp_path / "ir" / "gemm" / "kernel.py", workload)
    assert report.correct, report.error
    # A second init keeps what is there.
    (tmp_path / "ir" / "gemm" / "kernel.py").write_text("# edited by hand\n")
    again = CliRunner().invoke(main, ["init", "--name", "gemm", "--kind", "nki"])
    assert "kept    ir/gemm/kernel.py" in again.output
    assert (tmp_path / "ir" / "gemm" / "kernel.py").read_text() == "# edited by hand\n"
