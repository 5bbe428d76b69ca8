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
