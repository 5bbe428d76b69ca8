"""check_kernel: the correctness gate returns a verdict and never raises for a bad kernel."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kernelopt.sim import SimReport, check_kernel
from kernelopt.workload import load_workload

HERE = Path(__file__).parent
KERNELS = HERE / "kernels"


@pytest.fixture
def matmul_workload():
    return load_workload(HERE / "workload_matmul.py", require=("f_numpy", "INPUT_SPECS"))


def test_a_correct_kernel_passes_on_every_seed(matmul_workload):
    report = check_kernel(KERNELS / "matmul_basic.py", matmul_workload, seeds=(0, 1, 2))
    assert report.correct and report.error is None and report.error_kind is None
    assert report.func == "matmul_kernel"
    assert report.worst_seed in (0, 1, 2)
    assert 0.0 < report.max_abs_error < 1e-4
    assert report.profile["device"] == "sim" and report.profile["total_time"] > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.correct = False  # type: ignore[misc]


def test_a_wrong_kernel_is_a_numerics_failure_with_its_error(matmul_workload):
    report = check_kernel(KERNELS / "matmul_wrong_k.py", matmul_workload, seeds=(3, 4))
    assert not report.correct
    assert report.error_kind == "numerics"
    assert report.error.startswith("seed 3: output 0 differs from f_numpy")
    assert report.max_abs_error > 0.1 and report.worst_seed in (3, 4)
    assert report.profile["matmul_instruction_count"] == 8  # timing is still reported


def test_tolerances_decide(matmul_workload):
    # fp32 matmul error is ~1e-5: a tolerance below it fails, the default passes.
    strict = check_kernel(KERNELS / "matmul_basic.py", matmul_workload, atol=0.0, rtol=1e-9)
    assert not strict.correct and strict.error_kind == "numerics"


def test_native_precision_shows_bf16_rounding(matmul_workload):
    fp32 = check_kernel(KERNELS / "matmul_basic.py", matmul_workload, atol=1e-3, rtol=1e-4)
    native = check_kernel(
        KERNELS / "matmul_basic.py", matmul_workload, precision="native", atol=1e-3, rtol=1e-4
    )
    assert fp32.correct and not native.correct
    assert native.max_abs_error > 100 * fp32.max_abs_error
    # bf16 keeps ~3 significant digits: inside the field's default tolerance.
    assert check_kernel(KERNELS / "matmul_basic.py", matmul_workload, precision="native").correct


def test_isa_violations_come_back_as_data(matmul_workload, kernel_file):
    path, line = kernel_file(
        """
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def k(lhsT, rhs):
            t = nl.ndarray((256, 128), dtype=lhsT.dtype, buffer=nl.sbuf)  # <-
            return lhsT
        """
    )
    report = check_kernel(path, matmul_workload)
    assert isinstance(report, SimReport)
    assert not report.correct and report.error_kind == "isa"
    assert f"{path}:{line}: partition dimension 256 > 128" in report.error
    assert report.max_abs_error is None and report.profile == {}


def test_wrong_output_shape_and_failing_oracle(matmul_workload, kernel_file, tmp_path):
    path, _ = kernel_file(
        """
        import nki

        @nki.jit
        def k(lhsT, rhs):
            return lhsT
        """
    )
    report = check_kernel(path, matmul_workload)
    assert report.error_kind == "numerics"
    assert "output 0 has shape (256, 256), f_numpy gives (256, 1024)" in report.error
    broken = tmp_path / "broken_workload.py"
    broken.write_text(
        "INPUT_SPECS = {'lhsT': ((256, 256), 'bfloat16'), 'rhs': ((256, 1024), 'bfloat16')}\n"
        "def f_numpy(lhsT, rhs):\n    raise RuntimeError('oracle bug')\n"
    )
    workload = load_workload(broken, require=("f_numpy", "INPUT_SPECS"))
    report = check_kernel(KERNELS / "matmul_basic.py", workload)
    assert report.error_kind == "exception" and "f_numpy failed: RuntimeError: oracle bug" in (
        report.error
    )


def test_mac_count_reaches_the_profile(matmul_workload):
    report = check_kernel(KERNELS / "matmul_basic.py", matmul_workload, mac_count=123)
    assert report.profile["mac_count"] == 123
