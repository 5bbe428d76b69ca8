"""The calibration set: kernels written here after public Trn2 and Trn1 measurements.

Each case names a kernel file in this folder, the workload it computes, its public
figure (MFU and/or latency), where that figure comes from and how it was measured
(chip, compiler options, timing). fp32 figures are MFU against the fp32 peak.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def _sibling(name: str) -> ModuleType:
    """A module of this folder, loaded by path (the folder is not a package) and
    registered once, so its dataclasses find their module."""
    key = f"kernelopt_calibration_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


_types = _sibling("case_types")
Timing, Case, Failure = _types.Timing, _types.Case, _types.Failure
DEVICE, SPIKE_HOST = _types.DEVICE, _types.SPIKE_HOST

SCHEDULER_OFF = ("enable-linear-scan-allocation=false", "enable-instruction-scheduling=false")

# The tutorial's fp32 kernels: 2 * 4096 * 8192 * 8192 FLOPs at a quarter of
# 2 * 128 * 128 * 2.4e9 FLOP/s is 27.963 ms at 100 % MFU.
_TUTORIAL_IDEAL_MS = 2 * 4096 * 8192 * 8192 / (2 * 128 * 128 * 2.4e9 / 4) * 1e3


def _tutorial_mfu(ms: float) -> float:
    return round(100 * _TUTORIAL_IDEAL_MS / ms, 2)


CASES: tuple[Case, ...] = (
    Case(
        "rung1_k_loop_loads.py",
        "workload_lhsT_rhs.py",
        16.0,
        "MFU ladder rung 1: loads in the K loop, one buffer each (~16 %)",
        family="mfu_ladder",
    ),
    Case(
        "rung2_resident_one_psum.py",
        "workload_lhsT_rhs.py",
        59.6,
        "MFU ladder rung 2: resident operands, one PSUM tile (59-59.6 %)",
        family="mfu_ladder",
    ),
    Case(
        "rung3_resident_two_psum.py",
        "workload_lhsT_rhs.py",
        82.9,
        "MFU ladder rung 3: rung 2 with two alternating 128 x N accumulators, the plain loop "
        "(nki-autotune software-pipeline design, 'rotate_only': 82.9 %)",
        family="mfu_ladder",
    ),
    Case(
        "rung4_streamed_loads.py",
        "workload_lhsT_rhs.py",
        89.5,
        "MFU ladder rung 4: streamed, double-buffered loads, one level of K (89.5 %)",
        family="mfu_ladder",
    ),
    Case(
        "rung5_two_stage_k.py",
        "workload_lhsT_rhs.py",
        90.9,
        "MFU ladder rung 5: hand kernel, K in two stages, scheduler off (90.6-90.9 %)",
        SCHEDULER_OFF,
        family="mfu_ladder",
    ),
    Case(
        "lhs_dma_transpose.py",
        "workload_lhs_rhs.py",
        89.26,
        "lhs @ rhs hand kernel, lhs transposed by DMA, scheduler off (89.26 %)",
        SCHEDULER_OFF,
        family="lhs_transposes",
    ),
    Case(
        "lhs_tensore_transpose.py",
        "workload_lhs_rhs.py",
        33.0,
        "lhs @ rhs with PSUM-staged TensorE transposes beside the drain (near 33 %)",
        family="lhs_transposes",
    ),
    Case(
        "tutorial_tiled_fp32.py",
        "workload_tutorial_fp32.py",
        _tutorial_mfu(39.89),
        "NKI tutorial, tiled, fp32 (39.89 ms)",
        family="tutorial_fp32",
    ),
    Case(
        "tutorial_hoisted_fp32.py",
        "workload_tutorial_fp32.py",
        _tutorial_mfu(28.20),
        "NKI tutorial, hoisted loads, fp32 (28.20 ms)",
        family="tutorial_fp32",
    ),
    Case(
        "tutorial_k_blocked_fp32.py",
        "workload_tutorial_fp32.py",
        _tutorial_mfu(28.30),
        "NKI tutorial, M, N and K blocking, fp32 (28.30 ms)",
        family="tutorial_fp32",
    ),
)

# --- Trn2 GEMM scoreboard (awslabs/nki-autotune autotune/gemm/trn2-scoreboard.md @616e222) ---
# Square bf16; best loop order, tiles per block (K, M of 128, N of 512; a count that does
# not divide is taken at the next divisor down: 512^3 lhs lists 6 M tiles of 4), min ms,
# MFU as published.
_SCOREBOARD = (
    # mode, n, loop order, K, M, N tiles per block, min ms, MFU %, (lhs, rhs) positions
    ("lhs", 512, "NKM", 2, 6, 1, 0.056, 6.07, (1, 2)),
    ("lhs", 1024, "NMK", 8, 4, 2, 0.079, 34.15, (1, 2)),
    ("lhs", 1536, "NMK", 12, 1, 3, 0.149, 61.49, (0, 0)),
    ("lhs", 2048, "NMK", 2, 2, 1, 0.288, 75.73, (0, 1)),
    ("lhs", 2560, "MNK", 1, 4, 1, 0.509, 83.81, (1, 1)),
    ("lhs", 3072, "MNK", 12, 4, 2, 0.827, 86.56, (1, 1)),
    ("lhs", 3584, "MNK", 14, 4, 1, 1.291, 90.65, (1, 1)),
    ("lhs", 4096, "MNK", 4, 4, 2, 1.886, 92.67, (1, 1)),
    ("lhs", 4608, "MNK", 12, 3, 3, 2.653, 93.77, (1, 1)),
    ("lhs", 5120, "MNK", 10, 5, 2, 3.603, 94.74, (1, 1)),
    ("lhsT", 512, "KNM", 4, 1, 1, 0.054, 6.2, (0, 0)),
    ("lhsT", 1024, "NMK", 4, 2, 1, 0.076, 35.83, (0, 1)),
    ("lhsT", 1536, "NMK", 12, 1, 1, 0.141, 65.19, (0, 1)),
    ("lhsT", 2048, "MNK", 2, 4, 2, 0.269, 81.03, (2, 2)),
    ("lhsT", 2560, "MNK", 4, 5, 1, 0.483, 88.34, (1, 1)),
    ("lhsT", 3072, "NMK", 12, 2, 2, 0.795, 92.67, (1, 1)),
    ("lhsT", 3584, "MNK", 14, 7, 1, 1.247, 93.88, (2, 2)),
    ("lhsT", 4096, "MNK", 4, 4, 2, 1.823, 95.83, (2, 2)),
    ("lhsT", 4608, "MNK", 12, 4, 3, 2.573, 96.68, (2, 2)),
    ("lhsT", 5120, "NMK", 20, 5, 2, 3.504, 97.4, (2, 2)),
)


# The tuner also searched load positions (config.py: 0-2 per operand), unlisted: each case
# runs the model's fastest of the nine (last column; --search re-picks, names stale ones).
# An lhs case transposes its lhs tiles on TensorE as the template does (MetaGEMM.maybe_init
# calls SBUFTensor.tile_transpose after each block's load, autotune/gemm/kernels.py @1433f19),
# each just ahead of its first matmul, as a compiler interleaving them would run them.
_POSITIONS = tuple({"lhs_position": a, "rhs_position": b} for a in range(3) for b in range(3))


def _blocks(total: int, per_block: int) -> int:
    per_block = min(per_block, total)
    while total % per_block:
        per_block -= 1
    return total // per_block


def _gemm_kwargs(
    mode: str, n: int, order: str, k: int, m: int, nt: int, picked: tuple[int, int]
) -> dict[str, Any]:
    return {
        "lhs_position": picked[0],
        "rhs_position": picked[1],
        "loop_order": order,
        "k_blocks": _blocks(n // 128, k),
        "m_blocks": _blocks(n // 128, m),
        "n_blocks": _blocks(n // 512, nt),
        "transposed_lhs": mode == "lhsT",
        **({"lhs_transpose": "tensor", "transpose_order": "use"} if mode == "lhs" else {}),
    }


CASES += tuple(
    Case(
        "gemm_blocked_beta1.py",
        "workload_gemm.py",
        mfu,
        f"nki-autotune trn2 scoreboard {mode} x rhs {n}^3: {ms} ms, {mfu} % ({order} {k}/{m}/{nt}; "
        f"load positions {picked}: the model's fastest of the template's nine)",
        family=f"scoreboard_{mode}",
        measured_ms=ms,
        shapes={"lhs": (n, n), "rhs": (n, n)},
        kernel_kwargs=_gemm_kwargs(mode, n, order, k, m, nt, picked),
        small={"lhs": (512, 512), "rhs": (512, 512)},
        small_kwargs=_gemm_kwargs(mode, 512, order, k, m, nt, picked),
        name=f"scoreboard_{mode}_{n}",
        timing=SPIKE_HOST,
        search=_POSITIONS,
    )
    for mode, n, order, k, m, nt, ms, mfu, picked in _SCOREBOARD
)

# --- Trn1: NKIBench operators (zhang677/AccelOpt @2dbeab4, trn1.32xlarge, fp32) ---
# Latency and the profiler's engine active time (fractions there, percent here)
# from experiments/full_complete_local/profile_results.csv (the ID0 kernels);
# shapes from NKIBench/reference. The kernels here are written for this suite.
# fp32 FLOP/s per NeuronCore-v2: 2 x 128 x 128 x 2.8 GHz / 4 (kernelopt/sim/chips.py).
_TRN1_MATMUL_PEAK = 2 * 128 * 128 * 2.8e9 / 4
# The options AccelOpt's runner compiles every kernel with (accelopt/kernel_wrapper.py
# @0c52ac7: nki.baremetal(..., additional_compile_opt=...)).
_NKIBENCH_COMPILE = ("--disable-dge", "--logical-nc-config=1")


def _trn1_mfu(flops: float, ms: float) -> float:
    return round(100 * flops / (ms * 1e-3) / _TRN1_MATMUL_PEAK, 2)


CASES += (
    Case(
        "nkibench_silu.py",
        "workload_nkibench_silu.py",
        None,
        "NKIBench baseline kernel (profile_results.csv ID0) silu [4096, 7168]: 1.333 ms, "
        "VectorE 73.9 %, ScalarE 31.5 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="silu",
        measured_ms=1.333232,
        engines={"vector": 73.88, "scalar": 31.48, "gpsimd": 1.18},
        small={"x": (256, 2048)},
    ),
    Case(
        "nkibench_adamw.py",
        "workload_nkibench_adamw.py",
        None,
        "NKIBench baseline kernel (profile_results.csv ID0) adamw [10944, 2048]: 2.000 ms, "
        "VectorE 90.0 %, ScalarE 61.6 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="adamw",
        measured_ms=1.999829,
        engines={"vector": 90.02, "scalar": 61.62, "gpsimd": 0.59},
        small={k: (300, 256) for k in ("theta", "g", "m", "v")},
    ),
    Case(
        "nkibench_rmsnorm_matmul.py",
        "workload_nkibench_rmsnorm_matmul.py",
        _trn1_mfu(2 * 4096 * 2048 * 1024, 1.05576),
        "NKIBench baseline kernel (profile_results.csv ID0) rmsnorm_matmul M4096 N2048 K1024: "
        "1.056 ms, VectorE 3.9 %, ScalarE 17.8 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="rmsnorm_matmul",
        measured_ms=1.05576,
        engines={"vector": 3.88, "scalar": 17.75, "gpsimd": 0.51},
        small={"x": (1024, 512), "w": (512, 1024)},
    ),
    Case(
        "nkibench_matmul.py",
        "workload_nkibench_matmul.py",
        _trn1_mfu(2 * 4096 * 12288 * 5120, 35.199742),
        "NKIBench baseline kernel (profile_results.csv ID0) matmul M4096 N12288 K5120: "
        "35.20 ms, VectorE 0.0 %, ScalarE 6.8 %; HBM reads 9.06 GB = 12 x lhs + 32 x rhs "
        "(rhs chunk re-loaded per row tile, as compiled)",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="matmul",
        measured_ms=35.199742,
        engines={"vector": 0.0, "scalar": 6.80, "gpsimd": 0.07},
        small={"lhs": (256, 1024), "rhs": (1024, 2048)},
    ),
    Case(
        "nkibench_bmm.py",
        "workload_nkibench_bmm.py",
        _trn1_mfu(2 * 16 * 4096 * 4096 * 64, 4.610889),
        "NKIBench baseline kernel (profile_results.csv ID0) bmm B16 M4096 K64 N4096: 4.611 ms, "
        "VectorE 0.0 %, ScalarE 37.3 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="bmm",
        measured_ms=4.610889,
        engines={"vector": 0.0, "scalar": 37.26, "gpsimd": 2.61},
        small={"lhs": (2, 1024, 64), "rhs": (2, 64, 2048)},
    ),
)

# --- Trn1: the other NKIBench operators (same source; each kernel follows the structure
# of NKIBench's baseline kernel, NKIBench/kernels/<operator>_..._0.py, which is the
# kernel profile_results.csv measured: its rows are the "_ID0" service of that file) ---
_NKIBENCH = "NKIBench baseline kernel (profile_results.csv ID0)"

CASES += (
    Case(
        "nkibench_rope.py",
        "workload_nkibench_rope.py",
        None,
        f"{_NKIBENCH} rope D128 x 262144: 4.333 ms, VectorE 71.6 %, ScalarE 14.1 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="rope",
        measured_ms=4.33301,
        engines={"vector": 71.64, "scalar": 14.11, "gpsimd": 0.74},
        small={"x": (128, 1024), "cos": (64, 1024), "sin": (64, 1024)},
    ),
    Case(
        "nkibench_mamba.py",
        "workload_nkibench_mamba.py",
        None,
        f"{_NKIBENCH} mamba C256 M7168 S16: 2.889 ms, VectorE 61.3 %, ScalarE 18.6 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="mamba",
        measured_ms=2.888663,
        engines={"vector": 61.32, "scalar": 18.62, "gpsimd": 0.04},
        small={"delta": (256, 512), "u": (256, 512), "a": (256, 4), "b": (4, 512), "c": (4, 512)},
    ),
    Case(
        "nkibench_add_rmsnorm_matmul.py",
        "workload_nkibench_add_rmsnorm_matmul.py",
        _trn1_mfu(2 * 4096 * 2048 * 1024, 1.221911),
        f"{_NKIBENCH} add_rmsnorm_matmul M4096 N2048 K1024: 1.222 ms, VectorE 14.8 %, "
        "ScalarE 22.5 %; HBM reads 42.0 MB = each input once (w kept resident, as compiled)",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="add_rmsnorm_matmul",
        measured_ms=1.221911,
        engines={"vector": 14.84, "scalar": 22.54, "gpsimd": 0.43},
        small={"x": (256, 256), "w": (256, 1024), "z": (256, 256), "g": (256,)},
    ),
    Case(
        "nkibench_matmul_add_rmsnorm.py",
        "workload_nkibench_matmul_add_rmsnorm.py",
        _trn1_mfu(2 * 4096 * 2048 * 2048, 2.66658),
        f"{_NKIBENCH} matmul_add_rmsnorm M4096 N2048 K2048: 2.667 ms, VectorE 12.4 %, "
        "ScalarE 16.8 %; HBM reads 98.1 MB, inputs 83.9 MB (w kept resident, as compiled)",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="matmul_add_rmsnorm",
        measured_ms=2.66658,
        engines={"vector": 12.42, "scalar": 16.79, "gpsimd": 0.11},
        small={"x": (256, 256), "w": (256, 1024), "z": (256, 1024), "g": (1024,)},
    ),
)

CASES += (
    Case(
        "nkibench_transpose_matmul.py",
        "workload_nkibench_transpose_matmul.py",
        _trn1_mfu(2 * 4096 * 2048 * 10944, 9.610311),
        f"{_NKIBENCH} transpose_matmul M4096 K2048 N10944: 9.610 ms, VectorE 0.0 %, ScalarE 3.8 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="transpose_matmul",
        measured_ms=9.610311,
        engines={"vector": 0.0, "scalar": 3.79, "gpsimd": 0.23},
        small={"lhs": (256, 1024), "rhs": (256, 1600)},
    ),
)

CASES += (
    Case(
        "nkibench_swiglu.py",
        "workload_nkibench_swiglu.py",
        _trn1_mfu(3 * 2 * 4096 * 1024 * 3072, 4.221777),
        f"{_NKIBENCH} swiglu M4096 N3072 K1024: 4.222 ms, VectorE 13.5 %, ScalarE 9.3 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="swiglu",
        measured_ms=4.221777,
        engines={"vector": 13.47, "scalar": 9.33, "gpsimd": 0.07},
        small={"x": (512, 256), "w_up": (256, 1024), "w_down": (1024, 256), "w_gate": (256, 1024)},
    ),
)

CASES += (
    Case(
        "nkibench_bmm_softmax.py",
        "workload_nkibench_bmm_softmax.py",
        _trn1_mfu(2 * 16 * 4096 * 4096 * 64, 11.999614),
        f"{_NKIBENCH} bmm_softmax B16 K64 M4096 N4096: 12.00 ms, VectorE 46.4 %, ScalarE 43.4 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="bmm_softmax",
        measured_ms=11.999614,
        engines={"vector": 46.39, "scalar": 43.40, "gpsimd": 1.03},
        small={"lhs": (2, 1024, 64), "rhs": (2, 64, 2048)},
    ),
)

CASES += (
    Case(
        "nkibench_gqa.py",
        "workload_nkibench_gqa.py",
        _trn1_mfu(2 * 2 * 16 * 4096 * 4096 * 128, 19.110503),
        f"{_NKIBENCH} gqa_full B1 N4096 QH16 KH8 D128: 19.11 ms, VectorE 31.4 %, ScalarE 38.6 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="gqa",
        measured_ms=19.110503,
        engines={"vector": 31.39, "scalar": 38.60, "gpsimd": 0.17},
        small={"q": (1, 1024, 16, 128), "k": (1, 1024, 8, 128), "v": (1, 1024, 8, 128)},
    ),
)

CASES += (
    Case(
        "nkibench_lora.py",
        "workload_nkibench_lora.py",
        _trn1_mfu(2 * 4096 * 5120 * (12288 + 128) + 2 * 4096 * 128 * 12288, 30.16637),
        f"{_NKIBENCH} lora M4096 N12288 K5120 R128: 30.17 ms, VectorE 9.8 %, ScalarE 3.4 %",
        chip="trn1",
        compiler_args=_NKIBENCH_COMPILE,
        family="lora",
        measured_ms=30.16637,
        engines={"vector": 9.81, "scalar": 3.44, "gpsimd": 0.18},
        small={"x": (512, 5120), "w": (5120, 1024), "a": (5120, 128), "b": (128, 1024)},
    ),
)

# --- Trn2 single facts (the project's calibration notes, "Other single facts") ---
# Rung 3's public variants: one loop, three ways to order it, all within a point of
# each other on hardware (awslabs/nki-autotune @2b49fed
# docs/superpowers/specs/2026-06-06-software-pipeline-tier-b-design.md, "Validated on
# hardware": rotate_only 82.9 %, skewed 83.7 %; the notes: stages (0, 1, 1) 83.26 %,
# the stationary-reuse order 83.06 % against 83.00 %). A family of their own: a fold
# that holds them out asks whether the model keeps them level without seeing them.
_RUNG3 = "rung 3 (two 128 x N accumulators) as the public software-pipelining experiments ran it"

CASES += (
    Case(
        "rung3_resident_two_psum.py",
        "workload_lhsT_rhs.py",
        83.7,
        f"{_RUNG3}: stages (0, 0, 1), each drain a row late ('skewed', 83.7 %)",
        family="rung3_variants",
        kernel_kwargs={"stages": (0, 0, 1)},
        small_kwargs={"stages": (0, 0, 1)},
        name="rung3_stages_001",
    ),
    Case(
        "rung3_resident_two_psum.py",
        "workload_lhsT_rhs.py",
        83.26,
        f"{_RUNG3}: stages (0, 1, 1), only the memset a row ahead (83.26 %)",
        family="rung3_variants",
        kernel_kwargs={"stages": (0, 1, 1)},
        small_kwargs={"stages": (0, 1, 1)},
        name="rung3_stages_011",
    ),
    Case(
        "rung3_resident_two_psum.py",
        "workload_lhsT_rhs.py",
        83.06,
        f"{_RUNG3}: K outside N, each stationary tile reused by N matmuls (83.06 % vs 83.00 %)",
        family="rung3_variants",
        kernel_kwargs={"order": "mkn"},
        small_kwargs={"order": "mkn"},
        name="rung3_stationary_reuse",
    ),
)

# rmsnorm + matmul at 2048^3 bf16 (awslabs/nki-autotune
# kernel_library/rmsnorm_matmul_m2048_k2048_n2048.py: its graph, and as reference_mfu
# 79.09 %, "best manually achieved Kaena MFU percentage for the same workload and
# shape"; the notes: rmsnorm + matmul 79-80 %). That kernel's text is not public: the
# loop structure here is assumed (see the kernel's docstring).
CASES += (
    Case(
        "rmsnorm_matmul_trn2.py",
        "workload_rmsnorm_matmul.py",
        79.09,
        "nki-autotune rmsnorm_matmul 2048^3 bf16, best hand kernel (reference_mfu): 79.09 % "
        "(notes: 79-80 %); its text is not public, loop structure assumed",
        family="rmsnorm_matmul_trn2",
        small={"lhs": (256, 512), "rhs": (512, 1024)},
    ),
)

# Hand-written attention, one head, D = 128, bf16 (the notes: 30 % / 46 % MFU at 2k /
# 16k; nkilib attention_cte's structure). MFU as the notes count it ("MAC = 4 SEQ^2 D"
# over metrics.py's trn2 peak of 2 x 128 x 128 MACs per 2.4 GHz cycle) = 4 S^2 D FLOPs
# over one core's 78.64e12, ours (their D 64 kernel, 1.947 ms at 44.88 %, fits only
# that; the runner compiles --lnc=1). Single facts: timing (taken as device time),
# batch, heads, causality (assumed 1, 1, none) unstated. See docs/sim.md.
_ATTENTION = "hand-written attention (nkilib attention_cte structure), D 128 bf16, one head"

CASES += (
    Case(
        "attention_flash.py",
        "workload_attention.py",
        30.0,
        f"{_ATTENTION}, S 2048: 30 % (single fact; timing unstated)",
        family="attention",
        small={"q": (512, 128), "k": (128, 512), "v": (512, 128)},
        name="attention_2k",
    ),
    Case(
        "attention_flash.py",
        "workload_attention.py",
        46.0,
        f"{_ATTENTION}, S 16384, two 8K key sections: 46 % = 3.80 ms for 4 S^2 D FLOPs on one "
        "core (single fact; timing unstated; MFU formula checked, no correction)",
        family="attention",
        shapes={"q": (16384, 128), "k": (128, 16384), "v": (16384, 128)},
        # The flash path (three sections) at a small shape: same code, lower constants.
        small={"q": (1536, 128), "k": (128, 1536), "v": (1536, 128)},
        small_kwargs={"section_keys": 512, "flash_above": 600},
        name="attention_16k",
    ),
)

# The NKI fused Mamba tutorial's three versions on Trn1 (a ladder: cases_mamba_ladder.py).
CASES += _sibling("cases_mamba_ladder").cases(Case)
# Two public CS152 lab 6 conv2d kernels on Trn1 at the lab's shapes (cases_conv2d_cs152.py).
CASES += _sibling("cases_conv2d_cs152").cases(Case)
# The CS149 asst4 vector-add ladder: seven timed versions on Trn1 and its Fall 2025
# rewrite's six on Trn2 (cases_vecadd_cs149.py).
CASES += _sibling("cases_vecadd_cs149").cases(Case)


FAILURES: tuple[Failure, ...] = (
    Failure(
        "rung3_resident_two_psum.py",
        "workload_lhsT_rhs.py",
        {"slots": 3},
        r"Out of memory in psum",
        "rung 3 with a depth-3 accumulator: 3 x 128 x 2048 fp32 = 3 MiB > 2 MiB of PSUM, "
        "'Out of memory in PSUM' (the notes; the pipelining design's (0, 1, 2) option)",
        "rung3_depth3_psum",
    ),
)
