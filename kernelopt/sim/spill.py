"""Spilling: what the compiler does when a beta-1 kernel's live tiles exceed SBUF or PSUM.

The public Trn1 profiles of NKIBench's beta-1 kernels count spill traffic
(``spill_save_bytes``/``spill_reload_bytes``: 64 MiB saved and 80 MiB
reloaded by swiglu, about 1 GiB each by GQA attention) and those bytes are in
the kernels' HBM totals: the compiler's allocator, given more live tiles than
SBUF holds, stores some to HBM and loads them back before their next use,
instead of failing. The NKI attention tutorial's beta-1 version 3 keeps all
of Q @ K^T in one PSUM block array (512 KiB per partition at the tested
4,096 positions, 32 times PSUM) and runs: PSUM tiles are moved out too.

The simulator does the same to the finished trace, with the classic
furthest-next-use choice (Belady): walking the trace in program order,
whenever the tiles live at an instruction exceed the memory it evicts the
live tile (not used by that instruction) whose next use is furthest away.
An SBUF tile is stored to HBM right after its previous use (skipped when it
was reloaded and not written since) and reloaded right before its next use
into a new allocation, so memory liveness, dependencies and DMA time follow.
A PSUM tile is copied to SBUF (a ScalarE copy, as the compiler's copies out
of PSUM are); later reads take the copy, and only an instruction that adds
to the tile (a matmul accumulating) copies it back first. A next use that
overwrites the whole tile without reading it needs neither store nor reload.
Hand-placed tiles (``address=``, ``mod_alloc``) are never moved.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence

import numpy as np

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


def _engine_copy(op: str, src: Region, dst: Region, a: AllocationInfo, line: int) -> Instruction:
    """A PSUM tile moved to SBUF or back by ScalarE, one element per cycle and partition."""
    free = int(np.prod(a.shape[1:])) if len(a.shape) > 1 else 1
    return Instruction(
        op=op,
        engine="scalar",
        line=line,
        reads=(src,),
        writes=(dst,),
        shape=a.shape,
        partitions=a.partitions,
        free=free,
        psum_read=op == "spill_copy",
    )


class _Spiller:
    def __init__(
        self, trace: Sequence[Instruction], allocations: Sequence[AllocationInfo], kind: str
    ):
        self.trace = trace
        self.kind = kind
        self.allocs = list(allocations)
        self.states: dict[int, _State] = {}
        for index, ins in enumerate(trace):
            for aid, _ in ins.reads + ins.writes:
                a = allocations[aid]
                if a.kind == kind and a.address is None:
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

    def _overwrites(self, aid: int, position: int) -> bool:
        """Whether the use at trace ``position`` writes all of ``aid`` without reading it."""
        ins = self.trace[position]
        full = _full(self.allocs[aid])[1]
        return all(r != aid for r, _ in ins.reads) and any(
            w == aid and box == full for w, box in ins.writes
        )

    def _evict(self, aid: int, line: int) -> None:
        state = self.states[aid]
        state.resident = False
        if state.saved or self._overwrites(aid, state.uses[state.next]):
            state.saved = True  # the copy out is still good, or nothing needs keeping
            return
        base = self.allocs[aid]
        src = (state.current, _full(base)[1])
        if self.kind == "psum":
            state.home = _full(self._new(base, "sbuf", "psum spill"))
            save = _engine_copy("spill_copy", src, state.home, base, line)
        else:
            state.home = _full(self._new(base, "hbm", "spill"))
            save = _copy("spill_save", src, state.home, base, line)
            self.spilled_bytes += save.nbytes
        self.after.setdefault(state.last_out, []).append(save)
        state.saved = True

    def _reload(self, aid: int, line: int, index: int) -> None:
        state = self.states[aid]
        base = self.allocs[aid]
        copy = self._new(base, self.kind, "reload")
        if state.home is not None and not self._overwrites(aid, index):
            make = _engine_copy if self.kind == "psum" else _copy
            self.out.append(make("spill_reload", state.home, _full(copy), base, line))
        state.current, state.resident, state.home = copy.alloc_id, True, None

    def _serves_from_copy(self, aid: int, ins: Instruction) -> bool:
        """A PSUM tile moved out is read from its SBUF copy; only a write brings it back."""
        state = self.states[aid]
        return (
            self.kind == "psum" and state.home is not None and all(w != aid for w, _ in ins.writes)
        )

    def _remap(self, ins: Instruction) -> Instruction:
        def moved(regions: tuple[Region, ...]) -> tuple[Region, ...]:
            out = []
            for aid, box in regions:
                state = self.states.get(aid)
                if state is None:
                    out.append((aid, box))
                elif not state.resident and state.home is not None:
                    out.append((state.home[0], box))
                else:
                    out.append((state.current, box))
            return tuple(out)

        reads, writes = moved(ins.reads), moved(ins.writes)
        if reads == ins.reads and writes == ins.writes:
            return ins
        psum = any(self.allocs[aid].kind == "psum" for aid, _ in reads)
        return dataclasses.replace(ins, reads=reads, writes=writes, psum_read=psum)

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
                if state.resident or self._serves_from_copy(aid, ins):
                    continue
                if state.current < 0:
                    state.current, state.resident = aid, True
                else:
                    self._reload(aid, ins.line, index)
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
                state.next += 1
                if not state.resident:
                    continue  # read from its copy
                state.last_out = len(self.out) - 1
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
    kind: str = "sbuf",
) -> tuple[tuple[Instruction, ...], tuple[AllocationInfo, ...], int]:
    """The trace with spill transfers for memory ``kind``, its allocations, and the bytes
    stored to HBM."""
    spiller = _Spiller(trace, allocations, kind)
    out, allocs = spiller.run(limit, fixed)
    return tuple(out), tuple(allocs), spiller.spilled_bytes
