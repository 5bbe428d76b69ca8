"""The state of one simulated run: allocations and the trace.

One ``Machine`` per ``run_kernel`` call; the ``nki`` modules handed to the
kernel are bound to it, so nothing is shared between runs.
"""

from __future__ import annotations

import math
import sys
from typing import Any, NoReturn

import numpy as np

from kernelopt.sim.errors import SimError
from kernelopt.sim.psum_layout import psum_footprint
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
        # The beta-1 (neuronxcc.nki) tile semantics, set when the kernel imports
        # that API (kernelopt.sim.beta1); None for the current nki API.
        self.beta1: Any = None
        self.allocations: list[AllocationInfo] = []
        # Per engine, the accumulator registers an activation(reduce_cmd=...) keeps.
        self.accumulators: dict[str, Any] = {}
        # SPMD (kernelopt.sim.spmd): the running program, the HBM tensors the
        # first program made (by site and occurrence), and numpy arguments bound
        # to HBM tensors.
        self.program: Any = None
        self.spmd_counts: dict[tuple[int, ...], int] = {}
        self._spmd_hbm: dict[tuple[tuple[int, ...], int], Tile] = {}
        self.bound_arrays: dict[int, tuple[np.ndarray, Tile]] = {}
        # Per allocation site: trace length at its last allocation and its
        # current generation (allocations with no instruction in between).
        self._generations: dict[tuple[int, ...], tuple[int, int]] = {}
        # The last access placed per key position (kernelopt.sim.access._per_position):
        # its line and map, for masks on the other tiles of that statement.
        self.placement: tuple[int, dict[Any, int]] | None = None
        # Draws for nki.isa.dropout: seeded per run, so a run repeats exactly.
        self._rng = np.random.default_rng(0)

    def random(self, shape: tuple[int, ...]) -> np.ndarray:
        """Uniform draws in [0, 1) for a random instruction (dropout)."""
        return self._rng.random(shape)

    def reseed(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed & 0xFFFFFFFF)

    # --- locating the kernel line -------------------------------------------------

    def line(self) -> int:
        """The line in the kernel file currently executing (innermost kernel frame)."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != self.file:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else 0

    def site(self) -> tuple[int, ...]:
        """The kernel lines on the call stack, outermost first: where an allocation
        is made, told apart by the helper calls that lead there."""
        lines = []
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.file:
                lines.append(frame.f_lineno)
            frame = frame.f_back
        return tuple(reversed(lines))

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
        site: tuple[int, ...] | None = None,
        poison: bool = True,
    ) -> Tile:
        """A new tensor; ``filled`` (inputs) marks it initialised with ``data``;
        ``address`` is a hand-placed location (``nl.ndarray(address=...)``);
        ``site`` overrides the allocation site (one block of a block array);
        ``poison=False`` skips the NaN fill for a result its producer writes at
        once (the initialised bits still catch any read of unwritten data)."""
        line = self.line()
        if not shape or any(not isinstance(d, int | np.integer) or d <= 0 for d in shape):
            self.fail(
                "isa", f"tensor shape must be a non-empty tuple of positive ints, got {shape}"
            )
        shape = tuple(int(d) for d in shape)
        spmd_key = None
        if self.program is not None and not buffer.on_chip and data is None and not filled:
            spmd_key, shared = self._spmd_shared(shape)
            if shared is not None:
                return shared
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
                per_partition = psum_footprint(per_partition, p.psum_bank_bytes)
        if site is None:
            site = self.site() if buffer.on_chip else ()
        generation = 0
        if site:
            # A list of tiles built with no instruction in between is one
            # generation: it rotates as a unit.
            issued, generation = self._generations.get(site, (-1, -1))
            if issued != len(self.trace):
                generation += 1
            self._generations[site] = (len(self.trace), generation)
        self.allocations.append(
            AllocationInfo(
                alloc_id,
                label,
                buffer.kind,
                line,
                nbytes=per_partition,
                address=address,
                site=site,
                generation=generation,
                partitions=shape[0] if buffer.on_chip else 0,
                shape=shape,
            )
        )
        written = np.full(shape, filled, dtype=bool)
        if not filled and self.compute:
            data = _fresh_data(shape, dtype, poison)
        alloc = Allocation(self, alloc_id, label, buffer, dtype, shape, data, written, line)
        tile = Tile.whole(alloc)
        if spmd_key is not None:
            self._spmd_hbm[spmd_key] = tile
        return tile

    def _spmd_shared(
        self, shape: tuple[int, ...]
    ) -> tuple[tuple[tuple[int, ...], int], Tile | None]:
        """An SPMD program's HBM tensor: a later program gets the one the first made at
        the same place (its n-th allocation there)."""
        site = self.site()
        key = (site, self.spmd_counts.get(site, 0))
        self.spmd_counts[site] = key[1] + 1
        shared = self._spmd_hbm.get(key)
        return key, shared if shared is not None and shared.alloc.shape == shape else None

    # --- data access --------------------------------------------------------------------

    def read(self, tile: Tile, what: str) -> np.ndarray | None:
        """The tile's values as float32 (None in trace-only mode). Reading elements
        never written fails with the current API; a beta-1 kernel reads them as the
        hardware does, as garbage (NaN here), which fails only if it reaches an
        output (masked-out rows of a tile the tutorials go on computing with)."""
        alloc = tile.alloc
        if alloc.source is not None:
            alloc.refresh()  # a reinterpret view (kernelopt.sim.reinterpret)
        if tile.coords is not None:
            flat = tile.flat()
            written = alloc.written.reshape(-1)[flat]
            values = None if alloc.data is None else alloc.data.reshape(-1)[flat]
        else:
            written = alloc.written[tile.index]
            values = None if alloc.data is None else alloc.data[tile.index]
            if values is not None and tile.view_map is not None:
                # A beta-1 access with an index-space shape of its own (kernelopt.sim.access).
                values, written = values.reshape(tile.shape), written.reshape(tile.shape)
        if tile.holes is not None:
            written = written | tile.holes[0]
        if not written.all():
            if self.beta1 is None:
                self.fail(
                    "numerics",
                    f"{what} reads uninitialised memory: {alloc.describe()}, region "
                    f"{_box(tile.bounds)}",
                )
            if values is not None:
                garbage = np.nan if values.dtype.kind == "f" else 0
                values = np.where(written.reshape(values.shape), values, garbage)
        if tile.holes is not None and values is not None:
            holes, fill = tile.holes
            values = np.where(holes, np.float32(fill), values)
        return values

    def write(self, tile: Tile, values: np.ndarray | float | None) -> None:
        alloc = tile.alloc
        if alloc.source is not None:
            # A reinterpret view (kernelopt.sim.reinterpret): written through to its source.
            alloc.refresh()
            self._write(tile, values)
            alloc.push()
            return
        self._write(tile, values)

    def _write(self, tile: Tile, values: np.ndarray | float | None) -> None:
        alloc = tile.alloc
        if tile.coords is not None:
            flat = tile.flat()
            alloc.written.reshape(-1)[flat] = True
            if values is not None and alloc.data is not None:
                if self.native and alloc.dtype != alloc.data.dtype:
                    values = np.asarray(values, np.float32).astype(alloc.dtype)
                alloc.data.reshape(-1)[flat] = np.broadcast_to(values, tile.shape)
            return
        alloc.written[tile.index] = True
        if values is None or alloc.data is None:
            return
        if self.native and alloc.dtype != alloc.data.dtype:
            # Native precision: store what the declared dtype can hold.
            values = np.asarray(values, dtype=np.float32).astype(alloc.dtype).astype(np.float32)
        if tile.view_map is not None and np.ndim(values):
            values = np.broadcast_to(values, tile.shape).reshape(tile.box_shape)
        alloc.data[tile.index] = values

    def emit(self, instruction: Instruction) -> None:
        self.trace.append(instruction)


def _fresh_data(shape: tuple[int, ...], dtype: np.dtype, poison: bool) -> np.ndarray:
    store = np.int32 if dtype.kind in "iu" else np.float32
    if not poison:
        return np.empty(shape, dtype=store)
    # Poison: an unnoticed uninitialised read shows up as NaN.
    return np.full(shape, np.nan if store is np.float32 else 0, dtype=store)


def _box(bounds: tuple[tuple[int, int], ...]) -> str:
    return "[" + ", ".join(f"{lo}:{hi}" for lo, hi in bounds) + "]"
