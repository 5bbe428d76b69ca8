"""Selection and data-movement instructions of the beta-1 ``nki.isa`` that the current
API's calls do not cover: ``select_reduce``, ``range_select``, ``nc_match_replace8``,
``nc_stream_shuffle``, ``sequence_bounds``, ``local_gather``, the dynamic-offset copies
and the flattened gather behind ``nl.gather_flattened`` (NKI ISA
reference of Neuron SDK 2.26.1, each call's page). Semantics are the pages'; where a
page gives no cost, the instruction is charged as one streamed pass on its engine, an
estimate marked unverified."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelopt.sim.isa_engines import EngineCalls
from kernelopt.sim.ops import OPS
from kernelopt.sim.tensor import Tile

# nl.fp32.min, range_select's default on_false_value (its v2.26.1 page).
FP32_MIN = float(np.finfo(np.float32).min)
# select_reduce's predicate: "any supported integer type int8, uint8, int16, uint16"; and
# nl.bool_, which NKI stores as uint8 (the "Supported Data Types" table).
_PREDICATE_DTYPES = ("int8", "uint8", "int16", "uint16", "bool")
_QUADRANT = 32
_UNMODIFIED = 255
# tensor_copy_dynamic_src/dst (v2.26.1 pages): max(MIN_II_DYNAMIC, N) engine cycles,
# "MIN_II_DYNAMIC is roughly 600 engine cycles".
MIN_II_DYNAMIC = 600


class MoreCalls(EngineCalls):
    """VectorE and GpSimd calls added for the beta-1 API audit."""

    def _vector_reduce(
        self, name: str, result: Any, partitions: int, reduce_op: Any, reduce_res: Any,
        reduce_cmd: Any,
    ) -> list[Tile]:  # fmt: skip
        """The optional max-reduction of select_reduce and range_select into ``reduce_res``
        ([P, 1]), through VectorE's accumulator as ``reduce_cmd`` says. The pages: "reduce_op
        only supports max"."""
        cmd = str(reduce_cmd or "").rpartition(".")[2]
        if reduce_res is None and cmd in ("", "idle"):
            return []
        fn = self._op(name, reduce_op if reduce_op is not None else OPS["maximum"], 2)
        if fn.name != "maximum":
            self.m.fail("isa", f"{name}: reduce_op supports only max, got {fn!r}")
        res = None
        if reduce_res is not None:
            res = self._tile(name, "reduce_res", reduce_res)
            self._in(name, "reduce_res", res, "sbuf", "psum")
            if res.partitions != partitions or res.free_size != 1:
                self.m.fail("isa", f"{name}: reduce_res must be [{partitions}, 1], got {res.shape}")
        self._accumulate(name, result, partitions, fn, res, reduce_cmd, engine="vector")
        return [] if res is None else [res]

    def select_reduce(
        self, dst: Any, predicate: Any, on_true: Any, on_false: Any, reduce_res: Any = None,
        reduce_cmd: Any = None, reduce_op: Any = None, reverse_pred: bool = False,
        name: str | None = None,
    ) -> None:  # fmt: skip
        """``np.where(predicate, on_true, on_false)`` into ``dst`` on VectorE, optionally
        reduced (max) into ``reduce_res`` (nki.isa.select_reduce, v2.26.1: predicate an
        8/16-bit integer tile, on_true and predicate not both in PSUM, on_false a number
        or a [P, 1] column). Cost unverified: one VectorE pass."""
        op = "select_reduce"
        dst, (pred, src) = self._elementwise_operands(op, dst, predicate=predicate, on_true=on_true)
        if pred.dtype.name not in _PREDICATE_DTYPES:
            self.m.fail("isa", f"{op}: predicate must be int8/uint8/int16/uint16, got {pred.dtype}")
        if pred.buffer.kind == "psum" and src.buffer.kind == "psum":
            self.m.fail("isa", f"{op}: on_true and predicate may not both be in PSUM")
        if src.dtype.name in ("int32", "uint32"):
            self.m.fail("isa", f"{op}: on_true may not be {src.dtype}")
        other = self._column(op, "on_false", on_false, src.partitions)
        keep, value = self.m.read(pred, op), self.m.read(src, op)
        fill = self._value(other, op, src.ndim)
        result = None
        if keep is not None and value is not None and fill is not None:
            held = (keep != 0) != bool(reverse_pred)
            result = np.where(held, value, fill)
        self.m.write(dst, result)
        reads = [pred, src] + ([other] if isinstance(other, Tile) else [])
        extra = self._vector_reduce(op, result, src.partitions, reduce_op, reduce_res, reduce_cmd)
        self._emit(
            op, "vector", reads, [dst, *extra], partitions=dst.partitions, free=dst.free_size
        )

    def range_select(
        self, dst: Any, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any,
        bound1: Any, reduce_cmd: Any = None, reduce_res: Any = None, reduce_op: Any = None,
        range_start: float = 0, on_false_value: float = FP32_MIN, name: str | None = None,
    ) -> None:  # fmt: skip
        """Each element of ``on_true_tile`` kept where its free index plus ``range_start``
        passes both ``comp_op0`` against ``bound0`` and ``comp_op1`` against ``bound1``
        (per-partition columns), else ``on_false_value``; optionally max-reduced into
        ``reduce_res`` (nki.isa.range_select, v2.26.1: VectorE, "available only on
        NeuronCore-v3 and beyond"). The free index of a tile with several free axes is
        taken flat (unverified); cost unverified: one VectorE pass."""
        op = "range_select"
        if self.m.params.name == "trn1":
            self.m.fail("isa", f"{op}: available only on NeuronCore-v3 and beyond (not trn1)")
        dst, (src,) = self._elementwise_operands(op, dst, on_true_tile=on_true_tile)
        first, second = self._op(op, comp_op0, 2), self._op(op, comp_op1, 2)
        low = self._column(op, "bound0", bound0, src.partitions)
        high = self._column(op, "bound1", bound1, src.partitions)
        value = self.m.read(src, op)
        b0, b1 = self._value(low, op, 2), self._value(high, op, 2)
        result = None
        if value is not None and b0 is not None and b1 is not None:
            index = np.arange(src.free_size, dtype=np.float64)[None, :] + float(range_start)
            held = (first.fn(index, b0) != 0) & (second.fn(index, b1) != 0)
            rows = np.where(held, value.reshape(src.partitions, -1), float(on_false_value))
            result = rows.reshape(src.shape)
        self.m.write(dst, result)
        reads = [src] + [t for t in (low, high) if isinstance(t, Tile)]
        extra = self._vector_reduce(op, result, src.partitions, reduce_op, reduce_res, reduce_cmd)
        self._emit(
            op, "vector", reads, [dst, *extra], partitions=dst.partitions, free=dst.free_size
        )

    def nc_match_replace8(
        self, dst: Any, data: Any, vals: Any, imm: float, dst_idx: Any = None,
        name: str | None = None,
    ) -> None:  # fmt: skip
        """``data`` with the first occurrence in each partition of each of its 8 ``vals``
        replaced by ``imm``, the matched positions (flat free index) optionally into
        ``dst_idx``, on VectorE, N cycles (nki.isa.nc_match_replace8, v2.26.1). A value
        repeated in ``vals`` takes the next occurrence, ``vals`` walked from the last to the
        first (the v2.32 page). A value absent from the row is undefined behaviour on the
        hardware and an error here."""
        op = "nc_match_replace8"
        dst, (d,) = self._elementwise_operands(op, dst, data=data)
        v = self._tile(op, "vals", vals)
        self._in(op, "vals", v, "sbuf", "psum")
        if v.partitions != d.partitions or v.free_size != 8 or d.free_size > 16384:
            self.m.fail(
                "isa",
                f"{op}: vals needs 8 values per partition of data's {d.partitions} and data "
                f"at most 16,384 per partition, got {v.shape} and {d.shape}",
            )
        writes = [dst]
        index_tile = None
        if dst_idx is not None:
            index_tile = self._tile(op, "dst_idx", dst_idx)
            self._in(op, "dst_idx", index_tile, "sbuf", "psum")
            if index_tile.partitions != d.partitions or index_tile.free_size != 8:
                self.m.fail("isa", f"{op}: dst_idx must hold 8 values per partition")
            writes.append(index_tile)
        rows, wanted = self.m.read(d, op), self.m.read(v, op)
        replaced = found = None
        if rows is not None and wanted is not None:
            replaced, found = self._match_replace(rows.reshape(d.partitions, -1), wanted, imm)
        self.m.write(dst, None if replaced is None else replaced.reshape(d.shape))
        if index_tile is not None:
            self.m.write(index_tile, None if found is None else found.reshape(index_tile.shape))
        self._emit(op, "vector", [d, v], writes, partitions=d.partitions, free=d.free_size)

    def _match_replace(
        self, rows: np.ndarray, wanted: np.ndarray, imm: float
    ) -> tuple[np.ndarray, np.ndarray]:
        taken = np.zeros(rows.shape, bool)
        found = np.zeros((rows.shape[0], 8), np.float64)
        targets = wanted.reshape(rows.shape[0], 8)
        for p in range(rows.shape[0]):
            for i in reversed(range(8)):
                hits = np.flatnonzero((rows[p] == targets[p, i]) & ~taken[p])
                if hits.size == 0:
                    self.m.fail(
                        "isa",
                        f"nc_match_replace8: value {targets[p, i]} is not in partition {p} "
                        "of data (undefined on the hardware)",
                    )
                taken[p, hits[0]] = True
                found[p, i] = hits[0]
        return np.where(taken, float(imm), rows), found

    def nc_stream_shuffle(
        self, dst: Any, src: Any, shuffle_mask: Any, name: str | None = None
    ) -> None:
        """Cross-partition moves within each quadrant of 32 partitions, on VectorE:
        output partition i of a quadrant copies input partition ``shuffle_mask[i]`` of
        it, 255 leaves it unmodified (nki.isa.nc_stream_shuffle, v2.26.1: same dtype and
        elements per partition; a tile under 32 partitions is one partial quadrant,
        unverified). Cost unverified: one VectorE pass."""
        op = "nc_stream_shuffle"
        d, s = self._tile(op, "dst", dst), self._tile(op, "src", src)
        self._in(op, "dst", d, "sbuf", "psum")
        self._in(op, "src", s, "sbuf", "psum")
        picks = [int(k) for k in shuffle_mask]
        if len(picks) != _QUADRANT:
            self.m.fail("isa", f"{op}: shuffle_mask needs 32 entries, got {len(picks)}")
        if d.dtype != s.dtype or d.free_size != s.free_size or d.partitions != s.partitions:
            self.m.fail("isa", f"{op}: dst {d.shape} {d.dtype} must match src {s.shape} {s.dtype}")
        quadrant = min(_QUADRANT, s.partitions)
        if s.partitions % quadrant or any(k >= quadrant and k != _UNMODIFIED for k in picks):
            self.m.fail("isa", f"{op}: shuffle_mask {picks} does not fit {s.partitions} partitions")
        value, old = self.m.read(s, op), self.m.read(d, op)
        moved = None
        if value is not None and old is not None:
            rows, moved = value.reshape(s.partitions, -1), old.reshape(d.partitions, -1).copy()
            for base in range(0, s.partitions, quadrant):
                for i, k in enumerate(picks[:quadrant]):
                    if k != _UNMODIFIED:
                        moved[base + i] = rows[base + k]
            moved = moved.reshape(d.shape)
        self.m.write(d, moved)
        self._emit(op, "vector", [s], [d], partitions=s.partitions, free=s.free_size)

    def gather_flattened(self, dst: Any, data: Any, indices: Any, name: str | None = None) -> None:
        """``dst`` takes, in each partition, the elements of ``data`` (its free axes read
        flat) at the uint32 ``indices`` (nki.language.gather_flattened, v2.26.1; out-of-bounds
        indices give garbage on the hardware and an error here). The engine is GpSimd, as
        its successor nki.isa.nc_n_gather names it (v2.29 page); cost unverified: one GpSimd
        pass over the result."""
        op = "gather_flattened"
        dst, d, idx = (
            self._tile(op, r, t) for r, t in (("dst", dst), ("data", data), ("indices", indices))
        )
        for role, t in (("dst", dst), ("data", d), ("indices", idx)):
            self._in(op, role, t, "sbuf")
        if not 2 <= d.ndim <= 4 or not 2 <= idx.ndim <= 4:
            self.m.fail("isa", f"{op}: data and indices must be 2-, 3- or 4-D")
        if idx.dtype != np.dtype(np.uint32) or idx.partitions != d.partitions:
            self.m.fail("isa", f"{op}: indices must be uint32 over data's partitions")
        self._same_shape(op, dst, "indices", idx)
        rows, where = self.m.read(d, op), self.m.read(idx, op)
        picked = None
        if rows is not None and where is not None:
            flat, at = rows.reshape(d.partitions, -1), where.reshape(d.partitions, -1)
            if (at < 0).any() or (at >= flat.shape[1]).any():
                self.m.fail("isa", f"{op}: an index is outside [0, {flat.shape[1]})")
            picked = np.take_along_axis(flat, at.astype(np.int64), axis=1).reshape(dst.shape)
        self.m.write(dst, picked)
        self._emit(op, "gpsimd", [d, idx], [dst], partitions=dst.partitions, free=dst.free_size)

    def tensor_copy_dynamic(self, dst: Any, src: Any, which: str, engine: Any = None) -> None:
        """A copy whose ``src`` (``which="src"``) or ``dst`` (``"dst"``) sits at a dynamic
        offset within each partition (an index expression plus a one-element SBUF tile,
        kernelopt.sim.indexing), on VectorE unless ``engine`` says otherwise, in
        max(MIN_II_DYNAMIC, N) cycles (nki.isa.tensor_copy_dynamic_src/dst, v2.26.1: same
        partitions and elements per partition; GpSimd cannot reach PSUM)."""
        op = f"tensor_copy_dynamic_{which}"
        d, s = self._tile(op, "dst", dst), self._tile(op, "src", src)
        self._in(op, "dst", d, "sbuf", "psum")
        self._in(op, "src", s, "sbuf", "psum")
        if d.partitions != s.partitions or d.free_size != s.free_size:
            self.m.fail("isa", f"{op}: dst {d.shape} and src {s.shape} must match per partition")
        unit = self._engine(op, engine, "vector", ("vector", "scalar", "gpsimd"))
        if unit == "gpsimd":
            self._no_psum(op, d, s)
        value = self.m.read(s, op)
        self.m.write(d, None if value is None else value.reshape(d.shape))
        self._emit(
            op, unit, [s], [d], partitions=d.partitions, free=s.free_size,
            cycles=max(MIN_II_DYNAMIC, s.free_size),
        )  # fmt: skip

    def sequence_bounds(self, dst: Any, segment_ids: Any, name: str | None = None) -> None:
        """For each element of a one-partition row of segment ids, the start and (exclusive)
        end of its run of equal ids, as ``dst[0, 0, :]`` and ``dst[0, 1, :]``; id 0 is
        padding, with start n and end -1 (nki.isa.sequence_bounds, v2.26.1: GpSimd,
        float32 or int32 in and out; its NumPy equivalent sets the end one past a run's
        last element). Cost unverified: one GpSimd pass over the output."""
        op = "sequence_bounds"
        dst, ids = self._tile(op, "dst", dst), self._tile(op, "segment_ids", segment_ids)
        self._in(op, "dst", dst, "sbuf")
        self._in(op, "segment_ids", ids, "sbuf")
        if ids.partitions != 1 or ids.ndim != 2:
            self.m.fail("isa", f"{op}: segment_ids must be [1, N] (one partition), got {ids.shape}")
        if dst.shape != (1, 2, ids.shape[1]):
            self.m.fail("isa", f"{op}: dst must be {(1, 2, ids.shape[1])}, got {dst.shape}")
        for role, t in (("segment_ids", ids), ("dst", dst)):
            if t.dtype.name not in ("float32", "int32"):
                self.m.fail("isa", f"{op}: {role} must be float32 or int32, got {t.dtype}")
        row = self.m.read(ids, op)
        self.m.write(dst, None if row is None else _run_bounds(row.reshape(-1)).reshape(dst.shape))
        self._emit(op, "gpsimd", [ids], [dst], partitions=1, free=dst.free_size)

    def local_gather(
        self, dst: Any, src_buffer: Any, index: Any, num_elem_per_idx: int = 1,
        num_valid_indices: int | None = None, name: str | None = None,
    ) -> None:  # fmt: skip
        """Each GpSimd core's 16 partitions gather, with one list of indices: the core's
        16-partition slice of ``index`` read partition first (column-major), cut to
        ``num_valid_indices``; index ``i`` picks the ``num_elem_per_idx`` elements from
        flat free offset ``i`` of every partition (nki.isa.local_gather, v2.26.1, its NumPy
        equivalent). ``dst`` holds, per partition, the picks in list order
        (``num_valid_indices * num_elem_per_idx`` elements); an index past the row is
        undefined on the hardware and an error here. Cost unverified: one GpSimd pass."""
        op, core = "local_gather", 16
        dst, src = self._tile(op, "dst", dst), self._tile(op, "src_buffer", src_buffer)
        idx = self._tile(op, "index", index)
        for role, t in (("dst", dst), ("src_buffer", src), ("index", idx)):
            self._in(op, role, t, "sbuf")
        per_core = core * idx.free_size
        valid = per_core if num_valid_indices is None else int(num_valid_indices)
        span = int(num_elem_per_idx)
        if idx.partitions % core or src.partitions != idx.partitions or not 0 < valid <= per_core:
            self.m.fail(
                "isa",
                f"{op}: index and src_buffer need the same multiple of 16 partitions and "
                f"num_valid_indices at most {per_core}, got {idx.shape}, {src.shape}, {valid}",
            )
        if dst.partitions != src.partitions or dst.free_size != valid * span:
            self.m.fail("isa", f"{op}: dst needs {valid * span} elements per partition")
        rows, where = self.m.read(src, op), self.m.read(idx, op)
        picked = None
        if rows is not None and where is not None:
            picked = self._gather_cores(op, rows.reshape(src.partitions, -1), where, valid, span)
            picked = picked.reshape(dst.shape)
        self.m.write(dst, picked)
        self._emit(op, "gpsimd", [src, idx], [dst], partitions=dst.partitions, free=dst.free_size)

    def _gather_cores(
        self, op: str, rows: np.ndarray, where: np.ndarray, valid: int, span: int
    ) -> np.ndarray:
        index = where.reshape(rows.shape[0], -1).astype(np.int64)
        out = np.empty((rows.shape[0], valid, span), rows.dtype)
        for base in range(0, rows.shape[0], 16):
            picks = index[base : base + 16].flatten(order="F")[:valid]
            at = picks[:, None] + np.arange(span)[None, :]
            if (picks < 0).any() or (at >= rows.shape[1]).any():
                self.m.fail("isa", f"{op}: an index reaches past the {rows.shape[1]}-element row")
            out[base : base + 16] = rows[base : base + 16][:, at]
        return out


def _run_bounds(ids: np.ndarray) -> np.ndarray:
    """[starts; ends] of the runs of equal ids, padding (0) at [n; -1]."""
    n = ids.size
    at = np.arange(n)
    first = np.ones(n, bool)
    first[1:] = ids[1:] != ids[:-1]
    last = np.ones(n, bool)
    last[:-1] = ids[:-1] != ids[1:]
    starts = np.maximum.accumulate(np.where(first, at, 0))
    ends = np.minimum.accumulate(np.where(last, at + 1, n)[::-1])[::-1]
    pad = ids == 0
    return np.stack([np.where(pad, n, starts), np.where(pad, -1, ends)]).astype(np.float64)
