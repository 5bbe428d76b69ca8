"""Simulated tensors: one ``Allocation`` per ``nl.ndarray``, ``Tile`` views into it.

A ``Tile`` is what the kernel holds: a box (start/stop per axis of the
allocation) plus the axes that survive integer indexing. The box is the
region the scheduler tracks for dependencies; the numpy index reads and
writes the data.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from kernelopt.sim.machine import Machine

Bounds = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Buffer:
    """An NKI memory: ``kind`` is "sbuf", "psum" or "hbm"."""

    name: str
    kind: str

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    @property
    def on_chip(self) -> bool:
        return self.kind != "hbm"


class Allocation:
    """The storage behind one ``nl.ndarray``.

    ``data`` always holds float32 (int32 for integer dtypes) so that reads
    need no conversion; the declared dtype decides rounding in native
    precision and the byte counts. ``written`` marks initialised elements.
    """

    __slots__ = ("id", "name", "buffer", "dtype", "shape", "data", "written", "line", "machine")

    def __init__(
        self,
        machine: Machine,
        alloc_id: int,
        name: str,
        buffer: Buffer,
        dtype: np.dtype,
        shape: tuple[int, ...],
        data: np.ndarray | None,
        written: np.ndarray,
        line: int,
    ) -> None:
        self.machine = machine
        self.id = alloc_id
        self.name = name
        self.buffer = buffer
        self.dtype = dtype
        self.shape = shape
        self.data = data
        self.written = written
        self.line = line

    def describe(self) -> str:
        return f"{self.buffer.kind} tensor {self.name!r} {self.shape} allocated at line {self.line}"


class Tile:
    """A view of an allocation, as produced by ``nl.ndarray`` and basic indexing."""

    __slots__ = ("alloc", "bounds", "kept", "shape", "index")

    def __init__(self, alloc: Allocation, bounds: Bounds, kept: tuple[int, ...]) -> None:
        self.alloc = alloc
        self.bounds = bounds
        self.kept = kept
        self.shape = tuple(bounds[a][1] - bounds[a][0] for a in kept)
        self.index = tuple(
            slice(lo, hi) if axis in kept else lo for axis, (lo, hi) in enumerate(bounds)
        )

    @classmethod
    def whole(cls, alloc: Allocation) -> Tile:
        return cls(alloc, tuple((0, n) for n in alloc.shape), tuple(range(len(alloc.shape))))

    @property
    def dtype(self) -> np.dtype:
        return self.alloc.dtype

    @property
    def buffer(self) -> Buffer:
        return self.alloc.buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.alloc.dtype.itemsize

    @property
    def region(self) -> tuple[int, Bounds]:
        return (self.alloc.id, self.bounds)

    @property
    def free_size(self) -> int:
        """Elements per partition: everything after the first (partition) axis."""
        n = 1
        for d in self.shape[1:]:
            n *= d
        return n

    @property
    def partitions(self) -> int:
        return self.shape[0] if self.shape else 1

    def row_bytes(self) -> int:
        """Contiguous bytes of one access row (what decides DMA efficiency).

        The run grows from the last axis inwards while each inner axis is
        covered whole. On-chip tensors stop at the partition axis: partitions
        are separate memories.
        """
        shape = self.alloc.shape
        stop_axis = 1 if self.alloc.buffer.on_chip else 0
        run = 1
        for axis in range(len(shape) - 1, stop_axis - 1, -1):
            lo, hi = self.bounds[axis]
            run *= hi - lo
            if hi - lo != shape[axis]:
                break
        return run * self.alloc.dtype.itemsize

    def __repr__(self) -> str:
        return f"Tile({self.alloc.name!r}, {self.buffer!r}, shape={self.shape}, dtype={self.dtype})"

    def __getitem__(self, key: Any) -> Tile:
        if not isinstance(key, tuple):
            key = (key,)
        n = len(self.kept)
        if any(k is Ellipsis for k in key):
            at = next(i for i, k in enumerate(key) if k is Ellipsis)
            fill = n - (len(key) - 1)
            key = key[:at] + (slice(None),) * max(fill, 0) + key[at + 1 :]
        if len(key) > n:
            self._fail(f"too many indices ({len(key)}) for a tile of shape {self.shape}")
        key = key + (slice(None),) * (n - len(key))
        bounds = list(self.bounds)
        kept: list[int] = []
        for pos, (axis, k) in enumerate(zip(self.kept, key, strict=True)):
            lo, hi = self.bounds[axis]
            size = hi - lo
            if isinstance(k, slice):
                if k.step not in (None, 1):
                    self._fail(f"slice step {k.step} on axis {pos}: only step 1 is supported")
                start = 0 if k.start is None else self._int(k.start)
                stop = size if k.stop is None else self._int(k.stop)
                if not 0 <= start < stop <= size:
                    self._fail(
                        f"out-of-bounds slice [{start}:{stop}] on axis {pos} of "
                        f"{self.alloc.name!r} (axis size {size}, tile shape {self.shape})"
                    )
                bounds[axis] = (lo + start, lo + stop)
                kept.append(axis)
            else:
                i = self._int(k)
                if not 0 <= i < size:
                    self._fail(
                        f"out-of-bounds index {i} on axis {pos} of {self.alloc.name!r} "
                        f"(axis size {size}, tile shape {self.shape})"
                    )
                bounds[axis] = (lo + i, lo + i + 1)
        return Tile(self.alloc, tuple(bounds), tuple(kept))

    def __setitem__(self, key: Any, value: Any) -> None:
        self._fail("tiles are written by ISA calls (nisa.*), not by item assignment")

    def __iter__(self) -> Any:
        self._fail("tiles cannot be iterated; index them with loop variables")

    def _int(self, value: Any) -> int:
        try:
            return operator.index(value)
        except TypeError:
            self._fail(f"index {value!r} is not an integer")
            raise  # unreachable: _fail raises

    def _fail(self, message: str) -> None:
        self.alloc.machine.fail("isa", message)
