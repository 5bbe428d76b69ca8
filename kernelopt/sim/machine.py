"""The state of one simulated run: allocations, live on-chip bytes, the trace.

One ``Machine`` per ``run_kernel`` call; the ``nki`` modules handed to the
kernel are bound to it, so nothing is shared between runs.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from dataclasses import replace
from typing import NoReturn

import numpy as np

from kernelopt.sim.errors import SimError
from kernelopt.sim.tensor import Allocation, Buffer, Tile
from kernelopt.sim.trace import AllocationInfo, Instruction
from kernelopt.sim.trn2 import Trn2Params

PRECISIONS = ("fp32", "native")


class Machine:
    def __init__(self, file: str, params: Trn2Params, precision: str, compute: bool) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.file = file
        self.params = params
        self.native = precision == "native"
        self.compute = compute
        self.trace: list[Instruction] = []
        self.allocations: list[AllocationInfo] = []
        # Live on-chip allocations: id -> (kind, bytes per partition).
        self._live: dict[int, tuple[str, int]] = {}
        self._live_bytes = {"sbuf": 0, "psum": 0}
        self._capacity_dirty = False
        self._limits = {"sbuf": params.sbuf_partition_bytes, "psum": params.psum_partition_bytes}
        # Last ``rotation_depth`` allocation ids per allocation site (kernel line).
        self._sites: dict[int, deque[int]] = {}
        # (new id, earlier ids at its site, memory kind, bytes per partition)
        self._pending_reuse: list[tuple[int, tuple[int, ...], str, int]] = []

    # --- locating the kernel line -------------------------------------------------

    def line(self) -> int:
        """The line in the kernel file currently executing (innermost kernel frame)."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != self.file:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else 0

    def fail(self, kind: str, message: str) -> NoReturn:
        raise SimError(message, file=self.file, line=self.line(), kind=kind)

    # --- allocation -------------------------------------------------------------------

    def allocate(
        self,
        shape: tuple[int, ...],
        dtype: np.dtype,
        buffer: Buffer,
        name: str | None,
        *,
        data: np.ndarray | None = None,
        filled: bool = False,
        address: tuple[int, ...] | None = None,
    ) -> Tile:
        """A new tensor; ``filled`` (inputs) marks it initialised with ``data``;
        ``address`` is a hand-placed location (``nl.ndarray(address=...)``)."""
        line = self.line()
        if not shape or any(not isinstance(d, int | np.integer) or d <= 0 for d in shape):
            self.fail(
                "isa", f"tensor shape must be a non-empty tuple of positive ints, got {shape}"
            )
        shape = tuple(int(d) for d in shape)
        p = self.params
        alloc_id = len(self.allocations)
        label = name or f"{buffer.kind}@{line}"
        per_partition = 0
        if buffer.on_chip:
            if shape[0] > p.partitions:
                self.fail(
                    "isa",
                    f"partition dimension {shape[0]} > {p.partitions} for {buffer.kind} "
                    f"tensor {label!r} {shape} (the first axis of an on-chip tensor is the "
                    "partition axis)",
                )
            per_partition = math.prod(shape[1:]) * dtype.itemsize
            if buffer.kind == "psum":
                # PSUM is handed out in whole banks.
                banks = -(-per_partition // p.psum_bank_bytes)
                per_partition = banks * p.psum_bank_bytes
            self._live[alloc_id] = (buffer.kind, per_partition)
            self._live_bytes[buffer.kind] += per_partition
            self._capacity_dirty = True
            site = self._sites.setdefault(line, deque(maxlen=p.rotation_depth))
            if site:
                # Decided at the next instruction: by then the loop body has
                # rebound (and so dropped) the tiles of earlier iterations.
                self._pending_reuse.append((alloc_id, tuple(site), buffer.kind, per_partition))
            site.append(alloc_id)
        self.allocations.append(
            AllocationInfo(alloc_id, label, buffer.kind, line, -1, address=address)
        )
        if filled:
            written = np.ones(shape, dtype=bool)
        else:
            written = np.zeros(shape, dtype=bool)
            if self.compute:
                store = np.int32 if dtype.kind in "iu" else np.float32
                # Poison: an unnoticed uninitialised read shows up as NaN.
                data = np.full(shape, np.nan if store is np.float32 else 0, dtype=store)
        alloc = Allocation(self, alloc_id, label, buffer, dtype, shape, data, written, line)
        return Tile.whole(alloc)

    def release(self, alloc: Allocation) -> None:
        entry = self._live.pop(alloc.id, None)
        if entry is not None:
            self._live_bytes[entry[0]] -= entry[1]

    def check_capacity(self) -> None:
        """Fail like the compiler when live on-chip bytes exceed a memory.

        Checked when an instruction issues rather than at allocation, so that
        the tile a loop body rebinds has been dropped by then.
        """
        if not self._capacity_dirty:
            return
        self._capacity_dirty = False
        self.resolve_reuse()
        for kind, limit in self._limits.items():
            used = self._live_bytes[kind]
            if used > limit:
                live = sorted(
                    ((b, i) for i, (k, b) in self._live.items() if k == kind), reverse=True
                )[:3]
                biggest = ", ".join(
                    f"{self.allocations[i].name!r} line {self.allocations[i].line} {b / 1024:g} KiB"
                    for b, i in live
                )
                self.fail(
                    "capacity",
                    f"Out of memory in {kind}: {used / 1024:g} KiB per partition live, "
                    f"limit {limit / 1024:g} KiB (largest live: {biggest})",
                )

    def resolve_reuse(self) -> None:
        """Give each new allocation the physical copy of an earlier one from
        its site, if that one is dead.

        The compiler keeps up to ``rotation_depth`` copies of a loop-body tile,
        as many as fit in the free memory: a PSUM tile next to a nearly full
        set of banks gets one copy, and its loop serialises.
        """
        depth = self.params.rotation_depth
        for alloc_id, history, kind, per_partition in self._pending_reuse:
            free = self._limits[kind] - self._live_bytes[kind]
            copies = max(1, min(depth, 1 + free // per_partition))
            if len(history) >= copies and history[-copies] not in self._live:
                self.allocations[alloc_id] = replace(
                    self.allocations[alloc_id], reuses=history[-copies]
                )
        self._pending_reuse.clear()

    # --- data access --------------------------------------------------------------------

    def read(self, tile: Tile, what: str) -> np.ndarray | None:
        """The tile's values as float32 (None in trace-only mode); fails on
        uninitialised elements."""
        alloc = tile.alloc
        if not alloc.written[tile.index].all():
            self.fail(
                "numerics",
                f"{what} reads uninitialised memory: {alloc.describe()}, region "
                f"{_box(tile.bounds)}",
            )
        if alloc.data is None:
            return None
        return alloc.data[tile.index]

    def write(self, tile: Tile, values: np.ndarray | float | None) -> None:
        alloc = tile.alloc
        alloc.written[tile.index] = True
        if values is None or alloc.data is None:
            return
        if self.native and alloc.dtype != alloc.data.dtype:
            # Native precision: store what the declared dtype can hold.
            values = np.asarray(values, dtype=np.float32).astype(alloc.dtype).astype(np.float32)
        alloc.data[tile.index] = values

    def emit(self, instruction: Instruction) -> None:
        self.trace.append(instruction)


def _box(bounds: tuple[tuple[int, int], ...]) -> str:
    return "[" + ", ".join(f"{lo}:{hi}" for lo, hi in bounds) + "]"
