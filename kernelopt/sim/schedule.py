"""Dependency-aware schedule of a trace over the engines and DMA queues.

Each engine runs its instructions in program order; DMAs go to whichever of
the queues frees first. An instruction also waits for the last writes of
what it reads (RAW) and, before writing, for earlier readers and writers of
the region (WAR/WAW). Access lists are kept per allocation and pruned when a
write covers older entries, so each lookup scans a handful of boxes and the
whole pass stays linear in the trace length.

An allocation that takes over the physical memory of dead allocations (see
``AllocationInfo.reuses``) waits, on first touch, until every access to
them has finished: this is what makes a loop with one buffer serialise and
a loop-body allocation pipeline.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from kernelopt.sim.cost import duration_ns
from kernelopt.sim.trace import ENGINES, AllocationInfo, Instruction
from kernelopt.sim.trn2 import Trn2Params

Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Timeline:
    makespan_ns: float
    active_ns: float  # time at least one engine or queue is busy
    engine_busy_ns: dict[str, float]  # "dma": time at least one queue is busy
    start_ns: tuple[float, ...]
    end_ns: tuple[float, ...]


def _overlaps(a: Box, b: Box) -> bool:
    for (a0, a1), (b0, b1) in zip(a, b, strict=True):
        if a0 >= b1 or b0 >= a1:
            return False
    return True


def _covers(outer: Box, inner: Box) -> bool:
    for (o0, o1), (i0, i1) in zip(outer, inner, strict=True):
        if i0 < o0 or i1 > o1:
            return False
    return True


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total = 0.0
    cur_start = cur_end = None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        elif end > cur_end:
            cur_end = end
    if cur_end is not None:
        total += cur_end - cur_start
    return total


class _Channel:
    """Busy intervals of a shared resource (DMA bandwidth, DMA issue), sorted,
    disjoint, merged when they touch (so a saturated resource is one interval)."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def reserve(self, earliest: float, duration: float) -> float:
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, earliest)
        t = earliest
        while i < len(starts) and starts[i] - t < duration:
            t = max(t, ends[i])
            i += 1
        stop = t + duration
        joins_prev = i > 0 and ends[i - 1] >= t
        joins_next = i < len(starts) and starts[i] <= stop
        if joins_prev and joins_next:
            ends[i - 1] = ends[i]
            del starts[i], ends[i]
        elif joins_prev:
            ends[i - 1] = stop
        elif joins_next:
            starts[i] = t
        else:
            starts.insert(i, t)
            ends.insert(i, stop)
        return t


class _Accesses:
    """Outstanding writes and reads of one allocation, with their end times.

    While every box is the same shape at offsets that are multiples of it (a
    tile grid, the usual case), two boxes overlap only when equal, so lookups
    are dictionary hits. The first off-grid box switches the allocation to
    scanning, where a write drops the entries it covers.
    """

    __slots__ = ("writes", "reads", "grid", "regular", "wmax", "rmax")

    def __init__(self) -> None:
        self.writes: dict[Box, tuple[float, str]] = {}
        self.reads: dict[Box, tuple[float, str]] = {}
        self.grid: tuple[int, ...] | None = None
        self.regular = True
        # Latest end among the entries (an upper bound after pruning): nothing
        # is looked up when the instruction is already ready later.
        self.wmax = 0.0
        self.rmax = 0.0

    def _check_grid(self, box: Box) -> None:
        if self.grid is None:
            self.grid = tuple(hi - lo for lo, hi in box)
        for (lo, hi), size in zip(box, self.grid, strict=True):
            if hi - lo != size or lo % size:
                self.regular = False
                return

    def latest(self, box: Box, ready: float, engine: str, sync: float, *, write: bool) -> float:
        if self.regular:
            self._check_grid(box)
        tables = (self.writes, self.reads) if write else (self.writes,)
        limits = (self.wmax, self.rmax)
        for table, limit in zip(tables, limits, strict=False):
            if limit <= ready:
                continue
            if self.regular:
                hit = table.get(box)
                found = () if hit is None else ((box, hit),)
            else:
                found = table.items()
            for other, (end, eng) in found:
                if end > ready and _overlaps(box, other):
                    ready = max(ready, end if eng == engine else end + sync)
        return ready

    def record_read(self, box: Box, end: float, engine: str) -> None:
        previous = self.reads.get(box)
        if previous is None or end >= previous[0]:
            self.reads[box] = (end, engine)
            self.rmax = max(self.rmax, end)

    def record_write(self, box: Box, end: float, engine: str) -> None:
        # Everything this write covers is ordered before it: drop it.
        if self.regular:
            self.reads.pop(box, None)
        else:
            for table in (self.writes, self.reads):
                for other in [b for b in table if _covers(box, b)]:
                    del table[other]
        self.writes[box] = (end, engine)
        self.wmax = max(self.wmax, end)


def schedule(
    trace: list[Instruction] | tuple[Instruction, ...],
    allocations: list[AllocationInfo] | tuple[AllocationInfo, ...],
    params: Trn2Params,
) -> Timeline:
    n_alloc = len(allocations)
    accesses = [_Accesses() for _ in range(n_alloc)]
    release = [0.0] * n_alloc  # when every access so far has finished
    release_engine = [""] * n_alloc
    touched = bytearray(n_alloc)
    reuses = [a.reuses for a in allocations]
    engine_free = dict.fromkeys(ENGINES, 0.0)
    busy = dict.fromkeys(ENGINES, 0.0)
    queues = [0.0] * params.dma_queues
    channel = _Channel()
    issuer = _Channel()
    sync = params.sync_latency_ns
    tensor_last_end = float("-inf")
    tensor_period_start = 0.0
    starts: list[float] = []
    ends: list[float] = []
    dma_intervals: list[tuple[float, float]] = []

    for ins in trace:
        engine = ins.engine
        ready = 0.0
        for regions, write in ((ins.reads, False), (ins.writes, True)):
            for aid, box in regions:
                if not touched[aid]:
                    for r in reuses[aid]:
                        end = release[r] if release_engine[r] == engine else release[r] + sync
                        ready = max(ready, end)
                ready = accesses[aid].latest(box, ready, engine, sync, write=write)

        duration = duration_ns(ins, params)
        if engine == "dma":
            # A queue holds the transfer from issue to completion. Issuing
            # (descriptor generation) is serial across transfers; the data
            # phase, after the fixed latency, takes a slot of the shared
            # bandwidth. Both take the earliest gap long enough.
            q = min(range(len(queues)), key=queues.__getitem__)
            start = issuer.reserve(max(ready, queues[q]), params.dma_issue_ns)
            data_start = channel.reserve(start + params.dma_fixed_ns, duration)
            end = data_start + duration
            queues[q] = end
            dma_intervals.append((start, end))
        else:
            start = max(ready, engine_free[engine])
            if engine == "tensor":
                if start - tensor_last_end >= params.tensor_rethrottle_idle_ns:
                    tensor_period_start = start
                if start < tensor_period_start + params.tensor_warmup_ns:
                    duration *= params.tensor_throttle_factor
            end = start + duration
            engine_free[engine] = end
            if engine == "tensor":
                tensor_last_end = end
        busy[engine] += duration
        starts.append(start)
        ends.append(end)

        for aid, box in ins.reads:
            touched[aid] = 1
            accesses[aid].record_read(box, end, engine)
            if end > release[aid]:
                release[aid], release_engine[aid] = end, engine
        for aid, box in ins.writes:
            touched[aid] = 1
            accesses[aid].record_write(box, end, engine)
            if end > release[aid]:
                release[aid], release_engine[aid] = end, engine

    busy["dma"] = _union_length(dma_intervals)
    makespan = max(ends, default=0.0)
    active = _union_length(list(zip(starts, ends, strict=True)))
    return Timeline(
        makespan_ns=makespan,
        active_ns=active,
        engine_busy_ns=busy,
        start_ns=tuple(starts),
        end_ns=tuple(ends),
    )
