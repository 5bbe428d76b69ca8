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


def _case(Case: Any, kernel: str, kwargs: dict, length: int, us: int, how: str, name: str):
    wide = kernel == "vecadd_stream.py" and kwargs["free"] >= 200
    small, small_kwargs = _SMALL_WIDE if wide else _SMALL[kernel]
    return Case(
        kernel,
        "workload_vecadd.py",
        None,
        f"{_SOURCE}: {name}, {how} {us} us",
        chip="trn1",
        family="vecadd_cs149",
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
