"""How a KernelIR buffer is laid out on chip: its dtype, its shape as rendered, and how
many of its PSUM tiles one instruction covers (shared by the renderer, the cost count
and the footprint)."""

from __future__ import annotations

from kernelopt.ir.derive import drain_adds, scope_of, writes
from kernelopt.ir.model import KernelIR, Operator, PhysicalBuffer, Scope
from kernelopt.sim.trn2 import DEFAULT_PARAMS
from kernelopt.workload import numpy_dtype


def psum_rows(ir: KernelIR, op: Operator, trip: int) -> int:
    """How many partition-dim tiles one element-wise instruction with a PSUM operand
    covers at once (of ``trip`` it loops over): the tiles a PSUM buffer holds along its
    partition dim lie one after another in its free bytes, so a run of them inside one
    2 KiB bank is one access (a transpose's 128 x 128 bf16 tiles: eight to a bank).
    The run starts at a multiple of its length, so it never straddles a bank."""
    if trip <= 1 or op.attr("columns") or op.attr("reduce_res") is not None:
        return 1  # a [P, 1] column operand stays one tile: the ISA takes it per partition
    runs = [trip]
    for name in (*writes(op), *op.srcs):
        buf = ir.buffer[name]
        if buf.memory != "psum":
            continue
        _, _, free = buffer_shape(ir, buf)
        row = free * numpy_dtype(buffer_dtype(ir, buf)).itemsize
        bank = DEFAULT_PARAMS.psum_bank_bytes
        runs.append(bank // row if bank % row == 0 else 1)
    fit = min(runs)
    return next(r for r in range(fit, 0, -1) if trip % r == 0)


def buffer_dtype(ir: KernelIR, buf: PhysicalBuffer) -> str:
    """An SBUF result summed across blocks of PSUM partials accumulates in fp32. A
    TensorE transpose writes its data's dtype (nc_transpose writes that or fp32): a cast
    the transposed tensor carries (an fp32 or fp16 ``x`` beside a bf16 ``w``) is made by
    the copy out of PSUM."""
    producer = ir.producers.get(buf.name)
    if producer is not None and producer.kind == "drain" and drain_adds(ir, producer):
        return "float32"
    if producer is not None and producer.kind == "transpose" and buf.memory == "psum":
        return buffer_dtype(ir, ir.buffer[producer.srcs[0]])
    return buf.dtype


def buffer_shape(ir: KernelIR, buf: PhysicalBuffer) -> tuple[int, int, int]:
    """(partition tile, tiles held along the partition dim, free elements held)."""

    def held(d: str) -> int:
        scope = scope_of(ir, buf, d)
        if scope == Scope.PER_TILE:
            return 1
        return ir.ltiles_per_block[d] if scope == Scope.PER_BLOCK else ir.dim[d].num_tiles

    dp, df = buf.axes
    return ir.dim[dp].tile, held(dp), held(df) * ir.dim[df].tile


def in_sbuf(ir: KernelIR, op: Operator) -> bool:
    """Whether every buffer an element-wise ``op`` reads or writes is in SBUF."""
    return all(ir.buffer[b].memory == "sbuf" for b in (*writes(op), *op.srcs))


def instruction_rows(ir: KernelIR, op: Operator, trip: int) -> int:
    """Partition-dim tiles one element-wise instruction of ``op`` covers, of the ``trip``
    its site loops over: one in SBUF, a bank's run with a PSUM operand (``psum_rows``)."""
    return 1 if in_sbuf(ir, op) else psum_rows(ir, op, trip)
