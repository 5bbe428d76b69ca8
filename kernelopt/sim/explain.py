"""What bounds a simulated kernel's time, and where its TensorE waits.

Read from the schedule: the critical path is followed back from the last
instruction to finish, each step taking whatever set the instruction's
start (the dependency it waited for, or the engine it queued behind); the
stalls are TensorE's idle gaps (the time MFU loses), each charged to the
dependency the next matmul waited for and summed by source line.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kernelopt.sim.schedule import NO_WAIT, WAIT_KINDS, Timeline
from kernelopt.sim.trace import ENGINES, AllocationInfo, Instruction

_EPS = 1e-6  # ns
ENGINE_NAMES = {
    "tensor": "tensor engine",
    "vector": "vector engine",
    "scalar": "scalar engine",
    "gpsimd": "gpsimd engine",
    "dma": "DMA",
}
# An engine busy this much of the time bounds the kernel by itself.
SATURATED = 0.85


@dataclass(frozen=True)
class Stall:
    """An engine's idle time (TensorE's, or the bounding engine's in a kernel with no
    matmul) charged to one dependency, summed over its occurrences."""

    idle_s: float
    count: int
    line: int  # the instruction that waited
    op: str
    waits_for_line: int
    waits_for_op: str
    waits_for_engine: str
    dependency: str  # raw, war, waw or reuse (a recycled buffer copy)
    buffer: str
    # What that instruction itself waited for, when a dependency held it back
    # (line 0 when it only waited for its engine).
    then_line: int = 0
    then_op: str = ""
    then_dependency: str = ""
    then_buffer: str = ""
    engine: str = "tensor"  # the engine that stood idle

    def describe(self) -> str:
        times = f" ({self.count} times)" if self.count > 1 else ""
        text = (
            f"{ENGINE_NAMES[self.engine]} idle {self.idle_s * 1e6:.1f} us{times} before "
            f"{self.op} at line "
            f"{self.line}: waits for {self.waits_for_op} at line {self.waits_for_line} "
            f"({self.waits_for_engine}, {self.dependency} on {self.buffer!r})"
        )
        if self.then_line:
            text += (
                f", which waits for {self.then_op} at line {self.then_line} "
                f"({self.then_dependency} on {self.then_buffer!r})"
            )
        return text


@dataclass(frozen=True)
class LineSpan:
    """When one source line's instructions ran: the window from its first start to its
    last end against its busy time shows whether the line runs early, late or spread
    out, which the stalls alone (TensorE's gaps) do not say for the other engines."""

    line: int
    op: str
    engine: str
    count: int
    busy_s: float  # summed over the instructions (DMA queues may overlap)
    first_start_s: float
    last_end_s: float

    def describe(self) -> str:
        # A DMA is in flight from issue to completion (fixed latency and its turn on
        # the bandwidth included) on one of 16 queues at once: the sum can exceed the run.
        busy = "in flight (summed over queues)" if self.engine == "dma" else "busy"
        return (
            f"line {self.line} {self.op} ({ENGINE_NAMES.get(self.engine, self.engine)}, "
            f"{self.count}x): {self.first_start_s * 1e6:.2f} -> {self.last_end_s * 1e6:.2f} us, "
            f"{busy} {self.busy_s * 1e6:.2f} us"
        )


@dataclass(frozen=True)
class Explanation:
    bound: str  # one sentence
    bound_by: str  # an engine name, or "dependency chain"
    critical_path_s: dict[str, float]  # time on the critical path per engine, plus waiting
    stalls: tuple[Stall, ...]
    by_line: tuple[LineSpan, ...] = ()  # ordered by first start

    def to_json(self) -> dict[str, Any]:
        return {
            "bound": self.bound,
            "bound_by": self.bound_by,
            "critical_path_s": dict(self.critical_path_s),
            "stalls": [asdict(s) for s in self.stalls],
            "by_line": [asdict(s) for s in self.by_line],
        }

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Explanation:
        return cls(
            record["bound"],
            record["bound_by"],
            dict(record["critical_path_s"]),
            tuple(Stall(**stall) for stall in record["stalls"]),
            tuple(LineSpan(**span) for span in record.get("by_line", ())),
        )

    def lines(self) -> list[str]:
        path = ", ".join(
            f"{ENGINE_NAMES.get(k, k)} {v * 1e6:.1f} us"
            for k, v in sorted(self.critical_path_s.items(), key=lambda kv: -kv[1])
            if v > 0
        )
        out = [f"bound: {self.bound}", f"critical_path: {path}"]
        if not self.stalls:
            out.append("stalls: none")
        for i, stall in enumerate(self.stalls, 1):
            out.append(f"stall {i}: {stall.describe()}")
        if self.by_line:
            out.append("by line (first start -> last end):")
            out.extend(f"  {span.describe()}" for span in self.by_line)
        return out


def _engine_predecessor(
    index: int, ins: Instruction, timeline: Timeline, by_engine: dict[str, tuple[list, list]]
) -> int:
    """The instruction on the same engine that finished last before this one started."""
    ends, order = by_engine[ins.engine]
    k = bisect_right(ends, timeline.start_ns[index] + _EPS) - 1
    while k >= 0 and order[k] == index:
        k -= 1
    return order[k] if k >= 0 else -1


def _critical_path(trace: Sequence[Instruction], timeline: Timeline) -> dict[str, float]:
    if not trace:
        return {}
    by_engine: dict[str, tuple[list, list]] = {}
    for engine in ENGINES:
        members = sorted(
            (timeline.end_ns[i], i) for i, ins in enumerate(trace) if ins.engine == engine
        )
        by_engine[engine] = ([e for e, _ in members], [i for _, i in members])
    path = dict.fromkeys(ENGINES, 0.0)
    path["waiting"] = 0.0
    current = max(range(len(trace)), key=timeline.end_ns.__getitem__)
    seen = set()
    while current >= 0 and current not in seen:
        seen.add(current)
        ins = trace[current]
        start, end = timeline.start_ns[current], timeline.end_ns[current]
        path[ins.engine] += end - start
        dependency = timeline.waited_on[current] if timeline.waited_on else -1
        if (
            timeline.wait_kind
            and timeline.wait_kind[current] != NO_WAIT
            and (timeline.ready_ns[current] >= start - _EPS)
        ):
            previous = dependency
        else:
            previous = _engine_predecessor(current, ins, timeline, by_engine)
        if previous >= 0:
            path["waiting"] += max(0.0, start - timeline.end_ns[previous])
        else:
            path["waiting"] += start
        current = previous
    return {k: v * 1e-9 for k, v in path.items()}


def _dependency(
    allocations: Sequence[AllocationInfo], timeline: Timeline, index: int
) -> tuple[str, str]:
    alloc = timeline.waited_alloc[index]
    return WAIT_KINDS[timeline.wait_kind[index]], allocations[alloc].name if alloc >= 0 else ""


def _held_back(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    timeline: Timeline,
    index: int,
) -> tuple[int, str, str, str]:
    """What instruction ``index`` waited for, if a dependency set its start."""
    on = timeline.waited_on[index]
    if on < 0 or timeline.ready_ns[index] < timeline.start_ns[index] - _EPS:
        return 0, "", "", ""
    return (trace[on].line, trace[on].op, *_dependency(allocations, timeline, index))


def _stalls(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    timeline: Timeline,
    engine: str,
    top: int,
) -> tuple[Stall, ...]:
    members = sorted(
        (timeline.start_ns[i], timeline.end_ns[i], i)
        for i, ins in enumerate(trace)
        if ins.engine == engine
    )
    totals: dict[tuple, list[float]] = {}
    free = 0.0
    for start, end, i in members:
        gap = start - free
        free = max(free, end)
        if gap <= _EPS:
            continue
        ins = trace[i]
        on = timeline.waited_on[i] if timeline.waited_on else -1
        if on >= 0:
            blocker = trace[on]
            key = (
                ins.line,
                ins.op,
                blocker.line,
                blocker.op,
                blocker.engine,
                *_dependency(allocations, timeline, i),
                *_held_back(trace, allocations, timeline, on),
            )
        else:
            key = (ins.line, ins.op, 0, "kernel start", "", "", "", 0, "", "", "")
        slot = totals.setdefault(key, [0.0, 0])
        slot[0] += gap
        slot[1] += 1
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][0])[:top]
    return tuple(
        Stall(
            idle_s=idle * 1e-9,
            count=int(count),
            line=line,
            op=op,
            waits_for_line=bline,
            waits_for_op=bop,
            waits_for_engine=bengine,
            dependency=kind,
            buffer=buffer,
            then_line=then[0],
            then_op=then[1],
            then_dependency=then[2],
            then_buffer=then[3],
            engine=engine,
        )
        for (line, op, bline, bop, bengine, kind, buffer, *then), (idle, count) in ranked
    )


def _by_line(trace: Sequence[Instruction], timeline: Timeline) -> tuple[LineSpan, ...]:
    """Each (line, op, engine)'s instructions summed, in the order they first start."""
    groups: dict[tuple[int, str, str], list[float]] = {}
    for i, ins in enumerate(trace):
        start, end = timeline.start_ns[i], timeline.end_ns[i]
        g = groups.setdefault((ins.line, ins.op, ins.engine), [0, 0.0, start, end])
        g[0] += 1
        g[1] += end - start
        g[2] = min(g[2], start)
        g[3] = max(g[3], end)
    spans = [
        LineSpan(line, op, engine, int(n), busy * 1e-9, first * 1e-9, last * 1e-9)
        for (line, op, engine), (n, busy, first, last) in groups.items()
    ]
    return tuple(sorted(spans, key=lambda s: (s.first_start_s, s.line)))


def explain(
    trace: Sequence[Instruction],
    allocations: Sequence[AllocationInfo],
    timeline: Timeline,
    top: int = 3,
) -> Explanation:
    """The engine or dependency chain that bounds the time, and TensorE's top stalls."""
    total = timeline.makespan_ns
    busy = {e: timeline.engine_busy_ns.get(e, 0.0) for e in ENGINES}
    path = _critical_path(trace, timeline)
    if total <= 0:
        return Explanation("nothing ran", "", path, (), _by_line(trace, timeline))
    engine, used = max(busy.items(), key=lambda kv: kv[1])
    if used >= SATURATED * total:
        bound_by = engine
        bound = (
            f"{ENGINE_NAMES[engine]} busy {100 * used / total:.1f} % of "
            f"{total * 1e-3:.1f} us: it bounds the time"
        )
    else:
        bound_by = "dependency chain"
        parts = sorted(((v, k) for k, v in path.items() if v > 0 and k != "waiting"), reverse=True)
        chain = " + ".join(f"{ENGINE_NAMES[k]} {v * 1e6:.1f} us" for v, k in parts[:3])
        bound = (
            f"a dependency chain: no engine is busy more than {100 * used / total:.0f} % of "
            f"{total * 1e-3:.1f} us; the critical path is {chain}"
            f" and {path.get('waiting', 0.0) * 1e6:.1f} us of waiting"
        )
    stall_engine = "tensor" if any(i.engine == "tensor" for i in trace) else engine
    return Explanation(
        bound,
        bound_by,
        path,
        _stalls(trace, allocations, timeline, stall_engine, top),
        _by_line(trace, timeline),
    )
