"""A DMA's data phase runs on the engines of the SBUF partitions it touches, eight
partitions to an engine (aws-neuron-sdk nki/about/nki-dma-overview.rst @38ce84f: a
[4, 4096] transfer runs on one of the sixteen engines, a [128, 128] one on all)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from kernelopt.sim import run_kernel
from kernelopt.sim.trn2 import DEFAULT_PARAMS

KERNEL = Path(__file__).parent / "kernels" / "partition_loads.py"


def _loads(first: tuple[int, int], second: tuple[int, int]) -> tuple[float, float]:
    """The data phases (end minus start, less the fixed latency) of the two loads."""
    x = np.arange(128 * 4096, dtype=np.float32).reshape(128, 4096)
    run = run_kernel(KERNEL, {"x": x}, kernel_kwargs={"first_rows": first, "second_rows": second})
    np.testing.assert_array_equal(
        run.outputs, np.concatenate([x[slice(*first)], x[slice(*second)]])
    )
    loads = [i for i, ins in enumerate(run.trace) if ins.op == "dma_copy"][:2]
    t, fixed = run.timeline, DEFAULT_PARAMS.dma_hwdge_fixed_ns
    return tuple(t.end_ns[i] - t.start_ns[i] - fixed for i in loads)  # type: ignore[return-value]


def test_a_transfer_on_fewer_partitions_gets_fewer_engines():
    # The same bytes per partition: 64 partitions on eight engines, eight on one.
    half, _ = _loads((0, 64), (64, 128))
    one, _ = _loads((0, 8), (64, 72))
    # An eighth of the bytes on an eighth of the engines: the same time.
    assert one == pytest.approx(half, rel=0.02)
    # All 128 partitions: twice the bytes of the 64-partition load on twice the engines.
    whole, _ = _loads((0, 128), (0, 128))
    assert whole == pytest.approx(half, rel=0.02)


def test_transfers_on_disjoint_engines_move_at_once_and_on_the_same_ones_in_turn():
    disjoint = _loads((0, 64), (64, 128))
    same = _loads((0, 64), (0, 64))
    # Partitions 64-127 are other engines: the second load does not wait for the first.
    assert disjoint[1] == pytest.approx(disjoint[0], rel=0.05)
    # The same partitions: the second waits for the first's data on those engines.
    assert same[1] == pytest.approx(2 * same[0], rel=0.05)


def test_a_four_partition_load_takes_as_long_as_the_overview_profiled_on_one_engine():
    # The overview's example 1: A[4, 4096] bf16 (32 KiB) from HBM to SBUF ran on the
    # first DMA engine alone, which took 1,416 ns to load it.
    x = np.ones((128, 4096), dtype=ml_dtypes.bfloat16)
    run = run_kernel(
        KERNEL, {"x": x}, kernel_kwargs={"first_rows": (0, 4), "second_rows": (64, 68)}
    )
    first = next(i for i, ins in enumerate(run.trace) if ins.op == "dma_copy")
    fixed = DEFAULT_PARAMS.dma_hwdge_fixed_ns  # the issue is part of it
    data_ns = run.timeline.end_ns[first] - run.timeline.start_ns[first] - fixed
    assert data_ns == pytest.approx(1416, rel=0.1)
