"""Simulated tensors: one ``Allocation`` per ``nl.ndarray``, ``Tile`` views into it.

A ``Tile`` is what the kernel holds: a box (start/stop per axis of the
allocation) plus the axes that survive integer indexing. The box is the
region the scheduler tracks for dependencies; the numpy index reads and
writes the data.
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim.access import as_column, indirect, loose_slices, resolve
from kernelopt.sim.indexing import IndexExpr, Mask, dynamic_free_indices
from kernelopt.sim.masking import clip
from kernelopt.sim.views import NkiTensorViews, index_view, reindexed, reshape_view, strided_slice

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


@dataclass(frozen=True)
class PlacedBuffer(Buffer):
    """An on-chip buffer placed by hand (beta-1 ``nki.compiler.sbuf.mod_alloc`` /
    ``psum.mod_alloc``): ``base`` is the byte offset in each partition and
    ``tiles`` the physical copies per block axis, block ``i`` of an axis taking
    copy ``i % tiles[axis]``, or ``func`` places each block (``alloc(func)``)."""

    base: int = 0
    tiles: tuple[int, ...] = ()
    # ``nki.compiler.sbuf.alloc(func)`` / ``psum.alloc(func)``: func(idx, pdim_size,
    # fdim_bytes) places each block instead of base and tiles.
    func: Any = None


class Allocation:
    """The storage behind one ``nl.ndarray``.

    ``data`` always holds float32 (int32 for integer dtypes) so that reads
    need no conversion; the declared dtype decides rounding in native
    precision and the byte counts. ``written`` marks initialised elements.
    """

    __slots__ = ("id", "name", "buffer", "dtype", "shape", "data", "written", "line", "machine")

    # A reinterpret view's source (kernelopt.sim.reinterpret.CastAllocation); None here.
    source: Allocation | None = None

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


class Tile(NkiTensorViews):
    """A view of an allocation, as produced by ``nl.ndarray`` and basic indexing.

    ``view`` (beta-1 accesses only, see ``kernelopt.sim.access``) gives the
    tile a shape other than its box's: ``(shape, view_map)`` where
    ``view_map[i]`` is ``(kept position, step)`` of logical axis ``i`` in the
    box, or None for a unit axis. The elements are the box's, in row-major
    order.
    """

    __slots__ = (
        "alloc",
        "bounds",
        "kept",
        "shape",
        "index",
        "loose",
        "view_map",
        "coords",
        "via",
        "holes",
        "axis_map",
    )

    def __init__(
        self,
        alloc: Allocation,
        bounds: Bounds,
        kept: tuple[int, ...],
        loose: bool = False,
        view: tuple[tuple[int, ...], Any] | None = None,
        coords: tuple[np.ndarray, ...] | None = None,
        via: Tile | None = None,
    ) -> None:
        self.alloc = alloc
        # A beta-1 access whose index expressions reach past the tensor: valid
        # only once a mask= cuts it back (see clip).
        self.loose = loose
        self.bounds = bounds
        self.kept = kept
        # A gathered access (kernelopt.sim.access.gather): each element's coordinates
        # in the allocation, one array per allocation axis, of the tile's shape.
        self.coords = coords
        # An indirect access: the on-chip index tile its coordinates came from.
        self.via = via
        # A gathered access under a predicate (kernelopt.sim.access.predicated): the
        # elements the predicate drops, and the value they read as.
        self.holes: tuple[np.ndarray, float] | None = None
        # An access placed per key position (kernelopt.sim.access._per_position): where
        # each (grid, index axis) of its ranges went, for masks over them.
        self.axis_map: dict[Any, int] | None = None
        if view is None:
            self.shape = tuple(bounds[a][1] - bounds[a][0] for a in kept)
            self.view_map = None
        else:
            self.shape, self.view_map = view
        self.index = tuple(
            slice(lo, hi) if axis in kept else lo for axis, (lo, hi) in enumerate(bounds)
        )

    @property
    def box_shape(self) -> tuple[int, ...]:
        """The shape of the region in the allocation (``shape`` unless a view)."""
        return tuple(self.bounds[a][1] - self.bounds[a][0] for a in self.kept)

    def _view(self) -> tuple[tuple[int, ...], Any] | None:
        if self.view_map is None and self.coords is None:
            return None
        return (self.shape, self.view_map)

    def flat(self) -> np.ndarray:
        """A gathered tile's elements as flat offsets into its allocation."""
        assert self.coords is not None
        return np.ravel_multi_index(self.coords, self.alloc.shape)

    @property
    def minor_stride_bytes(self) -> int:
        """Bytes between consecutive elements along the last axis (16 or less streams
        at full rate; NKI architecture guide, NeuronCore-v2 "Access pattern")."""
        if self.coords is None or self.shape[-1] < 2:
            return self.alloc.dtype.itemsize
        flat = self.flat()
        step = int(np.abs(np.diff(flat, axis=-1)).max())
        return step * self.alloc.dtype.itemsize

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
    def itemsize(self) -> int:
        """Bytes per element of the declared dtype (the beta-1 ``nki.tensor`` page's
        ``itemsize``: "Length of one tensor element in bytes")."""
        return self.alloc.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.alloc.dtype.itemsize

    @property
    def region(self) -> tuple[int, Bounds]:
        alloc = self.alloc  # a reinterpret view's region: the source elements it reads
        return (alloc.id, self.bounds if alloc.source is None else alloc.source_bounds(self.bounds))

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
        """Bytes of one access row (what decides DMA efficiency): at least the bytes per
        partition, strided or not (the DMA bandwidth guide's unit; docs/sim.md, the CS152
        halo conv2d). In HBM it runs on across partitions while inner axes are covered
        whole; on chip it stops at the partition axis. A gathered access moves whole runs
        only where its last axis is consecutive."""
        if self.coords is not None:
            step = self.minor_stride_bytes
            run = self.shape[-1] if step == self.alloc.dtype.itemsize else 1
            return run * self.alloc.dtype.itemsize
        per_partition = self.free_size * self.alloc.dtype.itemsize
        if self.alloc.buffer.on_chip:
            return per_partition  # partitions are separate memories
        shape, run = self.alloc.shape, 1
        for axis in range(len(shape) - 1, -1, -1):
            lo, hi = self.bounds[axis]
            run *= hi - lo
            if hi - lo != shape[axis]:
                break
        return max(run * self.alloc.dtype.itemsize, per_partition)

    def __repr__(self) -> str:
        return f"Tile({self.alloc.name!r}, {self.buffer!r}, shape={self.shape}, dtype={self.dtype})"

    def __getitem__(self, key: Any) -> Tile:
        if isinstance(key, Mask) and self._beta1("tile[mask]"):
            return self.clip(key)  # nki-samples rmsnorm_quant: mask a tile by indexing
        if not isinstance(key, tuple):
            key = (key,)
        n = len(self.kept)
        if any(k is Ellipsis for k in key):
            at = next(i for i, k in enumerate(key) if k is Ellipsis)
            fill = n - (len(key) - 1)
            key = key[:at] + (slice(None),) * max(fill, 0) + key[at + 1 :]
        if self.view_map is not None or self.coords is not None:
            units = zip(key, self.shape, strict=False)
            if all(k == slice(None) or (k == 0 and d == 1) for k, d in units):
                return self
            if self.alloc.machine.beta1 is None:
                return index_view(self, key)  # the current API's NkiTensor views index too
            if len(key) == len(self.shape):  # also a free-axis split (im-a-jin/CS149-asst4
                return reindexed(self, key)  # conv2d.py @85fbc70 pools a reshaped tile)
            self._fail(f"a beta-1 access {self!r} cannot be indexed again; index the tensor once")
        if len(key) > n:
            self._fail(f"too many indices ({len(key)}) for a tile of shape {self.shape}")
        key = key + (slice(None),) * (n - len(key))
        if self.buffer.on_chip:
            key = dynamic_free_indices(key)
        if any(isinstance(k, Tile) for k in key):
            return indirect(self, key)
        if any(isinstance(k, IndexExpr) for k in key):
            return _with_dynamic_offset(resolve(self, key), key)
        if self.alloc.machine.beta1 is not None and (ranges := loose_slices(self, key)):
            return resolve(self, ranges)
        if any(isinstance(k, slice) and k.step not in (None, 1) for k in key):
            if self.alloc.machine.beta1 is not None:
                return strided_slice(self, key)
            # nki.language.NkiTensor page, slice: t.slice(1, a, b, s) is t[:, a:b:s].
            return index_view(self, key)
        bounds = list(self.bounds)
        kept: list[int] = []
        for pos, (axis, k) in enumerate(zip(self.kept, key, strict=True)):
            lo, hi = self.bounds[axis]
            size = hi - lo
            if isinstance(k, slice):
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
        return as_column(self, Tile(self.alloc, tuple(bounds), tuple(kept), self.loose))

    def clip(self, mask: Mask | None) -> Tile:
        """The part of this tile a beta-1 ``mask=`` keeps (``kernelopt.sim.masking``)."""
        return clip(self, mask)

    def checked(self) -> Tile:
        """This tile, failing if its index expressions reach past the tensor."""
        if self.loose:
            for axis in self.kept:
                lo, hi = self.bounds[axis]
                if lo < 0 or hi > self.alloc.shape[axis]:
                    self._fail(
                        f"index expression [{lo}:{hi}] on axis {axis} of {self.alloc.name!r} "
                        f"(size {self.alloc.shape[axis]}) is out of bounds and no mask= cuts it"
                    )
            return Tile(
                self.alloc, self.bounds, self.kept, False, self._view(), self.coords, self.via
            )
        return self

    # --- beta-1 (neuronxcc.nki) tile semantics: assignment and arithmetic ------------

    def _beta1(self, what: str) -> Any:
        ops = self.alloc.machine.beta1
        if ops is None:
            self._fail(f"{what}: tiles are written by ISA calls (nisa.*), not by {what}")
        return ops

    def __setitem__(self, key: Any, value: Any) -> None:
        self._beta1("item assignment").assign(self[key], value)

    def __iadd__(self, other: Any) -> Tile:
        return self._beta1("+=").accumulate(self, other, "add")

    def __isub__(self, other: Any) -> Tile:
        return self._beta1("-=").accumulate(self, other, "subtract")

    def __imul__(self, other: Any) -> Tile:
        return self._beta1("*=").accumulate(self, other, "multiply")

    def __add__(self, other: Any) -> Tile | IndexExpr:
        if isinstance(other, IndexExpr):
            # ``offset_tile[0, j] + i_f``: a dynamic index offset, as ``i_f + offset``
            # (the v2.2x tensor_copy_dynamic_src examples write the tile first).
            return other + self
        return self._beta1("+").binary("add", self, other)

    def __radd__(self, other: Any) -> Tile:
        return self._beta1("+").binary("add", other, self)

    def __sub__(self, other: Any) -> Tile:
        return self._beta1("-").binary("subtract", self, other)

    def __rsub__(self, other: Any) -> Tile:
        return self._beta1("-").binary("subtract", other, self)

    def __mul__(self, other: Any) -> Tile:
        return self._beta1("*").binary("multiply", self, other)

    def __rmul__(self, other: Any) -> Tile:
        return self._beta1("*").binary("multiply", other, self)

    def __truediv__(self, other: Any) -> Tile:
        return self._beta1("/").binary("divide", self, other)

    def __rtruediv__(self, other: Any) -> Tile:
        return self._beta1("/").binary("divide", other, self)

    def __neg__(self) -> Tile:
        return self._beta1("-").binary("multiply", self, -1.0)

    def ap(self, pattern: Any = None, offset: Any = 0, **options: Any) -> Tile:
        """An access-pattern view of this whole tensor (``kernelopt.sim.dynamic.access_pattern``)."""
        from kernelopt.sim.dynamic import access_pattern

        return access_pattern(self, pattern, offset, **options)

    def broadcast_to(self, shape: Any) -> Tile:
        """A new tile of ``shape`` holding this one broadcast (beta-1)."""
        return self._beta1("broadcast_to").broadcast_to(self, tuple(shape))

    def reshape(self, shape: Any) -> Tile:
        """A reshaped view: on chip, this tile with its free axes split (``[128, 512]``
        as ``[128, 4, 128]``, the four 128-column blocks a DMA transpose moves at
        once); a whole HBM tensor reshaped (kernels of both APIs reshape their inputs)."""
        shape = tuple(int(d) for d in shape)
        simple = self.view_map is None and self.coords is None and _simple_reshape(self, shape)
        if not simple and (self.alloc.machine.beta1 is None or self.alloc.buffer.on_chip):
            # nki.language.NkiTensor page, reshape: any view, any layout that allows it; a
            # beta-1 tile too (its free axes merged: unverified, the beta-1 page is silent;
            # a CS152 conv2d, magmawolf8/cs152-lab6 nki_conv2d/conv2d.py @2814885).
            return reshape_view(self, shape)
        if self.alloc.buffer.on_chip:
            return _split_free_axes(self, shape)
        # The current API too: the nki.language.NkiTensor page (Trn2/Trn3) lists reshape
        # among the view operations that "share the same underlying storage".
        return reshape_hbm(self, shape)

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


def _split_free_axes(tile: Tile, shape: tuple[int, ...]) -> Tile:
    """The same box seen with each free axis split into consecutive axes, in
    row-major order (a view, so dependencies and memory stay the box's)."""
    if tile.view_map is not None or tile.coords is not None:
        tile._fail(f"reshape: {tile!r} is already a view; reshape the tile it came from")
    if not shape or shape[0] != tile.shape[0]:
        tile._fail(f"reshape: {tile.shape} -> {shape} must keep the partition axis")
    view_map: list[tuple[int, int] | None] = [(0, 1)]
    axis = 1
    for pos, size in enumerate(tile.shape[1:], start=1):
        group: list[int] = []
        while axis < len(shape) and math.prod(d for d in (*group, shape[axis])) <= size:
            group.append(shape[axis])
            axis += 1
            if math.prod(group) == size:
                break
        if math.prod(group) != size:
            tile._fail(
                f"reshape: {tile.shape} -> {shape}: on chip a free axis can only be split "
                "into consecutive axes"
            )
        for i, d in enumerate(group):
            step = math.prod(group[i + 1 :])
            view_map.append((pos, step) if d > 1 else None)
    if axis != len(shape):
        view_map.extend((None,) * (len(shape) - axis))
        if math.prod(shape[axis:]) != 1:
            tile._fail(f"reshape: {tile.shape} cannot become {shape}")
    return Tile(tile.alloc, tile.bounds, tile.kept, tile.loose, (shape, tuple(view_map)))


def _simple_reshape(tile: Tile, shape: tuple[int, ...]) -> bool:
    """Whether a whole HBM tensor is reshaped, or an on-chip tile's free axes are only
    split (the two reshapes kept as a reshaped allocation and a box)."""
    if not tile.alloc.buffer.on_chip:
        return tile.bounds == tuple((0, n) for n in tile.alloc.shape)
    if not shape or shape[0] != tile.shape[0]:
        return False
    cuts = set(itertools.accumulate(tile.shape[1:], operator.mul))
    return cuts <= set(itertools.accumulate(shape[1:], operator.mul))


def reshape_hbm(tile: Tile, shape: tuple[int, ...]) -> Tile:
    """A whole HBM tensor seen with another shape, sharing its values and initialised
    bits (``t.reshape(shape)`` on an HBM tensor)."""
    alloc, m = tile.alloc, tile.alloc.machine
    whole = tile.bounds == tuple((0, n) for n in alloc.shape)
    if alloc.buffer.on_chip or not whole:
        m.fail("isa", f"reshape: only a whole HBM tensor can be reshaped, not {tile!r}")
    if int(np.prod(shape)) != int(np.prod(alloc.shape)):
        m.fail("isa", f"reshape: {alloc.shape} cannot become {shape}")
    view = m.allocate(
        shape,
        alloc.dtype,
        alloc.buffer,
        alloc.name,
        data=None if alloc.data is None else alloc.data.reshape(shape),
        filled=True,
    )
    view.alloc.written = alloc.written.reshape(shape)
    return view


def _with_dynamic_offset(view: Tile, key: tuple[Any, ...]) -> Tile:
    """``view`` reading the tile of its key's dynamic offset too (``i_f + off[0, j]``),
    as an indirect access reads its index tile, so the instruction waits for it."""
    dynamic = next(
        (k.dynamic for k in key if isinstance(k, IndexExpr) and k.dynamic is not None), None
    )
    if dynamic is None or view.via is not None:
        return view
    out = Tile(view.alloc, view.bounds, view.kept, view.loose, view._view(), view.coords, dynamic)
    out.holes, out.axis_map = view.holes, view.axis_map
    return out
