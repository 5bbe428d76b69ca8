"""Two public CS152 lab 6 conv2d kernels on Trn1, each measured at the lab's shapes.

Sources: the students' own performance reports, written by the lab's tester
(ucb-152/lab6 nki_conv2d/tester.py @0eef90e: ``nki.benchmark(warmup=20, iters=100)``,
``benchmark_time`` = ``nc_latency.get_latency_percentile(50)`` in microseconds; the lab's
README: a Trainium instance with one device of two NeuronCores, i.e. trn1.2xlarge). The
kernels set ``NEURON_CC_FLAGS = " --disable-dge "`` at import, so they compiled with it.
- Jingfeng0705/cs152_lab6 @a635a9f nki_conv2d/reports/fleet_performance_test_report.json,
  of its nki_conv2d/conv2d.py at that commit: ``conv2d_rowwise.py`` here.
- magmawolf8/cs152-lab6 @2814885 (same report path), of its conv2d.py at that commit:
  ``conv2d_halo.py`` here.
The lab's fleet names each shape ``in{C}_out{K}_filter{F}x{F}_batch{N}_{H}x{W}_{dtype}``.
Taken here: its five batch-4 shapes (the batch-16 ones repeat the same work four times
over and would double the benchmark's run time). Whether nc_latency includes any runtime
cost beyond the NeuronCore's execution is not stated (unverified): scored as device time.
"""

from __future__ import annotations

from typing import Any

_SHAPES = {
    # name: (C, K, F, N, H=W, dtype), (row-wise us, halo us)
    "in128_out256_filter3x3_batch4_34x34_float32": ((128, 256, 3, 4, 34, "float32"), (504, 173)),
    "in128_out256_filter3x3_batch4_66x66_float16": ((128, 256, 3, 4, 66, "float16"), (557, 268)),
    "in128_out256_filter5x5_batch4_36x36_float32": ((128, 256, 5, 4, 36, "float32"), (2162, 447)),
    "in256_out256_filter3x3_batch4_34x34_float32": ((256, 256, 3, 4, 34, "float32"), (989, 327)),
    "in256_out256_filter5x5_batch4_36x36_float16": ((256, 256, 5, 4, 36, "float16"), (2169, 312)),
}
_SMALL = {"X": (1, 128, 34, 34), "W": (128, 128, 3, 3), "bias": (128,)}
_KERNELS = (
    ("conv2d_rowwise.py", "Jingfeng0705/cs152_lab6 @a635a9f", "rowwise"),
    ("conv2d_halo.py", "magmawolf8/cs152-lab6 @2814885", "halo"),
)


def _case(Case: Any, which: int, name: str) -> Any:
    (c, k, f, n, hw, dtype), measured = _SHAPES[name]
    kernel, source, short = _KERNELS[which]
    us = measured[which]
    return Case(
        kernel,
        "workload_conv2d.py" if dtype == "float16" else "workload_conv2d_fp32.py",
        None,
        f"CS152 lab 6 conv2d ({source} fleet_performance_test_report.json), trn1: {name}, "
        f"p50 {us} us",
        compiler_args=("--disable-dge",),
        chip="trn1",
        family="conv2d_cs152",
        measured_ms=us / 1000,
        shapes={"X": (n, c, hw, hw), "W": (k, c, f, f), "bias": (k,)},
        small=_SMALL,
        name=f"conv2d_{short}_c{c}_k{k}_f{f}_{hw}_{'fp16' if dtype == 'float16' else 'fp32'}",
    )


def cases(Case: Any) -> tuple[Any, ...]:
    """Both kernels at every shape, as ``Case`` (``case_types.Case``, which cases.py loads)."""
    return tuple(_case(Case, which, name) for which in (0, 1) for name in _SHAPES)
