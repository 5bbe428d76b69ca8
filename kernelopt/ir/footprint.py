"""On-chip bytes per partition a knob state asks for: a prior, not a validity rule.

Capacity is left to the compiler (or the simulator's check); proposers use
this estimate only to try likely-fitting states first. It counts every buffer
as live at once, so it never underestimates the real peak.
"""

from __future__ import annotations

from kernelopt.ir.derive import derive, scope_of
from kernelopt.ir.layout import buffer_dtype, buffer_shape
from kernelopt.ir.model import KernelIR, PhysicalBuffer, Scope
from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params
from kernelopt.workload import numpy_dtype


def footprint(ir: KernelIR, params: Trn2Params = DEFAULT_PARAMS) -> dict[str, int]:
    """Bytes per partition in ``sbuf`` and ``psum`` (PSUM rounded up to whole banks)."""
    used = {"sbuf": 0, "psum": 0}
    for buf in ir.buffers:
        size = _bytes(ir, buf)
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


_NARROWER = {Scope.FULL: (Scope.PER_BLOCK, Scope.PER_TILE), Scope.PER_BLOCK: (Scope.PER_TILE,)}
MAX_SHRINK = 16  # narrowing steps before a state is given up as too far from fitting


def shrink_to_fit(ir: KernelIR, params: Trn2Params = DEFAULT_PARAMS) -> KernelIR | None:
    """``ir`` if it fits, else the state reached by narrowing, one valid step at a time,
    a scope of the largest buffer in the memory that overflows (it holds a block or one
    tile of a dim instead of all of it); None when no valid step is left.

    Most joint draws of a large workload ask for more than SBUF holds (a whole row of
    scores, every block of a weight); the nearest state that fits keeps the draw's loop
    order and blocking, which is what made it worth drawing.
    """
    state: KernelIR | None = ir
    for _ in range(MAX_SHRINK):
        if state is None or fits(state, params):
            return state
        state = _narrowed(state, params)
    return state if state is not None and fits(state, params) else None


def _narrowed(ir: KernelIR, params: Trn2Params) -> KernelIR | None:
    used = footprint(ir, params)
    memory = "sbuf" if used["sbuf"] > params.sbuf_partition_bytes else "psum"
    sizes = {b.name: _bytes(ir, b) for b in ir.buffers if b.memory == memory}
    for name in sorted(sizes, key=lambda n: -sizes[n]):
        buf = ir.buffer[name]
        for d in buf.axes:
            if d in buf.pinned_full:
                continue
            for scope in _NARROWER.get(scope_of(ir, buf, d), ()):
                if scope not in buf.scopes_for(d):
                    continue
                scopes = {b: dict(s) for b, s in ir.buffer_scopes.items()}
                scopes[name][d] = scope
                state = ir.with_knobs(ir.loop_order, ir.ltiles_per_block, scopes)
                if _bytes(state, buf) < sizes[name] and not derive(state)[1]:
                    return state
    return None


def _bytes(ir: KernelIR, buf: PhysicalBuffer) -> int:
    _, held, free = buffer_shape(ir, buf)
    return held * free * numpy_dtype(buffer_dtype(ir, buf)).itemsize
