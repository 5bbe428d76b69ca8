"""On-chip bytes per partition a knob state asks for: a prior, not a validity rule.

Capacity is left to the compiler (or the simulator's check); proposers use
this estimate only to try likely-fitting states first. It counts every buffer
as live at once, so it never underestimates the real peak.
"""

from __future__ import annotations

from kernelopt.ir.layout import buffer_dtype, buffer_shape
from kernelopt.ir.model import KernelIR
from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params
from kernelopt.workload import numpy_dtype


def footprint(ir: KernelIR, params: Trn2Params = DEFAULT_PARAMS) -> dict[str, int]:
    """Bytes per partition in ``sbuf`` and ``psum`` (PSUM rounded up to whole banks)."""
    used = {"sbuf": 0, "psum": 0}
    for buf in ir.buffers:
        _, held, free = buffer_shape(ir, buf)
        size = held * free * numpy_dtype(buffer_dtype(ir, buf)).itemsize
        if buf.memory == "psum":
            size = -(-size // params.psum_bank_bytes) * params.psum_bank_bytes
        used[buf.memory] += size
    return used


def fits(ir: KernelIR, params: Trn2Params = DEFAULT_PARAMS) -> bool:
    """Whether even the all-live estimate stays within SBUF and PSUM."""
    used = footprint(ir, params)
    return (
        used["sbuf"] <= params.sbuf_partition_bytes and used["psum"] <= params.psum_partition_bytes
    )


def least_bytes(ir: KernelIR, name: str, params: Trn2Params = DEFAULT_PARAMS) -> int:
    """Bytes per partition buffer ``name`` needs in any knob state: one tile of every
    dim, and every tile of the dims pinned FULL (a row a reduction reads at once)."""
    buf = ir.buffer[name]
    dp, df = buf.axes
    rows = ir.dim[dp].num_tiles if dp in buf.pinned_full else 1
    cols = ir.dim[df].size if df in buf.pinned_full else ir.dim[df].tile
    size = rows * cols * numpy_dtype(buf.dtype).itemsize
    if buf.memory == "psum":
        size = -(-size // params.psum_bank_bytes) * params.psum_bank_bytes
    return size


def capacity_problem(ir: KernelIR, params: Trn2Params = DEFAULT_PARAMS) -> str | None:
    """Why no knob state of ``ir`` can fit on chip (None: some may): one buffer that,
    alone and at its least, exceeds its memory's bytes per partition."""
    limits = {"sbuf": params.sbuf_partition_bytes, "psum": params.psum_partition_bytes}
    for buf in ir.buffers:
        need = least_bytes(ir, buf.name, params)
        if need > limits[buf.memory]:
            whole = [d for d in buf.axes if d in buf.pinned_full]
            why = f", holding {', '.join(whole)} whole for a row reduction" if whole else ""
            return (
                f"{buf.name} alone needs {need / 1024:.1f} KiB per partition{why}, and "
                f"{buf.memory} holds {limits[buf.memory] / 1024:.0f} KiB: no knob state fits "
                "(fewer columns, or a 2-byte dtype, would)"
            )
    return None
