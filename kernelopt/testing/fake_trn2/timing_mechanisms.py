"""The fake device's building blocks: an in-order engine with a reorder window,
a shared link handed out in time slots, per-allocation access history.

They carry no numbers of their own (``timing.py`` sets the clocks, windows and
rates and describes each mechanism with its public source); like ``timing.py``,
this file reads nothing of kernelopt.
"""

from __future__ import annotations

import bisect
from typing import Any


def overlaps(a: Any, b: Any) -> bool:
    return all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(a, b, strict=False))


def covers(outer: Any, inner: Any) -> bool:
    return all(o0 <= i0 and i1 <= o1 for (o0, o1), (i0, i1) in zip(outer, inner, strict=False))


class Accesses:
    """Recent reads and writes of one allocation: (box, usable-at, engine)."""

    __slots__ = ("reads", "writes")

    def __init__(self) -> None:
        self.reads: list[tuple[Any, float, str]] = []
        self.writes: list[tuple[Any, float, str, float]] = []  # ... and occupancy end


class Engine:
    """An in-order engine: the issue times of its last instructions (mechanism 1).

    An engine executes one instruction at a time: a later instruction may fill an
    idle gap among the last ``window`` ones, never a stretch another instruction
    (of any age) occupies, and never before the oldest of the window started.
    """

    def __init__(self, window: int) -> None:
        self.window = window
        self.recent: list[tuple[float, float]] = []  # (start, occupancy end), issue order
        self.free = 0.0
        self.busy: list[tuple[float, float]] = []
        # Occupied stretches that a later instruction could still fall among, by start.
        self._timeline: list[tuple[float, float]] = []

    def place(self, ready: float, occupancy: float) -> float:
        if self.window <= 1 or not self.recent:
            start = max(ready, self.free)
        else:
            t = max(ready, self.recent[0][0])
            start = None
            i = max(0, bisect.bisect_left(self._timeline, (t,)) - 1)
            for s, e in self._timeline[i:]:
                if e <= t:
                    continue
                if s - t >= occupancy:
                    start = t
                    break
                t = e
            if start is None:
                start = max(t, self.free)
        self.recent.append((start, start + occupancy))
        if len(self.recent) > self.window:
            self.recent.pop(0)
        bisect.insort(self._timeline, (start, start + occupancy))
        # No later instruction starts before the earliest start in the window
        # (each later window's oldest member is one of these or placed after them).
        floor = min(s for s, _ in self.recent)
        drop = 0
        while drop < len(self._timeline) and self._timeline[drop][1] <= floor:
            drop += 1
        if drop:
            del self._timeline[:drop]
        self.free = max(self.free, start + occupancy)
        self.busy.append((start, start + occupancy))
        return start


class Bandwidth:
    """A shared link (the core's HBM port, the on-chip DMA path) as time slots:
    a transfer takes the earliest free stretch long enough for its data once
    its first byte can move, whichever ring it came from (rings run
    independently, so a late transfer does not hold back an earlier-ready one)."""

    def __init__(self) -> None:
        self.busy: list[list[float]] = []  # sorted, disjoint [start, end]

    def take(self, earliest: float, duration: float) -> float:
        busy = self.busy
        i = max(0, bisect.bisect_left(busy, [earliest]) - 1)
        t = earliest
        while i < len(busy):
            s, e = busy[i]
            if e <= t:
                i += 1
                continue
            if s - t >= duration:
                break
            t = max(t, e)
            i += 1
        busy.insert(i, [t, t + duration])
        # merge neighbours that touch, so a saturated link stays one interval
        j = max(0, i - 1)
        while j + 1 < len(busy) and busy[j][1] >= busy[j + 1][0] - 1e-9:
            busy[j][1] = max(busy[j][1], busy[j + 1][1])
            del busy[j + 1]
            if j + 1 < len(busy) and busy[j][1] < busy[j + 1][0] - 1e-9 and j >= i:
                break
        return t


def union(intervals: list[tuple[float, float]]) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total
