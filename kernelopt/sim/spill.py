"""SBUF spilling: what the compiler does when a beta-1 kernel's live tiles exceed SBUF.

The public Trn1 profiles of NKIBench's beta-1 kernels count spill traffic
(``spill_save_bytes``/``spill_reload_bytes``: 64 MiB saved and 80 MiB
reloaded by swiglu, about 1 GiB each by GQA attention) and those bytes are in
the kernels' HBM totals: the compiler's allocator, given more live tiles than
SBUF holds, stores some to HBM and loads them back before their next use,
instead of failing. The simulator does the same to the finished trace, with
the classic furthest-next-use choice (Belady): walking the trace in program
order, whenever the tiles live at an instruction exceed SBUF it evicts the
live tile (not used by that instruction) whose next use is furthest away. An
evicted tile is stored to HBM right after its previous use (skipped when it
was reloaded and not written since) and reloaded right before its next use
into a new allocation, so memory liveness, dependencies and DMA time follow.

Only SBUF spills; PSUM overflowing still fails as the compiler does ("Out of
memory in psum": a 3 MiB PSUM accumulator does not compile). Hand-placed
tiles (``address=``, ``mod_alloc``) are never moved.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence

from kernelopt.sim.trace import AllocationInfo, Instruction, Region

_SPILL_SITE = -3_000_000  # marks the sites of reloaded copies (never a kernel line)


@dataclasses.dataclass
class _State:
    """The walk's view of one SBUF allocation."""

    size: int
    uses: list[int]
    next: int = 0  # index into uses of the next use at or after the walk
    current: int = -1  # allocation id holding it now (a reload's), -1 before first touch
    resident: bool = False
    saved: bool = False  # an HBM copy holds its current value
    home: Region | None = None  # where that copy is
    last_out: int = -1  # output position of its latest use


def _full(a: AllocationInfo) -> Region:
    return (a.alloc_id, tuple((0, n) for n in a.shape))


def _copy(op: str, src: Region, dst: Region, a: AllocationInfo, line: int) -> Instruction:
    nbytes = a.nbytes * a.partitions
    return Instruction(
        op=op,
        engine="dma",
        line=line,
        reads=(src,),
        writes=(dst,),
        shape=a.shape,
        partitions=a.partitions,
        free=a.nbytes,
        nbytes=nbytes,
        row_bytes=a.nbytes,
        hbm_read=nbytes if op == "spill_reload" else 0,
        hbm_write=nbytes if op == "spill_save" else 0,
    )


class _Spiller:
    def __init__(self, trace: Sequence[Instruction], allocations: Sequence[AllocationInfo]):
        self.trace = trace
        self.allocs = list(allocations)
        self.states: dict[int, _State] = {}
        for index, ins in enumerate(trace):
            for aid, _ in ins.reads + ins.writes:
                a = allocations[aid]
                if a.kind == "sbuf" and a.address is None:
                    state = self.states.setdefault(aid, _State(a.nbytes, []))
                    if not state.uses or state.uses[-1] != index:
                        state.uses.append(index)
        self.out: list[Instruction] = []
        self.after: dict[int, list[Instruction]] = {}  # stores placed after an output position
        self.heap: list[tuple[int, int]] = []  # (-next use, allocation): eviction candidates
        self.spilled_bytes = 0

    def _new(self, base: AllocationInfo, kind: str, suffix: str) -> AllocationInfo:
        a = dataclasses.replace(
            base,
            alloc_id=len(self.allocs),
            name=f"{base.name} ({suffix})",
            kind=kind,
            nbytes=base.nbytes if kind != "hbm" else 0,
            partitions=base.partitions if kind != "hbm" else 0,
            reuses=(),
            site=base.site + (_SPILL_SITE - len(self.allocs),),
            generation=0,
        )
        self.allocs.append(a)
        return a

    def _evict(self, aid: int, line: int) -> None:
        state = self.states[aid]
        state.resident = False
        if state.saved:
            return  # reloaded and only read since: the HBM copy is still good
        base = self.allocs[aid]
        state.home = _full(self._new(base, "hbm", "spill"))
        src = (state.current, _full(base)[1])
        save = _copy("spill_save", src, state.home, base, line)
        self.after.setdefault(state.last_out, []).append(save)
        self.spilled_bytes += save.nbytes
        state.saved = True

    def _reload(self, aid: int, line: int) -> None:
        state = self.states[aid]
        base = self.allocs[aid]
        copy = self._new(base, "sbuf", "reload")
        assert state.home is not None
        load = _copy("spill_reload", state.home, _full(copy), base, line)
        self.out.append(load)
        state.current, state.resident = copy.alloc_id, True

    def _remap(self, ins: Instruction) -> Instruction:
        def moved(regions: tuple[Region, ...]) -> tuple[Region, ...]:
            return tuple(
                (self.states[aid].current, box) if aid in self.states else (aid, box)
                for aid, box in regions
            )

        if not any(aid in self.states and self.states[aid].current != aid for aid, _ in
                   ins.reads + ins.writes):  # fmt: skip
            return ins
        return dataclasses.replace(ins, reads=moved(ins.reads), writes=moved(ins.writes))

    def run(
        self, limit: int, fixed: Sequence[int]
    ) -> tuple[list[Instruction], list[AllocationInfo]]:
        """Walk the trace; ``fixed[i]`` is the SBUF held at instruction ``i`` by what never
        moves (hand-placed tiles)."""
        live = 0
        for index, ins in enumerate(self.trace):
            touched = [aid for aid, _ in ins.reads + ins.writes if aid in self.states]
            for aid in dict.fromkeys(touched):
                state = self.states[aid]
                if not state.resident:
                    if state.current < 0:
                        state.current, state.resident = aid, True
                    else:
                        self._reload(aid, ins.line)
                    live += state.size
            while live + fixed[index] > limit:
                victim = self._victim(set(touched), index)
                if victim is None:
                    break  # nothing to evict: the capacity check reports it
                self._evict(victim, ins.line)
                live -= self.states[victim].size
            self.out.append(self._remap(ins))
            for aid in dict.fromkeys(touched):
                state = self.states[aid]
                state.last_out = len(self.out) - 1
                state.next += 1
                if any(w == aid for w, _ in ins.writes):
                    state.saved = False
                if state.next >= len(state.uses):
                    state.resident = False
                    live -= state.size
                else:
                    self._track(aid)
        return self._merged(), self.allocs

    def _track(self, aid: int) -> None:
        """Offer a resident allocation for eviction at its next use (a max-heap entry;
        entries go stale as it is used, evicted or dies, and are checked when popped)."""
        state = self.states[aid]
        if state.resident and state.next < len(state.uses):
            heapq.heappush(self.heap, (-state.uses[state.next], aid))

    def _victim(self, busy: set[int], index: int) -> int | None:
        held, found = [], None
        while self.heap:
            neg, aid = heapq.heappop(self.heap)
            state = self.states[aid]
            valid = (
                state.resident and state.next < len(state.uses) and state.uses[state.next] == -neg
            )
            if not valid:
                continue
            if aid in busy:
                held.append((neg, aid))
                continue
            found = aid
            break
        for entry in held:
            heapq.heappush(self.heap, entry)
        return found

    def _merged(self) -> list[Instruction]:
        merged: list[Instruction] = []
        for position, ins in enumerate(self.out):
            merged.append(ins)
            merged.extend(self.after.get(position, ()))
        return merged


def spill_to_fit(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    limit: int,
    fixed: Sequence[int],
) -> tuple[tuple[Instruction, ...], tuple[AllocationInfo, ...], int]:
    """The trace with spill stores and reloads, its allocations, and the bytes stored."""
    spiller = _Spiller(trace, allocations)
    out, allocs = spiller.run(limit, fixed)
    return tuple(out), tuple(allocs), spiller.spilled_bytes
