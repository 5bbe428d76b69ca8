"""The NKI beta-1 API (``neuronxcc.nki``) on the simulator.

Public kernels written before SDK 2.30 (NKIBench, nki-samples, the
nki-autotune GEMM template, the Autocomp ladders) use this API: ``nl.load``
and ``nl.store``, high-level ``nl.*`` ops and ISA calls that return a new
tile, ``t[...] = value`` assignment, ``+=`` accumulation into PSUM,
``nl.arange``/``nl.mgrid`` index expressions with ``mask=``, and block
arrays declared with ``nl.par_dim`` on a non-leading axis. Every one of
them lowers here to the same instructions the current API emits (the same
ISA checks, numerics and cost model): a load is a ``dma_copy``, ``nl.exp``
an ``activation`` on ScalarE, ``nl.divide`` by a column a ``tensor_scalar``,
``nl.matmul`` an ``nc_matmul`` (after a TensorE transpose unless
``transpose_x=True``).

Assigning a freshly produced tile (``t[...] = nl.load(...)``,
``acc += nl.matmul(...)``) retargets the instruction that produced it, as
the compiler does: the load lands in ``t``, the matmul accumulates in
``acc``'s PSUM bank, and the temporary takes no memory. Assigning any other
tile is a copy.

API facts from the Neuron SDK documentation of the ``neuronxcc.nki``
releases (awsdocs-neuron.readthedocs-hosted.com, v2.26.1:
nki.language.matmul, nki.isa.memset(shape, value, dtype, *, mask, engine),
nki.language.loop_reduce(x, op, loop_indices, *, dtype, mask),
nki.language.shared_constant(constant, dtype)).
"""

from __future__ import annotations

import dataclasses
import numbers
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim import indexing
from kernelopt.sim.enums import add_enums
from kernelopt.sim.language import BUFFERS, OPS, Op, resolve_dtype
from kernelopt.sim.tensor import Buffer, Tile
from kernelopt.sim.trace import Instruction

if TYPE_CHECKING:
    from kernelopt.sim.isa import Isa
    from kernelopt.sim.machine import Machine

_FAST_VECTOR_OPS = frozenset({"add", "multiply", "subtract"})
_TENSOR_OPS = frozenset({"nc_matmul", "nc_transpose"})
_INSTRUCTION_FIELDS = tuple(f.name for f in dataclasses.fields(Instruction))


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition axis of an on-chip shape."""


@dataclass(frozen=True)
class CallableOp(Op):
    """A beta-1 ``nl.*`` op: passed as ``op=`` like the current API's, and also
    callable on tiles (``nl.exp(x)``, ``nl.add(a, b)``)."""

    impl: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        assert self.impl is not None
        return self.impl(self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"nl.{self.name}"


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
                self.tile_shape, self.dtype, self.buffer, label, site=self.site + (-1 - flat,)
            )
            self.beta.initialise(tile, self.fill)
            self._tiles[index] = tile
        return tile

    def __getitem__(self, key: Any) -> Any:
        key = key if isinstance(key, tuple) else (key,)
        n = len(self.blocks)
        if len(key) < n:
            if any(k is Ellipsis or isinstance(k, slice) for k in key):
                self.beta.m.fail(
                    "isa", f"{self.name!r}: block axes take integer indices, got {key!r}"
                )
            return _BlockView(self, tuple(key))
        tile = self.block(tuple(key[:n]))
        rest = key[n:]
        return tile[rest] if rest else tile

    def __setitem__(self, key: Any, value: Any) -> None:
        self.beta.assign(self[key], value)


class _BlockView:
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


def _clip_like(value: Any, mask: Any, shape: tuple[int, ...]) -> Any:
    """Clip an operand by ``mask`` on the axes where it is not broadcast."""
    if not isinstance(value, Tile):
        return value
    keep = {
        axis: rng
        for axis, rng in mask.keep.items()
        if axis < value.ndim and value.shape[axis] == shape[axis] and shape[axis] != 1
    }
    return value.clip(indexing.Mask(mask.ndim, keep)) if keep else value


def _dtype_of(*values: Any) -> np.dtype:
    dtypes = [v.dtype for v in values if isinstance(v, Tile)]
    if any(d.itemsize >= 4 and d.kind == "f" for d in dtypes):
        return np.dtype(np.float32)
    return dtypes[0]


class Beta1:
    """The tile semantics of the beta-1 API, bound to one machine."""

    def __init__(self, machine: Machine, isa: Isa) -> None:
        self.m, self.isa = machine, isa
        # loop_reduce accumulators, per call site.
        self._reduce: dict[tuple[int, ...], Tile] = {}
        # Allocations made for results (not declared by the kernel): the ones an
        # assignment may retarget.
        self._temps: set[int] = set()

    # --- allocation --------------------------------------------------------------------

    def _dtype(self, dtype: Any, default: np.dtype) -> np.dtype:
        if dtype is None:
            return default
        resolved = resolve_dtype(dtype)
        if resolved is None:
            self.m.fail("isa", f"unknown dtype {dtype!r}")
        return resolved

    def new(self, shape: tuple[int, ...], dtype: np.dtype, kind: str = "sbuf") -> Tile:
        tile = self.m.allocate(
            tuple(int(d) for d in shape), dtype, BUFFERS[kind], None, poison=False
        )
        self._temps.add(tile.alloc.id)
        return tile

    def ndarray(
        self,
        shape: Any,
        dtype: Any,
        buffer: Any = None,
        name: str = "",
        fill: float | str | None = None,
    ) -> Tile | BlockArray:
        resolved = self._dtype(dtype, np.dtype(np.float32))
        if buffer is None or buffer is Ellipsis:
            buffer = BUFFERS["sbuf"]
        if not isinstance(buffer, Buffer):
            self.m.fail("isa", f"buffer must be one of nl.sbuf/psum/hbm/shared_hbm, got {buffer!r}")
        shape = tuple(shape)
        par = [i for i, d in enumerate(shape) if isinstance(d, ParDim)]
        if par and par[0] > 0 and buffer.on_chip:
            return BlockArray(
                self,
                tuple(int(d) for d in shape[: par[0]]),
                tuple(int(d) for d in shape[par[0] :]),
                resolved,
                buffer,
                name or f"{buffer.kind}@{self.m.line()}",
                self.m.site(),
                fill,
            )
        tile = self.m.allocate(tuple(int(d) for d in shape), resolved, buffer, name or None)
        self.initialise(tile, fill)
        return tile

    def initialise(self, tile: Tile, fill: float | str | None) -> None:
        """``nl.zeros``/``nl.full`` on chip is a memset; ``lazy_initialization`` zeros
        come with the memory (no instruction); in HBM the values come with the tensor."""
        if fill is None:
            return
        if fill == "lazy" or not tile.buffer.on_chip:
            self.m.write(tile, 0.0 if fill == "lazy" else float(fill))
        else:
            self.isa.memset(tile, float(fill))

    def shared_constant(self, constant: Any, dtype: Any = None) -> Tile:
        array = np.asarray(constant)
        resolved = self._dtype(dtype, array.dtype)
        store = np.int32 if resolved.kind in "iu" else np.float32
        data = np.ascontiguousarray(array, dtype=store) if self.m.compute else None
        return self.m.allocate(
            array.shape, resolved, BUFFERS["shared_hbm"], "shared_constant", data=data, filled=True
        )

    def reshape(self, tile: Tile, shape: tuple[int, ...]) -> Tile:
        alloc = tile.alloc
        whole = tile.bounds == tuple((0, n) for n in alloc.shape)
        if alloc.buffer.on_chip or not whole:
            self.m.fail("isa", f"reshape: only a whole HBM tensor can be reshaped, not {tile!r}")
        if int(np.prod(shape)) != int(np.prod(alloc.shape)):
            self.m.fail("isa", f"reshape: {alloc.shape} cannot become {shape}")
        view = self.m.allocate(
            shape,
            alloc.dtype,
            alloc.buffer,
            alloc.name,
            data=None if alloc.data is None else alloc.data.reshape(shape),
            filled=True,
        )
        # Share the values and the initialised bits with the original tensor.
        view.alloc.written = alloc.written.reshape(shape)
        return view

    def broadcast_to(self, tile: Tile, shape: tuple[int, ...]) -> Tile:
        """``tile.broadcast_to(shape)``: along the free axes a VectorE copy; across
        partitions (a [1, F] row to [M, F]) a TensorE matmul with a ones vector into
        PSUM, as the NKI architecture guide says NKI does, then a ScalarE copy out."""
        m = self.m
        src = self._tile("broadcast_to", tile)
        try:
            np.broadcast_shapes(src.shape, shape)
        except ValueError:
            m.fail("isa", f"broadcast_to: {src.shape} does not broadcast to {shape}")
        values = m.read(src, "broadcast_to")
        data = None if values is None else np.broadcast_to(values, shape)
        dst = self.new(shape, src.dtype)
        if src.partitions == shape[0] or not src.buffer.on_chip:
            m.write(dst, data)
            engine = "vector" if src.buffer.on_chip else "dma"
            if engine == "dma":
                self.isa._emit_dma("dma_copy", dst, src, 1.0)
            else:
                self.isa._emit(
                    "tensor_copy",
                    "vector",
                    [src],
                    [dst],
                    partitions=dst.partitions,
                    free=dst.free_size,
                )
            return dst
        psum = self.new(shape, np.dtype(np.float32), "psum")
        m.write(psum, data)
        self.isa._emit(
            "nc_matmul",
            "tensor",
            [src],
            [psum],
            partitions=src.partitions,
            free=psum.free_size,
            stationary_free=shape[0],
            wide=src.dtype.itemsize >= 4,
            macs=0,
        )
        self._copy(dst, psum)
        return dst

    # --- tiles as operands -------------------------------------------------------------

    def _tile(self, what: str, value: Any) -> Tile:
        if isinstance(value, BlockArray | _BlockView):
            self.m.fail("isa", f"{what}: index the block array {value!r} down to one block")
        if not isinstance(value, Tile):
            self.m.fail("isa", f"{what}: expected a tile, got {type(value).__name__}")
        return value

    def _in_sbuf(self, what: str, tile: Tile) -> Tile:
        """``tile`` itself, or a copy in SBUF when it lives in PSUM (the compiler
        inserts that copy for an engine that reads only SBUF)."""
        if tile.buffer.kind == "sbuf":
            return tile
        copy = self.new(tile.shape, tile.dtype)
        if tile.buffer.kind == "psum":
            self._copy(copy, tile)
        else:
            self.isa.dma_copy(copy, tile)
        return copy

    def _copy(self, dst: Tile, src: Tile) -> None:
        """A high-level copy (``nl.copy``, or one the compiler inserts to move a tile
        out of PSUM): the compiler lowers it to a ScalarE (ACT) copy. Evidence: the
        public Trn1 profiles of NKIBench's bmm, matmul and transpose_matmul, whose
        only work besides matmuls is such copies, show ScalarE 37 %, 6.8 % and
        3.8 % active and VectorE 0.0 %."""
        self.isa.activation(dst, OPS["copy"], src)

    # --- assignment ----------------------------------------------------------------------

    def _fresh(self, value: Any) -> bool:
        """Whether ``value`` is a whole temporary written by the last instruction alone."""
        if not isinstance(value, Tile) or not self.m.trace:
            return False
        last = self.m.trace[-1]
        whole = value.bounds == tuple((0, n) for n in value.alloc.shape)
        return (
            whole
            and last.writes == (value.region,)
            and value.region not in last.reads
            and value.alloc.id in self._temps
        )

    def _can_retarget(self, dst: Tile, value: Tile) -> bool:
        last = self.m.trace[-1]
        if dst.size != value.size or dst.alloc is value.alloc:
            return False
        if last.op in _TENSOR_OPS and last.engine == "tensor":
            return dst.buffer.kind == "psum"
        if last.engine == "dma":
            return True
        if not dst.buffer.on_chip:
            return False
        return not (last.engine == "gpsimd" and dst.buffer.kind == "psum")

    def _retarget(self, dst: Tile, value: Tile, accumulate: bool = False) -> None:
        """Make the last instruction write ``dst`` instead of the temporary ``value``
        (``accumulate``: add to what ``dst`` already holds, as a matmul into a
        written PSUM tile does)."""
        m = self.m
        last = m.trace.pop()
        src = None if value.alloc.data is None else value.alloc.data[value.index]
        if src is not None and src.shape != dst.shape:
            src = src.reshape(dst.shape)
        reads = last.reads
        written = dst.alloc.written[dst.index] if accumulate else None
        if written is not None and written.any():
            reads = reads + (dst.region,)
            if src is not None:
                old = dst.alloc.data[dst.index]
                src = old + src if written.all() else np.where(written, old + src, src)
        fields = {f: getattr(last, f) for f in _INSTRUCTION_FIELDS}
        fields.update(writes=(dst.region,), shape=dst.shape, reads=reads)
        if last.engine == "dma":
            fields["row_bytes"] = min(last.row_bytes, dst.row_bytes())
            fields["hbm_write"] = dst.nbytes if dst.buffer.kind == "hbm" else 0
        m.trace.append(Instruction(**fields))
        m.write(dst, src)

    def assign(self, dst: Any, value: Any) -> None:
        """``dst[...] = value``."""
        dst = self._tile("assignment", dst).checked()
        if isinstance(value, Tile) and value.alloc is dst.alloc and value.bounds == dst.bounds:
            return  # the second half of ``dst[...] += x``
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            self.isa.memset(dst, float(value))
            return
        value = self._tile("assignment", value)
        if self._fresh(value) and self._can_retarget(dst, value):
            self._retarget(dst, value)
            return
        if dst.buffer.on_chip and value.buffer.on_chip:
            src = value if value.shape == dst.shape else self._reshaped(value, dst)
            self.isa.tensor_copy(dst, src)
        else:
            self.isa.dma_copy(dst, value)

    def _reshaped(self, value: Tile, dst: Tile) -> Tile:
        if tuple(d for d in value.shape if d != 1) != tuple(d for d in dst.shape if d != 1):
            self.m.fail(
                "isa", f"assignment: shape mismatch: dst {dst.shape} vs value {value.shape}"
            )
        # Same elements, unit axes differ: copy through a tile of dst's shape.
        tmp = self.new(dst.shape, value.dtype)
        self.m.write(
            tmp, None if value.alloc.data is None else self.m.read(value, "copy").reshape(dst.shape)
        )
        return tmp

    def accumulate(self, dst: Tile, other: Any, op: str) -> Tile:
        """``dst += other`` (and ``-=``, ``*=``): a matmul just issued accumulates in
        ``dst``'s PSUM bank; anything else is an elementwise op in place."""
        if (
            op == "add"
            and dst.buffer.kind == "psum"
            and self._fresh(other)
            and self.m.trace[-1].op == "nc_matmul"
            and self._can_retarget(dst, other)
        ):
            self._retarget(dst, other, accumulate=True)
            return dst
        self.binary(op, dst, other, out=dst)
        return dst

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
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            m.fail("isa", f"nl.{op}: shapes {shapes} do not broadcast")
        dst = out if out is not None else self.new(shape, self._dtype(dtype, _dtype_of(*tiles)))
        if dst.shape != tuple(shape):
            m.fail("isa", f"nl.{op}: result {tuple(shape)} does not fit dst {dst.shape}")
        for t in tiles:
            if not t.buffer.on_chip:
                m.fail("isa", f"nl.{op}: operand {t.alloc.name!r} is in HBM; nl.load it first")
        if mask is not None:
            dst = dst.clip(mask)
            a = _clip_like(a, mask, tuple(shape))
            b = _clip_like(b, mask, tuple(shape))
        a, b = (t.checked() if isinstance(t, Tile) else t for t in (a, b))
        va = a if not isinstance(a, Tile) else m.read(a, f"nl.{op}")
        vb = b if not isinstance(b, Tile) else m.read(b, f"nl.{op}")
        if m.compute:
            m.write(dst, np.broadcast_to(fn.fn(va, vb), dst.shape))
        else:
            m.write(dst, None)
        full = [t for t in (a, b) if isinstance(t, Tile) and t.free_size == dst.free_size]
        if len(full) < 2:
            # A scalar or a [P, 1] column: one streamed input (tensor_scalar).
            name, inputs = "tensor_scalar", 1
        else:
            fast = any(t.buffer.kind == "psum" for t in full) or (
                op in _FAST_VECTOR_OPS and all(t.dtype.name == "bfloat16" for t in full)
            )
            name, inputs = "tensor_tensor", 1 if fast else 2
        self.isa._emit(
            name,
            "vector",
            tiles,
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            inputs=inputs,
        )
        return dst

    def unary(self, op: Op, x: Any, dtype: Any = None, mask: Any = None) -> Tile:
        src = self._tile(f"nl.{op.name}", x)
        dst = self.new(src.shape, self._dtype(dtype, src.dtype))
        src, view = (src.clip(mask), dst.clip(mask)) if mask is not None else (src, dst)
        if op.name == "copy":
            self._copy(view, src)
        else:
            self.isa.activation(view, op, src)
        return dst

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
        if mask is not None:
            # The result keeps its full shape; only the masked rows are computed.
            whole = src.shape
            src = src.clip(mask)
            dst = _clip_like(full, mask, whole) if keepdims else full
        self.isa.tensor_reduce(dst, OPS[base[op]], src, axes, negate=negate, keepdims=keepdims)
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
        dst = self.new((a.shape[-1], b.shape[-1]), np.dtype(np.float32), "psum")
        self.isa.nc_matmul(dst, a, b)
        return dst

    def transpose(self, x: Any, dtype: Any = None, mask: Any = None) -> Tile:
        src = self._in_sbuf("nl.transpose", self._tile("nl.transpose", x))
        if src.ndim != 2:
            self.m.fail("isa", f"nl.transpose: 2-D tiles only, got {src.shape}")
        dst = self.new((src.shape[1], src.shape[0]), self._dtype(dtype, src.dtype), "psum")
        self.isa.nc_transpose(dst, src)
        return dst

    def loop_reduce(
        self, x: Any, op: Any, loop_indices: Any, dtype: Any = None, mask: Any = None
    ) -> Tile:
        """``nl.loop_reduce``: per call site, the first iteration of the named loops
        starts the accumulator; later ones combine into it (``tensor_tensor``)."""
        src = self._tile("nl.loop_reduce", x)
        fn = self.isa._op("nl.loop_reduce", op, 2)
        indices = loop_indices if isinstance(loop_indices, list | tuple) else [loop_indices]
        site = self.m.site()
        acc = self._reduce.get(site)
        if acc is None or all(int(i) == 0 for i in indices):
            acc = self.new(src.shape, self._dtype(dtype, src.dtype))
            self.isa.tensor_copy(acc, src)
            self._reduce[site] = acc
        else:
            self.binary(fn.name, acc, src, mask=mask, out=acc)
        return acc

    # --- loads and stores ---------------------------------------------------------------

    def load(self, src: Any, mask: Any = None, dtype: Any = None) -> Tile:
        src = self._tile("nl.load", src)
        dst = self.new(src.shape, self._dtype(dtype, src.dtype))
        self.isa.dma_copy(dst.clip(mask), src.clip(mask))
        return dst

    def load_transpose2d(self, src: Any, mask: Any = None, dtype: Any = None) -> Tile:
        src = self._tile("nl.load_transpose2d", src)
        if src.ndim != 2:
            self.m.fail("isa", f"nl.load_transpose2d: 2-D tiles only, got {src.shape}")
        dst = self.new((src.shape[1], src.shape[0]), self._dtype(dtype, src.dtype))
        self.isa.dma_transpose(dst, src)
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
        self.isa.dma_copy(dst.clip(mask), src.clip(mask))


# --- the modules ------------------------------------------------------------------------


def _passthrough(func: Callable[..., Any] | None = None, **_options: Any) -> Any:
    """``nki.baremetal``/``benchmark``/``simulate_kernel``: on the simulator, the kernel itself."""
    from kernelopt.sim.namespace import JitKernel

    if func is None:
        return JitKernel
    return func if isinstance(func, JitKernel) else JitKernel(func)


def _directive(*args: Any, **_: Any) -> Any:
    """A compiler directive: ``@directive``, ``@directive(...)`` or a plain call."""
    if len(args) == 1 and callable(args[0]):
        return args[0]
    return lambda func=None, *rest, **kw: func


class _AnyType:
    """``nt.tensor[shape, dtype]`` annotations: accepted, meaningless here."""

    def __getitem__(self, key: Any) -> _AnyType:
        return self


def build_beta1_modules(
    machine: Machine, isa: Isa, nl2: types.ModuleType, jit: Callable[..., Any]
) -> tuple[Beta1, dict[str, types.ModuleType]]:
    """``neuronxcc``, ``neuronxcc.nki`` and its ``language``/``isa``/``typing`` modules,
    and the tile semantics the machine takes on when the kernel imports them."""
    beta = Beta1(machine, isa)
    nl = types.ModuleType("neuronxcc.nki.language", "nki.language (beta 1) as simulated")
    for name in ("affine_range", "sequential_range", "static_range", "tile_size", "ds"):
        setattr(nl, name, getattr(nl2, name))
    for name, buffer in BUFFERS.items():
        setattr(nl, name, buffer)
    for name in dir(nl2):
        value = getattr(nl2, name)
        if isinstance(value, np.dtype):
            setattr(nl, name, value)
    nl.tfloat32 = np.dtype(np.float32)

    def op_call(op: Op, *args: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Tile:
        if op.arity == 1:
            return beta.unary(op, args[0], dtype, mask)
        return beta.binary(op.name, args[0], args[1], dtype, mask)

    for name, op in OPS.items():
        setattr(nl, name, CallableOp(op.name, op.arity, op.fn, op.reduce, impl=op_call))
    nl.true_divide = nl.divide

    def reducer(kind: str) -> Callable[..., Tile]:
        def reduce(
            x: Any,
            axis: Any,
            dtype: Any = None,
            mask: Any = None,
            keepdims: bool = False,
            **_: Any,
        ) -> Tile:
            return beta.reduce(kind, x, axis, dtype, keepdims, mask)

        reduce.__name__ = kind
        return reduce

    for kind in ("sum", "mean", "max", "min", "prod"):
        setattr(nl, kind, reducer(kind))

    def softmax(x: Any, axis: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Tile:
        # exp(x - max) / sum, as the instructions it lowers to.
        top = beta.reduce("max", x, axis, keepdims=True, mask=mask)
        shifted = beta.binary("subtract", x, top, mask=mask)
        e = beta.unary(OPS["exp"], shifted, mask=mask)
        total = beta.reduce("sum", e, axis, keepdims=True, mask=mask)
        return beta.binary("divide", e, total, dtype, mask)

    nl.softmax = softmax
    nl.par_dim = ParDim
    nl.arange = indexing.arange
    nl.mgrid = indexing.mgrid

    def ndarray(shape: Any, dtype: Any, buffer: Any = None, name: str = "", **_: Any) -> Any:
        return beta.ndarray(shape, dtype, buffer, name)

    def zeros(
        shape: Any,
        dtype: Any,
        buffer: Any = None,
        name: str = "",
        lazy_initialization: bool = False,
        **_: Any,
    ) -> Any:
        return beta.ndarray(shape, dtype, buffer, name, "lazy" if lazy_initialization else 0.0)

    def full(
        shape: Any, fill_value: Any, dtype: Any, buffer: Any = None, name: str = "", **_: Any
    ) -> Any:
        return beta.ndarray(shape, dtype, buffer, name, float(fill_value))

    nl.ndarray = ndarray
    nl.zeros = zeros
    nl.full = full
    nl.ones = lambda shape, dtype, buffer=None, name="", **_: full(shape, 1.0, dtype, buffer, name)
    nl.empty_like = lambda x, dtype=None, buffer=None, **_: ndarray(
        x.shape, dtype or x.dtype, buffer
    )
    nl.zeros_like = lambda x, dtype=None, buffer=None, **_: zeros(x.shape, dtype or x.dtype, buffer)
    nl.ones_like = lambda x, dtype=None, buffer=None, **_: full(
        x.shape, 1.0, dtype or x.dtype, buffer
    )
    nl.shared_constant = beta.shared_constant
    nl.load = beta.load
    nl.load_transpose2d = beta.load_transpose2d
    nl.store = beta.store
    nl.matmul = beta.matmul
    nl.transpose = beta.transpose
    nl.loop_reduce = beta.loop_reduce
    nl.program_id = lambda axis=0: 0
    nl.num_programs = lambda axes=None: 1
    nl.device_print = lambda *args, **kwargs: None

    nisa = types.ModuleType("neuronxcc.nki.isa", "nki.isa (beta 1) as simulated")
    _add_isa(nisa, beta, isa)
    add_enums(nisa)
    nisa.get_nc_version = lambda: (
        nisa.nc_version.gen2 if machine.params.name == "trn1" else nisa.nc_version.gen3
    )

    compiler = types.ModuleType("neuronxcc.nki.compiler", "nki.compiler (beta 1) as simulated")
    # Compiler directives (skip_middle_end_transformations, enable_stack_allocator,
    # ...) change how the kernel is compiled, not what it computes: decorators
    # and calls that hand back what they were given.
    compiler.__getattr__ = lambda name: _directive  # type: ignore[attr-defined]

    typing = types.ModuleType("neuronxcc.nki.typing", "nki.typing (beta 1) as simulated")
    typing.tensor = _AnyType()
    nki = types.ModuleType("neuronxcc.nki", "neuronxcc.nki as simulated by kernelopt")
    nki.jit = jit
    for name in ("baremetal", "benchmark", "simulate_kernel", "profile", "trace"):
        setattr(nki, name, _passthrough)
    nki.language, nki.isa, nki.typing, nki.compiler = nl, nisa, typing, compiler
    root = types.ModuleType("neuronxcc", "neuronxcc as simulated by kernelopt")
    root.nki = nki
    modules = {
        "neuronxcc": root,
        "neuronxcc.nki": nki,
        "neuronxcc.nki.language": nl,
        "neuronxcc.nki.isa": nisa,
        "neuronxcc.nki.typing": typing,
        "neuronxcc.nki.compiler": compiler,
    }
    return beta, modules


def _add_isa(nisa: types.ModuleType, beta: Beta1, isa: Isa) -> None:
    """The beta-1 ISA calls: the same instructions, returning a new tile."""

    def masked(tile: Tile, mask: Any) -> Tile:
        return tile.clip(mask) if mask is not None else tile

    def nc_matmul(stationary: Any, moving: Any, *, mask: Any = None, **kwargs: Any) -> Tile:
        s, mv = beta._tile("nc_matmul", stationary), beta._tile("nc_matmul", moving)
        dst = beta.new((s.shape[-1], mv.shape[-1]), np.dtype(np.float32), "psum")
        isa.nc_matmul(dst, s, mv, **{k: v for k, v in kwargs.items() if k != "dtype"})
        return dst

    def nc_transpose(
        data: Any, *, engine: Any = None, mask: Any = None, dtype: Any = None, **_: Any
    ) -> Tile:
        src = beta._tile("nc_transpose", data)
        from kernelopt.sim.enums import engine_of

        kind = "sbuf" if engine_of(engine) == "vector" else "psum"
        dst = beta.new((src.shape[1], src.shape[0]), beta._dtype(dtype, src.dtype), kind)
        isa.nc_transpose(dst, src, engine=engine)
        return dst

    def activation(
        op: Any,
        data: Any,
        *,
        bias: Any = None,
        scale: Any = 1.0,
        mask: Any = None,
        dtype: Any = None,
        reduce_op: Any = None,
        reduce_res: Any = None,
        **_: Any,
    ) -> Tile:
        src = beta._tile("activation", data)
        dst = beta.new(src.shape, beta._dtype(dtype, src.dtype))
        isa.activation(
            masked(dst, mask),
            op,
            masked(src, mask),
            bias=bias,
            scale=scale,
            reduce_op=reduce_op,
            reduce_res=reduce_res,
        )
        return dst

    def activation_reduce(
        op: Any,
        data: Any,
        *,
        reduce_op: Any,
        reduce_res: Any,
        bias: Any = None,
        scale: Any = 1.0,
        mask: Any = None,
        dtype: Any = None,
        **_: Any,
    ) -> Tile:
        src = beta._tile("activation_reduce", data)
        dst = beta.new(src.shape, beta._dtype(dtype, src.dtype))
        isa.activation_reduce(
            masked(dst, mask), op, masked(src, mask), reduce_op, reduce_res, bias=bias, scale=scale
        )
        return dst

    def tensor_tensor(
        data1: Any,
        data2: Any,
        op: Any,
        *,
        dtype: Any = None,
        mask: Any = None,
        engine: Any = None,
        **_: Any,
    ) -> Tile:
        a, b = beta._tile("tensor_tensor", data1), beta._tile("tensor_tensor", data2)
        dst = beta.new(a.shape, beta._dtype(dtype, _dtype_of(a, b)))
        isa.tensor_tensor(masked(dst, mask), masked(a, mask), masked(b, mask), op, engine=engine)
        return dst

    def tensor_scalar(
        data: Any,
        op0: Any,
        operand0: Any,
        reverse0: bool = False,
        op1: Any = None,
        operand1: Any = None,
        reverse1: bool = False,
        *,
        dtype: Any = None,
        mask: Any = None,
        engine: Any = None,
        **_: Any,
    ) -> Tile:
        src = beta._tile("tensor_scalar", data)
        dst = beta.new(src.shape, beta._dtype(dtype, src.dtype))
        isa.tensor_scalar(
            masked(dst, mask),
            masked(src, mask),
            op0,
            operand0,
            reverse0,
            op1,
            operand1,
            reverse1,
            engine=engine,
        )
        return dst

    def scalar_tensor_tensor(
        *,
        data: Any,
        op0: Any,
        operand0: Any,
        op1: Any,
        operand1: Any,
        reverse0: bool = False,
        reverse1: bool = False,
        dtype: Any = None,
        mask: Any = None,
        **_: Any,
    ) -> Tile:
        src = beta._tile("scalar_tensor_tensor", data)
        dst = beta.new(src.shape, beta._dtype(dtype, src.dtype))
        isa.scalar_tensor_tensor(
            masked(dst, mask),
            masked(src, mask),
            op0,
            operand0,
            op1,
            masked(beta._tile("scalar_tensor_tensor", operand1), mask),
            reverse0=reverse0,
            reverse1=reverse1,
        )
        return dst

    def tensor_copy(
        src: Any, *, dtype: Any = None, mask: Any = None, engine: Any = None, **_: Any
    ) -> Tile:
        s = beta._tile("tensor_copy", src)
        dst = beta.new(s.shape, beta._dtype(dtype, s.dtype))
        isa.tensor_copy(masked(dst, mask), masked(s, mask), engine=engine)
        return dst

    def tensor_reduce(
        op: Any,
        data: Any,
        axis: Any,
        *,
        dtype: Any = None,
        mask: Any = None,
        negate: bool = False,
        keepdims: bool = False,
        **_: Any,
    ) -> Tile:
        fn = isa._op("tensor_reduce", op, 2)
        kind = {"add": "sum", "maximum": "max", "minimum": "min", "multiply": "prod"}.get(fn.name)
        if kind is None:
            beta.m.fail("isa", f"tensor_reduce: {fn!r} cannot reduce")
        return beta.reduce(kind, data, axis, dtype, keepdims, mask, negate=negate)

    def memset(
        shape: Any, value: Any, dtype: Any, *, mask: Any = None, engine: Any = None, **_: Any
    ) -> Tile:
        dst = beta.new(tuple(shape), beta._dtype(dtype, np.dtype(np.float32)))
        isa.memset(masked(dst, mask), value, engine=engine)
        return dst

    def reciprocal(data: Any, *, dtype: Any = None, mask: Any = None, **_: Any) -> Tile:
        # nki.isa.reciprocal runs on VectorE: one streamed input.
        src = beta._tile("reciprocal", data)
        dst = beta.new(src.shape, beta._dtype(dtype, src.dtype))
        s, d = masked(src, mask), masked(dst, mask)
        values = beta.m.read(s, "reciprocal")
        beta.m.write(d, None if values is None else 1.0 / values)
        isa._emit("reciprocal", "vector", [s], [d], partitions=d.partitions, free=d.free_size)
        return dst

    def iota(expr: Any, dtype: Any, *, mask: Any = None, **_: Any) -> Tile:
        """The values of an index expression as a tile (GpSimd)."""
        if not isinstance(expr, indexing.IndexExpr):
            beta.m.fail("isa", f"iota: expected an nl.arange/nl.mgrid expression, got {expr!r}")
        shape = expr.shape if expr.ndim > 1 else (expr.size, 1)
        dst = beta.new(shape, beta._dtype(dtype, np.dtype(np.int32)))
        values = (expr.start + np.arange(expr.size)).reshape(shape)
        beta.m.write(dst, values.astype(np.float32) if beta.m.compute else None)
        isa._emit("iota", "gpsimd", [], [dst], partitions=dst.partitions, free=dst.free_size)
        return dst

    def dma_copy(*, dst: Any, src: Any, mask: Any = None, **kwargs: Any) -> None:
        isa.dma_copy(
            masked(beta._tile("dma_copy", dst), mask),
            masked(beta._tile("dma_copy", src), mask),
            **kwargs,
        )

    for fn in (
        nc_matmul,
        nc_transpose,
        activation,
        activation_reduce,
        tensor_tensor,
        tensor_scalar,
        scalar_tensor_tensor,
        tensor_copy,
        tensor_reduce,
        memset,
        reciprocal,
        iota,
        dma_copy,
    ):
        setattr(nisa, fn.__name__, fn)
