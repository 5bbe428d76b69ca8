"""VectorE, ScalarE and GpSimd calls of the simulator's ``nki.isa``."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from kernelopt.sim.isa_reduce import ReduceCalls
from kernelopt.sim.ops import OPS
from kernelopt.sim.tensor import Tile

_FAST_VECTOR_OPS = frozenset({"add", "multiply", "subtract"})
# Reading ScalarE's accumulator out (ActReadAccumulator) after an activation that sums
# its row costs ~64 cycles (NKI architecture guide, NeuronCore-v2 ScalarE "Pipelined
# Reduction").
ACCUMULATOR_READ_CYCLES = 64
_BF16 = "bfloat16"


class EngineCalls(ReduceCalls):
    """The calls VectorE, ScalarE and GpSimd run."""

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
        name = "tensor_tensor"
        fn = self._op(name, op, 2)
        dst, (a, b) = self._elementwise_operands(name, dst, data1=data1, data2=data2)
        unit = self._engine(name, engine, "vector", ("vector", "gpsimd"))
        if unit == "gpsimd":
            self._no_psum(name, dst, a, b)
        va, vb = self.m.read(a, name), self.m.read(b, name)
        self.m.write(dst, None if va is None else fn.fn(va, vb))
        # One pass when an input is in PSUM or both are bf16 SBUF with add/mul/sub: VectorE's
        # fast mode (the Trn2 guide); GpSimd streams both inputs. That N includes the
        # PSUM read (``sim.cost.duration_ns``).
        fast = "psum" in (a.buffer.kind, b.buffer.kind) or (
            unit == "vector"
            and fn.name in _FAST_VECTOR_OPS
            and a.dtype.name == _BF16
            and b.dtype.name == _BF16
        )
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
        default = self.scalar_default(op0, op1)
        unit = self._engine(name, engine, default, ("vector", "scalar", "gpsimd"))
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
            other = self._value(operand, name, src.ndim)
            if value is not None:
                value = fn.fn(other, value) if reverse else fn.fn(value, other)
        self.m.write(dst, value)
        self._emit(name, unit, reads, [dst], partitions=dst.partitions, free=dst.free_size)

    def scalar_default(self, op0: Any, op1: Any = None) -> str:
        """The engine the compiler gives a tensor_scalar left to it: ScalarE when the
        chip's compiler does so and ScalarE implements the operators, else VectorE."""
        ops = [self._op("tensor_scalar", o, 2).name for o in (op0, op1) if o is not None]
        scalar_ok = ops in (["multiply"], ["add"], ["multiply", "add"])
        return "scalar" if scalar_ok and self.m.params.tensor_scalar_on_scalar_engine else "vector"

    def tensor_copy(self, dst: Any, src: Any, engine: Any = None, name: str | None = None) -> None:
        name = "tensor_copy"
        dst, (s,) = self._elementwise_operands(name, dst, src=src)
        unit = self._engine(name, engine, "vector", ("vector", "scalar", "gpsimd"))
        if unit == "gpsimd":
            self._no_psum(name, dst, s)
        self.m.write(dst, self.m.read(s, name))
        self._emit(name, unit, [s], [dst], partitions=dst.partitions, free=dst.free_size)

    def reciprocal(self, dst: Any, data: Any, name: str | None = None) -> None:
        """1 / data on VectorE, in fp32 (nki.isa.reciprocal, destination first)."""
        name = "reciprocal"
        dst, (src,) = self._elementwise_operands(name, dst, data=data)
        value = self.m.read(src, name)
        self.m.write(dst, None if value is None else 1.0 / value)
        self._emit(
            name,
            "vector",
            [src],
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            inputs=self.m.params.reciprocal_cycles_per_element,
        )

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
        self._activation(
            "activation", dst, op, data, bias, scale, reduce_op, reduce_res, reduce_cmd
        )

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
        reduce_cmd: Any = None,
    ) -> None:
        """op(data * scale + bias) on ScalarE, optionally also reduced along the free axes."""
        fn = self._op(name, op, 1)
        dst, (src,) = self._elementwise_operands(name, dst, data=data)
        reads = [src]
        scale_v = self._column(name, "scale", scale, src.partitions)
        bias_v = None if bias is None else self._column(name, "bias", bias, src.partitions)
        # NKI API errors (err_activation_scale_invalid_type, err_activation_bias_invalid_
        # type): a scale vector is float32; a bias vector float32, float16 or bfloat16.
        for role, operand, allowed in (
            ("scale", scale_v, ("float32",)),
            ("bias", bias_v, ("float32", "float16", "bfloat16")),
        ):
            if isinstance(operand, Tile) and operand.dtype.name not in allowed:
                self.m.fail(
                    "isa",
                    f"{name}: a {role} vector must be {' or '.join(allowed)}, "
                    f"got {operand.dtype.name}",
                )
        for operand in (scale_v, bias_v):
            if isinstance(operand, Tile):
                reads.append(operand)
        writes = [dst]
        if reduce_res is not None:
            reduce_res = self._tile(name, "reduce_res", reduce_res)
            self._in(name, "reduce_res", reduce_res, "sbuf", "psum")
            if reduce_res.partitions != src.partitions or reduce_res.size != src.partitions:
                self.m.fail(
                    "isa",
                    f"{name}: reduce_res must hold one value per partition, got {reduce_res.shape}",
                )
            writes.append(reduce_res)
        value = self.m.read(src, name)
        sv = self._value(scale_v, name, src.ndim)
        bv = None if bias_v is None else self._value(bias_v, name, src.ndim)
        result = None
        if value is not None:
            x = value * sv if sv is not None else value
            if bv is not None:
                x = x + bv
            result = fn.fn(x)
        self.m.write(dst, result)
        self._accumulate(name, result, src.partitions, reduce_op, reduce_res, reduce_cmd)
        extra = ACCUMULATOR_READ_CYCLES if reduce_res is not None else 0
        self._emit(
            name,
            "scalar",
            reads,
            writes,
            partitions=dst.partitions,
            free=dst.free_size,
            extra_cycles=extra,
        )

    def _accumulate(
        self,
        name: str,
        result: np.ndarray | None,
        partitions: int,
        reduce_op: Any,
        reduce_res: Tile | None,
        reduce_cmd: Any,
        engine: str = "scalar",
    ) -> None:
        """An engine's per-partition accumulator registers (``reduce_cmd``; ScalarE's
        unless ``engine`` names another): ``reset`` sets them to zero, ``reduce``
        combines this result's reduction into them, ``reset_reduce`` stores it there
        (the nki.isa.activation page: "Reset reduce_regs to zero and then store the
        reduction result"; a max stored so keeps an all-negative row's max);
        ``reduce_res`` reads them out (or, with no command, this result's reduction
        alone, as ``activation_reduce`` does)."""
        cmd = str(reduce_cmd or "").rpartition(".")[2]
        if reduce_res is None and cmd in ("", "idle"):
            return
        reducer = self._op(name, reduce_op if reduce_op is not None else OPS["add"], 2)
        if reducer.reduce is None:
            self.m.fail("isa", f"{name}: {reducer!r} cannot reduce")
        reduced = None
        if result is not None:
            reduced = reducer.reduce(result.reshape(partitions, -1), axis=1)
        acc = self.m.accumulators.get(engine)
        if cmd == "reset":
            acc = np.zeros(partitions, np.float32)
        elif cmd == "reset_reduce":
            acc = reduced
        elif cmd == "reduce" and reduced is not None:
            acc = reduced if acc is None else reducer.fn(acc, reduced)
        self.m.accumulators[engine] = acc
        if reduce_res is not None:
            out = reduced if cmd in ("", "idle") else acc
            self.m.write(reduce_res, None if out is None else np.reshape(out, reduce_res.shape))

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
        scalar = self._value(column, name, src.ndim)
        rhs = self.m.read(other, name)
        if value is not None:
            value = first.fn(scalar, value) if reverse0 else first.fn(value, scalar)
            value = second.fn(rhs, value) if reverse1 else second.fn(value, rhs)
        self.m.write(dst, value)
        self._emit(
            name, "vector", reads, [dst], partitions=dst.partitions, free=dst.free_size, inputs=2
        )

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
