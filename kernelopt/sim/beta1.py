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

This file holds what assignment and arrays mean (``Beta1``); it stands on
``beta1_core.py`` (result tiles, dtypes, operands) and ``beta1_ops.py`` (the
``nl.*`` ops). ``beta1_tiles.py`` has ``nl.par_dim``, block arrays and masks,
``beta1_isa.py`` the ``nisa.*`` calls and ``beta1_modules.py`` the modules a
kernel imports.

API facts from the Neuron SDK documentation of the ``neuronxcc.nki``
releases (awsdocs-neuron.readthedocs-hosted.com, v2.26.1:
nki.language.matmul, nki.isa.memset(shape, value, dtype, *, mask, engine),
nki.language.loop_reduce(x, op, loop_indices, *, dtype, mask),
nki.language.shared_constant(constant, dtype)).
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np

from kernelopt.sim import indexing
from kernelopt.sim.beta1_ops import HighLevelOps, LoopReduction
from kernelopt.sim.beta1_skip import SKIPPED
from kernelopt.sim.beta1_tiles import BlockArray, ParDim, placed_by
from kernelopt.sim.language import BUFFERS
from kernelopt.sim.tensor import Buffer, PlacedBuffer, Tile, reshape_hbm
from kernelopt.sim.trace import Instruction

_TENSOR_OPS = frozenset({"nc_matmul", "nc_transpose"})
_INSTRUCTION_FIELDS = tuple(f.name for f in dataclasses.fields(Instruction))


class Beta1(HighLevelOps):
    """The tile semantics of the beta-1 API, bound to one machine."""

    # --- allocation --------------------------------------------------------------------

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
        address = (0, buffer.base) if isinstance(buffer, PlacedBuffer) else None
        if isinstance(buffer, PlacedBuffer) and buffer.func is not None:
            address = placed_by(self.m, buffer, (), shape, resolved)
        tile = self.m.allocate(
            tuple(int(d) for d in shape), resolved, buffer, name or None, address=address
        )
        self.initialise(tile, fill)
        return tile

    def device_print(self, prefix: Any, x: Any = None, **_: Any) -> None:
        """``nl.device_print``: print the tile's values (nothing in trace-only runs)."""
        if isinstance(x, Tile) and self.m.compute:
            print(prefix, self.m.read(x, "nl.device_print"))
        elif not isinstance(x, Tile):
            print(prefix, x)

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
        return reshape_hbm(tile, shape)

    def broadcast_to(self, tile: Tile, shape: tuple[int, ...]) -> Tile:
        """``tile.broadcast_to(shape)``: along the free axes a VectorE copy; across
        partitions (a [1, F] row to [M, F]) a TensorE matmul with a ones vector into
        PSUM, as the NKI architecture guide says NKI does: the result when it fits one
        bank, else bank by bank, each copied out by ScalarE into an SBUF tile."""
        m = self.m
        src = self._tile("broadcast_to", tile)
        # The first axis is the partition axis: a lower-rank tile lines up from the
        # left, as in the elementwise ops (a [P] reduction result is a column).
        padded = src.shape + (1,) * (len(shape) - src.ndim)
        try:
            if np.broadcast_shapes(padded, shape) != shape:
                raise ValueError
        except ValueError:
            m.fail("isa", f"broadcast_to: {src.shape} does not broadcast to {shape}")
        values = m.read(src, "broadcast_to")
        data = None if values is None else np.broadcast_to(values.reshape(padded), shape)
        if src.partitions == shape[0] or not src.buffer.on_chip:
            dst = self.new(shape, src.dtype)
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
        chunk = m.params.psum_bank_bytes // 4
        if len(shape) == 2 and shape[1] <= chunk:
            # It fits one PSUM bank: the matmul's result is the broadcast tile, read where
            # it is (VectorE and ScalarE read PSUM), with no copy out. The NKI Mamba
            # tutorial calls the broadcast one extra TensorE instruction; its VectorE
            # time per state matches reading the broadcast rows from PSUM (docs/sim.md).
            psum = self.new(shape, src.dtype, "psum")
            self._ones_matmul(src, psum, data)
            return psum
        # Otherwise one matmul per PSUM bank of columns (a matmul writes at most 512 fp32
        # per partition), each copied out of PSUM into its part of the result.
        dst = self.new(shape, src.dtype)
        if len(shape) != 2 and dst.free_size > chunk:
            m.fail("isa", f"broadcast_to: a {shape} broadcast across partitions must be 2-D")
        columns = dst.free_size if len(shape) != 2 else shape[1]
        for c0 in range(0, columns, chunk):
            c1 = min(columns, c0 + chunk)
            part_src = src if len(shape) != 2 else src[:, c0:c1]
            part_dst = dst if len(shape) != 2 else dst[:, c0:c1]
            psum = self.new(part_dst.shape, np.dtype(np.float32), "psum")
            self._ones_matmul(
                part_src, psum, None if data is None else np.reshape(data, shape)[:, c0:c1]
            )
            self._copy(part_dst, psum)
        return dst

    def _ones_matmul(self, src: Tile, psum: Tile, data: Any) -> None:
        """``psum`` = the rows of ``src`` broadcast across its partitions (``data``): a
        TensorE matmul with a ones vector, which counts no useful MACs."""
        self.m.write(psum, data)
        self.isa._emit(
            "nc_matmul",
            "tensor",
            [src],
            [psum],
            partitions=src.partitions,
            free=psum.free_size,
            stationary_free=psum.partitions,
            wide=src.dtype.itemsize >= 4,
            macs=0,
        )

    # --- assignment ----------------------------------------------------------------------

    def _fresh(self, value: Any) -> bool:
        """Whether ``value`` is a whole temporary that the last instruction alone wrote
        (all of it, or the part a ``mask=`` kept) without reading it."""
        if not isinstance(value, Tile) or not self.m.trace or value.view_map is not None:
            return False
        if value.coords is not None:
            return False
        last = self.m.trace[-1]
        aid = value.alloc.id
        return (
            value.bounds == tuple((0, n) for n in value.alloc.shape)
            # The value is the first write; an activation's fused row sum (reduce_res)
            # is a second one, into another tile, that stays where it went.
            and last.writes[0][0] == aid
            and all(w[0] != aid for w in last.writes[1:])
            and all(r[0] != aid for r in last.reads)
            and aid in self._temps
        )

    def _written_part(self, dst: Tile, value: Tile) -> Tile | None:
        """The part of ``dst`` that matches what the last instruction wrote of
        ``value`` (all of ``dst``, or the rows and columns a mask kept); None if
        the two do not line up axis by axis."""
        box = self.m.trace[-1].writes[0][1]
        if box == value.bounds:
            return dst
        if value.ndim != dst.ndim or value.shape != dst.shape:
            return None
        keep = {
            axis: (lo, hi)
            for axis, ((lo, hi), n) in enumerate(zip(box, value.shape, strict=True))
            if (lo, hi) != (0, n)
        }
        return dst.clip(indexing.Mask(dst.ndim, keep))

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
        box = last.writes[0][1]
        src = None
        if value.alloc.data is not None:
            src = value.alloc.data[tuple(slice(lo, hi) for lo, hi in box)]
            src = src.reshape(dst.shape)
        reads = last.reads
        written = dst.alloc.written[dst.index] if accumulate else None
        in_place = False
        if written is not None and written.any():
            reads = reads + (dst.region,)
            if src is not None:
                whole = written.all()
                old = m.read(dst, "accumulate") if whole else dst.alloc.data[dst.index]
                in_place = whole and _plain(m, dst)
                if in_place:
                    np.add(old, src, out=old)  # ``old`` is a view of dst's storage
                else:
                    src = old + src if whole else np.where(written, old + src, src)
        fields = {f: getattr(last, f) for f in _INSTRUCTION_FIELDS}
        fields.update(writes=(dst.region, *last.writes[1:]), shape=dst.shape, reads=reads)
        if len(reads) > len(last.reads) and dst.buffer.kind == "psum":
            fields["psum_read"] = True  # the accumulation reads dst's PSUM bank
        if last.op == "dma_copy":
            # A copy's rows are as long as the shorter of source and destination rows;
            # a transpose moves fixed blocks whatever the destination (isa_dma.py).
            fields["row_bytes"] = min(last.row_bytes, dst.row_bytes())
        if last.engine == "dma":
            fields["hbm_write"] = dst.nbytes if dst.buffer.kind == "hbm" else 0
        m.trace.append(Instruction(**fields))
        if not in_place:
            m.write(dst, src)

    def assign(self, dst: Any, value: Any) -> None:
        """``dst[...] = value``."""
        if value is SKIPPED:
            return  # the call was under a false mask=: nothing to write
        dst = self._tile("assignment", dst).checked()
        if isinstance(value, Tile) and value.alloc is dst.alloc and value.bounds == dst.bounds:
            return  # the second half of ``dst[...] += x``
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            self.isa.memset(dst, float(value))
            return
        if isinstance(value, LoopReduction):
            self.reduce_into(dst, value)
            return
        value = self._tile("assignment", value)
        if self._fresh(value) and self._can_retarget(dst, value):
            part = self._written_part(dst, value)
            if part is not None:
                self._retarget(part, value)
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
        if other is SKIPPED:
            return dst
        if (
            op == "add"
            and dst.buffer.kind == "psum"
            and self._fresh(other)
            and self.m.trace[-1].op == "nc_matmul"
            and self._can_retarget(dst, other)
            and (part := self._written_part(dst, other)) is not None
        ):
            self._retarget(part, other, accumulate=True)
            return dst
        self.binary(op, dst, other, out=dst)
        return dst


def _plain(m: Any, tile: Tile) -> bool:
    """Whether ``m.read(tile)`` is a view of the tile's storage that a write may update
    in place: a box of the allocation (no gather, view or holes), stored as declared."""
    alloc = tile.alloc
    return (
        tile.coords is None
        and tile.view_map is None
        and tile.holes is None
        and not (m.native and alloc.dtype != alloc.data.dtype)
    )
