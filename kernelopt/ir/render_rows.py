"""Operators that share one loop over row tiles when rendered (``row_runs``)."""

from __future__ import annotations

from typing import Any

from kernelopt.ir.derive import writes
from kernelopt.ir.layout import instruction_rows
from kernelopt.ir.model import KernelIR, Operator

# Operators each of whose instructions covers one row tile (or a run of its free tiles).
_ROW_KINDS = frozenset(
    {"load", "store", "copy", "drain", "tensor_tensor", "tensor_scalar", "reciprocal"}
    | {"tensor_reduce", "activation"}
)


def row_runs(
    ir: KernelIR, ops: list[Operator], site: Any
) -> list[tuple[str | None, list[Operator]]]:
    """``ops`` cut into runs that share one loop over row tiles, tile by tile: x0, y0,
    add0, x1, y1, add1, ... instead of all of x, then all of y, then every add.
    Instructions are queued in program order (the DMA queues, and each engine's
    stream), so the first row's chain starts once its own tiles are in rather than
    after every row's. Each run is (the loop's dim, its operators), or (None, [op]) for
    an operator that keeps its own loops."""
    runs: list[tuple[str | None, list[Operator]]] = []
    i = 0
    while i < len(ops):
        key = _outer_loop(ir, ops[i], site)
        run, made = [ops[i]], set(writes(ops[i]))
        while key and i + len(run) < len(ops):
            nxt = ops[i + len(run)]
            if nxt.kind != "fused_reduce":  # issues nothing: its activation wrote it
                if _outer_loop(ir, nxt, site) != key or not _row_aligned(ir, nxt, made, key[0]):
                    break
            run.append(nxt)
            made |= set(writes(nxt))
        runs.append((key[0] if key and len(run) > 1 else None, run))
        i += len(run)
    return runs


def _outer_loop(ir: KernelIR, op: Operator, site: Any) -> tuple[str, int] | None:
    """(partition dim, trip) of the loop over row tiles an operator opens first, for the
    kinds whose instructions each cover one row tile (None for the others: a matmul or
    a transpose loops over its contraction, a PSUM copy over runs of tiles)."""
    if op.kind not in _ROW_KINDS:
        return None
    dp = ir.buffer[op.srcs[0] if op.kind == "store" else op.dst].axes[0]
    trip = site.local_trip(dp)
    if not trip:
        return None
    if op.kind not in ("load", "store", "tensor_reduce") and instruction_rows(ir, op, trip) > 1:
        return None
    return dp, trip


def _row_aligned(ir: KernelIR, op: Operator, made: set[str], dp: str) -> bool:
    """Whether ``op``'s row tile i reads only row tile i of what the run before it wrote
    (every such buffer has the loop's dim as its partition dim)."""
    return all(ir.buffer[s].axes[0] == dp for s in op.srcs if s in made)
