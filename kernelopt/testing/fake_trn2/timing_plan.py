"""The fake device's own memory plan: where its compiler puts each on-chip
allocation, and so which allocations take over whose physical memory.

kernelopt's simulator has a memory plan of its own (its rotation of physical
copies); the fake device must not take it, or both would share the choice
that orders most kernels (which loop iteration waits for which). So this
file decides placement from what the instruction stream shows: each
allocation's size and memory, the kernel line that allocated it and how many
times that line allocated (its generations), and its first and last use in
the stream. Like ``timing.py``, it reads nothing of kernelopt.

Sources:

- [trn2] NKI Trainium2 architecture guide (aws-neuron/aws-neuron-sdk,
  nki/guides/architecture/trainium2_arch.rst@4373facf): NeuronCore-v3 SBUF is
  28 MiB, 128 partitions of 224 KiB; PSUM 2 MiB (8 banks of 2 KiB per
  partition, NeuronCore-v3 page).
- [alloc] NKI Direct Allocation Developer Guide and ``nki.compiler``'s
  ``sbuf.mod_alloc`` / ``psum.mod_alloc``: a tensor's logical tiles map onto
  a number of physical tiles modulo that number; a hand-placed address is
  the tile's location, so tiles at overlapping addresses are one buffer.
- [cal] SIM-CALIBRATION.md, mechanism 1 (public nki-autotune findings): the
  compiler keeps up to about three physical copies of a loop-body
  allocation's live set, capacity permitting; tiles allocated together
  rotate as one unit.

Rules (the device's reading where the record is silent is marked
hypothesis (unverified)):

1. SBUF, compiler-placed. A line that allocates more than once gets
   ``1 + k`` physical copies, k <= ``MAX_COPIES - 1`` [cal]. Hypothesis
   (unverified): the compiler decides k when the line allocates the second
   time, from the bytes live at that instruction (every allocation then in
   use, plus the extra copies other lines already hold) against the Trn2
   partition size [trn2]; extra copies stay reserved until the line's last
   use. Generation g then takes copy g mod (1 + k), the modulo allocation
   of [alloc], whether or not the generation that held it has finished: a
   generation that finds its copy still in use waits for it.
2. PSUM, compiler-placed. Hypothesis (unverified): tiles rotate by bank,
   not by allocation: the compiler places each new PSUM tile at a cursor
   that runs round the 8 banks [trn2]; a tile of a bank or more starts on
   a bank boundary, smaller ones (fp32 per element, the accumulation width)
   pack side by side while they fit in the bank. It skips ahead, one bank
   at a time, past banks still holding a tile in use, and takes the cursor's
   place anyway if every bank is in use. A loop-body accumulator of one bank
   thus rotates over up to 8 banks, not 3 copies.
3. Hand-placed (``address=``) tiles take over every earlier tile whose
   placed range overlaps theirs [alloc]: no rotation.

Each tile of a generation takes over the tiles whose bytes it overlaps in
the copy or banks it lands on; the device's timing (``timing.py``) makes its
first access wait for their last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SBUF_PARTITION_BYTES = 224 * 1024  # [trn2]
PSUM_BANKS = 8  # [trn2]
PSUM_BANK_BYTES = 2048  # [trn2]
PSUM_ACCUMULATE_BYTES = 4  # fp32 per PSUM element (hypothesis, unverified)
MAX_COPIES = 3  # [cal] "up to about three physical copies"


@dataclass(frozen=True)
class MemoryPlan:
    """The device compiler's placement of one kernel's on-chip allocations.

    ``reuses`` maps an allocation to the earlier ones whose memory it takes
    over; ``banks`` a PSUM allocation to the banks it occupies; ``copies`` an
    SBUF allocating line (site) to its physical copies.
    """

    reuses: dict[int, tuple[int, ...]]
    banks: dict[int, tuple[int, ...]]
    copies: dict[tuple[str, tuple[int, ...]], int]
    layout: dict[int, tuple[int, ...]]


def first_last(trace: Sequence[Any], count: int) -> tuple[list[int], list[int]]:
    """Trace index of each allocation's first and last access (-1: none)."""
    first, last = [-1] * count, [-1] * count
    for index, ins in enumerate(trace):
        for alloc, _ in (*ins.reads, *ins.writes):
            if 0 <= alloc < count:
                if first[alloc] < 0:
                    first[alloc] = index
                last[alloc] = index
    return first, last


def _psum_bytes(alloc: Any, box: Any) -> int:
    """A PSUM tile's bytes per partition: its free elements at the accumulation
    width, from its shape, else from the box of its first access."""
    extents = alloc.shape[1:] if alloc.shape else [hi - lo for lo, hi in (box or ())[1:]]
    size = PSUM_ACCUMULATE_BYTES
    for extent in extents:
        size *= max(1, int(extent))
    return size


def plan_memory(trace: Sequence[Any], allocations: Sequence[Any]) -> MemoryPlan:
    """The device's own memory plan for an executed instruction stream."""
    count = max((a.alloc_id for a in allocations), default=-1) + 1
    first, last = first_last(trace, count)
    boxes: dict[int, Any] = {}
    for ins in trace:
        for alloc, box in (*ins.reads, *ins.writes):
            boxes.setdefault(alloc, box)
    on_chip = [a for a in allocations if a.kind in ("sbuf", "psum") and first[a.alloc_id] >= 0]
    reuses: dict[int, tuple[int, ...]] = {}
    placed = [a for a in on_chip if a.address is not None]
    reuses.update(_hand_placed(placed, first))
    auto = [a for a in on_chip if a.address is None]
    copies = _sbuf_rotation([a for a in auto if a.kind == "sbuf"], on_chip, first, last, reuses)
    banks = _psum_rotation([a for a in auto if a.kind == "psum"], first, last, boxes, reuses)
    for a in placed:
        if a.kind == "psum":
            lo = a.address[-1] // PSUM_BANK_BYTES
            size = _psum_bytes(a, boxes.get(a.alloc_id))
            hi = (a.address[-1] + size - 1) // PSUM_BANK_BYTES
            banks[a.alloc_id] = tuple(b % PSUM_BANKS for b in range(lo, hi + 1))
    layout = {a.alloc_id: tuple(a.shape) for a in on_chip}
    return MemoryPlan(reuses=reuses, banks=banks, copies=copies, layout=layout)


def _hand_placed(placed: Sequence[Any], first: list[int]) -> dict[int, tuple[int, ...]]:
    """Rule 3: a hand-placed tile takes over every earlier one its range overlaps."""
    out: dict[int, tuple[int, ...]] = {}
    held: list[tuple[str, int, int, int, int, int]] = []  # kind, p0, p1, b0, b1, alloc
    for a in sorted(placed, key=lambda a: first[a.alloc_id]):
        p0 = a.address[0] if len(a.address) > 1 else 0
        p1 = p0 + max(1, a.partitions or 128)
        b0, b1 = a.address[-1], a.address[-1] + max(1, a.nbytes)
        older = [
            h[5]
            for h in held
            if h[0] == a.kind and h[1] < p1 and p0 < h[2] and h[3] < b1 and b0 < h[4]
        ]
        if older:
            out[a.alloc_id] = tuple(sorted(older))
        held.append((a.kind, p0, p1, b0, b1, a.alloc_id))
    return out


def _generations(allocs: Sequence[Any], first: list[int]) -> dict[tuple, list[list[Any]]]:
    """Allocations by allocating line (memory, site) and generation, in stream order."""
    sites: dict[tuple, dict[int, list[Any]]] = {}
    for a in allocs:
        sites.setdefault((a.kind, tuple(a.site)), {}).setdefault(a.generation, []).append(a)
    out = {}
    for site, gens in sites.items():
        ordered = sorted(gens.values(), key=lambda g: min(first[a.alloc_id] for a in g))
        out[site] = [sorted(g, key=lambda a: a.alloc_id) for g in ordered]
    return out


def _take_over(new: Sequence[Any], old: Sequence[Any], sizes: dict[int, int]) -> dict:
    """Tiles of ``new`` laid out in the bytes ``old`` held: each takes over the old
    tiles whose byte range it overlaps."""
    out: dict[int, tuple[int, ...]] = {}
    spans, at = [], 0
    for a in old:
        spans.append((at, at + sizes[a.alloc_id], a.alloc_id))
        at += sizes[a.alloc_id]
    at = 0
    for a in new:
        lo, hi = at, at + sizes[a.alloc_id]
        at = hi
        hit = tuple(x for s, e, x in spans if s < hi and lo < e)
        if hit:
            out[a.alloc_id] = hit
    return out


def _sbuf_rotation(
    auto: Sequence[Any],
    on_chip: Sequence[Any],
    first: list[int],
    last: list[int],
    reuses: dict[int, tuple[int, ...]],
) -> dict[tuple, int]:
    """Rule 1: copies per allocating line, then each generation's copy (mod)."""
    sites = _generations(auto, first)
    sizes = {a.alloc_id: max(1, int(a.nbytes)) for a in auto}
    sbuf = [a for a in on_chip if a.kind == "sbuf"]
    # Lines that allocate again, in the order the second allocation happens.
    repeat = sorted(
        (min(first[a.alloc_id] for a in gens[1]), site)
        for site, gens in sites.items()
        if len(gens) > 1
    )
    extra: list[tuple[int, int]] = []  # (bytes, reserved until) of extra copies granted
    copies = dict.fromkeys(sites, 1)
    for at, site in repeat:
        gens = sites[site]
        live = sum(a.nbytes for a in sbuf if first[a.alloc_id] <= at <= last[a.alloc_id])
        held = sum(size for size, until in extra if until >= at)
        size = max(sum(sizes[a.alloc_id] for a in g) for g in gens)
        room = max(0, (SBUF_PARTITION_BYTES - live - held) // size)
        k = min(MAX_COPIES - 1, len(gens) - 1, room)
        copies[site] = 1 + k
        until = max(last[a.alloc_id] for g in gens for a in g)
        extra.extend([(size, until)] * k)
    for site, gens in sites.items():
        n = copies[site]
        for g in range(n, len(gens)):
            reuses.update(_take_over(gens[g], gens[g - n], sizes))
    return copies


def _psum_rotation(
    auto: Sequence[Any],
    first: list[int],
    last: list[int],
    boxes: dict[int, Any],
    reuses: dict[int, tuple[int, ...]],
) -> dict[int, tuple[int, ...]]:
    """Rule 2: each PSUM tile at the bank cursor, past banks still in use."""
    ring = PSUM_BANKS * PSUM_BANK_BYTES
    held: list[tuple[int, int, int]] = []  # (start, end) bytes in the ring, holder
    banks: dict[int, tuple[int, ...]] = {}
    cursor = 0
    for a in sorted(auto, key=lambda a: (first[a.alloc_id], a.alloc_id)):
        t = first[a.alloc_id]
        size = min(ring, _psum_bytes(a, boxes.get(a.alloc_id)))
        start = _aligned(cursor, size, ring)
        bank = cursor // PSUM_BANK_BYTES
        for at in [cursor] + [(bank + s) * PSUM_BANK_BYTES for s in range(1, PSUM_BANKS)]:
            trial = _aligned(at, size, ring)
            busy = [h for h in held if h[0] < trial + size and trial < h[1] and last[h[2]] >= t]
            if not busy:
                start = trial
                break
        end = start + size
        over = [h for h in held if h[0] < end and start < h[1]]
        if over:
            reuses[a.alloc_id] = tuple(sorted({h[2] for h in over}))
        held = [h for h in held if not (start <= h[0] and h[1] <= end)] + [(start, end, a.alloc_id)]
        lo, hi = start // PSUM_BANK_BYTES, (end - 1) // PSUM_BANK_BYTES
        banks[a.alloc_id] = tuple(range(lo, hi + 1))
        cursor = end % ring
    return banks


def _aligned(cursor: int, size: int, ring: int) -> int:
    """Where a tile of ``size`` bytes starts at or after ``cursor``: a tile of a bank or
    more on a bank boundary, a smaller one where it does not straddle a bank; back
    to the ring's start when it would run past the end."""
    cursor %= ring
    bank = PSUM_BANK_BYTES
    if size >= bank or cursor // bank != (cursor + size - 1) // bank:
        cursor = -(-cursor // bank) * bank
    if cursor + size > ring:
        cursor = 0
    return cursor


def banks_touched(plan: MemoryPlan, alloc: int, box: Any) -> tuple[int, ...]:
    """The banks an access to ``box`` of PSUM allocation ``alloc`` touches: those its
    bytes fall in, counted from the tile's first bank (all the tile's banks when the
    box does not follow the tile's shape)."""
    banks = plan.banks.get(alloc, ())
    shape = plan.layout.get(alloc, ())
    if len(banks) < 2 or len(shape) != len(box) or len(shape) < 2:
        return banks
    stride, lo, hi = 1, 0, 0
    for extent, (b0, b1) in zip(reversed(shape[1:]), reversed(box[1:]), strict=True):
        lo += b0 * stride
        hi += (b1 - 1) * stride
        stride *= extent
    first = lo * PSUM_ACCUMULATE_BYTES // PSUM_BANK_BYTES
    last = hi * PSUM_ACCUMULATE_BYTES // PSUM_BANK_BYTES
    return banks[min(first, len(banks) - 1) : min(last, len(banks) - 1) + 1]
