"""Time for one instruction on its engine, from the Trainium2 parameters."""

from __future__ import annotations

from kernelopt.sim.trace import Instruction
from kernelopt.sim.trn2 import Trn2Params


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
    if ins.psum_read:
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
    elif engine == "scalar":
        clock = p.scalar_clock_hz
    else:
        clock = p.gpsimd_clock_hz
        stream = stream * p.gpsimd_slowdown
    cycles = p.engine_static_cycles + max(p.engine_min_cycles, stream) + ins.extra_cycles
    return cycles / clock * 1e9
