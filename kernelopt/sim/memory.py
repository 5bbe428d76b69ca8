"""On-chip memory as the compiler sees it: live from first touch to last use.

After the kernel has run, the whole trace is known, so memory is judged the
way the compiler's allocator judges it rather than by Python object
lifetimes: an SBUF/PSUM allocation takes its bytes from the first
instruction that touches it to the last one that uses it, and an allocation
that no instruction touches takes nothing. A kernel whose live bytes exceed
a memory at some instruction fails there with the compiler's "Out of memory
in sbuf/psum" message.

The same liveness decides buffer reuse (``AllocationInfo.reuses``): an
allocation can only take over the memory of one that is dead by its first
touch (see ``plan_reuse``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from kernelopt.sim.errors import SimError
from kernelopt.sim.trace import AllocationInfo, Instruction
from kernelopt.sim.trn2 import Trn2Params

ON_CHIP = ("sbuf", "psum")


@dataclass(frozen=True)
class Liveness:
    """Trace indices of each allocation's first touch and last use (-1: untouched),
    and the bytes per partition live at every instruction, per on-chip memory."""

    first: np.ndarray
    last: np.ndarray
    live: dict[str, np.ndarray]


def liveness(trace: Sequence[Instruction], allocations: Sequence[AllocationInfo]) -> Liveness:
    n_alloc = len(allocations)
    first = np.full(n_alloc, -1, dtype=np.int64)
    last = np.full(n_alloc, -1, dtype=np.int64)
    for index, ins in enumerate(trace):
        for aid, _ in ins.reads:
            if first[aid] < 0:
                first[aid] = index
            last[aid] = index
        for aid, _ in ins.writes:
            if first[aid] < 0:
                first[aid] = index
            last[aid] = index
    live = {}
    n = len(trace)
    for kind in ON_CHIP:
        delta = np.zeros(n + 1, dtype=np.int64)
        for a in allocations:
            if a.kind == kind and first[a.alloc_id] >= 0:
                delta[first[a.alloc_id]] += a.nbytes
                delta[last[a.alloc_id] + 1] -= a.nbytes
        live[kind] = np.cumsum(delta[:n])
    return Liveness(first, last, live)


def check_capacity(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    lives: Liveness,
    params: Trn2Params,
    file: str,
) -> None:
    """Fail like the compiler at the first instruction where a memory overflows."""
    limits = {"sbuf": params.sbuf_partition_bytes, "psum": params.psum_partition_bytes}
    for kind, limit in limits.items():
        live = lives.live[kind]
        over = np.flatnonzero(live > limit)
        if not len(over):
            continue
        at = int(over[0])
        holders = sorted(
            (
                (a.nbytes, a.alloc_id)
                for a in allocations
                if a.kind == kind and 0 <= lives.first[a.alloc_id] <= at <= lives.last[a.alloc_id]
            ),
            reverse=True,
        )[:3]
        biggest = ", ".join(
            f"{allocations[i].name!r} line {allocations[i].line} {b / 1024:g} KiB"
            for b, i in holders
        )
        raise SimError(
            f"Out of memory in {kind}: {int(live[at]) / 1024:g} KiB per partition live, "
            f"limit {limit / 1024:g} KiB (largest live: {biggest})",
            file=file,
            line=trace[at].line,
            kind="capacity",
        )


def plan_reuse(
    allocations: Sequence[AllocationInfo], lives: Liveness, params: Trn2Params
) -> tuple[AllocationInfo, ...]:
    """Which earlier allocation's memory each allocation takes over.

    An allocation made again at the same kernel line (a loop-body tile)
    takes over the physical copy of the one ``copies`` allocations back at
    that line, if that one is dead by its first touch. ``copies`` is
    ``rotation_depth``, or fewer when the memory free at the first touch
    holds fewer copies.
    """
    limits = {"sbuf": params.sbuf_partition_bytes, "psum": params.psum_partition_bytes}
    depth = params.rotation_depth
    history: dict[int, list[int]] = {}
    planned = list(allocations)
    for a in allocations:
        if a.kind not in ON_CHIP:
            continue
        earlier = history.setdefault(a.line, [])
        start = int(lives.first[a.alloc_id])
        if start >= 0 and earlier:
            free = limits[a.kind] - int(lives.live[a.kind][start])
            copies = max(1, min(depth, 1 + free // max(a.nbytes, 1)))
            if len(earlier) >= copies:
                old = earlier[-copies]
                if lives.last[old] < start:
                    planned[a.alloc_id] = replace(a, reuses=(old,))
        earlier.append(a.alloc_id)
    return tuple(planned)


def plan_memory(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    params: Trn2Params,
    file: str,
) -> tuple[AllocationInfo, ...]:
    """Check capacity, then decide buffer reuse; raises ``SimError`` (capacity)."""
    lives = liveness(trace, allocations)
    check_capacity(trace, allocations, lives, params, file)
    return plan_reuse(allocations, lives, params)
