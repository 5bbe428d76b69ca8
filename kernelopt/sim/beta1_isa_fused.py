"""Beta-1 ISA calls that return their result, beyond the elementwise basics: scans,
selects, statistics, constants and the DMA transpose (``nki.isa`` reference of the
``neuronxcc.nki`` releases, Neuron SDK 2.2x)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim import indexing
from kernelopt.sim.beta1_tiles import dtype_of
from kernelopt.sim.tensor import Tile

if TYPE_CHECKING:
    from kernelopt.sim.beta1 import Beta1
    from kernelopt.sim.isa import Isa

BETA1_FUSED_CALLS = (
    "tensor_tensor_scan",
    "tensor_scalar_reduce",
    "affine_select",
    "iota",
    "bn_stats",
    "bn_aggr",
    "dma_transpose",
)


def masked(tile: Tile, mask: Any) -> Tile:
    return tile.clip(mask) if mask is not None else tile


def column(value: Any, mask: Any) -> Any:
    """A one-value-per-partition operand (bias, scale, operand0, reduce_res, ...) cut
    to the partitions ``mask`` keeps."""
    if not isinstance(value, Tile) or mask is None or 0 not in getattr(mask, "keep", {}):
        return value
    return value.clip(indexing.Mask(mask.ndim, {0: mask.keep[0]}))


class Beta1FusedIsa:
    """Each call makes its result tile, applies ``mask=`` and issues the simulator's call."""

    def __init__(self, beta: Beta1, isa: Isa) -> None:
        self.beta, self.isa = beta, isa

    def tensor_tensor_scan(
        self,
        data0: Any,
        data1: Any,
        initial: Any,
        op0: Any,
        op1: Any,
        reverse0: bool = False,
        reverse1: bool = False,
        *,
        dtype: Any = None,
        mask: Any = None,
        **_: Any,
    ) -> Tile:
        a = self.beta._tile("tensor_tensor_scan", data0)
        b = self.beta._tile("tensor_tensor_scan", data1)
        dst = self.beta.new(a.shape, self.beta._dtype(dtype, dtype_of(a, b)))
        self.isa.tensor_tensor_scan(
            masked(dst, mask), masked(a, mask), masked(b, mask), column(initial, mask), op0, op1,
            reverse0, reverse1,
        )  # fmt: skip
        return dst

    def tensor_scalar_reduce(
        self,
        *,
        data: Any,
        op0: Any,
        operand0: Any,
        reduce_op: Any,
        reduce_res: Any,
        reverse0: bool = False,
        dtype: Any = None,
        mask: Any = None,
        **_: Any,
    ) -> Tile:
        src = self.beta._tile("tensor_scalar_reduce", data)
        dst = self.beta.new(src.shape, self.beta._dtype(dtype, src.dtype))
        self.isa.tensor_scalar_reduce(
            masked(dst, mask),
            masked(src, mask),
            op0,
            column(operand0, mask),
            reduce_op,
            column(reduce_res, mask),
            reverse0,
        )
        return dst

    def affine_select(
        self, pred: Any, on_true_tile: Any, on_false_value: Any, *, mask: Any = None,
        dtype: Any = None, **_: Any,
    ) -> Tile:  # fmt: skip
        src = self.beta._in_sbuf("affine_select", self.beta._tile("affine_select", on_true_tile))
        dst = self.beta.new(src.shape, self.beta._dtype(dtype, src.dtype))
        # Beta 1's affine_select always takes a predicate (pred=), never a pattern.
        self.isa.select_by_predicate(masked(dst, mask), pred, masked(src, mask), on_false_value)
        return dst

    def iota(self, expr: Any, dtype: Any, *, mask: Any = None, **_: Any) -> Tile:
        """The values of an index expression as a tile (GpSimd)."""
        if not isinstance(expr, indexing.IndexExpr):
            self.beta.m.fail(
                "isa", f"iota: expected an nl.arange/nl.mgrid expression, got {expr!r}"
            )
        shape = expr.shape if expr.ndim > 1 else (expr.shape[0], 1)
        dst = self.beta.new(shape, self.beta._dtype(dtype, np.dtype(np.int32)))
        self.isa.iota(masked(dst, mask), expr)
        return dst

    def bn_stats(self, data: Any, *, mask: Any = None, dtype: Any = None, **_: Any) -> Tile:
        src = self.beta._tile("bn_stats", data)
        dst = self.beta.new((src.partitions, 6), self.beta._dtype(dtype, src.dtype))
        # The mask cuts the data; the statistics of the partitions it keeps are written.
        self.isa.bn_stats(column(dst, mask), masked(src, mask))
        return dst

    def bn_aggr(self, data: Any, *, mask: Any = None, dtype: Any = None, **_: Any) -> Tile:
        src = self.beta._tile("bn_aggr", data)
        dst = self.beta.new((src.partitions, 2), self.beta._dtype(dtype, src.dtype))
        self.isa.bn_aggr(column(dst, mask), masked(src, mask))
        return dst

    def dma_transpose(
        self, src: Any, *, axes: Any = None, mask: Any = None, dtype: Any = None, **kwargs: Any
    ) -> Tile:
        s = self.beta._tile("dma_transpose", src)
        perm = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(s.ndim, tuple(range(s.ndim)))
        perm = perm if axes is None else tuple(axes)
        shape = tuple(s.shape[a] for a in perm) if len(perm) == s.ndim else s.shape
        dst = self.beta.new(shape, self.beta._dtype(dtype, s.dtype))
        self.isa.dma_transpose(dst, masked(s, mask), axes=axes, **kwargs)
        return dst
