"""The CS149 asst4 (Fall 2025) part 1 vector-add ladder on Trn2: the same lesson as the
Fall 2024 one (cases_vecadd_cs149.py) rewritten for Trn2 with explicit DMA copies and the
compiler's middle end skipped, six timed versions from one student's published answers.

Source: xaviergonzalez/asst4-trainium2 @071093b writeup.md, which pastes the benchmark's
table for the first versions (B 1, NC 1, LIBMODE; NCL(1)/NCL(50)/NCL(99) in us), run with
the assignment's part1/run_benchmark.py (stanford-cs149 asst4-trainium2; the copy in
rishic3/asst4-trainium2 @ef7e4ef): ``nki.benchmark(kernel, warmup=1, iters=10)``, printed
``nc_latency.get_latency_percentile(99)``; with ``--profile_name`` it also saves the trace
and compiles with ``--disable-dge``. The handout (README.md, e.g. a-argy/asst4-trainium2
@ed68d0c) runs on a trn2.3xlarge; the profile summaries two other students committed say
``instance_type trn2.3xlarge``. fp32. The kernels are the handout's part1/kernels.py
(e.g. that writeup's repository @6007a41) with one constant edited per version:
- at 25,600 elements: ``vector_add_tiled`` ROW_CHUNK 1 (NCL(99) 37,318 us, NCL(50)
  37,308) and 128 (378), ``vector_add_stream`` FREE_DIM 2 (186) and 200 (15);
- at 256,000 elements, the profiler's ``total_time`` (device-side, one traced run, with
  ``--disable-dge``): ``vector_add_stream`` FREE_DIM 2,000 2.8e-5 s and 1,000 2.6e-5 s.
  Two other students' committed summaries agree: rishic3/asst4-trainium2 @ef7e4ef
  28.36 / 27.86 us, chenhzhu/asst4-trainium2 @e30a10f 28.90 / 26.42 us.
Written here: ``vecadd_rows_dma.py``, ``vecadd_columns_dma.py``. Scored as device time
(whether nc_latency adds anything to the core's execution is not stated; unverified).
"""

from __future__ import annotations

from typing import Any

_SOURCE = "CS149 asst4 part 1 (xaviergonzalez/asst4-trainium2 @071093b writeup.md), trn2"
_P99 = "run_benchmark.py p99 nc_latency"
_PROFILE = "neuron-profile total_time (--disable-dge)"
_LADDER = (
    # kernel, kwargs, length, measured us, how, name
    ("vecadd_rows_dma.py", {"rows": 1}, 25600, 37318, _P99, "vecadd2_rows1_n25600"),
    ("vecadd_rows_dma.py", {"rows": 128}, 25600, 378, _P99, "vecadd2_rows128_n25600"),
    ("vecadd_columns_dma.py", {"free": 2}, 25600, 186, _P99, "vecadd2_columns2_n25600"),
    ("vecadd_columns_dma.py", {"free": 200}, 25600, 15, _P99, "vecadd2_columns200_n25600"),
    ("vecadd_columns_dma.py", {"free": 2000}, 256000, 28, _PROFILE, "vecadd2_columns2000_n256000"),
    ("vecadd_columns_dma.py", {"free": 1000}, 256000, 26, _PROFILE, "vecadd2_columns1000_n256000"),
)
# What the numerics test runs: 1,024 elements (25,600 for the 200-wide and wider blocks).
_SMALL = {"vecadd_rows_dma.py": (1024, {"rows": 128}), "vecadd_columns_dma.py": (1024, {"free": 2})}
_SMALL_WIDE = (25600, {"free": 200})


def _case(Case: Any, kernel: str, kwargs: dict, length: int, us: int, how: str, name: str):
    wide = kwargs.get("free", 0) >= 200
    small, small_kwargs = _SMALL_WIDE if wide else _SMALL[kernel]
    return Case(
        kernel,
        "workload_vecadd.py",
        None,
        f"{_SOURCE}: {name}, {how} {us} us",
        compiler_args=("--disable-dge",) if how == _PROFILE else (),
        chip="trn2",
        family="vecadd_cs149_trn2",
        measured_ms=us / 1000,
        shapes={"a_vec": (length,), "b_vec": (length,)},
        kernel_kwargs=kwargs,
        small={"a_vec": (small,), "b_vec": (small,)},
        small_kwargs=small_kwargs,
        name=name,
    )


def cases(Case: Any) -> tuple[Any, ...]:
    """The ladder's versions, as ``Case`` (``case_types.Case``, which cases.py loads)."""
    return tuple(_case(Case, *row) for row in _LADDER)
