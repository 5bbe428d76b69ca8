"""`kernelopt init --kind nki` scaffolds a program whose kernel is ready to run on sim."""

from __future__ import annotations

import re
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


GEMV = """
from kernelopt.ir import NKIMatmul


def f_nkigym(xT, w):
    return NKIMatmul()(stationary=xT, moving=w)


def f_numpy(xT, w):
    return xT.astype("float32").T @ w.astype("float32")


INPUT_SPECS = {"xT": ((1024, 1), "bfloat16"), "w": ((1024, 1024), "bfloat16")}
"""


def test_a_matrix_vector_product_is_scored_by_its_roofline_not_mfu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One row times a matrix: 1024 x 1024 MACs at TensorE's peak take ~0.03 us, the 2 MiB
    # of w from HBM ~6 us, so MFU cannot pass ~0.5 % however good the kernel.
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gemv.py").write_text(GEMV)
    out = CliRunner().invoke(
        main, ["init", "--name", "gemv", "--kind", "nki", "--workload", "gemv.py"]
    )
    assert out.exit_code == 0, out.output
    program = load_program(tmp_path / "programs" / "gemv.md")
    assert program.metric == "roofline_percent" and program.stop.target is None


RMSNORM = """
import numpy as np

from kernelopt.ir import NKIActivation, NKITensorReduce, NKITensorScalar


def f_nkigym(x):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt")(data=NKITensorScalar(op0="multiply", operand0=1 / 512)(data=ss))
    out = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    return out


def f_numpy(x):
    x = x.astype(np.float32)
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True))


INPUT_SPECS = {"x": ((256, 512), "bfloat16")}
"""


def test_init_nki_with_a_workload_of_ones_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "rms.py").write_text(RMSNORM)
    out = CliRunner().invoke(
        main, ["init", "--name", "rms", "--kind", "nki", "--workload", "ops/rms.py"]
    )
    assert out.exit_code == 0, out.output
    for rel in ("programs/rms.md", "ops/rms_knobs.json", "ops/rms_kernel.py"):
        assert f"created {rel}" in out.output
    assert not (tmp_path / "ir" / "rms").exists()  # no template workload beside it
    program = load_program(tmp_path / "programs" / "rms.md")
    # A norm has no matmul: MFU would read 0, so the share of its roofline is the metric.
    assert program.metric == "roofline_percent" and program.stop.target is None
    assert program.target.workload == "ops/rms.py"
    assert (program.target.kernel, program.target.knobs.file) == (
        "ops/rms_kernel.py",
        "ops/rms_knobs.json",
    )
    report = check_kernel(
        tmp_path / "ops" / "rms_kernel.py", load_workload(tmp_path / "ops" / "rms.py")
    )
    assert report.correct, report.error
    outside = tmp_path.parent / "elsewhere.py"
    outside.write_text(RMSNORM)
    refused = CliRunner().invoke(
        main, ["init", "--name", "x", "--kind", "nki", "--workload", str(outside)]
    )
    assert refused.exit_code == 2 and "inside the repository" in refused.output


def test_init_nki_says_how_far_its_screen_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A large workload screens for minutes; the line every EVERY seconds is what the
    # user sees meanwhile (every state here, with EVERY at 0).
    from kernelopt.output import ScreenProgress

    monkeypatch.setattr(ScreenProgress, "EVERY", 0.0)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["init", "--name", "gemm", "--kind", "nki"])
    assert out.exit_code == 0, out.output
    counts = re.findall(r"^screening on sim: (\d+) of (\d+) states simulated", out.output, re.M)
    # From the drawn pool (0 simulated) to every state of it.
    assert len(counts) > 3 and counts[0][0] == "0" and counts[-1][0] == counts[-1][1]
    # Before it, the draws (a minute where valid states are rare), from none kept.
    drawn = re.findall(r"^drawing knob states to screen: (\d+) of (\d+) drawn", out.output, re.M)
    assert len(drawn) > 3 and drawn[0][0] == "0"
    assert [int(d) for d, _ in drawn] == sorted(int(d) for d, _ in drawn)
    assert out.output.index("drawing knob states") < out.output.index("screening on sim")
