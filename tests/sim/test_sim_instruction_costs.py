"""What one instruction costs, checked against physical bounds and public
measurements rather than against the model's own formulas.

Independent figures used here: the published peak (128 x 128 MACs per
cycle at 2.4 GHz), a core's DMA bandwidth (16 engines at ~23 B/ns, ~2.9 TB/s
of HBM over 8 cores), the NKI tutorial's fp32 kernel (32,768 matmuls of
128 x 128 x 512 in 28.16 ms when compute-bound), and the public rung-2 engine profile of a 2048^3 bf16 matmul (64 PSUM
memsets on GpSimd 8.8 %, 64 PSUM drains on VectorE 18.2 %, of ~366 us).
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelopt.sim import DEFAULT_PARAMS, run_kernel
from kernelopt.sim.cost import duration_ns
from kernelopt.sim.schedule import schedule
from kernelopt.sim.trace import Instruction

BF16 = np.dtype(ml_dtypes.bfloat16)
PEAK_MACS_PER_NS = 128 * 128 * 2.4  # bf16, one NeuronCore
HBM_BYTES_PER_NS = 16 * 23.0  # 16 DMA engines at ~23 B/ns: ~2.9 TB/s over 8 cores
RUNG2_NS = 2 * 2048**3 / (0.596 * 2 * 128 * 128 * 2.4e9) * 1e9  # ~366 us at 59.6 % MFU


def _cost(ins: Instruction) -> float:
    return duration_ns(ins, DEFAULT_PARAMS)


def _matmul(n: int, m: int = 128, k: int = 128, wide: bool = False) -> Instruction:
    return Instruction(
        "nc_matmul",
        "tensor",
        1,
        (),
        (),
        partitions=k,
        free=n,
        stationary_free=m,
        wide=wide,
        macs=k * m * n,
    )


# --- TensorE -------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 128), m=st.integers(1, 128), n=st.integers(1, 512), wide=st.booleans())
def test_a_matmul_never_beats_the_peak_rate(k, m, n, wide):
    peak = PEAK_MACS_PER_NS / (4 if wide else 1)
    ins = _matmul(n, m, k, wide)
    assert ins.macs / _cost(ins) <= peak * (1 + 1e-9)


def test_a_full_matmul_runs_at_the_peak_and_k_and_m_only_idle_pes():
    full = _matmul(512)
    assert full.macs / _cost(full) == pytest.approx(PEAK_MACS_PER_NS, rel=0.01)
    # The moving columns set the time; a smaller K or M leaves PEs idle.
    assert _cost(_matmul(512, m=64, k=32)) == pytest.approx(_cost(full))
    assert _cost(_matmul(256)) == pytest.approx(_cost(full) / 2)


def test_fp32_matmuls_match_the_tutorials_compute_bound_time():
    # 28.16 ms over 32,768 fp32 matmuls of 128 x 128 x 512: ~859 ns each.
    measured = 28.16e6 / 32768
    assert _cost(_matmul(512, wide=True)) == pytest.approx(measured, rel=0.02)
    assert _cost(_matmul(512, wide=True)) == pytest.approx(4 * _cost(_matmul(512)))


def test_tensor_engine_is_slow_when_cold_and_full_rate_when_warm():
    stream = [_matmul(512) for _ in range(200)]
    timeline = schedule(stream, [], DEFAULT_PARAMS)
    first = timeline.end_ns[0] - timeline.start_ns[0]
    last = timeline.end_ns[-1] - timeline.start_ns[-1]
    assert first > 1.5 * last  # throttled at the start of a busy period
    # ... and ramped up after a few microseconds: the stream as a whole
    # comes within a few percent of the peak.
    macs = sum(i.macs for i in stream)
    assert 0.9 * PEAK_MACS_PER_NS < macs / timeline.makespan_ns <= PEAK_MACS_PER_NS
    unthrottled = dataclasses.replace(DEFAULT_PARAMS, tensor_throttle_factor=1.0)
    assert schedule(stream, [], unthrottled).makespan_ns < timeline.makespan_ns


def test_tensor_engine_ramps_from_throttled_to_full_rate_over_the_warm_up():
    stream = [_matmul(512) for _ in range(40)]
    timeline = schedule(stream, [], DEFAULT_PARAMS)
    full = _cost(_matmul(512))
    costs = [e - s for s, e in zip(timeline.start_ns, timeline.end_ns, strict=True)]
    # Never slower than the one before.
    assert all(b <= a + 1e-6 for a, b in zip(costs, costs[1:], strict=False))
    window = DEFAULT_PARAMS.tensor_warmup_ns
    middle = [c for s, c in zip(timeline.start_ns, costs, strict=True) if 0.4 < s / window < 0.6]
    # Halfway through the ramp the rate is halfway between throttled and full.
    assert middle and all(1.2 * full < c < 1.5 * full for c in middle)
    assert costs[-1] == pytest.approx(full)


def test_the_warm_up_follows_the_engines_activity_in_time_not_program_order():
    from kernelopt.sim.schedule import _Channel, _Throttle

    throttled = DEFAULT_PARAMS.tensor_throttle_factor
    lane = _Channel()
    lane.reserve(10_000.0, 500.0)  # the only work so far: a busy period from 10 us
    throttle = _Throttle(lane, DEFAULT_PARAMS)
    # The list scheduler may fill a gap before it: nothing ran then, the engine is cold.
    assert throttle.factor_at(2_000.0) == pytest.approx(throttled)
    assert throttle.factor_at(10_000.0) == pytest.approx(throttled)
    # A gap inside a run of work placed earlier in the program: the engine has been
    # busy for 4 us by then (gaps shorter than the re-throttle idle time), so it is warm.
    lane = _Channel()
    lane.reserve(0.0, 4_000.0)
    lane.reserve(4_200.0, 5_000.0)
    assert _Throttle(lane, DEFAULT_PARAMS).factor_at(4_000.0) == pytest.approx(1.0)
    # After 3 us without work it starts cold again.
    lane = _Channel()
    lane.reserve(0.0, 1_000.0)
    assert _Throttle(lane, DEFAULT_PARAMS).factor_at(4_500.0) == pytest.approx(throttled)
    # Halfway through the warm-up window the rate is halfway up the ramp.
    lane = _Channel()
    lane.reserve(0.0, 1_500.0)
    halfway = 1.0 / (0.5 / throttled + 0.5)
    assert _Throttle(lane, DEFAULT_PARAMS).factor_at(1_500.0) == pytest.approx(halfway)


# --- DMA ---------------------------------------------------------------------------------


def _dma(row: int, nbytes: int = 1 << 20, op: str = "dma_copy", eff: float = 1.0) -> Instruction:
    return Instruction(op, "dma", 1, (), (), nbytes=nbytes, row_bytes=row, transpose_efficiency=eff)


@pytest.mark.parametrize("row", [64, 256, 2048, 4096, 1 << 16])
def test_dma_never_beats_the_hbm_bandwidth(row):
    assert (1 << 20) / _cost(_dma(row)) <= HBM_BYTES_PER_NS


def test_dma_efficiency_follows_the_guides_row_figures():
    def efficiency(row: int) -> float:
        return (1 << 20) / _cost(_dma(row)) / HBM_BYTES_PER_NS

    # Guide: < 256 B severely overhead-bound, 2 KiB ~ 80 %, >= 4 KiB ~ saturating.
    assert efficiency(128) < 0.3
    assert 0.75 <= efficiency(2048) <= 0.88
    assert efficiency(2048) < efficiency(4096) < efficiency(1 << 16) <= 1.0


WINDOW = """
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def k(x):
    t = nl.ndarray((128, {rows}, {cols}), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0, :, 0:{rows}, 0:{cols}])
    nisa.dma_copy(dst=x[0, :, 0:{rows}, 0:{cols}], src=t)
    return x
"""


def test_a_window_moves_at_its_bytes_per_partition_not_its_short_runs(kernel_file):
    """A halo of an image ([128, 18, 34] of [128, 66, 66] fp16: 68-byte runs) moves each
    partition's 1,224 bytes as one access pattern; one row of the same bytes (a
    [128, 612] slice) costs the same, and a single 68-byte run is overhead-bound."""

    def load(rows: int, cols: int, image: tuple[int, int] = (66, 66)) -> Instruction:
        path, _ = kernel_file(WINDOW.format(rows=rows, cols=cols), name=f"w{rows}x{cols}.py")
        run = run_kernel(path, {"x": np.zeros((1, 128, *image), np.float16)}, compute=False)
        return run.trace[0]

    halo, run, line = load(18, 34), load(1, 612, (1, 612)), load(1, 34)
    assert halo.row_bytes == 18 * 34 * 2 == run.row_bytes
    assert _cost(halo) == pytest.approx(_cost(run))
    assert line.row_bytes == 68 and _cost(line) * 18 > 2 * _cost(halo)


COPY = """
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def k(x):
    for c in nl.affine_range({chunks}):
        t = nl.ndarray((128, 4096), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, c * 4096 : (c + 1) * 4096])
        nisa.dma_copy(dst=x[:, c * 4096 : (c + 1) * 4096], src=t)
    return x
"""


def test_doubling_the_bytes_of_a_dma_bound_kernel_doubles_its_time(kernel_file):
    times = {}
    for chunks in (8, 16):
        path, _ = kernel_file(COPY.format(chunks=chunks), name=f"copy{chunks}.py")
        x = {"x": np.zeros((128, 4096 * chunks), BF16)}
        run = run_kernel(path, x, compute=False)
        times[chunks] = run.profile["total_time"]
        moved = run.profile["dma_transfer_total_bytes"]
        assert moved / (times[chunks] * 1e9) <= HBM_BYTES_PER_NS
    assert 1.85 < times[16] / times[8] < 2.1


TRANSPOSE = """
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def k(x):
    t = nl.ndarray((128, 1024), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x[0:1024, 0:128])
    nisa.dma_copy(dst=x[0:1, 0:1], src=t[0:1, 0:1])
    return x
"""


def _transpose_ins(kernel_file, width: int, name: str) -> Instruction:
    path, _ = kernel_file(TRANSPOSE, name=name)
    run = run_kernel(path, {"x": np.zeros((1024, width), BF16)}, compute=False)
    return run.trace[0]


def test_dma_transpose_cost_follows_its_blocks_not_the_source_rows(kernel_file):
    # The same 1024 x 128 block read as 256-byte rows strided through a
    # 2048-wide tensor, or as one contiguous tensor: the DMA engine moves
    # 16 x 128 blocks either way.
    strided = _transpose_ins(kernel_file, 2048, "strided.py")
    contiguous = _transpose_ins(kernel_file, 128, "contiguous.py")
    assert _cost(strided) == pytest.approx(_cost(contiguous))
    # Faster than a copy of the strided 256-byte rows would be, and at most
    # 90 % of a copy's throughput in 4 KiB rows (the guide's HBM figure).
    assert _cost(strided) < _cost(_dma(256, strided.nbytes))
    assert _cost(strided) >= _cost(_dma(4096, strided.nbytes)) / 0.9 * (1 - 1e-9)


SBUF_TRANSPOSE = """
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def k(x):
    s = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=x)
    t = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src={src})
    nisa.dma_copy(dst=x, src=t)
    return x
"""


def test_an_sbuf_to_sbuf_transpose_is_slower_than_one_from_hbm(kernel_file):
    costs = {}
    for src in ("s", "x"):
        path, _ = kernel_file(SBUF_TRANSPOSE.format(src=src), name=f"t{src}.py")
        run = run_kernel(path, {"x": np.zeros((128, 128), BF16)}, compute=False)
        costs[src] = _cost(next(i for i in run.trace if i.op == "dma_transpose"))
    assert costs["s"] > 1.5 * costs["x"]


# --- VectorE, ScalarE, GpSimd -------------------------------------------------------------

ONE_OP = """
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def k(x):
    a = nl.ndarray((128, {free}), dtype=nl.{dtype}, buffer=nl.{buffer})
    nisa.memset(dst=a, value=1.0)
    b = nl.ndarray((128, {free}), dtype=nl.{dtype}, buffer=nl.sbuf)
    nisa.memset(dst=b, value=1.0)
    dst = nl.ndarray((128, {free}), dtype=nl.{dtype}, buffer=nl.sbuf)
    nisa.{op}
    nisa.dma_copy(dst=x, src=dst[:, 0:1])
    return x
"""
COPY_OP = "tensor_copy(dst=dst, src=a)"
ADD_OP = "tensor_tensor(dst=dst, data1=a, data2=b, op=nl.{op})"


def _op_ns(kernel_file, op: str, *, buffer="sbuf", dtype="float32", free=512) -> float:
    """Engine time of the one instruction after the two memsets."""
    source = ONE_OP.format(op=op, buffer=buffer, dtype=dtype, free=free)
    path, _ = kernel_file(source, name=f"op{abs(hash(source))}.py")
    run = run_kernel(path, {"x": np.zeros((128, 1), np.dtype(dtype))}, compute=False)
    return run.timeline.end_ns[2] - run.timeline.start_ns[2]


def test_two_streamed_inputs_take_about_twice_one(kernel_file):
    copy = _op_ns(kernel_file, COPY_OP, free=4096)
    add = _op_ns(kernel_file, ADD_OP.format(op="maximum"), free=4096)
    assert 1.7 < add / copy <= 2.0
    # bf16 add/mul/sub in SBUF and any op with a PSUM input stream in one pass.
    fast = _op_ns(kernel_file, ADD_OP.format(op="add"), dtype="bfloat16", free=4096)
    assert fast == pytest.approx(copy)
    slow = _op_ns(kernel_file, ADD_OP.format(op="maximum"), dtype="bfloat16", free=4096)
    assert slow > 1.7 * fast


def test_vector_engine_performance_mode_streams_16_bit_copies_four_times_faster(kernel_file):
    # The Trainium2 architecture guide: tensor_copy / tensor_scalar with BF16/FP16 data
    # and destination in SBUF, contiguous, run 4x; not with a PSUM operand (kept at the
    # measured PSUM rate, sim.cost.vector_speedup), not in fp32, not on NeuronCore-v2.
    scale = "tensor_scalar(dst=dst, data=a, op0=nl.multiply, operand0=2.0)"
    static = DEFAULT_PARAMS.engine_static_cycles / DEFAULT_PARAMS.vector_clock_hz * 1e9
    for op in (COPY_OP, scale):
        fp32 = _op_ns(kernel_file, op, free=4096) - static
        bf16 = _op_ns(kernel_file, op, dtype="bfloat16", free=4096) - static
        assert bf16 == pytest.approx(fp32 / 4)
        assert _op_ns(kernel_file, op, dtype="float16", free=4096) - static == pytest.approx(bf16)
    psum = _op_ns(kernel_file, COPY_OP, buffer="psum", dtype="bfloat16", free=512)
    assert psum == pytest.approx(_op_ns(kernel_file, COPY_OP, buffer="psum", free=512))
    # The same copy on trn1's parameters: one element a cycle, as in fp32.
    trn1 = dataclasses.replace(DEFAULT_PARAMS, vector_performance_mode=False)
    source = ONE_OP.format(op=COPY_OP, buffer="sbuf", dtype="bfloat16", free=4096)
    path, _ = kernel_file(source, name="copy_no_mode.py")
    x = np.zeros((128, 1), ml_dtypes.bfloat16)
    run = run_kernel(path, {"x": x}, compute=False, params=trn1)
    got = run.timeline.end_ns[2] - run.timeline.start_ns[2]
    assert got == pytest.approx(_op_ns(kernel_file, COPY_OP, free=4096))


def test_small_instructions_pay_a_fixed_overhead(kernel_file):
    # Eight 64-element copies cost more than one copy of 512 elements.
    assert 8 * _op_ns(kernel_file, COPY_OP, free=64) > 2 * _op_ns(kernel_file, COPY_OP, free=512)


def test_vector_engine_reads_psum_slower_than_sbuf(kernel_file):
    sbuf = _op_ns(kernel_file, COPY_OP)
    psum = _op_ns(kernel_file, COPY_OP, buffer="psum")
    assert 1.5 * sbuf < psum <= 2 * sbuf


def test_scalar_engine_reads_psum_at_its_full_rate(kernel_file):
    op = "activation(dst=dst, op=nl.copy, data=a)"
    assert _op_ns(kernel_file, op, buffer="psum") == pytest.approx(_op_ns(kernel_file, op))


def test_a_scalar_psum_drain_costs_what_the_trn1_bmm_profile_shows(kernel_file):
    # NKIBench bmm on Trn1: ScalarE 37.3 % of 4.611 ms copying 16 x 4096 x 4096
    # fp32 PSUM outputs, 128 partitions x 512 elements per copy.
    copies = 16 * 4096 * 4096 / (128 * 512)
    measured_at_trn2_clock = 0.3726 * 4.611e6 / copies * 1.4 / 1.2
    got = _op_ns(kernel_file, "activation(dst=dst, op=nl.copy, data=a)", buffer="psum")
    assert got == pytest.approx(measured_at_trn2_clock, rel=0.15)


def test_a_psum_drain_costs_what_the_rung2_profile_shows(kernel_file):
    # VectorE busy 18.2 % of the rung-2 time over its 64 drains of a
    # 128 x 512 fp32 PSUM tile.
    measured = 0.182 * RUNG2_NS / 64
    assert _op_ns(kernel_file, COPY_OP, buffer="psum") == pytest.approx(measured, rel=0.15)


MEMSET = """
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def k(x):
    t = nl.ndarray((128, {free}), dtype=nl.{dtype}, buffer=nl.{buffer})
    nisa.memset(dst=t, value={value}{engine})
    nisa.dma_copy(dst=x, src=t[:, 0:1])
    return x
"""


def _memset_ns(kernel_file, *, dtype="float32", value=0.0, free=4096, buffer="sbuf", engine=""):
    source = MEMSET.format(dtype=dtype, value=value, free=free, buffer=buffer, engine=engine)
    path, _ = kernel_file(source, name=f"m{abs(hash(source))}.py")
    x = {"x": np.zeros((128, 1), np.float32)}
    run = run_kernel(path, x, compute=False)
    assert run.trace[0].engine == ("vector" if engine else "gpsimd")
    return run.timeline.end_ns[0] - run.timeline.start_ns[0]


def test_a_psum_memset_costs_what_the_rung2_profile_shows(kernel_file):
    # GpSimd busy 8.8 % of the rung-2 time over its 64 memsets of a
    # 128 x 512 fp32 PSUM tile.
    measured = 0.088 * RUNG2_NS / 64
    got = _memset_ns(kernel_file, free=512, buffer="psum")
    assert got == pytest.approx(measured, rel=0.15)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_zero_fill_of_a_two_byte_dtype_is_packed(kernel_file, dtype):
    zero = _memset_ns(kernel_file, dtype=dtype, value=0.0)
    one = _memset_ns(kernel_file, dtype=dtype, value=1.0)
    wide_zero = _memset_ns(kernel_file, dtype="float32", value=0.0)
    assert 0.45 < zero / one < 0.6
    assert one == pytest.approx(wide_zero)


def test_small_memsets_cost_the_same_floor(kernel_file):
    assert _memset_ns(kernel_file, free=8) == pytest.approx(_memset_ns(kernel_file, free=32))
    assert _memset_ns(kernel_file, free=2048) > 2 * _memset_ns(kernel_file, free=32)


def test_vector_engine_memsets_run_at_its_own_clock(kernel_file):
    # VectorE (0.96 GHz) is slower per cycle than GpSimd (1.2 GHz).
    gpsimd = _memset_ns(kernel_file)
    vector = _memset_ns(kernel_file, engine=", engine=nisa.vector_engine")
    assert vector == pytest.approx(gpsimd * 1.2 / 0.96, rel=0.01)
