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
touch. The compiler rotates physical copies of an allocation site's live
set (see ``plan_reuse``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from kernelopt.sim.errors import SimError
from kernelopt.sim.spill import spill_to_fit
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


def liveness(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    only: Sequence[AllocationInfo] | None = None,
) -> Liveness:
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
        for a in allocations if only is None else only:
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


Site = tuple[int, ...]


@dataclass
class _Slot:
    """One physical copy of a site's live set: the generation holding it."""

    allocs: list[int]
    last: int  # last use of that generation (trace index)


def _generations(
    allocations: Sequence[AllocationInfo], lives: Liveness
) -> dict[Site, list[list[int]]]:
    """Touched on-chip allocations without a hand-placed address, by site and generation."""
    sites: dict[Site, dict[int, list[int]]] = {}
    for a in allocations:
        if a.kind in ON_CHIP and a.address is None and lives.first[a.alloc_id] >= 0:
            sites.setdefault(a.site, {}).setdefault(a.generation, []).append(a.alloc_id)
    return {site: [gens[g] for g in sorted(gens)] for site, gens in sites.items()}


def _copies(
    sites: dict[Site, list[list[int]]],
    allocations: Sequence[AllocationInfo],
    lives: Liveness,
    params: Trn2Params,
) -> dict[Site, int]:
    """Physical copies per site: up to ``rotation_depth``, capacity permitting.

    A site that allocates more than once gets a second copy, then a third,
    while the extra copy fits next to everything live over the site's whole
    active range (including copies granted before); sites are served in the
    order the kernel first touches them, one copy per site per round.
    """
    limits = {"sbuf": params.sbuf_partition_bytes, "psum": params.psum_partition_bytes}
    usage = {kind: lives.live[kind].copy() for kind in ON_CHIP}
    copies = dict.fromkeys(sites, 1)
    rotating = []
    for site, gens in sites.items():
        if len(gens) < 2:
            continue
        touched = [a for gen in gens for a in gen]
        lo = int(min(lives.first[a] for a in touched))
        hi = int(max(lives.last[a] for a in touched))
        size = max(sum(allocations[a].nbytes for a in gen) for gen in gens)
        rotating.append((lo, hi, size, allocations[gens[0][0]].kind, site))
    rotating.sort()
    for _ in range(params.rotation_depth - 1):
        for lo, hi, size, kind, site in rotating:
            window = usage[kind][lo : hi + 1]
            if copies[site] == len(sites[site]) or window.max() + size > limits[kind]:
                continue
            window += size
            copies[site] += 1
    return copies


def _rotate(
    sites: dict[Site, list[list[int]]], copies: dict[Site, int], lives: Liveness
) -> dict[int, tuple[int, ...]]:
    """Each generation takes the site's copy freed longest ago, once it has all its copies.

    Tile i of the new generation takes over tile i of the generation that
    held the copy, so a list of tiles recycles tile by tile. A generation
    that finds no dead copy (the kernel still uses the old one) gets fresh
    memory.
    """
    reuses: dict[int, tuple[int, ...]] = {}
    for site, gens in sites.items():
        slots: list[_Slot] = []
        for gen in gens:
            start = int(min(lives.first[a] for a in gen))
            last = int(max(lives.last[a] for a in gen))
            dead = [slot for slot in slots if slot.last < start]
            if len(slots) < copies[site] or not dead:
                slots.append(_Slot(gen, last))
                continue
            slot = min(dead, key=lambda s: s.last)
            for new, old in zip(gen, slot.allocs, strict=False):
                reuses[new] = (old,)
            slot.allocs, slot.last = gen, last
    return reuses


def _placed(allocations: Sequence[AllocationInfo], lives: Liveness) -> dict[int, tuple[int, ...]]:
    """Hand-placed allocations take over the memory of every earlier, dead
    allocation whose placed range overlaps theirs: the compiler does not
    rotate them, so the same address in every iteration is one buffer."""
    ranges: dict[tuple[str, int, int, int, int], int] = {}  # placed range -> latest holder
    reuses: dict[int, tuple[int, ...]] = {}
    placed = [
        a
        for a in allocations
        if a.address is not None and a.kind in ON_CHIP and lives.first[a.alloc_id] >= 0
    ]
    for a in sorted(placed, key=lambda a: lives.first[a.alloc_id]):
        start = int(lives.first[a.alloc_id])
        part = a.address[0] if len(a.address) > 1 else 0
        offset = a.address[-1]
        key = (a.kind, part, part + a.partitions, offset, offset + a.nbytes)
        older = [
            holder
            for (kind, p0, p1, o0, o1), holder in ranges.items()
            if kind == a.kind
            and p0 < key[2]
            and key[1] < p1
            and o0 < key[4]
            and key[3] < o1
            and lives.last[holder] < start
        ]
        if older:
            reuses[a.alloc_id] = tuple(sorted(older))
        ranges[key] = a.alloc_id
    return reuses


def plan_reuse(
    allocations: Sequence[AllocationInfo], lives: Liveness, params: Trn2Params
) -> tuple[AllocationInfo, ...]:
    """Which earlier allocations' memory each allocation takes over.

    The compiler keeps up to ``rotation_depth`` physical copies of an
    allocation site's live set, capacity permitting, and a new generation
    takes the copy freed longest ago; hand-placed allocations skip that
    rotation and share memory wherever their addresses overlap.
    """
    sites = _generations(allocations, lives)
    reuses = _rotate(sites, _copies(sites, allocations, lives, params), lives)
    reuses.update(_placed(allocations, lives))
    return tuple(
        replace(a, reuses=reuses[a.alloc_id]) if a.alloc_id in reuses else a for a in allocations
    )


def plan_memory(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    params: Trn2Params,
    file: str,
    spill: bool = False,
) -> tuple[tuple[Instruction, ...], tuple[AllocationInfo, ...]]:
    """Spill PSUM and SBUF when asked and needed (``kernelopt.sim.spill``), check
    capacity, then decide buffer reuse; raises ``SimError`` (capacity). Returns the
    trace (with any spill transfers) and the allocations."""
    lives = liveness(trace, allocations)
    limits = {"psum": params.psum_partition_bytes, "sbuf": params.sbuf_partition_bytes}
    for kind in ("psum", "sbuf") if spill else ():  # PSUM first: its copies go to SBUF
        if int(lives.live[kind].max(initial=0)) > limits[kind]:
            placed = [a for a in allocations if a.address is not None]
            fixed = liveness(trace, allocations, only=placed).live[kind]
            trace, allocations, _ = spill_to_fit(trace, allocations, limits[kind], fixed, kind)
            lives = liveness(trace, allocations)
    check_capacity(trace, allocations, lives, params, file)
    return tuple(trace), plan_reuse(allocations, lives, params)
