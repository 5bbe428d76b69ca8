"""The calibration set: kernels written here after public Trn2 measurements.

Each case names a kernel file in this folder, the workload it computes, the
MFU its public counterpart measured on one Trn2 NeuronCore, where that
figure comes from, and the compiler options it was measured with. The
figures are the ones collected in the project's calibration notes (MFU
ladder of a 2048^3 bf16 matmul, lhs @ rhs transposes, the NKI tutorial's
fp32 kernels). fp32 figures are MFU against the fp32 peak (a quarter of
the bf16 one), as the simulator reports them.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEDULER_OFF = ("enable-linear-scan-allocation=false", "enable-instruction-scheduling=false")

# The tutorial's fp32 kernels: 2 * 4096 * 8192 * 8192 FLOPs at a quarter of
# 2 * 128 * 128 * 2.4e9 FLOP/s is 27.963 ms at 100 % MFU.
_TUTORIAL_IDEAL_MS = 2 * 4096 * 8192 * 8192 / (2 * 128 * 128 * 2.4e9 / 4) * 1e3


def _tutorial_mfu(ms: float) -> float:
    return round(100 * _TUTORIAL_IDEAL_MS / ms, 2)


@dataclass(frozen=True)
class Case:
    kernel: str
    workload: str
    measured_mfu: float
    evidence: str
    compiler_args: tuple[str, ...] = ()


CASES: tuple[Case, ...] = (
    Case(
        "rung1_k_loop_loads.py",
        "workload_lhsT_rhs.py",
        16.0,
        "MFU ladder rung 1: loads in the K loop, one buffer each (~16 %)",
    ),
    Case(
        "rung2_resident_one_psum.py",
        "workload_lhsT_rhs.py",
        59.6,
        "MFU ladder rung 2: resident operands, one PSUM tile (59-59.6 %)",
    ),
    Case(
        "rung3_resident_two_psum.py",
        "workload_lhsT_rhs.py",
        83.3,
        "MFU ladder rung 3: rung 2 with two alternating PSUM tiles (82.9-83.7 %)",
    ),
    Case(
        "rung4_streamed_loads.py",
        "workload_lhsT_rhs.py",
        89.5,
        "MFU ladder rung 4: streamed, double-buffered loads, one level of K (89.5 %)",
    ),
    Case(
        "rung5_two_stage_k.py",
        "workload_lhsT_rhs.py",
        90.9,
        "MFU ladder rung 5: hand kernel, K in two stages, scheduler off (90.6-90.9 %)",
        SCHEDULER_OFF,
    ),
    Case(
        "lhs_dma_transpose.py",
        "workload_lhs_rhs.py",
        89.26,
        "lhs @ rhs hand kernel, lhs transposed by DMA, scheduler off (89.26 %)",
        SCHEDULER_OFF,
    ),
    Case(
        "lhs_tensore_transpose.py",
        "workload_lhs_rhs.py",
        33.0,
        "lhs @ rhs with PSUM-staged TensorE transposes beside the drain (near 33 %)",
    ),
    Case(
        "tutorial_tiled_fp32.py",
        "workload_tutorial_fp32.py",
        _tutorial_mfu(39.89),
        "NKI tutorial, tiled, fp32 (39.89 ms)",
    ),
    Case(
        "tutorial_hoisted_fp32.py",
        "workload_tutorial_fp32.py",
        _tutorial_mfu(28.20),
        "NKI tutorial, hoisted loads, fp32 (28.20 ms)",
    ),
    Case(
        "tutorial_k_blocked_fp32.py",
        "workload_tutorial_fp32.py",
        _tutorial_mfu(28.30),
        "NKI tutorial, M, N and K blocking, fp32 (28.30 ms)",
    ),
)
