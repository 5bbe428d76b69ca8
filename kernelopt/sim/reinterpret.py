"""``t.view(dtype)``: a tensor's bytes read as another dtype (a reinterpret cast).

The nki.language.NkiTensor page (NKI API reference, Trn2/Trn3, ``view``): no data is
copied; the last dimension's size is scaled by the ratio of the dtype sizes (float32
as uint8 is four times as long, uint8 as float32 a quarter); the last dimension must
be contiguous, and a contraction needs a last-dim size the ratio divides. The beta-1
``nki.tensor.view`` page says the same in a line ("Return a new view of the tensor,
reinterpret to a specified type"); nki-samples' ``rmsnorm_quant`` kernel
(``src/nki_samples/reference/rmsnorm_quant/rmsnorm_quant.py`` @1ee7f1d) reads an fp32
column as four fp8 bytes this way.

The simulator keeps values, not bytes (``Allocation.data`` holds float32 or int32), so
a cast view is a ``CastAllocation``: the source allocation's bytes seen in the new
dtype. It is rebuilt from the source before each read and written back after each
write, so it never goes stale; its tiles name the source's region (the source's
allocation id and the bytes' elements), so the scheduler orders them with every
other access to the source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim.tensor import Allocation, Bounds

if TYPE_CHECKING:
    from kernelopt.sim.tensor import Tile


def _store(dtype: np.dtype) -> type:
    return np.int32 if dtype.kind in "iu" else np.float32


class CastAllocation(Allocation):
    """``source``'s bytes as ``dtype``: the last axis scaled by the itemsize ratio."""

    __slots__ = ("source",)

    def __init__(self, source: Allocation, dtype: np.dtype) -> None:
        last = source.shape[-1] * source.dtype.itemsize // dtype.itemsize
        shape = (*source.shape[:-1], last)
        super().__init__(
            source.machine,
            source.id,
            source.name,
            source.buffer,
            dtype,
            shape,
            None,
            np.zeros(shape, dtype=bool),
            source.line,
        )
        self.source = source
        self.refresh()

    def _bytes(self, values: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """``values`` in ``dtype`` as bytes, the last axis one byte per element."""
        raw = np.ascontiguousarray(values.astype(dtype))
        return raw.view(np.uint8).reshape(*values.shape[:-1], -1)

    def refresh(self) -> None:
        """Rebuild this view's values and initialised bits from the source."""
        src = self.source
        size = src.dtype.itemsize
        byte_written = np.repeat(src.written, size, axis=-1)
        self.written = byte_written.reshape(*self.shape, self.dtype.itemsize).all(axis=-1)
        if src.data is None:
            self.data = None
            return
        raw = self._bytes(src.data, src.dtype)
        self.data = np.ascontiguousarray(raw).view(self.dtype).astype(_store(self.dtype))

    def push(self) -> None:
        """Write this view's values and initialised bits back into the source."""
        src = self.source
        size = self.dtype.itemsize
        byte_written = np.repeat(self.written, size, axis=-1)
        src.written[...] = byte_written.reshape(*src.shape, src.dtype.itemsize).all(axis=-1)
        if src.data is None or self.data is None:
            return
        raw = self._bytes(self.data, self.dtype)
        src.data[...] = np.ascontiguousarray(raw).view(src.dtype).astype(src.data.dtype)

    def source_bounds(self, bounds: Bounds) -> Bounds:
        """``bounds`` (in this view's elements) as the source elements holding them."""
        lo, hi = bounds[-1]
        new, old = self.dtype.itemsize, self.source.dtype.itemsize
        last = (lo * new // old, -(-hi * new // old))
        return (*bounds[:-1], last)


def cast_view(tile: Tile, dtype: Any) -> Tile:
    """``tile.view(dtype)``: the tile's elements reinterpreted as ``dtype``."""
    from kernelopt.sim.tensor import Tile

    new = np.dtype(dtype)
    alloc = tile.alloc
    if new == alloc.dtype:
        return tile
    if isinstance(alloc, CastAllocation):
        tile._fail(f"view: {tile!r} is already a reinterpret view; view the tensor itself")
    what = f"view({new.name})"
    last = len(alloc.shape) - 1
    if tile.coords is not None or tile.view_map is not None or tile.via is not None:
        tile._fail(f"{what}: a strided, permuted or indirect view cannot be reinterpreted")
    if not tile.kept or tile.kept[-1] != last:
        tile._fail(f"{what}: the last dimension of {tile!r} is not the tensor's (contiguous) one")
    lo, hi = tile.bounds[last]
    old_size, new_size = alloc.dtype.itemsize, new.itemsize
    if (lo * old_size) % new_size or (hi * old_size) % new_size:
        tile._fail(
            f"{what}: the last dimension of {tile!r} ({hi - lo} x {old_size} bytes from element "
            f"{lo}) does not divide into {new_size}-byte elements"
        )
    if (alloc.shape[-1] * old_size) % new_size:
        tile._fail(f"{what}: a row of {alloc.name!r} is not a whole number of {new.name}")
    cast = CastAllocation(alloc, new)
    bounds = (*tile.bounds[:last], (lo * old_size // new_size, hi * old_size // new_size))
    return Tile(cast, bounds, tile.kept, tile.loose)
