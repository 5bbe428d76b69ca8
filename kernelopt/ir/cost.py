"""A knob state's busy time per engine, counted from the IR: a bound, not a schedule.

Each operator fires once per trip of the loops open where it fires (a loop over
a dim it does not carry repeats it), and covers, per firing, the tiles of the
dims whose loops are still closed there. That gives how many instructions of
what shape every engine runs, as the renderer emits them; each is timed by the
simulator's own per-instruction cost (``kernelopt.sim.cost.duration_ns``, so a
change of the cost model carries over). The busiest engine's total is a lower
bound on the kernel's time. It costs a fraction of a millisecond: proposers use
it to order candidates before anything is measured or simulated.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelopt.ir.derive import Placement, derive, drain_adds
from kernelopt.ir.engines import engine_plan, vector_speedup_of
from kernelopt.ir.layout import buffer_dtype, psum_rows
from kernelopt.ir.model import KernelIR, Operator
from kernelopt.sim.cost import duration_ns
from kernelopt.sim.isa_engines import ACCUMULATOR_READ_CYCLES
from kernelopt.sim.trace import Instruction
from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params
from kernelopt.workload import numpy_dtype

ELEMENTWISE = ("activation", "tensor_scalar", "tensor_tensor", "reciprocal", "copy", "drain")


@dataclass(frozen=True)
class EngineTimes:
    """Nanoseconds each engine is busy; the DMA queues' data time and their serial
    descriptor issue apart (the simulator pipelines the two: ``sim.schedule._Dma``)."""

    tensor: float = 0.0
    vector: float = 0.0
    scalar: float = 0.0
    dma_data: float = 0.0
    dma_issue: float = 0.0

    @property
    def dma(self) -> float:
        """The DMA queues' work: data and issue overlap, so the larger of the two."""
        return max(self.dma_data, self.dma_issue)

    @property
    def bound(self) -> float:
        """The busiest engine's work: a time no kernel of this state beats, and what
        ranks states."""
        return max(self.tensor, self.vector, self.scalar, self.dma)


class _Counter:
    """Loop trips and covered extents at one fire depth."""

    def __init__(self, ir: KernelIR, placement: Placement) -> None:
        self.ir, self.p = ir, placement

    def trips(self, depth: int) -> int:
        n = 1
        for entry in self.ir.loop_order[:depth]:
            n *= self.ir.trip(entry)
        return n

    def tiles(self, d: str, depth: int) -> int:
        """Tiles of ``d`` one firing at ``depth`` covers."""
        pos = self.p.position
        if pos[f"{d}.tile"] < depth:
            return 1
        if pos[f"{d}.block"] < depth:
            return self.ir.ltiles_per_block[d]
        return self.ir.dim[d].num_tiles


def _ins(engine: str, op: str, **fields: object) -> Instruction:
    return Instruction(op=op, engine=engine, line=0, reads=(), writes=(), **fields)  # type: ignore[arg-type]


def engine_times(ir: KernelIR, params: Trn2Params = DEFAULT_PARAMS) -> EngineTimes | None:
    """Busy nanoseconds per engine for a valid state (None for an invalid one)."""
    placement = derive(ir)[0]
    if placement is None:
        return None
    count = _Counter(ir, placement)
    plan = engine_plan(ir)
    busy = {"tensor": 0.0, "vector": 0.0, "scalar": 0.0, "dma_data": 0.0, "dma_issue": 0.0}
    for op in ir.operators:
        depth = placement.fire[op.name]
        firings = count.trips(depth)
        for n, ins in _instructions(ir, op, count, depth, plan):
            engine = "dma_data" if ins.engine == "dma" else ins.engine
            busy[engine] += firings * n * duration_ns(ins, params)
            if ins.engine == "dma":
                busy["dma_issue"] += firings * n * params.dma_issue_ns
    return EngineTimes(**busy)


Issued = list[tuple[int, Instruction]]


def _instructions(
    ir: KernelIR, op: Operator, count: _Counter, depth: int, plan: dict[str, str]
) -> Issued:
    """(how many per firing, one of them) for the instructions ``op`` renders to."""
    if op.kind in ("load", "store"):
        return _dma_copy(ir, op, count, depth)
    if op.kind in ("load_transpose", "sbuf_transpose"):
        return _dma_transpose(ir, op, count, depth)
    if op.kind in ("matmul", "transpose"):
        return _tensor(ir, op, count, depth)
    if op.kind == "tensor_reduce":
        data = ir.buffer[op.srcs[0]]
        dp, df = data.axes
        n = count.tiles(ir.buffer[op.dst].axes[0], depth)
        ins = _ins("vector", "tensor_reduce", partitions=ir.dim[dp].tile, free=ir.dim[df].size)
        return [(n, ins)]
    if op.kind in ELEMENTWISE:
        return _elementwise(ir, op, count, depth, plan)
    return []


def _dma_copy(ir: KernelIR, op: Operator, count: _Counter, depth: int) -> Issued:
    """One transfer per partition tile, as wide as the free tiles the site covers.

    The SBUF side may be wider than HBM's (an fp32 accumulator stored as bf16): the
    transfer moves the wider, at the narrower of the two contiguous runs.
    """
    buf = ir.buffer[op.dst if op.kind == "load" else op.srcs[0]]
    dp, df = buf.axes
    tp, tf = ir.dim[dp].tile, ir.dim[df].tile
    hbm = ir.output if op.kind == "store" else next(t for t in ir.inputs if t.name == op.srcs[0])
    wide = numpy_dtype(buffer_dtype(ir, buf)).itemsize
    narrow = numpy_dtype(hbm.dtype).itemsize
    width = count.tiles(df, depth) * tf
    # An HBM slice as wide as its rows runs on into the next row.
    run = (tp if width == ir.dim[df].size else 1) * width * narrow
    row = min(run, width * wide)
    nbytes = tp * width * max(wide, narrow)
    return [(count.tiles(dp, depth), _ins("dma", "dma_copy", nbytes=nbytes, row_bytes=row))]


def _dma_transpose(ir: KernelIR, op: Operator, count: _Counter, depth: int) -> Issued:
    """One transfer per (row tile, column tile), moved in 16-row x 128-column blocks; from
    HBM (LoadTranspose) or from SBUF (SbufTranspose), at that path's efficiency."""
    dp, df = ir.buffer[op.dst].axes
    size = numpy_dtype(ir.buffer[op.dst].dtype).itemsize
    n = count.tiles(dp, depth) * count.tiles(df, depth)
    nbytes = ir.dim[dp].tile * ir.dim[df].tile * size
    block = min(16 * 128 * size, nbytes)
    eff = (
        DEFAULT_PARAMS.dma_transpose_hbm_efficiency
        if op.kind == "load_transpose"
        else DEFAULT_PARAMS.dma_transpose_sbuf_efficiency
    )
    fields = {"nbytes": nbytes, "row_bytes": block, "transpose_efficiency": eff}
    return [(n, _ins("dma", "dma_transpose", **fields))]


def _tensor(ir: KernelIR, op: Operator, count: _Counter, depth: int) -> Issued:
    tile = {d.name: d.tile for d in ir.dims}
    if op.kind == "transpose":
        dp, df = (d for d, _ in op.roles)
        n = count.tiles(dp, depth) * count.tiles(df, depth)
        return [(n, _ins("tensor", "nc_transpose", partitions=tile[dp], free=tile[df]))]
    k, m, nn = (d for d, _ in op.roles)
    fp32 = numpy_dtype(ir.buffer[op.srcs[0]].dtype).itemsize >= 4
    n = count.tiles(k, depth) * count.tiles(m, depth) * count.tiles(nn, depth)
    fields = {"partitions": tile[m], "free": tile[nn], "stationary_free": tile[m], "wide": fp32}
    return [(n, _ins("tensor", "nc_matmul", **fields))]


def _elementwise(
    ir: KernelIR, op: Operator, count: _Counter, depth: int, plan: dict[str, str]
) -> Issued:
    """As the renderer emits them: SBUF-only ops span every free tile the site covers."""
    dp, df = ir.buffer[op.dst].axes
    buffers = [ir.buffer[b] for b in (op.dst, *op.srcs)]
    psum = any(b.memory == "psum" for b in buffers)
    free_tiles = count.tiles(df, depth)
    wide = not psum and free_tiles > 1
    # With a PSUM operand, a run of partition-dim tiles in one bank is one instruction.
    rows = psum_rows(ir, op, count.tiles(dp, depth)) if psum else 1
    n = count.tiles(dp, depth) // rows * (1 if wide else free_tiles)
    width = ir.dim[df].tile * (free_tiles if wide else 1) * rows
    engine = plan.get(op.name, "scalar" if op.kind == "activation" else "vector")
    inputs, kind = 1, op.kind
    if op.kind == "tensor_tensor" or (op.kind == "drain" and drain_adds(ir, op)):
        # One pass with a PSUM operand, or two bf16 tiles added, multiplied or subtracted
        # (the NKI ISA guide's tensor_tensor cost, as the simulator has it).
        dtypes = {buffer_dtype(ir, b) for b in buffers[1:]}
        fast = op.kind == "drain" or op.attr("op") in ("add", "multiply", "subtract")
        engine, inputs = "vector", (1 if psum or (fast and dtypes == {"bfloat16"}) else 2)
        kind = "tensor_tensor"  # the instruction a drain by add is, costed as one
    elif op.kind == "reciprocal":
        inputs = 8
    # A fused row sum reads the ScalarE accumulator out, as the simulator charges it.
    extra = ACCUMULATOR_READ_CYCLES if op.attr("reduce_res") is not None else 0
    ins = _ins(
        engine,
        kind,
        partitions=ir.dim[dp].tile,
        free=width,
        inputs=inputs,
        psum_read=psum,
        extra_cycles=extra,
        vector_speedup=vector_speedup_of(ir, op) if engine == "vector" else 1,
    )
    return [(n, ins)]
