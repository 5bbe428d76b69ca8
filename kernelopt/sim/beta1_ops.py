"""The beta-1 high-level ops (``nl.add``, ``nl.exp``, ``nl.sum``, ``nl.matmul``,
``nl.load``/``nl.store``, ...): each lowers to the instructions the current
API emits."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelopt.sim.beta1_core import Beta1Core
from kernelopt.sim.beta1_tiles import clip_like, dtype_of
from kernelopt.sim.masking import dma_parts, predicated
from kernelopt.sim.ops import OPS, Op
from kernelopt.sim.tensor import Tile

_FAST_VECTOR_OPS = frozenset({"add", "multiply", "subtract"})
# What an element a predicate drops reads as in each reduction: its identity.
REDUCE_IDENTITY = {"sum": 0.0, "max": -np.inf, "min": np.inf, "prod": 1.0}


def _padded(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return shape + (1,) * (rank - len(shape))


def _aligned(values: np.ndarray | None, rank: int) -> np.ndarray | None:
    if values is None or values.ndim == rank:
        return values
    return values.reshape(_padded(values.shape, rank))


@dataclass(eq=False)
class LoopReduction:
    """What ``nl.loop_reduce`` returns: its operand, combined into wherever it is assigned."""

    src: Tile
    op: str
    first: bool
    dtype: np.dtype
    mask: Any
    site: tuple[int, ...]
    tile: Tile | None = None


class HighLevelOps(Beta1Core):
    """Elementwise ops, reductions, matmul and transpose, loads and stores."""

    # --- elementwise, reductions, matmul ---------------------------------------------

    def _operand(self, value: Any, what: str) -> Tile | float:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        return self._tile(what, value)

    def binary(
        self,
        op: str,
        x: Any,
        y: Any,
        dtype: Any = None,
        mask: Any = None,
        out: Tile | None = None,
    ) -> Tile:
        m, fn = self.m, OPS[op]
        a, b = self._operand(x, f"nl.{op}"), self._operand(y, f"nl.{op}")
        tiles = [t for t in (a, b) if isinstance(t, Tile)]
        if not tiles:
            m.fail("isa", f"nl.{op}: at least one operand must be a tile")
        shapes = [t.shape for t in tiles]
        rank = max(len(sh) for sh in shapes)
        try:
            # A tile's first axis is its partition axis: a lower-rank tile lines up
            # from the left (a [P] reduction result is a column), not numpy's right.
            shape = np.broadcast_shapes(*(_padded(sh, rank) for sh in shapes))
        except ValueError:
            m.fail("isa", f"nl.{op}: shapes {shapes} do not broadcast")
        dst = out if out is not None else self.new(shape, self._dtype(dtype, dtype_of(*tiles)))
        if dst.shape != tuple(shape):
            m.fail("isa", f"nl.{op}: result {tuple(shape)} does not fit dst {dst.shape}")
        for t in tiles:
            if not t.buffer.on_chip:
                m.fail("isa", f"nl.{op}: operand {t.alloc.name!r} is in HBM; nl.load it first")
        result = dst
        if mask is not None:
            dst = dst.clip(mask)
            a = clip_like(a, mask, tuple(shape))
            b = clip_like(b, mask, tuple(shape))
        a, b = (t.checked() if isinstance(t, Tile) else t for t in (a, b))
        va = a if not isinstance(a, Tile) else _aligned(m.read(a, f"nl.{op}"), rank)
        vb = b if not isinstance(b, Tile) else _aligned(m.read(b, f"nl.{op}"), rank)
        if m.compute:
            m.write(dst, np.broadcast_to(fn.fn(va, vb), dst.shape))
        else:
            m.write(dst, None)
        full = [t for t in (a, b) if isinstance(t, Tile) and t.free_size == dst.free_size]
        engine = "vector"
        if len(full) < 2:
            # A scalar or a [P, 1] column: one streamed input (tensor_scalar), on the
            # engine the compiler picks for it.
            name, inputs = "tensor_scalar", 1
            engine = self.isa.scalar_default(OPS[op])
        else:
            fast = any(t.buffer.kind == "psum" for t in full) or (
                op in _FAST_VECTOR_OPS and all(t.dtype.name == "bfloat16" for t in full)
            )
            name, inputs = "tensor_tensor", 1 if fast else 2
        self.isa._emit(
            name,
            engine,
            tiles,
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            inputs=inputs,
        )
        return result

    def unary(self, op: Op, x: Any, dtype: Any = None, mask: Any = None) -> Tile:
        src = self._tile(f"nl.{op.name}", x)
        dst = self.new(src.shape, self._dtype(dtype, src.dtype))
        src, view = (src.clip(mask), dst.clip(mask)) if mask is not None else (src, dst)
        if op.name == "copy":
            self._copy(view, src)
        elif op.vector:
            # An ALU operator (logical_not, floor, ...): one VectorE pass.
            values = self.m.read(src, f"nl.{op.name}")
            self.m.write(view, None if values is None else op.fn(values))
            self.isa._emit(
                "tensor_scalar", "vector", [src], [view], partitions=view.partitions,
                free=view.free_size,
            )  # fmt: skip
        else:
            self.isa.activation(view, op, src)
        return dst

    def where(self, condition: Any, x: Any, y: Any, dtype: Any = None, mask: Any = None) -> Tile:
        """``nl.where``: x where the condition tile is non-zero, else y (VectorE,
        one pass per tile operand)."""
        m = self.m
        operands = [
            v if isinstance(v, numbers.Real) else self._tile("nl.where", v)
            for v in (condition, x, y)
        ]
        tiles = [t for t in operands if isinstance(t, Tile)]
        if not tiles:
            m.fail("isa", "nl.where: at least one operand must be a tile")
        rank = max(t.ndim for t in tiles)
        try:
            shape = np.broadcast_shapes(*(_padded(t.shape, rank) for t in tiles))
        except ValueError:
            m.fail("isa", f"nl.where: shapes {[t.shape for t in tiles]} do not broadcast")
        values_dtype = dtype_of(*[t for t in operands[1:] if isinstance(t, Tile)] or tiles)
        dst = self.new(shape, self._dtype(dtype, values_dtype))
        view = dst.clip(mask) if mask is not None else dst
        if mask is not None:
            operands = [clip_like(t, mask, tuple(shape)) for t in operands]
        values = [
            _aligned(m.read(t.checked(), "nl.where"), rank) if isinstance(t, Tile) else t
            for t in operands
        ]
        if m.compute:
            m.write(
                view, np.broadcast_to(np.where(values[0] != 0, values[1], values[2]), view.shape)
            )
        else:
            m.write(view, None)
        reads = [t for t in operands if isinstance(t, Tile)]
        self.isa._emit(
            "select", "vector", reads, [view], partitions=view.partitions,
            free=view.free_size, inputs=len(reads),
        )  # fmt: skip
        return dst

    def var(self, x: Any, axis: Any, dtype: Any = None, mask: Any = None) -> Tile:
        """``nl.var``: the mean square deviation along ``axis`` (kept as a unit axis)."""
        mean = self.reduce("mean", x, axis, keepdims=True, mask=mask)
        centred = self.binary("subtract", x, mean, mask=mask)
        square = self.binary("multiply", centred, centred, mask=mask)
        return self.reduce("mean", square, axis, dtype, keepdims=True, mask=mask)

    def reduce(
        self,
        op: str,
        x: Any,
        axis: Any,
        dtype: Any = None,
        keepdims: bool = False,
        mask: Any = None,
        negate: bool = False,
    ) -> Tile:
        src = self._tile(f"nl.{op}", x)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        norm = {a % src.ndim for a in axes if isinstance(a, int)}
        shape = tuple(
            (1 if keepdims else None) if i in norm else d for i, d in enumerate(src.shape)
        )
        shape = tuple(d for d in shape if d is not None)
        base = {"sum": "add", "mean": "add", "max": "maximum", "min": "minimum", "prod": "multiply"}
        full = self.new(shape, self._dtype(dtype, src.dtype))
        dst = full
        if mask is not None and not mask.is_box and op in REDUCE_IDENTITY:
            # A predicate over several ranges: the dropped elements leave the reduction.
            src, mask = predicated(src, mask, REDUCE_IDENTITY[op]), None
        if mask is not None:
            # The result keeps its full shape; only the masked rows are computed.
            whole = src.shape
            src = src.clip(mask)
            dst = clip_like(full, mask, whole) if keepdims else full
        self.isa.reduce_free_axes(dst, OPS[base[op]], src, axes, negate=negate, keepdims=keepdims)
        if op == "mean":
            count = int(np.prod([src.shape[a] for a in norm]))
            self.binary("multiply", dst, 1.0 / count, out=dst)
        return full

    def matmul(self, x: Any, y: Any, transpose_x: bool = False, mask: Any = None) -> Tile:
        a = self._in_sbuf("nl.matmul", self._tile("nl.matmul", x))
        b = self._in_sbuf("nl.matmul", self._tile("nl.matmul", y))
        if not transpose_x:
            # x is [M, K]: TensorE transposes it through PSUM first, as the
            # compiler does (the docs name this extra instruction).
            if a.ndim != 2:
                self.m.fail("isa", f"nl.matmul: x must be 2-D, got {a.shape}")
            a = self._in_sbuf("nl.matmul", self.transpose(a))
        dst, moving, out = self._matmul_result(a, b)
        self.isa.nc_matmul(out, a, moving)
        return dst

    def transpose(self, x: Any, dtype: Any = None, mask: Any = None) -> Tile:
        src = self._in_sbuf("nl.transpose", self._tile("nl.transpose", x))
        if src.ndim == 1:
            # A [P] tile (what nl.sum(..., axis=1) returns without keepdims, one element
            # per partition) transposes as its [P, 1] layout into [1, P]: awslabs/
            # state-space-models-neuron @3e6d165 mamba2/mamba2_kernel_inference.py
            # transposes such a sum. The nki.language.transpose page speaks of 2-D tiles
            # only; that it takes this one is unverified.
            src = src.reshape((src.shape[0], 1))
        if src.ndim != 2:
            self.m.fail("isa", f"nl.transpose: 2-D tiles only, got {src.shape}")
        dst = self.new((src.shape[1], src.shape[0]), self._dtype(dtype, src.dtype), "psum")
        self.isa.nc_transpose(dst, src)
        return dst

    def loop_reduce(
        self, x: Any, op: Any, loop_indices: Any, dtype: Any = None, mask: Any = None
    ) -> LoopReduction:
        """``nl.loop_reduce(x, op, loop_indices)``: assigned to a destination, the first
        iteration of the named loops writes x there and later ones combine into it
        (``dst = op(dst, x)``, a ``tensor_tensor``), per destination; used directly, the
        value accumulates per call site."""
        src = self._tile("nl.loop_reduce", x)
        fn = self.isa._op("nl.loop_reduce", op, 2)
        indices = loop_indices if isinstance(loop_indices, list | tuple) else [loop_indices]
        first = all(int(i) == 0 for i in indices)
        site = self.m.site()
        value = LoopReduction(src, fn.name, first, self._dtype(dtype, src.dtype), mask, site)
        self._pending.setdefault(site, []).append(value)
        return value

    def reduced(self, value: LoopReduction) -> Tile:
        """A loop reduction used as a tile: its call site's accumulator, brought up to
        date with every reduction made there since (in program order)."""
        pending = self._pending.get(value.site, [])
        while value.tile is None and pending:
            step = pending.pop(0)
            acc = self._reduce.get(step.site)
            if acc is None or step.first:
                acc = self.new(step.src.shape, step.dtype)
                self.isa.tensor_copy(acc, step.src)
                self._reduce[step.site] = acc
            else:
                self.binary(step.op, acc, step.src, mask=step.mask, out=acc)
            step.tile = acc
        if value.tile is None:
            self.m.fail("isa", "nl.loop_reduce: its value was already assigned elsewhere")
        return value.tile

    def reduce_into(self, dst: Tile, value: LoopReduction) -> None:
        """``dst[...] = nl.loop_reduce(...)``."""
        pending = self._pending.get(value.site, [])
        if pending and pending[0] is not value and any(p is value for p in pending):
            # Earlier reductions here were never assigned: it accumulates per call site.
            self.assign(dst, self.reduced(value))
            return
        if pending and pending[0] is value:
            pending.pop(0)
        if value.first:
            self.assign(dst, value.src)
        else:
            src = value.src if value.src.shape == dst.shape else self._reshaped(value.src, dst)
            self.binary(value.op, dst, src, mask=value.mask, out=dst)

    # --- loads and stores ---------------------------------------------------------------

    def load(self, src: Any, mask: Any = None, dtype: Any = None) -> Tile:
        src = self._tile("nl.load", src)
        dst = self.new(src.shape, self._dtype(dtype, src.dtype))
        for d, s in dma_parts(dst, src, mask):
            self.isa.dma_copy(d, s)
        return dst

    def load_transpose2d(self, src: Any, mask: Any = None, dtype: Any = None) -> Tile:
        """``nl.load_transpose2d(src, mask=, dtype=)``: ``mask`` is over ``src``'s index
        space (the v2.2x nki.language.load_transpose2d page lists it with the other
        loads'); the part it keeps lands transposed in the result, the rest unwritten."""
        src = self._tile("nl.load_transpose2d", src)
        if src.ndim != 2:
            self.m.fail("isa", f"nl.load_transpose2d: 2-D tiles only, got {src.shape}")
        dst = self.new((src.shape[1], src.shape[0]), self._dtype(dtype, src.dtype))
        part = src.clip(mask)
        self.isa.transpose_by_dma(_transposed_part(dst, src, part), part, cast=True)
        return dst

    def store(self, dst: Any, value: Any, mask: Any = None) -> None:
        dst = self._tile("nl.store", dst)
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            tmp = self.new(dst.shape, dst.dtype)
            self.isa.memset(tmp, float(value))
            value = tmp
        src = self._tile("nl.store", value)
        if src.buffer.kind == "psum":
            src = self._in_sbuf("nl.store", src)  # DMA reads SBUF: the compiler copies
        for d, s in dma_parts(dst, src, mask):
            self.isa.dma_copy(d, s)


def _transposed_part(dst: Tile, src: Tile, part: Tile) -> Tile:
    """The part of ``dst`` (``src`` transposed) that ``part``, a box of ``src``, lands in."""
    if part.shape == src.shape:
        return dst
    r0, c0 = (part.bounds[a][0] - src.bounds[a][0] for a in src.kept)
    rows, cols = part.shape
    return dst[c0 : c0 + cols, r0 : r0 + rows]
