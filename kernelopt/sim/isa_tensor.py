"""TensorE calls of the simulator's ``nki.isa``: ``nc_matmul`` and ``nc_transpose``."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelopt.sim.isa_base import IsaCore
from kernelopt.sim.isa_double_row import double_row_matmul, is_double_row
from kernelopt.sim.tensor import Tile


class TensorCalls(IsaCore):
    """The calls TensorE runs."""

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
        # The onezero hints and tile_position/tile_size (PE tiling) change neither the
        # result nor, in this model, the cost; nor does perf_mode on 2-D operands. The
        # double-row mode's 3-D operands are kernelopt.sim.isa_double_row's.
        m, op = self.m, "nc_matmul"
        dst = self._tile(op, "dst", dst)
        stationary = self._tile(op, "stationary", stationary)
        moving = self._tile(op, "moving", moving)
        if is_double_row(perf_mode) and moving.ndim == 3:
            return double_row_matmul(self, dst, stationary, moving, accumulate)
        self._check_matmul(dst, stationary, moving, is_transpose)
        if is_transpose:
            accumulate = False  # a pass-through transpose does not accumulate
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
            prod = _transposed(a, b) if is_transpose else a.T @ b
            if acc and partial:
                prod = np.where(written, old + prod, prod)
            elif acc:
                prod += old
            m.write(dst, prod)
        else:
            m.write(dst, None)
        k, mm = stationary.shape
        n = moving.shape[1]
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
            transpose=is_transpose,
            macs=k * mm * n,
        )

    def _check_matmul(self, dst: Tile, stationary: Tile, moving: Tile, is_transpose: bool) -> None:
        """The ISA rules of one ``nc_matmul``: memories, ranks, tile limits, dtypes."""
        m, op = self.m, "nc_matmul"
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
            # data type.
            if dst.dtype not in (stationary.dtype, np.float32):
                m.fail(
                    "isa",
                    f"{op}: transpose dst dtype {dst.dtype} must be fp32 or match {stationary.dtype}",
                )
        elif dst.dtype != np.float32:
            m.fail("isa", f"{op}: PSUM accumulation must be fp32, dst is {dst.dtype}")

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
            transpose=unit == "tensor",
            macs=0,
        )


def _transposed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a.T @ b`` for a pass-through transpose (``b`` the identity): a NaN (an
    unwritten element) lands only where the identity moves it, not on its whole row.
    The nki.isa.nc_transpose page: a TensorE transpose is nc_matmul with
    is_transpose=True and, from NeuronCore-v3, "bit-accurate"."""
    nan = np.isnan(a)
    if not nan.any():
        return a.T @ b
    prod = np.where(nan, 0.0, a).T @ b
    prod[(nan.T.astype(np.float32) @ (b != 0)) > 0] = np.nan
    return prod
