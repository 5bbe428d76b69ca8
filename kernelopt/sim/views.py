"""The current API's ``NkiTensor`` view methods: ``permute``, ``select``, ``slice``,
``expand_dim``, ``squeeze_dim``, ``broadcast``, ``flatten_dims``, ``reshape_dim``,
``reshape``, ``rearrange``, ``is_contiguous``, ``is_indirect`` and ``view``.

All follow the nki.language.NkiTensor reference page (NKI API reference,
``nki/api/generated/nki.language.NkiTensor.html``, Trn2/Trn3), which says: "All view
operations (slice, permute, reshape, etc.) return new NkiTensor objects that share the
same underlying storage — no data is copied", and gives each method's constraints
(mostly: on chip, dim 0 is the partition dimension and stays where it is).

A view is kept as a gathered tile (``Tile.coords``): its elements' offsets into the
allocation, arranged in the view's shape. Each method rearranges those offsets as numpy
rearranges an array, so views compose and ISA calls read and write them like any
other access. Methods that merge dimensions (``reshape``, ``flatten_dims``,
``rearrange``) fail, as the page says, where the result is no longer one access
pattern (``[[stride, count], ...]``) over the storage.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim.access import gathered, key_arrays, pattern_offsets

if TYPE_CHECKING:
    from kernelopt.sim.tensor import Tile


def offsets(tile: Tile) -> np.ndarray:
    """The tile's elements as flat offsets into its allocation, in the tile's shape."""
    if tile.coords is not None:
        return tile.flat()
    shape = tile.alloc.shape
    kept = tile.kept
    flat = np.zeros((1,) * len(kept), dtype=np.int64)
    for axis, (lo, hi) in enumerate(tile.bounds):
        stride = math.prod(shape[axis + 1 :])
        if axis in kept:
            run = [1] * len(kept)
            run[kept.index(axis)] = hi - lo
            flat = flat + (lo + np.arange(hi - lo, dtype=np.int64)).reshape(run) * stride
        else:
            flat = flat + lo * stride
    # A reshaped on-chip tile (view_map) holds its box's elements in row-major order.
    return flat.reshape(tile.shape)


def pattern(flat: np.ndarray) -> list[list[int]] | None:
    """``[[stride, count], ...]`` reading ``flat`` from its first element, or None if
    no single access pattern does (a size-1 dimension gets stride 0)."""
    if flat.size == 0:
        return None
    base = int(flat.reshape(-1)[0])
    entries: list[list[int]] = []
    for axis, count in enumerate(flat.shape):
        at = [0] * flat.ndim
        at[axis] = min(count - 1, 1)
        entries.append([int(flat[tuple(at)]) - base, count])
    return entries if np.array_equal(pattern_offsets(entries, base), flat) else None


def make_view(tile: Tile, flat: np.ndarray, what: str) -> Tile:
    """A tile reading the allocation's elements at ``flat`` (offsets, in the view's shape)."""
    from kernelopt.sim.tensor import Tile

    flat = np.ascontiguousarray(flat, dtype=np.int64)
    # On chip, dim 0 walks the partitions: the rest of a row stays in one partition.
    past = f"{what}: on chip dim 0 must stay the partition dimension"
    return Tile(tile.alloc, *gathered(tile, flat, past))


def _source(tile: Tile, what: str) -> np.ndarray:
    if tile.alloc.machine.beta1 is not None:
        tile._fail(f"{what}: the NkiTensor view methods are the current API's (import nki)")
    return _plain_offsets(tile, what)


def _plain_offsets(tile: Tile, what: str) -> np.ndarray:
    """``offsets(tile)`` of a tile that is neither an indirect nor a masked access."""
    if tile.via is not None or tile.holes is not None or tile.loose:
        tile._fail(f"{what}: a view of an indirect or masked access is not simulated")
    return offsets(tile)


def _dim(tile: Tile, dim: Any, what: str, ndim: int | None = None) -> int:
    n = tile.ndim if ndim is None else ndim
    d = tile._int(dim)
    if not 0 <= d < n:
        tile._fail(f"{what}: dim {d} is out of range for a {n}-D view of shape {tile.shape}")
    return d


def _not_partition(tile: Tile, dim: int, what: str) -> None:
    if tile.alloc.buffer.on_chip and dim == 0:
        tile._fail(f"{what}: on chip dim 0 is the partition dimension and cannot change")


def _merged(tile: Tile, flat: np.ndarray, shape: tuple[int, ...], what: str) -> Tile:
    out = flat.reshape(shape)
    if pattern(out) is None:
        tile._fail(f"{what}: the layout of {tile!r} is not contiguous across the merged dims")
    return make_view(tile, out, what)


def index_view(tile: Tile, key: tuple[Any, ...]) -> Tile:
    """Basic indexing (ints, slices with a step >= 1) of a view, or a strided slice of
    a tensor: ``t.slice(1, a, b, s)`` is ``t[:, a:b:s]`` (the ``slice`` entry)."""
    return _indexed(tile, _source(tile, "indexing"), key)


def strided_slice(tile: Tile, key: tuple[Any, ...]) -> Tile:
    """A beta-1 tile sliced with a step, ``x[:, 0::2]`` (nki-samples' contributed
    ``fft1d`` splits even and odd columns so). The "Tensor Indexing on NKI" page
    (awsdocs-neuron.readthedocs-hosted.com, nki/about/indexing-overview): on-chip
    memories can be strided along the free dimension, "this flexibility is not supported
    along the partition dimension"."""
    what = "a strided slice"
    if tile.alloc.buffer.on_chip and isinstance(key[0], slice) and key[0].step not in (None, 1):
        tile._fail(f"{what}: on chip dim 0 is the partition dimension and takes no step")
    return _indexed(tile, _plain_offsets(tile, what), key)


def reindexed(tile: Tile, key: tuple[Any, ...]) -> Tile:
    """A beta-1 view indexed again with ``nl.arange`` expressions: nki-samples' beta-1
    neuron-team transposes (``contributed/neuron-team-kernels/transpose.py`` @6dc4ebb)
    ``reshape`` a loaded [P, i, J] tile to [P, i * J] and read it at ``[i_P, i_I * J +
    i_J]``. A tile from ``reshape`` is a tile like any other (nki.language.ndarray's
    ``reshape``); its elements at the key's positions, as numpy indexes."""
    what = "indexing a view"
    flat = _plain_offsets(tile, what)
    return make_view(tile, flat[key_arrays(tile, key)], what)


def _indexed(tile: Tile, flat: np.ndarray, key: tuple[Any, ...]) -> Tile:
    if len(key) > tile.ndim:
        tile._fail(f"too many indices ({len(key)}) for a view of shape {tile.shape}")
    index: list[Any] = []
    for pos, (k, size) in enumerate(zip(key, tile.shape, strict=False)):
        if isinstance(k, slice):
            step = 1 if k.step is None else tile._int(k.step)
            start = 0 if k.start is None else tile._int(k.start)
            stop = size if k.stop is None else tile._int(k.stop)
            if step < 1 or not 0 <= start < stop <= size:
                tile._fail(f"slice [{start}:{stop}:{step}] on axis {pos} of a view {tile.shape}")
            index.append(slice(start, stop, step))
        else:
            i = tile._int(k)
            if not 0 <= i < size:
                tile._fail(f"out-of-bounds index {i} on axis {pos} of a view {tile.shape}")
            index.append(i)
    return make_view(tile, flat[tuple(index)], "indexing")


def reshape_view(tile: Tile, shape: tuple[int, ...]) -> Tile:
    """``t.reshape(shape)``: the view's elements, row-major, in another shape. Fails if
    the layout cannot take it (after a permute or a strided slice), as the page says.
    A beta-1 tile's ``reshape`` comes here too (``Tile.reshape``)."""
    flat = _plain_offsets(tile, "reshape")
    if math.prod(shape) != flat.size:
        tile._fail(f"reshape: {tile.shape} cannot become {shape}")
    if tile.alloc.buffer.on_chip and (not shape or shape[0] != tile.shape[0]):
        tile._fail(f"reshape: {tile.shape} -> {shape} must keep the partition axis (dim 0)")
    return _merged(tile, flat, shape, "reshape")


def merged_free_axes(tile: Tile) -> Tile:
    """``tile`` ([P, a, b, ...]) seen as [P, a * b * ...], sharing its storage: how a
    beta-1 matmul reads a moving tile with several free axes
    (``kernelopt.sim.beta1_core``)."""
    what = "flattening the free axes"
    # Each partition's elements in row-major order of the free axes, wherever they lie:
    # the instruction's access pattern walks the axes (a strided window is read as is).
    flat = _plain_offsets(tile, what).reshape(tile.shape[0], math.prod(tile.shape[1:]))
    return make_view(tile, flat, what)


def column_broadcast(tile: Tile, shape: tuple[int, ...]) -> Tile:
    """``tile`` ([P, 1, ...], one element per partition) read as ``shape`` ([P, ...]),
    every element of a partition's row the same one: how a beta-1
    ``nisa.tensor_tensor`` reads a column operand (``kernelopt.sim.beta1_isa``). A tile
    of ``shape``'s rank reads each of its size-1 free axes across ``shape``'s (numpy's
    broadcasting, ``[P, 1, n]`` as ``[P, m, n]``)."""
    what = "broadcasting a column"
    column = _plain_offsets(tile, what)
    if column.ndim != len(shape):
        column = column.reshape((tile.shape[0],) + (1,) * (len(shape) - 1))
    return make_view(tile, np.broadcast_to(column, shape), what)


# Tensor Indirection reads its offsets in groups of this many partitions on VectorE,
# ScalarE and GpSimd (nki.language.NkiTensor page, ``indirect``; 32 on TensorE).
TI_GROUP = 16


def tensor_indirection(tile: Tile, index: Any, num_elem: Any) -> Tile:
    """``data.indirect(index, num_elem=)``: Tensor Indirection, a gather along the free
    dim (nki.language.NkiTensor page, ``indirect``, and the nki-samples tensor-indirection
    tutorial, ``tutorials/tensor_indirection`` @afcd6e0). Element ``[p, i]`` of the
    ``(P, num_elem)`` view is ``data[p, index[g + i % 16, i // 16]]``, ``g`` the first
    partition of ``p``'s 16-partition group; ``num_elem`` defaults to ``index.size``.
    The instruction reading it waits for the index tile, as an indirect DMA does; it
    costs as any gathered access (unverified for TI: no page gives its rate). The page
    puts TI on NeuronCore-v4 (Trn3); the simulator runs it on the chip it models."""
    from kernelopt.sim.tensor import Tile

    what = "indirect"
    flat = _source(tile, what)
    m = tile.alloc.machine
    if not isinstance(index, Tile) or index.buffer.kind != "sbuf" or index.ndim != 2:
        tile._fail(f"{what}: index must be a 2-D SBUF tensor, got {index!r}")
    if tile.ndim != 2 or not tile.alloc.buffer.on_chip:
        tile._fail(f"{what}: Tensor Indirection gathers from a 2-D on-chip view, not {tile!r}")
    parts, width = tile.shape
    if index.shape[0] != parts:
        tile._fail(f"{what}: index has {index.shape[0]} partitions, the data {parts}")
    count = index.size if num_elem is None else tile._int(num_elem)
    group = TI_GROUP
    if parts % group:
        tile._fail(f"{what}: {parts} partitions are not whole {group}-partition groups")
    if count < 1 or count > group * index.shape[1]:
        tile._fail(
            f"{what}: num_elem={count} offsets, but {index.shape} holds {index.shape[1]} per "
            f"partition of each {group}-partition group"
        )
    values = m.read(index, what)
    p = np.arange(parts).reshape(parts, 1)
    i = np.arange(count).reshape(1, count)
    rows = (p // group) * group + i % group
    if values is None:
        cols = np.zeros((parts, count), dtype=np.int64)
    else:
        cols = np.asarray(values).astype(np.int64)[rows, i // group]
        if (cols < 0).any() or (cols >= width).any():
            tile._fail(f"{what}: an offset in the index tile is outside [0, {width})")
    out = np.take_along_axis(flat, cols, axis=1)
    bounds, kept, loose, view, coords = gathered(tile, out, f"{what}: crosses partitions")
    if values is None:
        bounds = gathered(tile, flat, what)[0]  # offsets unknown: the whole view
    return Tile(tile.alloc, bounds, kept, loose, view, coords, via=index)


def _group(entry: Any) -> tuple[str, ...]:
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _split_sizes(tile: Tile, src: tuple[Any, ...], fixed: dict[str, Any]) -> dict[str, int]:
    """Each name's size: a group's names multiply to its dim, one of them inferred."""
    sizes: dict[str, int] = {}
    for entry, size in zip(src, tile.shape, strict=True):
        group = _group(entry)
        known = {n: int(fixed[n]) for n in group if n in fixed and int(fixed[n]) != -1}
        unknown = [n for n in group if n not in known]
        if len(unknown) == 1 and len(group) == 1:
            known[unknown[0]] = size
        elif len(unknown) == 1:
            rest = math.prod(known.values())
            known[unknown[0]] = size // rest if rest and size % rest == 0 else -1
        if len(known) != len(group) or math.prod(known.values()) != size:
            tile._fail(f"rearrange: the sizes of {entry} do not split dim size {size}")
        sizes.update(known)
    return sizes


class NkiTensorViews:
    """The view methods a ``Tile`` has in the current API (see the module docstring)."""

    __slots__ = ()

    def permute(self: Any, dims: Any) -> Tile:
        flat = _source(self, "permute")
        order = tuple(self._int(d) for d in dims)
        if sorted(order) != list(range(self.ndim)):
            self._fail(f"permute: {order} is not a permutation of the {self.ndim} dims")
        if self.alloc.buffer.on_chip and order[0] != 0:
            self._fail(f"permute: on chip dims[0] must be 0 (the partition dim), got {order}")
        return make_view(self, flat.transpose(order), "permute")

    def select(self: Any, dim: Any, index: Any) -> Tile:
        from kernelopt.sim.tensor import Tile

        flat = _source(self, "select")
        if isinstance(index, Tile):
            self._fail("select: a dynamic select (an index tensor) is not simulated")
        d = _dim(self, dim, "select")
        i = self._int(index)
        if not 0 <= i < self.shape[d]:
            self._fail(f"select: index {i} out of range for dim {d} of size {self.shape[d]}")
        return make_view(self, flat.take(i, axis=d), "select")

    def slice(self: Any, dim: Any, start: Any, end: Any, step: Any = 1) -> Tile:
        d = _dim(self, dim, "slice")
        key = [slice(None)] * self.ndim
        key[d] = slice(self._int(start), self._int(end), self._int(step))
        return index_view(self, tuple(key))

    def expand_dim(self: Any, dim: Any) -> Tile:
        flat = _source(self, "expand_dim")
        d = _dim(self, dim, "expand_dim", self.ndim + 1)
        _not_partition(self, d, "expand_dim")
        return make_view(self, np.expand_dims(flat, d), "expand_dim")

    def squeeze_dim(self: Any, dim: Any) -> Tile:
        flat = _source(self, "squeeze_dim")
        d = _dim(self, dim, "squeeze_dim")
        _not_partition(self, d, "squeeze_dim")
        if self.shape[d] != 1:
            self._fail(f"squeeze_dim: dim {d} has size {self.shape[d]}, not 1")
        return make_view(self, np.squeeze(flat, axis=d), "squeeze_dim")

    def broadcast(self: Any, dim: Any, size: Any) -> Tile:
        flat = _source(self, "broadcast")
        d = _dim(self, dim, "broadcast")
        _not_partition(self, d, "broadcast")
        if self.shape[d] != 1:
            self._fail(f"broadcast: dim {d} has size {self.shape[d]}, not 1")
        shape = list(self.shape)
        shape[d] = self._int(size)
        return make_view(self, np.broadcast_to(flat, tuple(shape)), "broadcast")

    def flatten_dims(self: Any, start_dim: Any, end_dim: Any) -> Tile:
        flat = _source(self, "flatten_dims")
        a = _dim(self, start_dim, "flatten_dims")
        b = _dim(self, end_dim, "flatten_dims")
        if b < a:
            self._fail(f"flatten_dims: end_dim {b} is before start_dim {a}")
        _not_partition(self, a, "flatten_dims")
        s = self.shape
        return _merged(self, flat, (*s[:a], math.prod(s[a : b + 1]), *s[b + 1 :]), "flatten_dims")

    def reshape_dim(self: Any, dim: Any, shape: Any) -> Tile:
        flat = _source(self, "reshape_dim")
        d = _dim(self, dim, "reshape_dim")
        parts = [self._int(n) for n in shape]
        if parts.count(-1) > 1:
            self._fail(f"reshape_dim: at most one -1 in {tuple(parts)}")
        if -1 in parts:
            known = math.prod(n for n in parts if n != -1)
            parts[parts.index(-1)] = self.shape[d] // known if known else 0
        if math.prod(parts) != self.shape[d] or any(n < 1 for n in parts):
            self._fail(
                f"reshape_dim: {tuple(parts)} does not split dim {d} of size {self.shape[d]}"
            )
        if len(parts) > 1:
            _not_partition(self, d, "reshape_dim")
        new = (*self.shape[:d], *parts, *self.shape[d + 1 :])
        return make_view(self, flat.reshape(new), "reshape_dim")

    def rearrange(self: Any, src_pattern: Any, dst_pattern: Any, fixed_sizes: Any = None) -> Tile:
        """einops-style: split the ``src_pattern`` groups, reorder, merge the
        ``dst_pattern`` groups (``fixed_sizes`` gives split sizes, one per group inferred)."""
        flat = _source(self, "rearrange")
        src, dst = tuple(src_pattern), tuple(dst_pattern)
        if len(src) != self.ndim:
            self._fail(f"rearrange: {src} names {len(src)} dims of a {self.ndim}-D view")
        sizes = _split_sizes(self, src, dict(fixed_sizes or {}))
        names = [n for entry in src for n in _group(entry)]
        order = [n for entry in dst for n in _group(entry)]
        if len(set(names)) != len(names) or sorted(order) != sorted(names):
            self._fail(f"rearrange: {dst} must name each dim of {src} once")
        split = flat.reshape([sizes[n] for n in names])
        moved = split.transpose([names.index(n) for n in order])
        shape = tuple(math.prod(sizes[n] for n in _group(entry)) for entry in dst)
        return _merged(self, moved, shape, "rearrange")

    def is_contiguous(self: Any) -> bool:
        """Each non-size-1 dim's stride is the product of the inner sizes; on chip the
        partition dim is skipped (the page's ``is_contiguous`` entry)."""
        entries = pattern(_source(self, "is_contiguous"))
        if entries is None:
            return False
        skip = 1 if self.alloc.buffer.on_chip else 0
        inner = 1
        for step, count in reversed(entries[skip:]):
            if count > 1 and step != inner:
                return False
            inner *= count
        return True

    def is_indirect(self: Any) -> bool:
        return self.via is not None

    def indirect(self: Any, index: Any, num_elem: Any = None) -> Tile:
        return tensor_indirection(self, index, num_elem)

    def view(self: Any, dtype: Any) -> Tile:
        from kernelopt.sim.reinterpret import cast_view

        return cast_view(self, dtype)
