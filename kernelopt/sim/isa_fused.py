"""VectorE and GpSimd calls beyond plain elementwise work: scans, selects, statistics
and constants.

Semantics and costs follow the ``nki.isa`` reference of the ``neuronxcc.nki``
releases (Neuron SDK 2.2x, the docstrings of ``nki.isa.tensor_tensor_scan``,
``tensor_scalar_reduce``, ``affine_select``, ``bn_stats``, ``bn_aggr``,
``iota``): a scan costs 2N VectorE cycles, a tensor-scalar with a reduction
N + 64, ``bn_aggr`` 13N/3, and the GpSimd ``iota``/``affine_select`` 150 + N.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from kernelopt.sim import indexing
from kernelopt.sim.access import pattern_offsets
from kernelopt.sim.isa_base import IsaCore
from kernelopt.sim.ops import OPS
from kernelopt.sim.tensor import Tile

GPSIMD_START = 150  # GpSimd instruction start-up cycles (nki.isa.iota / affine_select docs)
MIN_II = 64  # minimum instruction initiation interval (nki.isa docs)
# tensor_scalar_cumulative's reset_reduce start per op1 (its v2.27.0 page's pseudocode).
_CUMULATIVE_START = {
    "add": 0.0,
    "subtract": 0.0,
    "multiply": 1.0,
    "maximum": -np.inf,
    "minimum": np.inf,
}


class FusedCalls(IsaCore):
    """Scans, selects, statistics and constants."""

    def tensor_tensor_scan(
        self,
        dst: Any,
        data0: Any,
        data1: Any,
        initial: Any,
        op0: Any,
        op1: Any,
        reverse0: bool = False,
        reverse1: bool = False,
        name: str | None = None,
    ) -> None:
        """``dst[:, i] = (data0[:, i] <op0> dst[:, i-1]) <op1> data1[:, i]`` along the free
        axis, starting from ``initial`` (a number or one value per partition)."""
        op = "tensor_tensor_scan"
        f0, f1 = self._op(op, op0, 2), self._op(op, op1, 2)
        dst = self._tile(op, "dst", dst)
        a, b = self._tile(op, "data0", data0), self._tile(op, "data1", data1)
        for role, t in (("dst", dst), ("data0", a), ("data1", b)):
            self._in(op, role, t, "sbuf", "psum")
        self._same_shape(op, dst, "data0", a)
        self._same_shape(op, dst, "data1", b)
        if a.buffer.kind == "psum" and b.buffer.kind == "psum":
            self.m.fail("isa", f"{op}: data0 and data1 cannot both be in PSUM")
        start = self._column(op, "initial", initial, a.partitions)
        reads = [a, b] + ([start] if isinstance(start, Tile) else [])
        va, vb = self.m.read(a, op), self.m.read(b, op)
        init = self._value(start, op, 1)
        if va is not None:
            x0 = va.reshape(a.partitions, -1)
            x1 = vb.reshape(b.partitions, -1)
            out = np.empty_like(x0)
            state = np.broadcast_to(np.asarray(init, dtype=np.float32), (a.partitions,))
            for i in range(x0.shape[1]):
                step = f0.fn(state, x0[:, i]) if reverse0 else f0.fn(x0[:, i], state)
                state = f1.fn(x1[:, i], step) if reverse1 else f1.fn(step, x1[:, i])
                out[:, i] = state
            self.m.write(dst, out.reshape(dst.shape))
        else:
            self.m.write(dst, None)
        self._emit(
            op, "vector", reads, [dst], partitions=dst.partitions, free=dst.free_size, inputs=2
        )

    def tensor_scalar_cumulative(
        self, dst: Any, src: Any, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
        reduce_cmd: Any = "reduce_cmd.reset_reduce", name: str | None = None,
    ) -> None:  # fmt: skip
        """``reg = op1(op0(src[:, i], imm0), reg); dst[:, i] = reg`` along the free axes
        on VectorE, ``reg`` its accumulator register per partition: ``reset_reduce``
        starts it at op1's identity, ``load_reduce`` at ``imm1``, ``reduce`` where the last
        instruction left it (nki.isa.tensor_scalar_cumulative, v2.27.0 page's pseudocode;
        op1 one of add, subtract, multiply, max, min). The page gives no cost: one VectorE
        pass, as tensor_scalar (unverified)."""
        op = "tensor_scalar_cumulative"
        first, step = self._op(op, op0, 2), self._op(op, op1, 2)
        if step.name not in _CUMULATIVE_START:
            self.m.fail("isa", f"{op}: op1 must be add, subtract, multiply, max or min")
        dst, s = self._tile(op, "dst", dst), self._tile(op, "src", src)
        for role, t in (("dst", dst), ("src", s)):
            self._in(op, role, t, "sbuf", "psum")
        self._same_shape(op, dst, "src", s)
        operands = [self._column(op, "imm0", imm0, s.partitions)]
        cmd = str(reduce_cmd or "reset_reduce").rpartition(".")[2]
        if cmd == "load_reduce":
            operands.append(self._column(op, "imm1", imm1, s.partitions))
        value, scale = self.m.read(s, op), self._value(operands[0], op, 2)
        reg = self._cumulative_start(op, cmd, step.name, operands[-1], s.partitions)
        out = None
        if value is not None and scale is not None and reg is not None:
            x = first.fn(value.reshape(s.partitions, -1), scale)
            out = np.empty_like(x)
            for i in range(x.shape[1]):
                reg = step.fn(x[:, i], reg)
                out[:, i] = reg
            out = out.reshape(dst.shape)
        self.m.accumulators["vector"] = reg if out is not None else None
        self.m.write(dst, out)
        reads = [s] + [t for t in operands if isinstance(t, Tile)]
        self._emit(op, "vector", reads, [dst], partitions=dst.partitions, free=dst.free_size)

    def _cumulative_start(
        self, op: str, cmd: str, step: str, imm1: Any, partitions: int
    ) -> np.ndarray | None:
        """VectorE's accumulator before a tensor_scalar_cumulative (its page's pseudocode)."""
        if cmd == "reset_reduce":
            return np.full(partitions, _CUMULATIVE_START[step], np.float32)
        if cmd == "load_reduce":
            start = self._value(imm1, op, 1)
            return None if start is None else np.broadcast_to(start, (partitions,)).copy()
        if cmd == "reduce":
            reg = self.m.accumulators.get("vector")
            if not self.m.compute:
                return None
            if reg is None or np.shape(reg) != (partitions,):
                self.m.fail("isa", f"{op}: reduce_cmd=reduce with no accumulated value to continue")
            return np.asarray(reg, np.float32)
        self.m.fail("isa", f"{op}: reduce_cmd must be reset_reduce, load_reduce or reduce")
        return None

    def tensor_scalar_reduce(
        self,
        dst: Any,
        data: Any,
        op0: Any,
        operand0: Any,
        reduce_op: Any,
        reduce_res: Any,
        reverse0: bool = False,
        name: str | None = None,
    ) -> None:
        """``dst = data <op0> operand0`` and ``reduce_res = reduce_op`` of it along the
        free axes, on VectorE."""
        op = "tensor_scalar_reduce"
        fn, red = self._op(op, op0, 2), self._op(op, reduce_op, 2)
        if red.reduce is None:
            self.m.fail("isa", f"{op}: {red!r} cannot reduce")
        dst = self._tile(op, "dst", dst)
        src = self._tile(op, "data", data)
        res = self._tile(op, "reduce_res", reduce_res)
        for role, t in (("dst", dst), ("data", src), ("reduce_res", res)):
            self._in(op, role, t, "sbuf", "psum")
        self._same_shape(op, dst, "data", src)
        if res.partitions != src.partitions or res.free_size != 1:
            self.m.fail("isa", f"{op}: reduce_res must hold one value per partition, {res.shape}")
        operand = self._column(op, "operand0", operand0, src.partitions)
        value = self.m.read(src, op)
        other = self._value(operand, op, src.ndim)
        if value is not None:
            value = fn.fn(other, value) if reverse0 else fn.fn(value, other)
            axes = tuple(range(1, value.ndim))
            self.m.write(res, red.reduce(value, axis=axes).reshape(res.shape))
        else:
            self.m.write(res, None)
        self.m.write(dst, value)
        reads = [src] + ([operand] if isinstance(operand, Tile) else [])
        self._emit(
            op,
            "vector",
            reads,
            [dst, res],
            partitions=dst.partitions,
            free=dst.free_size,
            extra_cycles=MIN_II,
        )

    def affine_select(self, dst: Any, *args: Any, **kwargs: Any) -> None:
        """``dst = on_true_tile`` where the affine predicate holds, else the number
        ``on_false_value``; the predicate is evaluated on GpSimd as it streams. Beta 1
        passes ``pred``, an ``nl.arange`` comparison; the current API (the latest
        nki.isa.affine_select page) ``(dst, pattern, offset, channel_multiplier,
        on_true_tile, on_false_value, cmp_op=nl.equal)``: the predicate is
        ``cmp_op(offset + partition * channel_multiplier + sum(index * step), 0)``."""
        if "pred" in kwargs or (args and isinstance(args[0], indexing.Mask)):
            self.select_by_predicate(dst, *args, **kwargs)
        else:
            self._select_by_pattern(dst, *args, **kwargs)

    def select_by_predicate(
        self, dst: Any, pred: Any, on_true_tile: Any, on_false_value: Any, name: str | None = None
    ) -> None:
        if not isinstance(pred, indexing.Mask):
            self.m.fail("isa", f"affine_select: pred must be an nl.arange comparison, got {pred!r}")
        self._select(dst, on_true_tile, on_false_value, lambda shape: pred.evaluate(shape))

    def _select_by_pattern(
        self,
        dst: Any,
        pattern: Any,
        offset: int = 0,
        channel_multiplier: int = 0,
        on_true_tile: Any = None,
        on_false_value: Any = None,
        cmp_op: Any = None,
        name: str | None = None,
    ) -> None:
        # offset: the page lists no default; nki-library's cascaded_max
        # (core/max/cascaded_max.py @0759719) leaves it out, as 0.
        fn = self._op("affine_select", cmp_op if cmp_op is not None else OPS["equal"], 2)
        tile = self._tile("affine_select", "dst", dst)

        def keep(shape: tuple[int, ...]) -> np.ndarray:
            values = _affine_values(
                self, "affine_select", tile, pattern, offset, channel_multiplier
            )
            return fn.fn(values, np.float32(0)) != 0

        self._select(dst, on_true_tile, on_false_value, keep)

    def _select(self, dst: Any, on_true_tile: Any, on_false_value: Any, keep: Any) -> None:
        op = "affine_select"
        dst = self._tile(op, "dst", dst)
        src = self._tile(op, "on_true_tile", on_true_tile)
        self._in(op, "dst", dst, "sbuf")
        self._in(op, "on_true_tile", src, "sbuf")
        self._same_shape(op, dst, "on_true_tile", src)
        if not isinstance(on_false_value, numbers.Real):
            self.m.fail("isa", f"{op}: on_false_value must be a number, got {on_false_value!r}")
        value = self.m.read(src, op)
        if value is not None:
            value = np.where(keep(src.shape), value, np.float32(on_false_value))
        self.m.write(dst, value)
        self._emit(
            op,
            "gpsimd",
            [src],
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            cycles=GPSIMD_START + dst.free_size,
        )

    def iota(
        self,
        dst: Any,
        pattern: Any = None,
        offset: int = 0,
        channel_multiplier: int = 0,
        name: str | None = None,
        expr: Any = None,
    ) -> None:
        """Constant values built on GpSimd: in beta 1 those of an ``nl.arange``
        expression; in the current API (the latest nki.isa.iota page) ``offset +
        partition * channel_multiplier + sum(index * step)`` over the ``[[step, num],
        ...]`` free-axis pattern, in int32 math, cast to dst's dtype. offset: the page
        lists no default; nki-library's cascaded_max (@0759719) leaves it out, as 0."""
        op = "iota"
        dst = self._tile(op, "dst", dst)
        self._in(op, "dst", dst, "sbuf")
        pattern = expr if expr is not None else pattern
        if isinstance(pattern, indexing.IndexExpr):
            values = self._expr_values(op, dst, pattern)
        else:
            values = _affine_values(self, op, dst, pattern, offset, channel_multiplier)
        self.m.write(dst, None if values is None else values.astype(np.float32))
        self._emit(
            op,
            "gpsimd",
            [],
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            cycles=GPSIMD_START + dst.free_size,
        )

    def _expr_values(self, op: str, dst: Tile, expr: indexing.IndexExpr) -> np.ndarray | None:
        if not self.m.compute:
            return None
        values = expr.values()
        try:
            return np.broadcast_to(values.reshape(dst.shape), dst.shape)
        except ValueError:
            self.m.fail("isa", f"{op}: expression of shape {values.shape} vs dst {dst.shape}")

    def bn_stats(self, dst: Any, data: Any, name: str | None = None) -> None:
        """Per partition: count, mean and variance x count of the even and of the odd
        elements (six values), on VectorE; at most 512 elements per partition."""
        op = "bn_stats"
        dst, src = self._tile(op, "dst", dst), self._tile(op, "data", data)
        self._in(op, "data", src, "sbuf", "psum")
        if src.free_size > 512:
            self.m.fail("isa", f"{op}: at most 512 elements per partition, got {src.free_size}")
        if dst.partitions != src.partitions or dst.free_size != 6:
            self.m.fail("isa", f"{op}: dst must be [{src.partitions}, 6], got {dst.shape}")
        value = self.m.read(src, op)
        if value is not None:
            flat = value.reshape(src.partitions, -1)
            stats = []
            for half in (flat[:, 0::2], flat[:, 1::2]):
                n = half.shape[1]
                mean = half.mean(axis=1) if n else np.zeros(len(half))
                var = half.var(axis=1) if n else np.zeros(len(half))
                stats += [np.full(len(half), n), mean, var * n]
            self.m.write(dst, np.stack(stats, axis=1).reshape(dst.shape))
        else:
            self.m.write(dst, None)
        self._emit(op, "vector", [src], [dst], partitions=src.partitions, free=src.free_size)

    def bn_aggr(self, dst: Any, data: Any, name: str | None = None) -> None:
        """Mean and variance per partition from ``bn_stats`` triples (VectorE, 13N/3)."""
        op = "bn_aggr"
        dst, src = self._tile(op, "dst", dst), self._tile(op, "data", data)
        self._in(op, "data", src, "sbuf", "psum")
        if src.free_size % 3 or dst.partitions != src.partitions or dst.free_size != 2:
            self.m.fail("isa", f"{op}: data {src.shape} of (count, mean, var*count) -> dst [P, 2]")
        value = self.m.read(src, op)
        if value is not None:
            triples = value.reshape(src.partitions, -1, 3)
            count, mean, m2 = triples[..., 0], triples[..., 1], triples[..., 2]
            total = np.maximum(count.sum(axis=1), 1e-30)
            grand = (count * mean).sum(axis=1) / total
            var = (m2 + count * (mean - grand[:, None]) ** 2).sum(axis=1) / total
            self.m.write(dst, np.stack([grand, var], axis=1).reshape(dst.shape))
        else:
            self.m.write(dst, None)
        self._emit(
            op,
            "vector",
            [src],
            [dst],
            partitions=src.partitions,
            free=src.free_size,
            extra_cycles=src.free_size * 10 // 3,
        )


def _affine_values(
    isa: IsaCore, op: str, dst: Tile, pattern: Any, offset: Any, multiplier: Any
) -> np.ndarray:
    """``offset + partition * multiplier + sum(index_d * step_d)`` over dst, the
    ``[[step, num], ...]`` entries walking its free elements outermost first (the
    latest nki.isa.iota and affine_select pages); int32 math, shaped as dst."""
    entries = list(pattern) if isinstance(pattern, list | tuple) else None
    if not entries or not all(isinstance(e, list | tuple) and len(e) == 2 for e in entries):
        isa.m.fail("isa", f"{op}: pattern must be [[step, num], ...], got {pattern!r}")
    if int(np.prod([int(n) for _, n in entries])) != dst.free_size:
        isa.m.fail("isa", f"{op}: pattern covers {entries}, dst has {dst.free_size} per partition")
    free = pattern_offsets(entries, 0).reshape(-1)
    rows = int(offset) + np.arange(dst.partitions, dtype=np.int64)[:, None] * int(multiplier)
    return (rows + free[None, :]).astype(np.int32).reshape(dst.shape)
