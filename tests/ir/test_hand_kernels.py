"""The hand-written kernels of benchmarks/hand_kernels compute what their workloads say,
rounded to their declared dtypes, and the mean-after-matmul layernorm stays accurate when the
rows' mean is large against their spread (docs/llm-operators.md, "Hand-written kernels")."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from kernelopt.sim import check_kernel
from kernelopt.sim.runner import run_kernel
from kernelopt.workload import load_workload

ROOT = Path(__file__).resolve().parents[2]
HAND = ROOT / "benchmarks" / "hand_kernels"
WORKLOADS = ROOT / "tests" / "ir" / "llm_workloads"


@pytest.mark.parametrize(
    ("kernel", "workload"),
    [
        ("softmax_matmul_schedule.py", "softmax_matmul.py"),
        ("layernorm_matmul_mean_after.py", "layernorm_matmul.py"),
    ],
)
def test_a_hand_kernel_matches_its_workload_in_native_precision(kernel, workload):
    report = check_kernel(
        HAND / kernel,
        load_workload(WORKLOADS / workload, require=("f_numpy", "INPUT_SPECS")),
        precision="native",
    )
    assert report.correct, report.problem


@pytest.mark.parametrize("mean", [0.0, 100.0, -1000.0])
def test_the_mean_moved_past_the_matmul_survives_a_large_mean(mean):
    # x @ w and mean (x) colsum(w) cancel to the centred product: with the mean and
    # colsum(w) each rounded to one bf16 the error is 17 % of the result at mean 100.
    workload = load_workload(WORKLOADS / "layernorm_matmul.py", require=("f_numpy",))
    rng = np.random.default_rng(1)
    x = (mean + rng.standard_normal((512, 1024))).astype(ml_dtypes.bfloat16)
    w = (rng.standard_normal((1024, 1024)) / 32).astype(ml_dtypes.bfloat16)
    run = run_kernel(HAND / "layernorm_matmul_mean_after.py", {"x": x, "w": w}, precision="native")
    assert isinstance(run.outputs, np.ndarray)  # one output
    got = run.outputs.astype(np.float32)
    want = workload.f_numpy(x, w)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 5e-3
