"""Time for one instruction on its engine, from the Trainium2 parameters."""

from __future__ import annotations

from kernelopt.sim.trace import Instruction
from kernelopt.sim.trn2 import Trn2Params

# VectorE's performance mode covers these instructions on 16-bit float data.
PERFORMANCE_MODE_OPS = ("tensor_copy", "tensor_scalar")
SIXTEEN_BIT_FLOATS = ("bfloat16", "float16")
PERFORMANCE_MODE_SPEEDUP = 4  # in SBUF, contiguous; half that when strided


def vector_speedup(op: str, dtypes: tuple[str, str], psum: bool, contiguous: bool = True) -> int:
    """VectorE's performance mode for ``op`` with data and destination of ``dtypes``, on
    a chip that has it (``Trn2Params.vector_performance_mode``, which ``duration_ns``
    reads): 4 for 16-bit floats in SBUF along a contiguous innermost axis, 2 when that
    axis is strided, else 1.

    The guide's 2x with a PSUM operand is not applied: the PSUM read rate is
    measured on Trn2 already (``psum_read_cycles_per_element``), and the public
    lhs-transpose experiment, whose VectorE copies bf16 transposes out of PSUM
    tile by tile, reads 33.0 % measured against 34.9 % on the model as it is and
    43.7 % with those copies at twice the rate."""
    if op not in PERFORMANCE_MODE_OPS or psum:
        return 1
    if any(d not in SIXTEEN_BIT_FLOATS for d in dtypes):
        return 1
    return PERFORMANCE_MODE_SPEEDUP if contiguous else PERFORMANCE_MODE_SPEEDUP // 2


def duration_ns(ins: Instruction, p: Trn2Params) -> float:
    """Busy time of the engine running ``ins`` (before TensorE throttling), or
    for a DMA the time its bytes hold the core's shared DMA bandwidth."""
    engine = ins.engine
    if ins.barrier:
        # A dynamic loop's start (a semaphore hand-off) or an iteration's end-of-body
        # drain and barrier across the engines (kernelopt.sim.dynamic).
        return p.sync_latency_ns if ins.barrier == 1 else p.dynamic_loop_barrier_ns
    if engine == "tensor":
        if ins.op == "nc_transpose":
            cycles = max(ins.partitions, min(p.matmul_min_stationary_cycles, ins.free))
        else:
            # The moving tensor streams one column per cycle; a small stationary
            # tile still pays for its load.
            cycles = max(min(p.matmul_min_stationary_cycles, ins.stationary_free), ins.free)
        # One pass of the moving tensor at 16-bit, four with 4-byte operands (two
        # for a transpose in NeuronCore-v3's transpose mode), each at the engine's
        # sustained column rate.
        if ins.wide:
            cycles *= p.fp32_transpose_factor if ins.transpose else p.fp32_matmul_factor
        cycles /= p.tensor_columns_per_cycle
        return max(cycles, p.tensor_issue_floor_cycles) / p.tensor_clock_hz * 1e9
    if engine == "dma":
        # Data phase only: the fixed latency is added by the scheduler, which
        # lets it overlap other transfers.
        row = max(ins.row_bytes, 1)
        efficiency = row / (row + p.dma_row_overhead_bytes) * ins.transpose_efficiency
        return ins.nbytes / (p.dma_bytes_per_ns * p.dma_queues * efficiency)
    if ins.op == "memset":
        # Documented cost: max(MIN_II, N) engine cycles, N/2 for a zero fill
        # of a 2-byte dtype, on whichever engine runs it.
        clock = p.gpsimd_clock_hz if engine == "gpsimd" else p.vector_clock_hz
        fill = ins.free / ins.elements_per_cycle
        return (p.engine_static_cycles + max(p.engine_min_cycles, fill)) / clock * 1e9
    if ins.cycles:
        clock = {"vector": p.vector_clock_hz, "scalar": p.scalar_clock_hz}.get(
            engine, p.gpsimd_clock_hz
        )
        return ins.cycles / clock * 1e9
    stream = ins.free * ins.inputs
    # tensor_tensor's documented N cycles with one input in PSUM (NEURON.md) already
    # cover reading it: no PSUM charge on top.
    if ins.psum_read and ins.op != "tensor_tensor":
        # VectorE (and GpSimd) stream a PSUM operand at half their SBUF rate;
        # ScalarE at its full rate.
        per_element = (
            p.scalar_psum_read_cycles_per_element
            if engine == "scalar"
            else p.psum_read_cycles_per_element
        )
        stream = stream * per_element
    if ins.strided:
        stream = stream * 2
    if engine == "vector":
        clock = p.vector_clock_hz
        if p.vector_performance_mode:
            stream = stream / ins.vector_speedup
    elif engine == "scalar":
        clock = p.scalar_clock_hz
    else:
        clock = p.gpsimd_clock_hz
        stream = stream * p.gpsimd_slowdown
    cycles = p.engine_static_cycles + max(p.engine_min_cycles, stream) + ins.extra_cycles
    return cycles / clock * 1e9
