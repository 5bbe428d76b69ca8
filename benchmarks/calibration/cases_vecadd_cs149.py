"""The CS149 asst4 (Fall 2024) part 1 vector-add ladder on Trn1: one kernel in seven
timed versions, each with its own measured time, from one student's published answers.

Source: robertpare17/asst4-trainium @028e80d solution.md (answers to the handout's
questions), run with the assignment's harness part1/vec_add.py (stanford-cs149
asst4-trainium, Fall 2024; the copy in waahm7/asst4-trainium @04182c2):
``nki.benchmark(warmup=1, iters=10)``, printed ``nc_latency.get_latency_percentile(99)``
in microseconds. The handout (README.md, same copies) runs everything on a trn1.2xlarge;
the student's own setup script names no instance (unverified beyond the handout). fp32.
The kernels are the handout's part1/kernels.py with the students' one-constant edits:
- at 25,600 elements: ``vector_add_tiled`` with ROW_CHUNK 1 (27,404 us) and 128 (206 us),
  ``vector_add_stream`` with FREE_DIM 2 (53 us) and 200 (19 us);
- at 256,000 elements, the profiler's ``total_time`` (neuron-profile summary of one traced
  run, device-side): ``vector_add_stream`` FREE_DIM 2,000 34 us, 1,000 29 us; and the
  harness's p99 for ``vector_add_direct_allocation`` (FREE_DIM 1,000, four physical tiles
  per tensor, compiled with ``disable_allocation_opt``), 29 us (FREE_DIM 1,000 streamed:
  30 us by the same p99, within 1 us of its profiled time).
Written here: ``vecadd_rows.py``, ``vecadd_stream.py``, ``vecadd_mod_alloc.py``.
Whether nc_latency adds anything to the NeuronCore's execution is not stated
(unverified): scored as device time, as the CS152 reports are.
"""

from __future__ import annotations

from typing import Any

_SOURCE = "CS149 asst4 part 1 (robertpare17/asst4-trainium @028e80d solution.md), trn1"
_P99 = "vec_add.py p99 nc_latency"
_PROFILE = "neuron-profile total_time"
_LADDER = (
    # kernel, kwargs, length, measured us, how, name
    ("vecadd_rows.py", {"rows": 1}, 25600, 27404, _P99, "vecadd_rows1_n25600"),
    ("vecadd_rows.py", {"rows": 128}, 25600, 206, _P99, "vecadd_rows128_n25600"),
    ("vecadd_stream.py", {"free": 2}, 25600, 53, _P99, "vecadd_stream2_n25600"),
    ("vecadd_stream.py", {"free": 200}, 25600, 19, _P99, "vecadd_stream200_n25600"),
    ("vecadd_stream.py", {"free": 2000}, 256000, 34, _PROFILE, "vecadd_stream2000_n256000"),
    ("vecadd_stream.py", {"free": 1000}, 256000, 29, _PROFILE, "vecadd_stream1000_n256000"),
    ("vecadd_mod_alloc.py", {}, 256000, 29, _P99, "vecadd_mod_alloc1000_n256000"),
)
# What the numerics test runs: (elements, kernel arguments) per kernel, wide tiles apart.
_SMALL = {
    "vecadd_rows.py": (1024, {"rows": 128}),
    "vecadd_stream.py": (1024, {"free": 2}),
    "vecadd_mod_alloc.py": (1024, {"free": 4}),
}
_SMALL_WIDE = (25600, {"free": 200})


# The Fall 2025 rewrite of the same ladder on Trn2 (family vecadd_cs149_trn2):
# The CS149 asst4 (Fall 2025) part 1 vector-add ladder on Trn2: the same lesson as the
# Fall 2024 one (cases_vecadd_cs149.py) rewritten for Trn2 with explicit DMA copies and the
# compiler's middle end skipped, six timed versions from one student's published answers.
#
# Source: xaviergonzalez/asst4-trainium2 @071093b writeup.md, which pastes the benchmark's
# table for the first versions (B 1, NC 1, LIBMODE; NCL(1)/NCL(50)/NCL(99) in us), run with
# the assignment's part1/run_benchmark.py (stanford-cs149 asst4-trainium2; the copy in
# rishic3/asst4-trainium2 @ef7e4ef): ``nki.benchmark(kernel, warmup=1, iters=10)``, printed
# ``nc_latency.get_latency_percentile(99)``; with ``--profile_name`` it also saves the trace
# and compiles with ``--disable-dge``. The handout (README.md, e.g. a-argy/asst4-trainium2
# @ed68d0c) runs on a trn2.3xlarge; the profile summaries two other students committed say
# ``instance_type trn2.3xlarge``. fp32. The kernels are the handout's part1/kernels.py
# (e.g. that writeup's repository @6007a41) with one constant edited per version:
# - at 25,600 elements: ``vector_add_tiled`` ROW_CHUNK 1 (NCL(99) 37,318 us, NCL(50)
#   37,308) and 128 (378), ``vector_add_stream`` FREE_DIM 2 (186) and 200 (15);
# - at 256,000 elements, the profiler's ``total_time`` (device-side, one traced run, with
#   ``--disable-dge``): ``vector_add_stream`` FREE_DIM 2,000 2.8e-5 s and 1,000 2.6e-5 s.
#   Two other students' committed summaries agree: rishic3/asst4-trainium2 @ef7e4ef
#   28.36 / 27.86 us, chenhzhu/asst4-trainium2 @e30a10f 28.90 / 26.42 us.
# Written here: ``vecadd_rows_dma.py``, ``vecadd_columns_dma.py``. Scored as device time
# (whether nc_latency adds anything to the core's execution is not stated; unverified).
_SOURCE2 = "CS149 asst4 part 1 (xaviergonzalez/asst4-trainium2 @071093b writeup.md), trn2"
_P99_2 = "run_benchmark.py p99 nc_latency"
_PROFILE2 = "neuron-profile total_time (--disable-dge)"
_LADDER2 = (
    # kernel, kwargs, length, measured us, how, name
    ("vecadd_rows_dma.py", {"rows": 1}, 25600, 37318, _P99_2, "vecadd2_rows1_n25600"),
    ("vecadd_rows_dma.py", {"rows": 128}, 25600, 378, _P99_2, "vecadd2_rows128_n25600"),
    ("vecadd_columns_dma.py", {"free": 2}, 25600, 186, _P99_2, "vecadd2_columns2_n25600"),
    ("vecadd_columns_dma.py", {"free": 200}, 25600, 15, _P99_2, "vecadd2_columns200_n25600"),
    ("vecadd_columns_dma.py", {"free": 2000}, 256000, 28, _PROFILE2, "vecadd2_columns2000_n256000"),
    ("vecadd_columns_dma.py", {"free": 1000}, 256000, 26, _PROFILE2, "vecadd2_columns1000_n256000"),
)
# What the numerics test runs: 1,024 elements (25,600 for the 200-wide and wider blocks).
_SMALL2 = {
    "vecadd_rows_dma.py": (1024, {"rows": 128}),
    "vecadd_columns_dma.py": (1024, {"free": 2}),
}
_SMALL_WIDE2 = (25600, {"free": 200})


def _case(Case: Any, ladder: tuple, row: tuple) -> Any:
    """One version: ``ladder`` = (source, chip, family, small, small_wide, profile)."""
    source, chip, family, small_of, small_wide, profile = ladder
    kernel, kwargs, length, us, how, name = row
    wide = kwargs.get("free", 0) >= 200
    small, small_kwargs = small_wide if wide else small_of[kernel]
    return Case(
        kernel,
        "workload_vecadd.py",
        None,
        f"{source}: {name}, {how} {us} us",
        # The Trn2 harness compiles its profiled runs with --disable-dge.
        compiler_args=("--disable-dge",) if how == profile and chip == "trn2" else (),
        chip=chip,
        family=family,
        measured_ms=us / 1000,
        shapes={"a_vec": (length,), "b_vec": (length,)},
        kernel_kwargs=kwargs,
        small={"a_vec": (small,), "b_vec": (small,)},
        small_kwargs=small_kwargs,
        name=name,
    )


def cases(Case: Any) -> tuple[Any, ...]:
    """Both ladders' versions, as ``Case`` (``case_types.Case``, which cases.py loads)."""
    trn1 = (_SOURCE, "trn1", "vecadd_cs149", _SMALL, _SMALL_WIDE, _PROFILE)
    trn2 = (_SOURCE2, "trn2", "vecadd_cs149_trn2", _SMALL2, _SMALL_WIDE2, _PROFILE2)
    return tuple(_case(Case, trn1, row) for row in _LADDER) + tuple(
        _case(Case, trn2, row) for row in _LADDER2
    )
