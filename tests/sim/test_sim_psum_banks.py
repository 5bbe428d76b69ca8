"""PSUM bank pressure: one accumulation tile serialises zeroing, matmuls and
drain; two alternating tiles let one drain while the other accumulates.

The kernels are the calibration set's ladder rungs 2 and 3 (measured on
Trn2 at 59.6 % and 82.9-83.7 % MFU), run trace-only at the measured shape (2048^3 bf16).
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np

from kernelopt.sim import run_kernel

CALIBRATION = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration"
BF16 = np.dtype(ml_dtypes.bfloat16)


def _run(kernel: str):
    inputs = {"lhsT": np.zeros((2048, 2048), BF16), "rhs": np.zeros((2048, 2048), BF16)}
    return run_kernel(CALIBRATION / kernel, inputs, compute=False)


def _overlap_ns(run, a: str, b: str) -> float:
    """Time engines ``a`` and ``b`` are busy at once."""
    t = run.timeline

    def spans(engine: str) -> list[tuple[float, float]]:
        return sorted(
            (t.start_ns[i], t.end_ns[i]) for i, ins in enumerate(run.trace) if ins.engine == engine
        )

    total, other = 0.0, spans(b)
    for s, e in spans(a):
        for s2, e2 in other:
            if s2 >= e:
                break
            total += max(0.0, min(e, e2) - max(s, s2))
    return total


def test_one_psum_tile_serialises_the_drain_with_the_matmuls():
    one = _run("rung2_resident_one_psum.py")
    # Every drain reads the tile the next matmuls must overwrite: TensorE
    # and VectorE never work at the same time.
    assert _overlap_ns(one, "tensor", "vector") < 0.02 * one.profile["total_time"] * 1e9


def test_two_psum_tiles_overlap_the_drain_with_the_matmuls():
    one = _run("rung2_resident_one_psum.py")
    two = _run("rung3_resident_two_psum.py")
    vector_busy = two.timeline.engine_busy_ns["vector"]
    assert _overlap_ns(two, "tensor", "vector") > 0.8 * vector_busy
    # The public ladder: 59.6 % -> ~83 %, a ~1.4x speed-up from the second bank.
    assert 1.25 < one.profile["total_time"] / two.profile["total_time"] < 1.6
