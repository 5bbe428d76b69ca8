"""Knob states that run the same kernel: one key for them, whatever their knobs say.

Many knob changes leave the executed instructions as they were: a block size on
a dim whose block and tile loops sit side by side with nothing between them
(``b * 2 + t`` over 4 x 2 trips is ``b`` over 8), a loop of one trip, a buffer
held PER_BLOCK where a block is one tile. The rendered text differs, the
kernel does not: measuring it again can only tie. ``effective_key`` walks the
loop nest as the renderer does, drops loops of one trip, merges a loop whose
body is one loop over the same dim, and records every allocation (with its
shape) and every instruction site (with what it issues per firing) where it
happens. Equal keys, equal instruction streams.
"""

from __future__ import annotations

import hashlib
from typing import Any

from kernelopt.ir.cost import _Counter, _instructions
from kernelopt.ir.derive import Placement, derive
from kernelopt.ir.engines import engine_plan
from kernelopt.ir.layout import buffer_dtype, buffer_shape
from kernelopt.ir.model import KernelIR
from kernelopt.ir.render import _Site
from kernelopt.ir.render_rows import row_runs

Node = tuple[Any, ...]


def _nest(ir: KernelIR, p: Placement, depth: int, plan: dict[str, str]) -> list[Node]:
    """The items at ``depth`` and the loop below it, in program order."""
    count = _Counter(ir, p)
    items: list[Node] = []
    for buf in ir.buffers:
        if p.emission[buf.name] == depth:
            items.append(("alloc", buf.name, buffer_shape(ir, buf), buffer_dtype(ir, buf)))
    fired = [op for op in ir.operators if p.fire[op.name] == depth]

    def issue(op: Any) -> Node:
        shapes = tuple(
            (n, ins.engine, ins.partitions, ins.free, ins.nbytes, ins.row_bytes, ins.psum_read)
            for n, ins in _instructions(ir, op, count, depth, plan)
        )
        return ("op", op.name, shapes)

    def issued(ops: list[Any]) -> list[Node]:
        # A run of operators sharing one loop over a dim's tiles (render_rows) issues
        # them tile by tile: another order than the same operators each in its own loop.
        site = _Site(ir, p, depth)
        return [
            issue(run[0]) if dim is None else ("run", dim, tuple(issue(op) for op in run))
            for dim, run in row_runs(ir, ops, site)
        ]

    items += issued([op for op in fired if not p.after[op.name]])
    if depth < p.depth and any(v > depth for v in (*p.emission.values(), *p.fire.values())):
        entry = ir.loop_order[depth]
        body = _nest(ir, p, depth + 1, plan)
        trip = ir.trip(entry)
        dim = entry.split(".")[0]
        if trip == 1 or ir.dim[dim].size == 1:
            items += body  # a loop of one trip is no loop
        elif len(body) == 1 and body[0][0] == "loop" and body[0][1] == dim:
            items.append(("loop", dim, trip * body[0][2], body[0][3]))  # b * n + t: one loop
        else:
            items.append(("loop", dim, trip, tuple(body)))
    items += issued([op for op in fired if p.after[op.name]])
    return items


def effective_key(ir: KernelIR) -> str | None:
    """A key equal for knob states that issue the same instructions in the same loops
    (None for an invalid state). The rewrite variant is part of it."""
    placement = derive(ir)[0]
    if placement is None:
        return None
    tree = (ir.variant, tuple(_nest(ir, placement, 0, engine_plan(ir))))
    return hashlib.sha1(repr(tree).encode()).hexdigest()
