"""Beta-1 on-chip shapes and operands: ``nl.par_dim``, block arrays, masks
applied to broadcast operands, and the dtype of an elementwise result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim import indexing
from kernelopt.sim.tensor import Buffer, PlacedBuffer, Tile

if TYPE_CHECKING:
    from kernelopt.sim.beta1 import Beta1


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition axis of an on-chip shape."""


class BlockArray:
    """An on-chip array whose leading axes index blocks: ``(4, 8, par_dim(128), 1024)``.

    Each block is its own allocation, made when the kernel first indexes it,
    so on-chip memory is charged block by block from first touch to last use
    (the compiler allocates such arrays by liveness: a block array far larger
    than one partition's SBUF fits when its blocks are never live at once).
    """

    def __init__(
        self,
        beta: Beta1,
        blocks: tuple[int, ...],
        tile_shape: tuple[int, ...],
        dtype: np.dtype,
        buffer: Buffer,
        name: str,
        site: tuple[int, ...],
        fill: float | str | None,
    ) -> None:
        self.beta, self.blocks, self.tile_shape = beta, blocks, tile_shape
        self.dtype, self.buffer, self.name, self.site, self.fill = (
            dtype,
            buffer,
            name,
            site,
            fill,
        )
        self._tiles: dict[tuple[int, ...], Tile] = {}

    @property
    def shape(self) -> tuple[int, ...]:
        return self.blocks + self.tile_shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element (the beta-1 ``nki.tensor`` page's ``itemsize``)."""
        return self.dtype.itemsize

    def __repr__(self) -> str:
        return f"BlockArray({self.name!r}, blocks={self.blocks}, tile={self.tile_shape})"

    def block(self, index: tuple[int, ...]) -> Tile:
        m = self.beta.m
        for i, (k, n) in enumerate(zip(index, self.blocks, strict=True)):
            if not isinstance(k, int | np.integer) or not 0 <= k < n:
                m.fail("isa", f"block index {k!r} on axis {i} of {self.name!r} {self.shape}")
        index = tuple(int(k) for k in index)
        tile = self._tiles.get(index)
        if tile is None:
            flat = int(np.ravel_multi_index(index, self.blocks))
            label = f"{self.name}{list(index)}"
            tile = m.allocate(
                self.tile_shape,
                self.dtype,
                self.buffer,
                label,
                site=self.site + (-1 - flat,),
                address=self._address(index),
            )
            self.beta.initialise(tile, self.fill)
            self._tiles[index] = tile
        return tile

    def _address(self, index: tuple[int, ...]) -> tuple[int, int] | None:
        """Where a hand-placed block lives (``PlacedBuffer``): its physical copy is
        the block index modulo the copies per axis, each copy one block apart."""
        buffer = self.buffer
        if not isinstance(buffer, PlacedBuffer):
            return None
        if buffer.func is not None:
            return placed_by(self.beta.m, buffer, index, self.tile_shape, self.dtype)
        tiles = buffer.tiles + (1,) * (len(index) - len(buffer.tiles))
        copy = 0
        for i, n in zip(index, tiles, strict=False):
            copy = copy * n + i % n
        per_partition = int(np.prod(self.tile_shape[1:])) * self.dtype.itemsize
        if buffer.kind == "psum":
            bank = self.beta.m.params.psum_bank_bytes
            per_partition = -(-per_partition // bank) * bank
        return (0, buffer.base + copy * per_partition)

    def __getitem__(self, key: Any) -> Any:
        key = key if isinstance(key, tuple) else (key,)
        n = len(self.blocks)
        if len(key) < n:
            if any(k is Ellipsis or isinstance(k, slice) for k in key):
                self.beta.m.fail(
                    "isa", f"{self.name!r}: block axes take integer indices, got {key!r}"
                )
            return BlockView(self, tuple(key))
        tile = self.block(tuple(key[:n]))
        rest = key[n:]
        return tile[rest] if rest else tile

    def __setitem__(self, key: Any, value: Any) -> None:
        key = key if isinstance(key, tuple) else (key,)
        index = key[: len(self.blocks)]
        if len(index) == len(self.blocks) and index not in self._tiles and self.beta._fresh(value):
            # ``buf[i, ...] = nl.load(x, mask=...)`` touching block i first: Python runs
            # the load before the block exists, so the block's nl.zeros/nl.full memset
            # is issued after it. Issue it first, so that the load still lands in the
            # block (only in the rows its mask kept) and the fill stays in the rest.
            producer = self.beta.m.trace.pop()
            self.block(index)
            self.beta.m.trace.append(producer)
        self.beta.assign(self[key], value)


class BlockView:
    """A block array with its first block indices fixed (``buf[i]`` of a 2-block-axis array)."""

    def __init__(self, array: BlockArray, prefix: tuple[int, ...]) -> None:
        self.array, self.prefix = array, prefix

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape[len(self.prefix) :]

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    def __getitem__(self, key: Any) -> Any:
        return self.array[self.prefix + (key if isinstance(key, tuple) else (key,))]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.array[self.prefix + (key if isinstance(key, tuple) else (key,))] = value


def placed_by(
    m: Any, buffer: PlacedBuffer, index: tuple[int, ...], shape: tuple[int, ...], dtype: np.dtype
) -> tuple[int, int]:
    """``alloc(func)`` (the nki.compiler.sbuf.alloc / psum.alloc pages, SDK 2.2x):
    ``func(idx, pdim_size, fdim_size)``, the size in bytes per partition, returns
    ``(start_partition, byte_addr)`` in SBUF and ``(bank, start_partition,
    byte_addr)`` in PSUM, the byte address within the bank. The arguments go by
    keyword: nki-samples reference/allocated_attention.py (@0f86bb6) binds its
    bank map first with ``functools.partial(psum_addr, bank_map=...)``."""
    per_partition = int(np.prod(shape[1:])) * dtype.itemsize
    place = buffer.func(idx=index, pdim_size=shape[0], fdim_size=per_partition)
    place = tuple(int(v) for v in place)
    if buffer.kind == "psum":
        if len(place) != 3:
            m.fail("isa", f"psum.alloc func must return (bank, partition, addr), got {place}")
        bank, part, addr = place
        return (part, bank * m.params.psum_bank_bytes + addr)
    if len(place) != 2:
        m.fail("isa", f"sbuf.alloc func must return (partition, addr), got {place}")
    return (place[0], place[1])


def clip_like(value: Any, mask: Any, shape: tuple[int, ...]) -> Any:
    """Clip an operand by ``mask`` on the axes where it is not broadcast."""
    if not isinstance(value, Tile):
        return value
    keep = {
        axis: rng
        for axis, rng in mask.keep.items()
        if axis < value.ndim and value.shape[axis] == shape[axis] and shape[axis] != 1
    }
    return value.clip(indexing.Mask(mask.ndim, keep)) if keep else value


def dtype_of(*values: Any) -> np.dtype:
    dtypes = [v.dtype for v in values if isinstance(v, Tile)]
    if any(d.itemsize >= 4 and d.kind == "f" for d in dtypes):
        return np.dtype(np.float32)
    return dtypes[0]
