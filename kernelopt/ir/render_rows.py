"""Operators that share one loop over a dim's tiles when rendered (``row_runs``)."""

from __future__ import annotations

from typing import Any

from kernelopt.ir.derive import writes
from kernelopt.ir.layout import in_sbuf, instruction_rows
from kernelopt.ir.model import KernelIR, Operator

# Element-wise kinds: one instruction per tile, or per run of tiles (``_elementwise``).
_ELEMENTWISE = frozenset(
    {"copy", "drain", "tensor_tensor", "tensor_scalar", "reciprocal", "activation"}
)


def row_runs(
    ir: KernelIR, ops: list[Operator], site: Any
) -> list[tuple[str | None, list[Operator]]]:
    """``ops`` cut into runs that share one loop over a dim's tiles, tile by tile: x0,
    y0, add0, x1, y1, add1, ... instead of all of x, then all of y, then every add.
    Instructions are queued in program order (the DMA queues, and each engine's
    stream), so the first tile's chain starts once its own inputs are in rather than
    after every tile's, and its result leaves while the next tile is computed: a row
    tile's transposes, matmuls, drain and store run before the next row tile's.

    Each run is (the shared dim, its operators), or (None, [op]) for an operator that
    keeps its own loops. Of an operator's candidate dims, the one its output rows lie
    along is tried first; the dim giving the longest run wins."""
    runs: list[tuple[str | None, list[Operator]]] = []
    i = 0
    while i < len(ops):
        best: tuple[str | None, int] = (None, 1)
        for d in _candidates(ir, ops[i], site):
            length = _run_length(ir, ops, i, d, site)
            if length > best[1]:
                best = (d, length)
        runs.append((best[0], ops[i : i + best[1]]))
        i += best[1]
    return runs


def _run_length(ir: KernelIR, ops: list[Operator], i: int, d: str, site: Any) -> int:
    made, n = set(writes(ops[i])), 1
    while i + n < len(ops):
        nxt = ops[i + n]
        # A fused_reduce issues nothing (its activation wrote it): it never breaks a run.
        if nxt.kind != "fused_reduce" and not _joins(ir, nxt, d, site, made):
            break
        made |= set(writes(nxt))
        n += 1
    return n


def _candidates(ir: KernelIR, op: Operator, site: Any) -> list[str]:
    """Dims ``op`` loops over one tile at a time and keeps in its result (a dim it
    reduces, like a matmul's contraction, cannot be cut: its result is whole only
    after the last tile)."""
    dims = [d for d in loop_dims(ir, op, site) if _kept(ir, op, d)]
    first = ir.buffer[op.srcs[0] if op.kind == "store" else op.dst].axes[0]
    return sorted(dims, key=lambda d: d != first)


def _joins(ir: KernelIR, op: Operator, d: str, site: Any, made: set[str]) -> bool:
    """Whether ``op`` can run tile by tile over ``d`` in a run that wrote ``made``: it
    loops over ``d`` itself, keeps it, and reads of what the run wrote only tiles along
    ``d`` (tile i of them was written in iteration i)."""
    return (
        d in loop_dims(ir, op, site)
        and _kept(ir, op, d)
        and all(d in ir.buffer[s].axes for s in op.srcs if s in made)
    )


def _kept(ir: KernelIR, op: Operator, d: str) -> bool:
    return all(d in ir.buffer[b].axes for b in writes(op) if b in ir.buffer)


def loop_dims(ir: KernelIR, op: Operator, site: Any) -> tuple[str, ...]:
    """The dims whose tiles ``op``'s rendering at ``site`` loops over one at a time
    (``_Renderer.op_*``): a DMA over its rows, an element-wise op over rows and, unless
    one instruction covers them, free tiles; a PSUM operand's run of row tiles is one
    instruction, so those rows are not looped one by one."""
    kind, b = op.kind, ir.buffer
    if kind == "fused_reduce":
        return ()
    if kind in ("load", "store"):
        dims: tuple[str, ...] = (b[op.srcs[0] if kind == "store" else op.dst].axes[0],)
    elif kind in ("load_transpose", "tensor_reduce"):
        dims = b[op.dst].axes
    elif kind in _ELEMENTWISE:
        dp, df = b[op.dst].axes
        if instruction_rows(ir, op, site.local_trip(dp)) > 1:
            dims = (df,)
        elif in_sbuf(ir, op) and site.local_trip(df) > 1:
            dims = (dp,)
        else:
            dims = (dp, df)
    else:  # matmul, transpose, sbuf_transpose: every dim of the op
        dims = op.dims
    return tuple(d for d in dims if site.local_trip(d))
