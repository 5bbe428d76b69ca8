"""Dependency-aware schedule of a trace over the engines and DMA queues.

An instruction waits for the last writes of what it reads (RAW) and, before
writing, for earlier readers and writers of the region (WAR/WAW). With the
compiler's instruction scheduler on, it then takes the earliest idle gap of
its engine long enough to hold it (list scheduling); with the scheduler off
each engine runs in program order. DMAs go to whichever of the queues frees
first. Access lists are kept per allocation and pruned when a
write covers older entries, so each lookup scans a handful of boxes and the
whole pass stays linear in the trace length.

An allocation that takes over the physical memory of dead allocations (see
``AllocationInfo.reuses``) waits, on first touch, until every access to
them has finished: this is what makes a loop with one buffer serialise and
a loop-body allocation pipeline.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from kernelopt.sim.cost import duration_ns
from kernelopt.sim.memory import ON_CHIP
from kernelopt.sim.trace import ENGINES, AllocationInfo, Instruction
from kernelopt.sim.trn2 import Trn2Params

Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Timeline:
    """When each instruction ran, and what it waited for.

    ``ready_ns`` is when its dependencies allowed it to start; ``wait_kind``
    (an index into ``WAIT_KINDS``), ``waited_on`` (an instruction index, -1
    for none) and ``waited_alloc`` (the allocation it was on) name the
    dependency that set that time.
    """

    makespan_ns: float
    active_ns: float  # time at least one engine or queue is busy
    engine_busy_ns: dict[str, float]  # "dma": time at least one queue is busy
    start_ns: tuple[float, ...]
    end_ns: tuple[float, ...]
    ready_ns: tuple[float, ...] = ()
    wait_kind: tuple[int, ...] = ()
    waited_on: tuple[int, ...] = ()
    waited_alloc: tuple[int, ...] = ()


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
    """Busy intervals of a resource (an engine, DMA bandwidth, DMA issue), sorted,
    disjoint, merged when they touch (so a saturated resource is one interval)."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def find(self, earliest: float, duration: float) -> float:
        """The start of the earliest gap at or after ``earliest`` that holds ``duration``."""
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, earliest)
        t = earliest
        while i < len(starts) and starts[i] - t < duration:
            t = max(t, ends[i])
            i += 1
        return t

    def reserve(self, earliest: float, duration: float) -> float:
        starts, ends = self.starts, self.ends
        t = self.find(earliest, duration)
        i = bisect_right(ends, t)
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

    def release(self, start: float, duration: float) -> None:
        """Undo the reservation of [start, start + duration) made last."""
        starts, ends = self.starts, self.ends
        stop = start + duration
        i = bisect_right(starts, start) - 1
        s0, e0 = starts[i], ends[i]
        pieces = [(a, b) for a, b in ((s0, start), (stop, e0)) if b > a]
        starts[i : i + 1] = [a for a, _ in pieces]
        ends[i : i + 1] = [b for _, b in pieces]


# Why an instruction could not start earlier than its dependencies allowed.
NO_WAIT, RAW, WAR, WAW, REUSE = range(5)
WAIT_KINDS = ("", "raw", "war", "waw", "reuse")


class _Accesses:
    """Outstanding writes and reads of one allocation: box -> (end, engine, instruction).

    While every box is the same shape at offsets that are multiples of it (a
    tile grid, the usual case), two boxes overlap only when equal, so lookups
    are dictionary hits. The first off-grid box switches the allocation to
    scanning, where a write drops the entries it covers.
    """

    __slots__ = ("writes", "reads", "grid", "regular", "wmax", "rmax")

    def __init__(self) -> None:
        self.writes: dict[Box, tuple[float, str, int]] = {}
        self.reads: dict[Box, tuple[float, str, int]] = {}
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

    def latest(
        self, box: Box, wait: _Wait, engine: str, sync: float, alloc: int, *, write: bool
    ) -> None:
        """Raise ``wait`` to the end of every earlier access this one must follow."""
        if self.regular:
            self._check_grid(box)
        tables = ((self.writes, WAW if write else RAW, self.wmax),)
        if write:
            tables += ((self.reads, WAR, self.rmax),)
        for table, kind, limit in tables:
            if limit <= wait.ready:
                continue
            if self.regular:
                hit = table.get(box)
                found = () if hit is None else ((box, hit),)
            else:
                found = table.items()
            for other, (end, eng, index) in found:
                if end > wait.ready and _overlaps(box, other):
                    wait.raise_to(end if eng == engine else end + sync, kind, index, alloc)

    def record_read(self, box: Box, end: float, engine: str, index: int) -> None:
        previous = self.reads.get(box)
        if previous is None or end >= previous[0]:
            self.reads[box] = (end, engine, index)
            self.rmax = max(self.rmax, end)

    def record_write(self, box: Box, end: float, engine: str, index: int) -> None:
        # Everything this write covers is ordered before it: drop it.
        if self.regular:
            self.reads.pop(box, None)
        else:
            for table in (self.writes, self.reads):
                for other in [b for b in table if _covers(box, b)]:
                    del table[other]
        self.writes[box] = (end, engine, index)
        self.wmax = max(self.wmax, end)


class _Wait:
    """The earliest start an instruction's dependencies allow, and what set it."""

    __slots__ = ("ready", "kind", "on", "alloc")

    def __init__(self) -> None:
        self.ready = 0.0
        self.kind = NO_WAIT
        self.on = -1
        self.alloc = -1

    def raise_to(self, time: float, kind: int, index: int, alloc: int) -> None:
        if time > self.ready:
            self.ready, self.kind, self.on, self.alloc = time, kind, index, alloc


class _Throttle:
    """TensorE starts each busy period throttled: an instruction costs up to
    ``tensor_throttle_factor`` times more, ramping to full rate over the
    warm-up window of its period; a period begins after
    ``tensor_rethrottle_idle_ns`` without work.

    The ramp follows the engine's activity in time, read from its busy
    intervals: the list scheduler places instructions in program order, not
    time order, so one that fills an earlier gap runs at the rate the engine
    had reached at that time (cold before any work, warm inside a run of
    work), whatever was placed before it in the program."""

    def __init__(self, busy: _Channel, params: Trn2Params) -> None:
        self.busy = busy
        self.params = params

    def factor_at(self, start: float) -> float:
        p = self.params
        starts, ends = self.busy.starts, self.busy.ends
        # Walk back over the busy intervals before ``start`` while the gaps
        # between them are shorter than the re-throttle idle time, no further
        # than the warm-up window (the rate is full beyond it).
        period = start
        i = bisect_right(starts, start) - 1
        while i >= 0 and start - period < p.tensor_warmup_ns:
            if period - ends[i] >= p.tensor_rethrottle_idle_ns:
                break
            period = min(period, starts[i])
            i -= 1
        elapsed = start - period
        if elapsed >= p.tensor_warmup_ns:
            return 1.0
        # The rate ramps linearly from the throttled one to full over the window.
        low = 1.0 / p.tensor_throttle_factor
        return 1.0 / (low + (1.0 - low) * elapsed / p.tensor_warmup_ns)


class _Dependencies:
    """Every allocation's access history: what an instruction must wait for."""

    def __init__(self, allocations: Sequence[AllocationInfo], sync: float) -> None:
        n = len(allocations)
        self.sync = sync
        self.accesses = [_Accesses() for _ in range(n)]
        self.release = [0.0] * n  # when every access so far has finished
        self.release_engine = [""] * n
        self.release_index = [-1] * n
        self.touched = bytearray(n)
        self.reuses = [a.reuses for a in allocations]

    def wait_for(self, ins: Instruction) -> _Wait:
        """The earliest start ``ins``'s reads and writes allow, and what set it."""
        wait = _Wait()
        engine, sync = ins.engine, self.sync
        release, release_engine = self.release, self.release_engine
        for regions, write in ((ins.reads, False), (ins.writes, True)):
            for aid, box in regions:
                if not self.touched[aid]:
                    # First touch of memory taken over from dead allocations.
                    for r in self.reuses[aid]:
                        end = release[r] if release_engine[r] == engine else release[r] + sync
                        wait.raise_to(end, REUSE, self.release_index[r], r)
                self.accesses[aid].latest(box, wait, engine, sync, aid, write=write)
        return wait

    def ran(self, ins: Instruction, end: float, index: int) -> None:
        engine = ins.engine
        for regions, write in ((ins.reads, False), (ins.writes, True)):
            for aid, box in regions:
                self.touched[aid] = 1
                if write:
                    self.accesses[aid].record_write(box, end, engine, index)
                else:
                    self.accesses[aid].record_read(box, end, engine, index)
                if end > self.release[aid]:
                    self.release[aid] = end
                    self.release_engine[aid] = engine
                    self.release_index[aid] = index


class _Dma:
    """The DMA queues and engines. A queue holds a transfer from issue to completion.
    Issuing (descriptor generation) is serial across transfers; the data phase,
    after the fixed latency, runs on the DMA engines that serve the transfer's
    SBUF partitions, eight partitions to an engine (the NKI DMA overview: "each
    DMA engine is typically responsible for moving data for eight SBUF
    partitions"; a [4, 4096] transfer runs on one engine, a [128, 128] one on all
    sixteen), each engine its share of the bytes at its bandwidth, in the earliest
    gap long enough. A transfer ends when its last engine does."""

    def __init__(self, params: Trn2Params, allocations: Sequence[AllocationInfo]) -> None:
        self.params = params
        self.queues = [0.0] * params.dma_queues
        self.issuer = _Channel()
        self.on_chip = [a.kind in ON_CHIP for a in allocations]
        # One channel stands for every engine while each transfer has used them all
        # alike; the first that does not splits it into one channel per engine.
        self.channel = _Channel()
        self.engines: list[_Channel] | None = None
        self.intervals: list[tuple[float, float]] = []

    def _shares(self, ins: Instruction) -> list[tuple[int, float]] | None:
        """(engine, fraction of the transfer's bytes) for a transfer that does not
        spread evenly over every engine; None when it does."""
        engines = self.params.dma_queues
        per_engine = self.params.partitions // engines
        for aid, box in (*ins.writes, *ins.reads):
            if self.on_chip[aid]:
                p0, p1 = box[0]
                break
        else:
            return None  # HBM to HBM: no partitions to follow
        if p0 == 0 and p1 == self.params.partitions:
            return None
        total = p1 - p0
        return [
            (e, (min(p1, (e + 1) * per_engine) - max(p0, e * per_engine)) / total)
            for e in range(p0 // per_engine, (p1 - 1) // per_engine + 1)
        ]

    def _data(self, ins: Instruction, at: float, duration: float) -> float:
        """When the data phase of a transfer that may start at ``at`` ends."""
        shares = self._shares(ins)
        if shares is None and self.engines is None:
            return self.channel.reserve(at, duration) + duration
        if self.engines is None:
            self.engines = [_Channel() for _ in range(self.params.dma_queues)]
            for engine in self.engines:
                engine.starts, engine.ends = list(self.channel.starts), list(self.channel.ends)
        if shares is None:
            shares = [(e, 1.0 / len(self.engines)) for e in range(len(self.engines))]
        end = at
        for e, fraction in shares:
            # Every engine moves bytes at 1 / n of the core's rate: its share of
            # the bytes takes n x fraction of the transfer's all-engine time.
            part = duration * len(self.engines) * fraction
            end = max(end, self.engines[e].reserve(at, part) + part)
        return end

    def place(self, ins: Instruction, ready: float, duration: float) -> tuple[float, float]:
        p, queues = self.params, self.queues
        q = min(range(len(queues)), key=queues.__getitem__)
        if ins.precomputed_descriptors:
            # Descriptors made before the run: no on-device generation to wait for.
            start, fixed = max(ready, queues[q]), p.dma_precomputed_fixed_ns
        else:
            start = self.issuer.reserve(max(ready, queues[q]), p.dma_issue_ns)
            fixed = p.dma_fixed_ns if ins.software_dge else p.dma_hwdge_fixed_ns
        end = self._data(ins, start + fixed, duration)
        queues[q] = end
        self.intervals.append((start, end))
        return start, end


class _Engines:
    """TensorE, VectorE, ScalarE and GpSimd: an idle-gap search per engine
    (list scheduling), or program order with ``in_order``. On a chip whose engines
    share an SBUF or PSUM port (``Trn2Params.vector_gpsimd_share_sbuf``,
    ``vector_scalar_share_psum``), an instruction that uses the port also needs it
    idle: the gap must be free on both."""

    def __init__(
        self, params: Trn2Params, in_order: bool, allocations: Sequence[AllocationInfo]
    ) -> None:
        self.in_order = in_order
        self.lanes = {engine: _Channel() for engine in ENGINES if engine != "dma"}
        self.free = dict.fromkeys(ENGINES, 0.0)
        self.throttle = _Throttle(self.lanes["tensor"], params)
        self.kind = [a.kind for a in allocations]
        self.shared: list[tuple[frozenset[str], str, _Channel]] = []
        if params.vector_gpsimd_share_sbuf:
            self.shared.append((frozenset({"vector", "gpsimd"}), "sbuf", _Channel()))
        if params.vector_scalar_share_psum:
            self.shared.append((frozenset({"vector", "scalar"}), "psum", _Channel()))

    def _ports(self, ins: Instruction) -> list[_Channel]:
        if not self.shared:
            return []
        kinds = {self.kind[aid] for aid, _ in (*ins.reads, *ins.writes)}
        return [
            port for engines, kind, port in self.shared if ins.engine in engines and kind in kinds
        ]

    def place(self, ins: Instruction, ready: float, duration: float) -> tuple[float, float]:
        """Start and (throttled) duration of an instruction ready at ``ready``."""
        engine = ins.engine
        lane = self.lanes[engine]
        earliest = max(ready, self.free[engine]) if self.in_order else ready
        ports = self._ports(ins)
        if ports:
            channels = [lane, *ports]
            start = earliest
            while (later := max(c.find(start, duration) for c in channels)) != start:
                start = later  # a gap on one channel, busy on another: look after it
            for c in channels:
                c.reserve(start, duration)
        else:
            start = lane.reserve(earliest, duration)
        if engine == "tensor":
            lane.release(start, duration)  # the ramp reads the work before it
            factor = self.throttle.factor_at(start)
            duration *= factor
            start = lane.reserve(earliest if factor != 1.0 else start, duration)
        self.free[engine] = max(self.free[engine], start + duration)
        return start, duration


def schedule(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    params: Trn2Params,
    *,
    in_order: bool = False,
) -> Timeline:
    """Start and end times of every instruction.

    ``in_order`` keeps each engine in program order (the compiler's
    instruction scheduler off); otherwise an instruction may fill an earlier
    idle gap of its engine once its operands are ready (list scheduling).
    """
    deps = _Dependencies(allocations, params.sync_latency_ns)
    dma = _Dma(params, allocations)
    engines = _Engines(params, in_order, allocations)
    busy = dict.fromkeys(ENGINES, 0.0)
    starts: list[float] = []
    ends: list[float] = []
    ready_at: list[float] = []
    wait_kind: list[int] = []
    waited_on: list[int] = []
    waited_alloc: list[int] = []

    # A dynamic loop's control (Instruction.barrier): nothing after it starts before
    # it ends (``floor``); an iteration's end first waits for everything before it.
    floor = last_end = 0.0
    for index, ins in enumerate(trace):
        wait = deps.wait_for(ins)
        duration = duration_ns(ins, params)
        ready = max(wait.ready, floor)
        if ins.barrier:
            start = max(ready, last_end) if ins.barrier == 2 else ready
            end = floor = start + duration
        elif ins.engine == "dma":
            start, end = dma.place(ins, ready, duration)
        else:
            start, duration = engines.place(ins, ready, duration)
            end = start + duration
        last_end = max(last_end, end)
        if not ins.barrier:
            busy[ins.engine] += duration
        starts.append(start)
        ends.append(end)
        ready_at.append(ready)
        wait_kind.append(wait.kind)
        waited_on.append(wait.on)
        waited_alloc.append(wait.alloc)
        deps.ran(ins, end, index)

    busy["dma"] = _union_length(dma.intervals)
    return Timeline(
        makespan_ns=max(ends, default=0.0),
        active_ns=_union_length(list(zip(starts, ends, strict=True))),
        engine_busy_ns=busy,
        start_ns=tuple(starts),
        end_ns=tuple(ends),
        ready_ns=tuple(ready_at),
        wait_kind=tuple(wait_kind),
        waited_on=tuple(waited_on),
        waited_alloc=tuple(waited_alloc),
    )
