"""The two numerics checks' parts: comparing outputs down to the worst element, and
the CPU check before a compile."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from kernelopt.neuron.cpu_check import CheckSpec, run_cpu_check
from kernelopt.neuron.numerics import compare

KERNELS = Path(__file__).resolve().parent / "kernels"


def test_the_worst_element_is_the_one_furthest_outside_the_tolerance() -> None:
    want = np.zeros((4, 6), dtype=np.float32)
    want[2, 3] = 100.0
    got = want.copy()
    got[0, 1] = 0.5  # abs error 0.5 where 0.01 is allowed
    got[2, 3] = 100.9  # abs error 0.9 where 1.01 is allowed: inside
    found = compare([got], [want], atol=1e-2, rtol=1e-2)
    assert not found.passed and found.mismatched == 1 and found.total == 24
    assert found.worst is not None and found.worst.index == (0, 1)
    assert (found.worst.got, found.worst.want) == (0.5, 0.0)
    assert found.max_abs_error == pytest.approx(0.9, abs=1e-4)
    assert "output 0[0, 1] is 0.5, f_numpy gives 0" in found.describe()
    assert found.to_json()["worst"]["index"] == [0, 1]


def test_bfloat16_outputs_and_nan_are_compared_in_fp32() -> None:
    want = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    close = compare([want.astype(bfloat16)], [want], atol=1e-2, rtol=1e-2)
    assert close.passed and close.worst is None
    nan = want.astype(bfloat16)
    nan[1, 2] = np.nan
    found = compare([nan], [want], atol=1e-2, rtol=1e-2)
    assert not found.passed and found.worst.index == (1, 2)
    assert found.worst.abs_error == float("inf")


def test_shape_and_count_mismatches_name_the_problem() -> None:
    a = np.zeros((2, 2), np.float32)
    assert (
        "shape (2, 2), f_numpy gives (2, 3)"
        in compare([a], [np.zeros((2, 3))], atol=0, rtol=0).describe()
    )
    assert "returns 2 outputs, f_numpy 1" in compare([a, a], [a], atol=0, rtol=0).describe()


def _spec(tree: Path, kernel: str, seeds: tuple[int, ...] = (0, 1)) -> CheckSpec:
    folder = tree / "ir"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(KERNELS / "workload.py", folder / "workload.py")
    shutil.copy(KERNELS / kernel, folder / "kernel.py")
    return CheckSpec(
        kernel=str(folder / "kernel.py"),
        workload=str(folder / "workload.py"),
        func=None,
        seeds=seeds,
        atol=5e-3,
        rtol=5e-3,
        rel_l2=None,
        mac_count=256 * 128 * 512,
    )


def test_the_cpu_check_passes_a_right_kernel_and_keeps_the_simulators_estimate(
    tmp_path: Path,
) -> None:
    record = run_cpu_check(_spec(tmp_path, "kernel.py"), cwd=tmp_path, timeout=60)
    assert record["status"] == "ok" and record["seeds"] == [0, 1]
    assert record["sim"]["total_time"] > 0 and 0 < record["sim"]["mfu_estimated_percent"] < 100


def test_the_cpu_check_names_the_seed_and_worst_element_of_a_wrong_kernel(
    tmp_path: Path,
) -> None:
    record = run_cpu_check(_spec(tmp_path, "kernel_wrong_rows.py"), cwd=tmp_path, timeout=60)
    assert record["status"] == "incorrect" and record["seed"] in (0, 1)
    assert record["worst"]["output"] == 0 and len(record["worst"]["index"]) == 2
    assert record["worst"]["abs_error"] > 1 and "worst: output 0[" in record["error"]


def test_a_kernel_the_simulator_cannot_run_is_left_to_the_compiler(tmp_path: Path) -> None:
    record = run_cpu_check(_spec(tmp_path, "kernel_psum_oom.py"), cwd=tmp_path, timeout=60)
    assert record["status"] == "skipped" and "capacity" in record["error"]


def test_a_cpu_check_that_hangs_is_stopped(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "kernel.py")
    Path(spec.kernel).write_text("import time\ntime.sleep(30)\n")
    record = run_cpu_check(spec, cwd=tmp_path, timeout=1)
    assert record["status"] == "skipped" and "did not finish within 1s" in record["error"]
