"""Dependency-aware schedule of a trace over the engines and DMA queues.

Each engine runs its instructions in program order; DMAs go to whichever of
the queues frees first. An instruction also waits for the last writes of
what it reads (RAW) and, before writing, for earlier readers and writers of
the region (WAR/WAW). Access lists are kept per allocation and pruned when a
write covers older entries, so each lookup scans a handful of boxes and the
whole pass stays linear in the trace length.

An allocation that takes over the physical copy of a dead allocation from
the same site (see ``AllocationInfo.reuses``) waits, on first touch, until
every access to that copy has finished: this is what makes a loop with one
buffer serialise and a loop-body allocation pipeline.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from kernelopt.sim.cost import duration_ns
from kernelopt.sim.trace import ENGINES, AllocationInfo, Instruction
from kernelopt.sim.trn2 import Trn2Params

Box = tuple[tuple[int, int], ...]
Access = tuple[Box, float, str]  # (box, end time, engine)


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
    """Busy intervals of the shared DMA bandwidth, sorted, disjoint, merged
    when they touch (so a saturated channel is one interval)."""

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


def schedule(
    trace: list[Instruction] | tuple[Instruction, ...],
    allocations: list[AllocationInfo] | tuple[AllocationInfo, ...],
    params: Trn2Params,
) -> Timeline:
    n_alloc = len(allocations)
    writes: list[list[Access]] = [[] for _ in range(n_alloc)]
    # Reads of one box merge into one entry: inputs are read many times, never written.
    reads: list[dict[Box, tuple[float, str]]] = [{} for _ in range(n_alloc)]
    release = [0.0] * n_alloc  # when every access so far has finished
    # Latest end among the listed writes / reads (an upper bound after pruning):
    # a scan is skipped when nothing listed can still delay the instruction.
    wmax = [0.0] * n_alloc
    rmax = [0.0] * n_alloc
    release_engine = [""] * n_alloc
    touched = bytearray(n_alloc)
    reuses = [a.reuses for a in allocations]
    engine_free = dict.fromkeys(ENGINES, 0.0)
    busy = dict.fromkeys(ENGINES, 0.0)
    queues = [0.0] * params.dma_queues
    channel = _Channel()
    sync = params.sync_latency_ns
    tensor_last_end = float("-inf")
    tensor_period_start = 0.0
    starts: list[float] = []
    ends: list[float] = []
    dma_intervals: list[tuple[float, float]] = []

    for ins in trace:
        engine = ins.engine
        ready = 0.0

        def after(end: float, other: str, engine: str = engine) -> float:
            return end if other == engine else end + sync

        for aid, box in ins.reads:
            if not touched[aid] and reuses[aid] >= 0:
                r = reuses[aid]
                ready = max(ready, after(release[r], release_engine[r]))
            if wmax[aid] > ready:
                for wbox, wend, weng in writes[aid]:
                    if wend > ready and _overlaps(box, wbox):
                        ready = max(ready, after(wend, weng))
        for aid, box in ins.writes:
            if not touched[aid] and reuses[aid] >= 0:
                r = reuses[aid]
                ready = max(ready, after(release[r], release_engine[r]))
            if wmax[aid] > ready:
                for obox, oend, oeng in writes[aid]:
                    if oend > ready and _overlaps(box, obox):
                        ready = max(ready, after(oend, oeng))
            if rmax[aid] > ready:
                for obox, (oend, oeng) in reads[aid].items():
                    if oend > ready and _overlaps(box, obox):
                        ready = max(ready, after(oend, oeng))

        duration = duration_ns(ins, params)
        if engine == "dma":
            # A queue holds the transfer from issue to completion; the data
            # phase, after the fixed latency, takes a slot of the shared
            # bandwidth (the earliest gap long enough).
            q = min(range(len(queues)), key=queues.__getitem__)
            start = max(ready, queues[q])
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
            previous = reads[aid].get(box)
            if previous is None or end >= previous[0]:
                reads[aid][box] = (end, engine)
                rmax[aid] = max(rmax[aid], end)
            if end > release[aid]:
                release[aid], release_engine[aid] = end, engine
        for aid, box in ins.writes:
            touched[aid] = 1
            # Everything this write covers is ordered before it: drop it.
            writes[aid] = [w for w in writes[aid] if not _covers(box, w[0])]
            writes[aid].append((box, end, engine))
            wmax[aid] = max(wmax[aid], end)
            stale = [r for r in reads[aid] if _covers(box, r)]
            for r in stale:
                del reads[aid][r]
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
