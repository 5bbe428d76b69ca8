"""The fake Trn2 device's own timing (kernelopt/testing/fake_trn2/timing*.py):
each mechanism on a hand-built instruction stream, and its independence from
kernelopt's cost model."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from kernelopt.sim.trace import AllocationInfo, Instruction
from kernelopt.testing.fake_trn2 import hardware, timing
from kernelopt.testing.fake_trn2.timing_mechanisms import Engine

SBUF_A, SBUF_B, SBUF_C, PSUM_A, PSUM_B, HBM = 0, 1, 2, 3, 4, 5
ALLOCATIONS = (
    AllocationInfo(SBUF_A, "a", "sbuf", 1, 4096),
    AllocationInfo(SBUF_B, "b", "sbuf", 2, 4096),
    AllocationInfo(SBUF_C, "c", "sbuf", 3, 4096),
    AllocationInfo(PSUM_A, "pa", "psum", 4, 2048),
    AllocationInfo(PSUM_B, "pb", "psum", 5, 2048),
    AllocationInfo(HBM, "in", "hbm", 6, 0),
)


def box(alloc: int, *extents: int, start: int = 0):
    return (alloc, ((0, 128), *((start, start + e) for e in extents)))


def vector(src, dst, free: int = 512, **kw) -> Instruction:
    return Instruction("tensor_copy", "vector", 1, (src,), (dst,), partitions=128, free=free, **kw)


def matmul(stationary, moving, dst, n: int = 512) -> Instruction:
    return Instruction(
        "nc_matmul",
        "tensor",
        1,
        (stationary, moving),
        (dst,),
        partitions=128,
        free=n,
        stationary_free=128,
        macs=128 * 128 * n,
    )


def dma(dst, nbytes: int, row_bytes: int) -> Instruction:
    return Instruction(
        "dma_copy",
        "dma",
        1,
        (box(HBM, 1 << 20),),
        (dst,),
        partitions=128,
        nbytes=nbytes,
        row_bytes=row_bytes,
        hbm_read=nbytes,
    )


def run(*trace: Instruction, scheduler_on: bool = False) -> timing.DeviceRun:
    return timing.time_trace(trace, ALLOCATIONS, scheduler_on)


def test_an_engine_runs_its_stream_in_order_while_other_engines_overlap() -> None:
    one = run(vector(box(SBUF_A, 512), box(SBUF_B, 512)))
    same = run(
        vector(box(SBUF_A, 512), box(SBUF_B, 512)), vector(box(SBUF_A, 512), box(SBUF_C, 512))
    )
    other = run(
        vector(box(SBUF_A, 512), box(SBUF_B, 512)),
        Instruction(
            "activation",
            "scalar",
            1,
            (box(SBUF_A, 512),),
            (box(SBUF_C, 512),),
            partitions=128,
            free=512,
        ),
    )
    busy = one.total_ns - timing.LAUNCH_NS
    assert same.start_ns[1] >= one.end_ns[0] - busy  # not before the first left the engine
    assert same.total_ns > one.total_ns + 0.8 * busy * 0.9
    assert other.start_ns[1] == pytest.approx(0.0)  # ScalarE does not wait for VectorE


def test_a_dependent_instruction_waits_for_the_pipeline_an_independent_one_does_not() -> None:
    independent = run(
        vector(box(SBUF_A, 512), box(SBUF_B, 512)), vector(box(SBUF_A, 512), box(SBUF_C, 512))
    )
    dependent = run(
        vector(box(SBUF_A, 512), box(SBUF_B, 512)), vector(box(SBUF_B, 512), box(SBUF_C, 512))
    )
    latency = timing.PIPE_CYCLES["vector"] / timing.ENGINE_HZ["vector"] * 1e9
    gap = dependent.start_ns[1] - independent.start_ns[1]
    assert gap == pytest.approx(latency)


def test_a_cross_engine_wait_costs_the_semaphore_once_per_new_signal() -> None:
    producer = vector(box(SBUF_A, 512), box(SBUF_B, 512))
    first = Instruction(
        "activation",
        "scalar",
        1,
        (box(SBUF_B, 512),),
        (box(SBUF_C, 512),),
        partitions=128,
        free=512,
    )
    again = Instruction(
        "activation",
        "scalar",
        1,
        (box(SBUF_B, 512),),
        (box(SBUF_C, 256),),
        partitions=128,
        free=256,
    )
    timeline = run(producer, first, again)
    usable = timeline.end_ns[0]
    assert timeline.start_ns[1] == pytest.approx(usable + timing.SEMAPHORE_NS)
    # The second reader's engine already saw that signal: no wait, no poll.
    occupancy = (256 + timing.DISPATCH_CYCLES["scalar"]) / timing.ENGINE_HZ["scalar"] * 1e9
    pipe = timing.PIPE_CYCLES["scalar"] / timing.ENGINE_HZ["scalar"] * 1e9
    assert timeline.end_ns[2] - timeline.start_ns[2] == pytest.approx(occupancy + pipe)


def test_accumulating_matmuls_do_not_wait_for_the_array_to_drain_but_the_drain_does() -> None:
    mms = [matmul(box(SBUF_A, 128), box(SBUF_B, 512), box(PSUM_A, 512)) for _ in range(4)]
    timeline = run(*mms, vector(box(PSUM_A, 512), box(SBUF_C, 512), psum_read=True))
    drain = timing.TENSOR_DRAIN_CYCLES / timing.TENSOR_HZ * 1e9
    for i in range(1, 4):
        assert timeline.start_ns[i] < timeline.end_ns[i - 1]  # back to back, before the drain
    assert timeline.start_ns[4] >= timeline.start_ns[3] + drain + timing.SEMAPHORE_NS


def test_tensor_engine_starts_throttled_and_ramps_to_full_rate() -> None:
    mms = [matmul(box(SBUF_A, 128), box(SBUF_B, 512), box(PSUM_A, 512)) for _ in range(40)]
    timeline = run(*mms)
    first = timeline.start_ns[1] - timeline.start_ns[0]
    last = timeline.start_ns[-1] - timeline.start_ns[-2]
    full = (512 + timing.DISPATCH_CYCLES["tensor"]) / timing.TENSOR_HZ * 1e9
    # The first matmul also loads its weights (32 cycles), at half rate.
    assert first == pytest.approx((full + 128 / 4 / 2.4) / timing.THROTTLED_RATE)
    assert last == pytest.approx(full)
    middle = [b - a for a, b in zip(timeline.start_ns, timeline.start_ns[1:], strict=False)]
    assert all(x >= y - 1e-9 for x, y in zip(middle[1:], middle[2:], strict=False))  # a ramp


def test_psum_tiles_sharing_a_bank_serialise_tensor_writes_and_drains() -> None:
    small = (
        AllocationInfo(PSUM_A, "pa", "psum", 4, 2048),
        AllocationInfo(PSUM_B, "pb", "psum", 5, 2048),
        *[a for a in ALLOCATIONS if a.kind != "psum"],
    )

    def timeline(n: int) -> timing.DeviceRun:
        # Fill tile A, then drain it on VectorE while TensorE fills tile B.
        trace = [
            matmul(box(SBUF_A, 128), box(SBUF_B, n), box(PSUM_A, n)),
            vector(box(PSUM_A, n), box(SBUF_C, n), free=n, psum_read=True),
            matmul(box(SBUF_A, 128), box(SBUF_B, n), box(PSUM_B, n)),
        ]
        return timing.time_trace(trace, small, False)

    # 128 fp32 columns (512 B) per tile: A and B packed into one bank.
    shared = timeline(128)
    assert shared.start_ns[2] >= shared.end_ns[1] - 1e-6 - timing.PIPE_CYCLES["vector"] / 0.96
    # 512 columns: a bank each, so TensorE fills B while VectorE drains A.
    apart = timeline(512)
    assert apart.start_ns[2] < apart.start_ns[1]


def test_small_rows_cost_descriptors_and_hbm_pages() -> None:
    wide = run(dma(box(SBUF_A, 2048), 128 * 4096, 4096))
    narrow = run(dma(box(SBUF_A, 2048), 128 * 4096, 256))
    assert narrow.total_ns - wide.total_ns > 0.5 * (wide.total_ns - timing.LAUNCH_NS)


def test_transfers_on_different_rings_overlap_their_latency() -> None:
    one = run(dma(box(SBUF_A, 64), 128 * 128, 4096))
    many = run(*[dma(box(SBUF_A, 64, start=64 * i), 128 * 128, 4096) for i in range(8)])
    single = one.total_ns - timing.LAUNCH_NS
    link = single - timing.DMA_LATENCY_NS
    # One latency, then the data of all eight back to back on the HBM link.
    assert many.total_ns - timing.LAUNCH_NS == pytest.approx(timing.DMA_LATENCY_NS + 8 * link)
    assert many.total_ns - timing.LAUNCH_NS < 3 * single


def test_the_timing_reads_nothing_of_the_cost_model() -> None:
    # The model is timing.py and its timing_*.py siblings: they may import each
    # other, nothing else of kernelopt.
    files = sorted(Path(timing.__file__).parent.glob("timing*.py"))
    assert len(files) >= 3, files
    family = {f"kernelopt.testing.fake_trn2.{f.stem}" for f in files}
    for path in files:
        tree = ast.parse(path.read_text())
        imported = {
            n.module if isinstance(n, ast.ImportFrom) else a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in (n.names if isinstance(n, ast.Import) else [n])
        }
        assert all(n.level == 0 for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)), path
        outside = {m for m in imported if m and m.startswith("kernelopt") and m not in family}
        assert not outside, (path.name, outside)


def test_the_device_profile_has_neuron_profile_fields_and_the_formula_mfu() -> None:
    trace = [matmul(box(SBUF_A, 128), box(SBUF_B, 512), box(PSUM_A, 512)) for _ in range(8)]
    profile = hardware.device_profile(trace, ALLOCATIONS)
    macs = 8 * 128 * 128 * 512
    assert profile["mfu_estimated_percent"] == pytest.approx(
        100 * 2 * macs / (profile["total_time"] * timing.PEAK_BF16_FLOPS)
    )
    assert profile["matmul_instruction_count"] == 8
    assert 0 < profile["tensor_engine_active_time_percent"] <= 100


def test_an_engine_never_runs_two_instructions_at_once_whatever_it_reorders() -> None:
    # Gap filling within the reorder window must never land on a stretch that an
    # instruction which has left the window still occupies.
    rng = random.Random(7)
    engine = Engine(timing.REORDER_WINDOW)
    for k in range(3000):
        engine.place(rng.uniform(0.0, 20.0 * k), rng.uniform(1.0, 30.0))
    busy = sorted(engine.busy)
    assert all(b[0] >= a[1] - 1e-9 for a, b in zip(busy, busy[1:], strict=False))
    # ... and it did reorder: some instruction started before the one issued before it.
    assert any(b[0] < a[0] for a, b in zip(engine.busy, engine.busy[1:], strict=False))
