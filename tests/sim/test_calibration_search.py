"""The scoreboard GEMM loads operands where the template's tuner may put them.

nki-autotune's GEMM template (``autotune/gemm/config.py``) places each operand
load at one of three positions relative to the operand's two loops; its
scoreboard reports the fastest configuration without naming the positions, so
benchmarks/sim_calibration.py can search them (``Case.search``) and keep the
one the model times fastest.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from benchmarks_support.modules import load_module

from kernelopt.sim import check_kernel, run_kernel
from kernelopt.sim.chips import chip_params
from kernelopt.workload import load_workload, numpy_dtype

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
GEMM = BENCHMARKS / "calibration" / "gemm_blocked_beta1.py"
WORKLOAD = load_workload(
    BENCHMARKS / "calibration" / "workload_gemm.py", require=("f_numpy", "INPUT_SPECS")
)
# K = M = 256, N = 1024: two blocks on every axis.
SMALL = {"lhs": ((256, 256), "bfloat16"), "rhs": ((256, 1024), "bfloat16")}
BLOCKS = {"k_blocks": 2, "m_blocks": 2, "n_blocks": 2}


def _calibration():
    return load_module(
        "kernelopt_sim_calibration", BENCHMARKS / "sim_calibration.py", search_path=BENCHMARKS
    )


@pytest.mark.parametrize("order", ["MNK", "KNM"])
@pytest.mark.parametrize("lhs_position", [0, 1, 2])
@pytest.mark.parametrize("rhs_position", [0, 1, 2])
def test_the_gemm_computes_at_every_load_position(order, lhs_position, rhs_position):
    for transposed_lhs, transpose, transpose_order in (
        (True, "dma", "load"),
        (False, "dma", "load"),
        (False, "tensor", "load"),
        (False, "tensor", "use"),
    ):
        report = check_kernel(
            GEMM,
            dataclasses.replace(WORKLOAD, input_specs=SMALL),
            kernel_kwargs={
                "loop_order": order,
                "transposed_lhs": transposed_lhs,
                "lhs_transpose": transpose,
                "transpose_order": transpose_order,
                "lhs_position": lhs_position,
                "rhs_position": rhs_position,
                **BLOCKS,
            },
        )
        assert report.error is None, report.error
        assert report.correct


def _hbm_read(**kwargs) -> int:
    inputs = {name: np.zeros(shape, numpy_dtype(dtype)) for name, (shape, dtype) in SMALL.items()}
    run = run_kernel(GEMM, inputs, compute=False, kernel_kwargs={**BLOCKS, **kwargs})
    return run.profile["hbm_read_bytes"]


def test_position_zero_reads_an_operand_once_and_position_two_per_enclosing_block():
    # MNK: lhs [K, M] sits in loops M (outer) and K; N lies between them.
    lhs_bytes = 256 * 256 * 2
    rhs_bytes = 256 * 1024 * 2
    once = _hbm_read(loop_order="MNK", lhs_position=0, rhs_position=0)
    inside = _hbm_read(loop_order="MNK", lhs_position=2, rhs_position=0)
    assert once == lhs_bytes + rhs_bytes
    # Inside all three loops the lhs block is read again for each of the 2 N blocks.
    assert inside == 2 * lhs_bytes + rhs_bytes


def test_the_search_keeps_the_alternative_the_model_times_fastest():
    calibration = _calibration()
    cases = calibration.load_cases()
    alternatives = tuple(
        {"lhs_position": lhs, "rhs_position": rhs} for lhs, rhs in ((0, 0), (2, 2), (1, 2))
    )
    case = cases.Case(
        "gemm_blocked_beta1.py",
        "workload_gemm.py",
        50.0,
        "test",
        shapes={name: shape for name, (shape, _) in SMALL.items()},
        kernel_kwargs={"loop_order": "MNK", **BLOCKS, **alternatives[1]},
        search=alternatives,
    )
    params = chip_params("trn2")
    each = [
        calibration.trace_case(dataclasses.replace(case, kernel_kwargs={**case.kernel_kwargs, **a}))
        for a in alternatives
    ]
    times = [t.device_ms(params) for t in each]
    assert len(set(times)) > 1  # the positions change the time, so the pick matters
    picked = calibration.trace_case(case, search=True)
    assert picked.device_ms(params) == min(times)
    fastest = alternatives[times.index(min(times))]
    assert {k: picked.kernel_kwargs[k] for k in fastest} == fastest
    # Without the search the recorded arguments are traced.
    assert calibration.trace_case(case).kernel_kwargs["lhs_position"] == 2


@pytest.mark.parametrize("transpose_order", ["load", "use"])
def test_tensor_transposes_follow_the_template_one_transpose_and_one_copy_per_tile(
    transpose_order,
):
    # autotune/core/tensor.py tile_transpose: one nc_transpose into its own PSUM tile and
    # one copy back per 128 x 128 lhs tile; lhs loaded once (position 0): 2 x 2 tiles.
    inputs = {name: np.zeros(shape, numpy_dtype(dtype)) for name, (shape, dtype) in SMALL.items()}
    run = run_kernel(
        GEMM,
        inputs,
        compute=False,
        kernel_kwargs={
            **BLOCKS,
            "loop_order": "MNK",
            "transposed_lhs": False,
            "lhs_transpose": "tensor",
            "transpose_order": transpose_order,
            "lhs_position": 0,
            "rhs_position": 0,
        },
    )
    ops = [ins.op for ins in run.trace]
    transposes = [i for i, op in enumerate(ops) if op == "nc_transpose"]
    assert len(transposes) == 4
    # Each transpose's PSUM tile is copied out once (ScalarE, as nl.copy lowers).
    for i in transposes:
        assert ops[i + 1] == "activation" and run.trace[i + 1].engine == "scalar"
    first_matmul = ops.index("nc_matmul")
    if transpose_order == "load":  # the template's program: all before the matmuls
        assert transposes[-1] < first_matmul
    else:  # each just ahead of the matmuls that read it: the last comes after some
        assert transposes[-1] > first_matmul
