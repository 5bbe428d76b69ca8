"""``nki.isa`` for the simulator: rule checks, numpy semantics, one trace record per call.

Every call checks its ISA rules first (so trace-only runs catch the same
violations), then computes on float32 data unless the machine is trace-only,
then appends an ``Instruction``.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim.enums import engine_of
from kernelopt.sim.language import Op
from kernelopt.sim.tensor import Tile
from kernelopt.sim.trace import Instruction

if TYPE_CHECKING:
    from kernelopt.sim.machine import Machine

_FAST_VECTOR_OPS = frozenset({"add", "multiply", "subtract"})
_BF16 = "bfloat16"


class Isa:
    """The ISA calls, bound to one machine."""

    def __init__(self, machine: Machine) -> None:
        self.m = machine

    # --- helpers ------------------------------------------------------------------------

    def _tile(self, op: str, role: str, value: Any) -> Tile:
        if not isinstance(value, Tile):
            self.m.fail("isa", f"{op}: {role} must be a tensor tile, got {type(value).__name__}")
        return value

    def _in(self, op: str, role: str, tile: Tile, *kinds: str) -> None:
        if tile.buffer.kind not in kinds:
            wanted = " or ".join(k.upper() for k in kinds)
            self.m.fail(
                "isa",
                f"{op}: {role} must be in {wanted}, got {tile.buffer.kind.upper()} tensor "
                f"{tile.alloc.name!r}",
            )

    def _same_shape(self, op: str, dst: Tile, role: str, other: Tile) -> None:
        if dst.shape != other.shape:
            self.m.fail("isa", f"{op}: shape mismatch: dst {dst.shape} vs {role} {other.shape}")

    def _op(self, name: str, value: Any, arity: int) -> Op:
        if not isinstance(value, Op) or value.arity != arity:
            kind = (
                "a binary nl op (nl.add, nl.multiply, ...)"
                if arity == 2
                else ("an activation (nl.exp, nl.relu, ...)")
            )
            self.m.fail("isa", f"{name}: op must be {kind}, got {value!r}")
        return value

    def _column(self, op: str, role: str, value: Any, partitions: int) -> Tile | float:
        """A scalar operand: a Python number or a [P, 1] on-chip tile."""
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        tile = self._tile(op, role, value)
        self._in(op, role, tile, "sbuf", "psum")
        if tile.shape != (partitions, 1):
            self.m.fail(
                "isa",
                f"{op}: {role} must be a scalar or a [{partitions}, 1] tile, got {tile.shape}",
            )
        return tile

    def _engine(self, op: str, value: Any, default: str, allowed: tuple[str, ...]) -> str:
        """The engine ``engine=`` asks for (``default`` when unknown), checked against ``allowed``."""
        choice = engine_of(value)
        if choice is None:
            self.m.fail("isa", f"{op}: engine must be a nisa.engine member, got {value!r}")
        engine = choice or default
        if engine not in allowed:
            self.m.fail(
                "isa", f"{op}: cannot run on the {engine} engine (allowed: {', '.join(allowed)})"
            )
        return engine

    def _value(self, operand: Tile | float, what: str) -> Any:
        if isinstance(operand, Tile):
            return self.m.read(operand, what)
        return operand

    def _emit(
        self, op: str, engine: str, reads: list[Tile], writes: list[Tile], **cost: Any
    ) -> None:
        self.m.emit(
            Instruction(
                op=op,
                engine=engine,
                line=self.m.line(),
                reads=tuple(t.region for t in reads),
                writes=tuple(t.region for t in writes),
                shape=writes[0].shape,
                psum_read=any(t.buffer.kind == "psum" for t in reads),
                **cost,
            )
        )

    # --- TensorE ------------------------------------------------------------------------

    def nc_matmul(
        self,
        dst: Any,
        stationary: Any,
        moving: Any,
        is_stationary_onezero: bool = False,
        is_moving_onezero: bool = False,
        is_transpose: bool = False,
        accumulate: bool | None = None,
        tile_position: Any = (),
        tile_size: Any = (),
        perf_mode: Any = None,
        name: str | None = None,
    ) -> None:
        # The onezero hints, tile_position/tile_size (PE tiling) and perf_mode
        # change neither the result nor, in this model, the cost.
        m, op = self.m, "nc_matmul"
        dst = self._tile(op, "dst", dst)
        stationary = self._tile(op, "stationary", stationary)
        moving = self._tile(op, "moving", moving)
        self._in(op, "dst", dst, "psum")
        self._in(op, "stationary", stationary, "sbuf")
        self._in(op, "moving", moving, "sbuf")
        for role, t in (("dst", dst), ("stationary", stationary), ("moving", moving)):
            if t.ndim != 2:
                m.fail("isa", f"{op}: {role} must be 2-D, got shape {t.shape}")
        k, mm = stationary.shape
        k2, n = moving.shape
        p = m.params
        if k > p.partitions:
            m.fail("isa", f"{op}: partition (contraction) size K={k} > {p.partitions}")
        if mm > p.stationary_fmax:
            m.fail("isa", f"{op}: stationary free size M={mm} > {p.stationary_fmax}")
        if n > p.moving_fmax:
            m.fail("isa", f"{op}: moving free size N={n} > {p.moving_fmax}")
        if k2 != k:
            m.fail("isa", f"{op}: contraction mismatch: stationary K={k}, moving K={k2}")
        if dst.shape != (mm, n):
            m.fail("isa", f"{op}: shape mismatch: dst {dst.shape}, expected ({mm}, {n})")
        if is_transpose:
            # A pass-through transpose (what nc_transpose lowers to) keeps the
            # data type; it does not accumulate.
            if dst.dtype not in (stationary.dtype, np.float32):
                m.fail(
                    "isa",
                    f"{op}: transpose dst dtype {dst.dtype} must be fp32 or match {stationary.dtype}",
                )
            accumulate = False
        elif dst.dtype != np.float32:
            m.fail("isa", f"{op}: PSUM accumulation must be fp32, dst is {dst.dtype}")
        written = dst.alloc.written[dst.index]
        if accumulate is None:
            acc = bool(written.any())
            partial = acc and not bool(written.all())
        else:
            acc, partial = bool(accumulate), False
        a = m.read(stationary, op)
        b = m.read(moving, op)
        reads = [stationary, moving]
        if acc:
            reads.append(dst)
            if partial:
                old = dst.alloc.data[dst.index] if dst.alloc.data is not None else None
            else:
                old = m.read(dst, op)
        if a is not None and b is not None:
            prod = a.T @ b
            if acc and partial:
                prod = np.where(written, old + prod, prod)
            elif acc:
                prod += old
            m.write(dst, prod)
        else:
            m.write(dst, None)
        wide = stationary.dtype.itemsize >= 4 or moving.dtype.itemsize >= 4
        self._emit(
            op,
            "tensor",
            reads,
            [dst],
            partitions=k,
            free=n,
            stationary_free=mm,
            wide=wide,
            macs=k * mm * n,
        )

    def nc_transpose(
        self, dst: Any, data: Any, engine: Any = None, name: str | None = None
    ) -> None:
        m, op = self.m, "nc_transpose"
        dst = self._tile(op, "dst", dst)
        data = self._tile(op, "data", data)
        if data.ndim != 2:
            m.fail("isa", f"{op}: data must be 2-D, got shape {data.shape}")
        pdim, fdim = data.shape
        # TensorE transposes up to 128 x 128 from SBUF into PSUM; VectorE up to
        # 32 x 32 between SBUF and PSUM. Unknown: TensorE, as the compiler does.
        unit = self._engine(op, engine, "tensor", ("tensor", "vector"))
        if unit == "tensor":
            self._in(op, "dst", dst, "psum")
            self._in(op, "data", data, "sbuf")
            limit = m.params.partitions
        else:
            self._in(op, "dst", dst, "sbuf", "psum")
            self._in(op, "data", data, "sbuf", "psum")
            limit = m.params.vector_transpose_max
        if pdim > limit or fdim > limit:
            m.fail("isa", f"{op}: data {data.shape} exceeds {limit} x {limit} on the {unit} engine")
        if dst.shape != (fdim, pdim):
            m.fail("isa", f"{op}: shape mismatch: dst {dst.shape}, expected ({fdim}, {pdim})")
        if dst.dtype not in (data.dtype, np.float32):
            m.fail("isa", f"{op}: dst dtype {dst.dtype} must be fp32 or match data {data.dtype}")
        values = m.read(data, op)
        m.write(dst, None if values is None else values.T)
        self._emit(
            op,
            unit,
            [data],
            [dst],
            partitions=pdim,
            free=fdim,
            wide=data.dtype.itemsize >= 4,
            macs=0,
        )

    # --- DMA -------------------------------------------------------------------------------

    def dma_copy(
        self,
        dst: Any,
        src: Any,
        dst_rmw_op: Any = None,
        oob_mode: Any = None,
        dge_mode: Any = None,
        name: str | None = None,
    ) -> None:
        m, op = self.m, "dma_copy"
        dst = self._tile(op, "dst", dst)
        src = self._tile(op, "src", src)
        if dst.shape != src.shape:
            squeeze = tuple(d for d in dst.shape if d != 1) == tuple(d for d in src.shape if d != 1)
            if not squeeze:
                m.fail("isa", f"{op}: shape mismatch: dst {dst.shape} vs src {src.shape}")
        rmw = None if dst_rmw_op is None else self._op(op, dst_rmw_op, 2)
        values = m.read(src, op)
        reads = [src]
        if rmw is not None:
            # Read-modify-write: dst = dst <op> src, done by the DMA engine.
            old = m.read(dst, op)
            reads.append(dst)
            if values is not None:
                values = rmw.fn(old, values.reshape(dst.shape))
        m.write(dst, None if values is None else values.reshape(dst.shape))
        self._emit_dma(op, dst, src, 1.0, reads, software_dge=_software_dge(dge_mode))

    def dma_transpose(
        self,
        dst: Any,
        src: Any,
        axes: Any = None,
        priority: Any = None,
        dge_mode: Any = None,
        oob_mode: Any = None,
        name: str | None = None,
    ) -> None:
        m, op = self.m, "dma_transpose"
        dst = self._tile(op, "dst", dst)
        src = self._tile(op, "src", src)
        self._in(op, "dst", dst, "sbuf")
        self._in(op, "src", src, "hbm", "sbuf")
        # The documented permutations: [1, 0], [2, 1, 0] and [3, 1, 2, 0].
        allowed = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
        if src.ndim not in allowed:
            m.fail("isa", f"{op}: 2-D to 4-D tiles only, got src {src.shape}")
        perm = allowed[src.ndim] if axes is None else tuple(axes)
        if perm != allowed[src.ndim]:
            m.fail(
                "isa",
                f"{op}: axes {perm} not supported for a {src.ndim}-D tile (use {allowed[src.ndim]})",
            )
        if dst.dtype != src.dtype:
            m.fail("isa", f"{op}: dtypes must match: dst {dst.dtype} vs src {src.dtype}")
        expected = tuple(src.shape[a] for a in perm)
        if dst.shape != expected:
            m.fail("isa", f"{op}: shape mismatch: dst {dst.shape}, expected {expected}")
        values = m.read(src, op)
        m.write(dst, None if values is None else values.transpose(perm))
        p = m.params
        eff = (
            p.dma_transpose_hbm_efficiency
            if src.buffer.kind == "hbm"
            else (p.dma_transpose_sbuf_efficiency)
        )
        # The DMA engine transposes fixed blocks of source rows x columns; the
        # block, not the strided source row, is the unit each descriptor moves.
        block = p.dma_transpose_block_rows * p.dma_transpose_block_columns * src.dtype.itemsize
        self._emit_dma(
            op,
            dst,
            src,
            eff,
            row_bytes=min(block, src.nbytes),
            software_dge=_software_dge(dge_mode),
        )

    def _emit_dma(
        self,
        op: str,
        dst: Tile,
        src: Tile,
        efficiency: float,
        reads: list[Tile] | None = None,
        row_bytes: int | None = None,
        software_dge: bool = False,
    ) -> None:
        self._emit(
            op,
            "dma",
            reads or [src],
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            nbytes=max(src.nbytes, dst.nbytes),
            row_bytes=min(src.row_bytes(), dst.row_bytes()) if row_bytes is None else row_bytes,
            hbm_read=src.nbytes if src.buffer.kind == "hbm" else 0,
            hbm_write=dst.nbytes if dst.buffer.kind == "hbm" else 0,
            transpose_efficiency=efficiency,
            software_dge=software_dge,
        )

    # --- VectorE / ScalarE / GpSimd -------------------------------------------------------

    def _elementwise_operands(self, op: str, dst: Any, **operands: Any) -> tuple[Tile, list[Tile]]:
        dst = self._tile(op, "dst", dst)
        self._in(op, "dst", dst, "sbuf", "psum")
        tiles = []
        for role, value in operands.items():
            t = self._tile(op, role, value)
            self._in(op, role, t, "sbuf", "psum")
            self._same_shape(op, dst, role, t)
            tiles.append(t)
        return dst, tiles

    def tensor_tensor(
        self, dst: Any, data1: Any, data2: Any, op: Any, engine: Any = None, name: str | None = None
    ) -> None:
        label = name
        name = "tensor_tensor"
        fn = self._op(name, op, 2)
        dst, (a, b) = self._elementwise_operands(name, dst, data1=data1, data2=data2)
        unit = self._engine(name, engine, "vector", ("vector", "gpsimd"))
        if unit == "gpsimd":
            self._no_psum(name, dst, a, b)
        va, vb = self.m.read(a, name), self.m.read(b, name)
        self.m.write(dst, None if va is None else fn.fn(va, vb))
        # One pass when an input is in PSUM or both are bf16 SBUF with add/mul/sub.
        fast = "psum" in (a.buffer.kind, b.buffer.kind) or (
            fn.name in _FAST_VECTOR_OPS and a.dtype.name == _BF16 and b.dtype.name == _BF16
        )
        del label
        self._emit(
            name,
            unit,
            [a, b],
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            inputs=1 if fast else 2,
        )

    def tensor_scalar(
        self,
        dst: Any,
        data: Any,
        op0: Any,
        operand0: Any,
        reverse0: bool = False,
        op1: Any = None,
        operand1: Any = None,
        reverse1: bool = False,
        engine: Any = None,
        name: str | None = None,
    ) -> None:
        name = "tensor_scalar"
        dst, (src,) = self._elementwise_operands(name, dst, data=data)
        unit = self._engine(name, engine, "vector", ("vector", "scalar", "gpsimd"))
        if unit == "gpsimd":
            self._no_psum(name, dst, src)
        steps = [
            (
                self._op(name, op0, 2),
                self._column(name, "operand0", operand0, src.partitions),
                reverse0,
            )
        ]
        if op1 is not None:
            steps.append(
                (
                    self._op(name, op1, 2),
                    self._column(name, "operand1", operand1, src.partitions),
                    reverse1,
                )
            )
        reads = [src] + [operand for _, operand, _ in steps if isinstance(operand, Tile)]
        value = self.m.read(src, name)
        for fn, operand, reverse in steps:
            other = self._value(operand, name)
            if value is not None:
                value = fn.fn(other, value) if reverse else fn.fn(value, other)
        self.m.write(dst, value)
        self._emit(name, unit, reads, [dst], partitions=dst.partitions, free=dst.free_size)

    def tensor_copy(self, dst: Any, src: Any, engine: Any = None, name: str | None = None) -> None:
        name = "tensor_copy"
        dst, (s,) = self._elementwise_operands(name, dst, src=src)
        unit = self._engine(name, engine, "vector", ("vector", "scalar", "gpsimd"))
        if unit == "gpsimd":
            self._no_psum(name, dst, s)
        self.m.write(dst, self.m.read(s, name))
        self._emit(name, unit, [s], [dst], partitions=dst.partitions, free=dst.free_size)

    def _no_psum(self, op: str, *tiles: Tile) -> None:
        for t in tiles:
            if t.buffer.kind == "psum":
                self.m.fail("isa", f"{op}: GpSimd cannot access PSUM ({t.alloc.name!r})")

    def activation(
        self,
        dst: Any,
        op: Any,
        data: Any,
        bias: Any = None,
        scale: Any = 1.0,
        reduce_op: Any = None,
        reduce_res: Any = None,
        reduce_cmd: Any = None,
        name: str | None = None,
    ) -> None:
        self._activation("activation", dst, op, data, bias, scale, reduce_op, reduce_res)

    def activation_reduce(
        self,
        dst: Any,
        op: Any,
        data: Any,
        reduce_op: Any,
        reduce_res: Any,
        bias: Any = None,
        scale: Any = 1.0,
        name: str | None = None,
    ) -> None:
        if reduce_res is None:
            self.m.fail("isa", "activation_reduce: reduce_res is required")
        self._activation("activation_reduce", dst, op, data, bias, scale, reduce_op, reduce_res)

    def _activation(
        self,
        name: str,
        dst: Any,
        op: Any,
        data: Any,
        bias: Any,
        scale: Any,
        reduce_op: Any,
        reduce_res: Any,
    ) -> None:
        """op(data * scale + bias) on ScalarE, optionally also reduced along the free axes."""
        fn = self._op(name, op, 1)
        dst, (src,) = self._elementwise_operands(name, dst, data=data)
        reads = [src]
        scale_v = self._column(name, "scale", scale, src.partitions)
        bias_v = None if bias is None else self._column(name, "bias", bias, src.partitions)
        for operand in (scale_v, bias_v):
            if isinstance(operand, Tile):
                reads.append(operand)
        writes = [dst]
        reducer = None
        if reduce_res is not None:
            reducer = self._op(name, reduce_op, 2)
            if reducer.reduce is None:
                self.m.fail("isa", f"{name}: {reducer!r} cannot reduce")
            reduce_res = self._tile(name, "reduce_res", reduce_res)
            self._in(name, "reduce_res", reduce_res, "sbuf", "psum")
            if reduce_res.partitions != src.partitions or reduce_res.size != src.partitions:
                self.m.fail(
                    "isa",
                    f"{name}: reduce_res must hold one value per partition, got {reduce_res.shape}",
                )
            writes.append(reduce_res)
        value = self.m.read(src, name)
        sv = self._value(scale_v, name)
        bv = None if bias_v is None else self._value(bias_v, name)
        result = None
        if value is not None:
            x = value * sv if sv is not None else value
            if bv is not None:
                x = x + bv
            result = fn.fn(x)
        self.m.write(dst, result)
        if reducer is not None:
            axes = tuple(range(1, len(src.shape)))
            reduced = None if result is None else reducer.reduce(result, axis=axes)
            self.m.write(
                reduce_res, None if reduced is None else np.reshape(reduced, reduce_res.shape)
            )
        self._emit(name, "scalar", reads, writes, partitions=dst.partitions, free=dst.free_size)

    def scalar_tensor_tensor(
        self,
        dst: Any,
        data: Any,
        op0: Any,
        operand0: Any,
        op1: Any,
        operand1: Any,
        reverse0: bool = False,
        reverse1: bool = False,
        name: str | None = None,
    ) -> None:
        """(data <op0> operand0) <op1> operand1 on VectorE; operand0 a scalar or column."""
        name = "scalar_tensor_tensor"
        dst, (src, other) = self._elementwise_operands(name, dst, data=data, operand1=operand1)
        first = self._op(name, op0, 2)
        second = self._op(name, op1, 2)
        column = self._column(name, "operand0", operand0, src.partitions)
        reads = [src, other] + ([column] if isinstance(column, Tile) else [])
        value = self.m.read(src, name)
        scalar = self._value(column, name)
        rhs = self.m.read(other, name)
        if value is not None:
            value = first.fn(scalar, value) if reverse0 else first.fn(value, scalar)
            value = second.fn(rhs, value) if reverse1 else second.fn(value, rhs)
        self.m.write(dst, value)
        self._emit(
            name, "vector", reads, [dst], partitions=dst.partitions, free=dst.free_size, inputs=2
        )

    def tensor_reduce(
        self,
        dst: Any,
        op: Any,
        data: Any,
        axis: Any,
        negate: bool = False,
        keepdims: bool = False,
        name: str | None = None,
    ) -> None:
        m, name = self.m, "tensor_reduce"
        fn = self._op(name, op, 2)
        if fn.reduce is None:
            m.fail(
                "isa",
                f"{name}: {fn!r} cannot reduce; use nl.add, nl.maximum, nl.minimum or nl.multiply",
            )
        dst = self._tile(name, "dst", dst)
        src = self._tile(name, "data", data)
        self._in(name, "dst", dst, "sbuf", "psum")
        self._in(name, "data", src, "sbuf", "psum")
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        norm = []
        for a in axes:
            if not isinstance(a, int) or not -src.ndim <= a < src.ndim:
                m.fail("isa", f"{name}: axis {a!r} out of range for data of shape {src.shape}")
            norm.append(a % src.ndim)
        if 0 in norm:
            m.fail("isa", f"{name}: cannot reduce the partition axis (axis 0); free axes only")
        kept = tuple((1 if keepdims else None) if i in norm else d for i, d in enumerate(src.shape))
        expected = tuple(d for d in kept if d is not None)
        if dst.shape != expected:
            m.fail("isa", f"{name}: shape mismatch: dst {dst.shape}, expected {expected}")
        value = m.read(src, name)
        if value is not None:
            value = fn.reduce(value, axis=tuple(norm), keepdims=keepdims)
            if negate:
                value = -value
        m.write(dst, value)
        self._emit(name, "vector", [src], [dst], partitions=src.partitions, free=src.free_size)

    def memset(self, dst: Any, value: Any, engine: Any = None, name: str | None = None) -> None:
        m, name = self.m, "memset"
        dst = self._tile(name, "dst", dst)
        self._in(name, "dst", dst, "sbuf", "psum")
        if not isinstance(value, numbers.Real):
            m.fail("isa", f"{name}: value must be a number, got {value!r}")
        # The compiler puts memsets on GpSimd (the public rung-2 profile shows
        # its PSUM memsets there) unless the kernel asks for VectorE.
        unit = self._engine(name, engine, "gpsimd", ("gpsimd", "vector"))
        self._fill(dst, float(value), unit)

    def zero_fill(self, tile: Tile) -> None:
        """``nl.zeros``: a memset on chip; HBM zeros come with the allocation."""
        if tile.buffer.on_chip:
            self._fill(tile, 0.0)
        else:
            self.m.write(tile, 0.0)

    def _fill(self, dst: Tile, value: float, unit: str = "gpsimd") -> None:
        self.m.write(dst, value)
        # A zero fill of a 2-byte dtype writes two elements per cycle.
        packed = value == 0.0 and dst.dtype.itemsize == 2
        self._emit(
            "memset",
            unit,
            [],
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            elements_per_cycle=2 if packed else 1,
        )


def _software_dge(mode: Any) -> bool:
    """Whether ``dge_mode`` asks for software descriptors (swdge) or none at all;
    unknown and hwdge get hardware descriptor generation on Trn2."""
    return str(mode) in ("dge_mode.swdge", "dge_mode.none")


ISA_CALLS = (
    "nc_matmul",
    "nc_transpose",
    "dma_copy",
    "dma_transpose",
    "tensor_tensor",
    "tensor_scalar",
    "tensor_copy",
    "activation",
    "activation_reduce",
    "scalar_tensor_tensor",
    "tensor_reduce",
    "memset",
)
