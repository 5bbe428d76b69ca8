"""Selection instructions: ``max8``, ``tensor_copy_predicated`` and
``tensor_partition_reduce`` (NKI ISA reference, each call's page)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelopt.sim.isa_engines import EngineCalls
from kernelopt.sim.tensor import Tile


class SelectCalls(EngineCalls):
    """VectorE and GpSimd calls that select or combine elements across a tile."""

    def max8(self, dst: Any, src: Any, name: str | None = None) -> None:
        """The 8 largest values of each partition, in descending order, on VectorE:
        src [P, ...] of 8 to 16,384 elements per partition, dst [P, 8]; N cycles."""
        op = "max8"
        dst, s = self._tile(op, "dst", dst), self._tile(op, "src", src)
        self._in(op, "dst", dst, "sbuf", "psum")
        self._in(op, "src", s, "sbuf", "psum")
        if not 8 <= s.free_size <= 16384:
            self.m.fail("isa", f"{op}: src has {s.free_size} elements per partition; 8 to 16,384")
        if dst.partitions != s.partitions or dst.free_size != 8:
            self.m.fail("isa", f"{op}: dst must be [{s.partitions}, 8], got {dst.shape}")
        value = self.m.read(s, op)
        if value is not None:
            rows = value.reshape(s.partitions, -1)
            value = -np.sort(-rows, axis=1)[:, :8].reshape(dst.shape)
        self.m.write(dst, value)
        self._emit(op, "vector", [s], [dst], partitions=s.partitions, free=s.free_size)

    def nc_find_index8(self, dst: Any, data: Any, vals: Any, name: str | None = None) -> None:
        """The index of the first occurrence in each partition of ``data`` of each of the
        8 ``vals`` of that partition, on VectorE, N cycles; a value absent from the row
        gets the all-ones sentinel of dst's dtype (uint16 or uint32)."""
        op = "nc_find_index8"
        dst, d, v = (
            self._tile(op, r, t) for r, t in (("dst", dst), ("data", data), ("vals", vals))
        )
        for role, t in (("dst", dst), ("data", d), ("vals", v)):
            self._in(op, role, t, "sbuf", "psum")
        if not 8 <= d.free_size <= 16384 or v.free_size != 8 or dst.free_size != 8:
            self.m.fail(
                "isa",
                f"{op}: data needs 8 to 16,384 elements per partition and vals and dst 8, "
                f"got {d.shape}, {v.shape}, {dst.shape}",
            )
        if dst.dtype not in (np.dtype(np.uint16), np.dtype(np.uint32)):
            self.m.fail("isa", f"{op}: dst must be uint16 or uint32, got {dst.dtype}")
        rows, wanted = self.m.read(d, op), self.m.read(v, op)
        found = None
        if rows is not None and wanted is not None:
            rows = rows.reshape(d.partitions, 1, -1)
            hits = rows == wanted.reshape(v.partitions, 8, 1)
            first = hits.argmax(axis=2).astype(np.float64)
            first[~hits.any(axis=2)] = np.iinfo(dst.dtype).max
            found = first.reshape(dst.shape)
        self.m.write(dst, found)
        self._emit(op, "vector", [d, v], [dst], partitions=d.partitions, free=d.free_size)

    def tensor_copy_predicated(
        self,
        dst: Any,
        src: Any,
        predicate: Any,
        reverse_pred: bool = False,
        name: str | None = None,
    ) -> None:
        """``src`` (a tile or a number) copied into ``dst`` where ``predicate`` (uint8,
        uint16 or uint32) holds, dst unmodified elsewhere, on VectorE: max(64, N) cycles
        with one operand in PSUM, max(64, 2N) with both in SBUF."""
        op = "tensor_copy_predicated"
        operands = {"predicate": predicate}
        if isinstance(src, Tile):
            operands["src"] = src
        dst, tiles = self._elementwise_operands(op, dst, **operands)
        pred = tiles[0]
        if not self._predicate_dtype_ok(pred.dtype):
            self.m.fail("isa", f"{op}: predicate must be uint8, uint16 or uint32, got {pred.dtype}")
        keep = self.m.read(pred, op)
        value = self.m.read(tiles[1], op) if len(tiles) > 1 else float(src)
        if keep is not None:
            held = (keep != 0) != bool(reverse_pred)
            old = self.m.read(dst, op) if not held.all() else np.zeros(dst.shape, np.float32)
            self.m.write(dst, np.where(held, value, old))
        else:
            self.m.write(dst, None)
        both_sbuf = all(t.buffer.kind == "sbuf" for t in tiles)
        self._emit(
            op,
            "vector",
            tiles,
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            inputs=2 if both_sbuf else 1,
        )

    def _predicate_dtype_ok(self, dtype: np.dtype) -> bool:
        """uint8, uint16 or uint32, as the nki.isa.tensor_copy_predicated pages say;
        in beta 1 also a bool tile (one byte of 0 or 1, as uint8): the v2.2x SDK's own
        example (general/nki/test/test_nki_isa_copypredicated.py) loads a numpy bool
        predicate and its simulation test expects the copy (the v2.26 page lists only
        the unsigned types: unverified on hardware)."""
        if dtype.kind == "u" and dtype.itemsize <= 4:
            return True
        return self.m.beta1 is not None and dtype == np.dtype(np.bool_)

    def tensor_partition_reduce(
        self, dst: Any, op: Any, data: Any, name: str | None = None
    ) -> None:
        """A reduction across the partitions of ``data`` on GpSimd, into a one-partition
        ``dst``. The reference gives no cost; it is charged as one GpSimd pass over the
        tile, as an elementwise op on it: an estimate, unverified."""
        call = "tensor_partition_reduce"
        fn = self._op(call, op, 2)
        if fn.reduce is None:
            self.m.fail("isa", f"{call}: {fn!r} cannot reduce; use nl.add, nl.maximum, ...")
        dst, src = self._tile(call, "dst", dst), self._tile(call, "data", data)
        self._in(call, "dst", dst, "sbuf")
        self._in(call, "data", src, "sbuf")
        if dst.shape != (1, *src.shape[1:]):
            self.m.fail("isa", f"{call}: dst must be {(1, *src.shape[1:])}, got {dst.shape}")
        value = self.m.read(src, call)
        self.m.write(dst, None if value is None else fn.reduce(value, axis=0, keepdims=True))
        self._emit(call, "gpsimd", [src], [dst], partitions=src.partitions, free=src.free_size)
