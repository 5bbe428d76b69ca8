"""The sanity kernels of benchmarks/sim_sanity compute what their workloads say."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

SANITY = Path(__file__).resolve().parents[2] / "benchmarks" / "sim_sanity"


@pytest.mark.parametrize("fused", [True, False])
def test_the_fused_two_matmul_kernel_is_correct_both_ways(fused):
    workload = load_workload(
        SANITY / "workload_fused_two_matmul.py", require=("f_numpy", "INPUT_SPECS")
    )
    report = check_kernel(
        SANITY / "fused_two_matmul.py", workload, seeds=(0,), kernel_kwargs={"fused": fused}
    )
    assert report.correct, report.problem
    # 256 x 256 x 256 x 512: two operand and two weight loads, two lhsT loads
    # per 128-row block, one store each; unfused, two stores and two reloads
    # of the intermediate per block on top.
    assert report.profile["dma_transfer_count"] == (10 if fused else 18)
