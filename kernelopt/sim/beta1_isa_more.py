"""Beta-1 calls added by the API audit against the public lists of Neuron SDK 2.26.1
(``nki.isa``: the v2.26.1 nki.isa reference; ``nki.language``: the 2.26-era
``nki/language/__init__.py`` reference stub in aws-neuron/aws-neuron-sdk):
``nisa.select_reduce``, ``range_select``, ``nc_match_replace8``, ``nc_stream_shuffle``,
``tensor_copy_dynamic_src`` and ``_dst``, ``sequence_bounds``, ``local_gather``;
``nl.all``, ``rms_norm``, ``gather_flattened``, ``atomic_rmw``, ``static_cast`` and
``bfp16``. Each lowers to the simulator's instructions (``kernelopt.sim.isa_more`` for
the ones the current API did not have)."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from kernelopt.sim.beta1_isa_fused import column, masked
from kernelopt.sim.isa_more import FP32_MIN
from kernelopt.sim.language import resolve_dtype
from kernelopt.sim.ops import OPS
from kernelopt.sim.tensor import Tile

if TYPE_CHECKING:
    from kernelopt.sim.beta1 import Beta1
    from kernelopt.sim.isa import Isa

BETA1_MORE_ISA_CALLS = (
    "select_reduce",
    "range_select",
    "nc_match_replace8",
    "nc_stream_shuffle",
    "tensor_copy_dynamic_src",
    "tensor_copy_dynamic_dst",
    "sequence_bounds",
    "local_gather",
    "tensor_scalar_cumulative",
)


class Beta1MoreIsa:
    """The beta-1 signatures of the added ISA calls (their v2.26.1 pages)."""

    def __init__(self, beta: Beta1, isa: Isa) -> None:
        self.beta, self.isa = beta, isa

    def select_reduce(
        self, *, dst: Any, predicate: Any, on_true: Any, on_false: Any, reduce_res: Any = None,
        reduce_cmd: Any = None, reduce_op: Any = None, reverse_pred: bool = False,
        mask: Any = None, **_: Any,
    ) -> None:  # fmt: skip
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.select_reduce.html
        (writes ``dst`` in place)."""
        what = "select_reduce"
        on_false = column(on_false, mask) if isinstance(on_false, Tile) else on_false
        self.isa.select_reduce(
            masked(self.beta._tile(what, dst), mask),
            masked(self.beta._tile(what, predicate), mask),
            masked(self.beta._tile(what, on_true), mask),
            on_false, column(reduce_res, mask), reduce_cmd, reduce_op, reverse_pred,
        )  # fmt: skip

    def range_select(
        self, *, on_true_tile: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
        reduce_cmd: Any = None, reduce_res: Any = None, reduce_op: Any = None,
        range_start: float = 0, on_false_value: float = FP32_MIN, mask: Any = None,
        dtype: Any = None, **_: Any,
    ) -> Tile:  # fmt: skip
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.range_select.html"""
        src = self.beta._tile("range_select", on_true_tile)
        dst = self.beta.new(src.shape, self.beta._dtype(dtype, src.dtype))
        self.isa.range_select(
            masked(dst, mask), masked(src, mask), comp_op0, comp_op1, column(bound0, mask),
            column(bound1, mask), reduce_cmd, column(reduce_res, mask), reduce_op, range_start,
            on_false_value,
        )  # fmt: skip
        return dst

    def nc_match_replace8(
        self, *, data: Any, vals: Any, imm: float, dst_idx: Any = None, mask: Any = None,
        dtype: Any = None, **_: Any,
    ) -> Tile:  # fmt: skip
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.nc_match_replace8.html
        ("If provided, a mask is applied to the data tensor")."""
        src = self.beta._tile("nc_match_replace8", data)
        dst = self.beta.new(src.shape, self.beta._dtype(dtype, src.dtype))
        self.isa.nc_match_replace8(
            masked(dst, mask), masked(src, mask), self.beta._tile("nc_match_replace8", vals),
            imm, dst_idx,
        )  # fmt: skip
        return dst

    def nc_stream_shuffle(
        self, src: Any, dst: Any, shuffle_mask: Any, *, mask: Any = None, **_: Any
    ) -> None:
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.nc_stream_shuffle.html
        (writes ``dst`` in place; ``mask`` leaves the locations it drops unmodified)."""
        what = "nc_stream_shuffle"
        self.isa.nc_stream_shuffle(
            masked(self.beta._tile(what, dst), mask),
            masked(self.beta._tile(what, src), mask),
            shuffle_mask,
        )

    def tensor_copy_dynamic_src(
        self, src: Any, *, mask: Any = None, dtype: Any = None, engine: Any = None, **_: Any
    ) -> Tile:
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.tensor_copy_dynamic_src.html:
        a copy of ``src``, which a dynamic offset places (``t[i_p, i_f + off[0, j]]``)."""
        s = self.beta._tile("tensor_copy_dynamic_src", src)
        dst = self.beta.new(s.shape, self.beta._dtype(dtype, s.dtype))
        self.isa.tensor_copy_dynamic(masked(dst, mask), masked(s, mask), "src", engine)
        return dst

    def tensor_copy_dynamic_dst(
        self, *, dst: Any, src: Any, mask: Any = None, engine: Any = None, **_: Any
    ) -> None:
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.tensor_copy_dynamic_dst.html:
        ``src`` copied into ``dst``, which a dynamic offset places (in place)."""
        what = "tensor_copy_dynamic_dst"
        self.isa.tensor_copy_dynamic(
            masked(self.beta._tile(what, dst), mask),
            masked(self.beta._tile(what, src), mask),
            "dst",
            engine,
        )

    def sequence_bounds(self, *, segment_ids: Any, dtype: Any = None, **_: Any) -> Tile:
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.sequence_bounds.html:
        a [1, 2, N] tile of run starts and ends, in ``dtype`` or the ids' own."""
        ids = self.beta._tile("sequence_bounds", segment_ids)
        shape = (ids.shape[0], 2, *ids.shape[1:])
        dst = self.beta.new(shape, self.beta._dtype(dtype, ids.dtype))
        self.isa.sequence_bounds(dst, ids)
        return dst

    def local_gather(
        self, src_buffer: Any, index: Any, num_elem_per_idx: int = 1,
        num_valid_indices: int | None = None, *, mask: Any = None, **_: Any,
    ) -> Tile:  # fmt: skip
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.local_gather.html.
        The result is [P, K, 16, E] (K index columns, E = ``num_elem_per_idx``), the
        shape the page's example declares, when every index is valid, and
        [P, num_valid_indices, E] otherwise: the page gives no rule (unverified)."""
        src = self.beta._tile("local_gather", src_buffer)
        idx = self.beta._tile("local_gather", index)
        span, per_core = int(num_elem_per_idx), 16 * idx.free_size
        valid = per_core if num_valid_indices is None else int(num_valid_indices)
        shape = (
            (src.partitions, idx.free_size, 16, span)
            if valid == per_core
            else (src.partitions, valid, span)
        )
        dst = self.beta.new(shape, src.dtype)
        self.isa.local_gather(dst, src, idx, span, valid)
        return dst

    def tensor_scalar_cumulative(
        self, *, dst: Any, src: Any, op0: Any, op1: Any, imm0: Any, imm1: Any = None,
        reduce_cmd: Any = "reduce_cmd.reset_reduce", mask: Any = None, **_: Any,
    ) -> None:  # fmt: skip
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.27.0/nki/api/generated/nki.isa.tensor_scalar_cumulative.html
        (writes ``dst`` in place; the SDK's test_nki_isa_tensor_scalar_cumulative.py
        calls it from ``neuronxcc.nki.isa``)."""
        what = "tensor_scalar_cumulative"
        self.isa.tensor_scalar_cumulative(
            masked(self.beta._tile(what, dst), mask), masked(self.beta._tile(what, src), mask),
            op0, op1, column(imm0, mask), column(imm1, mask), reduce_cmd,
        )  # fmt: skip


def add_isa_more(nisa: types.ModuleType, beta: Beta1, isa: Isa) -> None:
    """Put the added ISA calls on the beta-1 ``nisa``."""
    calls = Beta1MoreIsa(beta, isa)
    for name in BETA1_MORE_ISA_CALLS:
        setattr(nisa, name, getattr(calls, name))


class Bfp16Constants:
    """``nl.bfp16`` (2.26-era nki.language stub): ``min`` is the bit pattern 0xff80,
    which the stub calls "the minimum (or maximum negative) BFLOAT16 value"; as bfloat16
    that pattern is -inf, and that is what it holds here."""

    min = float(np.array([0xFF80], np.uint16).view(ml_dtypes.bfloat16)[0])


def static_cast(input_data: Any, dtype: Any) -> Any:
    """``nl.static_cast(input_data, dtype)``: a Python scalar or numpy array cast at trace
    time ("cast a scalar or array to a new dtype", 2.26-era nki.language stub); not for
    tiles, which the engines cast."""
    if isinstance(input_data, Tile):
        raise TypeError("nl.static_cast: casts scalars and arrays; cast a tile with dtype=")
    resolved = resolve_dtype(dtype)
    if resolved is None:
        raise TypeError(f"nl.static_cast: unknown dtype {dtype!r}")
    return np.asarray(input_data).astype(resolved)[()]


class Beta1MoreLanguage:
    """The added ``nl.*`` calls that compute on tiles."""

    def __init__(self, beta: Beta1, isa: Isa) -> None:
        self.beta, self.isa = beta, isa

    def all(self, x: Any, axis: Any, *, dtype: Any = bool, mask: Any = None, **_: Any) -> Tile:
        """``nl.all``: whether every element along ``axis`` is non-zero
        (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.language.all.html).
        Lowered as a not_equal pass and a min reduction (VectorE), unverified."""
        flags = self.beta.binary("not_equal", x, 0.0, mask=mask)
        return self.beta.reduce("min", flags, axis, dtype, mask=mask)

    def rms_norm(
        self, x: Any, w: Any, axis: Any, n: Any, epsilon: float = 1e-6, *, dtype: Any = None,
        compute_dtype: Any = None, mask: Any = None, **_: Any,
    ) -> Tile:  # fmt: skip
        """``nl.rms_norm``: ``x / RMS(x) * w`` with RMS over ``axis`` from ``n`` values
        (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.language.rms_norm.html).
        RMS is taken as sqrt(sum(x^2) / n + epsilon): where epsilon enters is unverified.
        Lowered as square, sum, scale-and-shift, rsqrt and two multiplies."""
        beta, out = self.beta, dtype if dtype is not None else compute_dtype
        squares = beta.binary("multiply", x, x, mask=mask)
        total = beta.reduce("sum", squares, axis, keepdims=True, mask=mask)
        shifted = beta.binary("multiply", total, 1.0 / float(n), mask=mask)
        shifted = beta.binary("add", shifted, float(epsilon), mask=mask)
        scale = beta.unary(OPS["rsqrt"], shifted, mask=mask)
        normed = beta.binary("multiply", x, scale, mask=mask)
        return beta.binary("multiply", normed, w, out, mask=mask)

    def gather_flattened(
        self, data: Any, indices: Any, *, mask: Any = None, dtype: Any = None, **_: Any
    ) -> Tile:
        """https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.language.gather_flattened.html"""
        src = self.beta._tile("nl.gather_flattened", data)
        idx = self.beta._tile("nl.gather_flattened", indices)
        dst = self.beta.new(idx.shape, self.beta._dtype(dtype, src.dtype))
        self.isa.gather_flattened(masked(dst, mask), masked(src, mask), masked(idx, mask))
        return dst

    def atomic_rmw(self, dst: Any, value: Any, op: Any, *, mask: Any = None, **_: Any) -> None:
        """``dst = op(dst, value)`` on HBM, atomically: a value added twice to one
        row (two partitions indexing it) adds both
        (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.language.atomic_rmw.html:
        dst an HBM tensor, op only np.add). Lowered to a DMA copy with read-modify-write,
        the engine the docs leave unnamed (unverified)."""
        what = "nl.atomic_rmw"
        m = self.beta.m
        target = masked(self.beta._tile(what, dst), mask)
        if target.buffer.on_chip:
            m.fail("isa", f"{what}: dst must be an HBM tensor, got {target.buffer.kind.upper()}")
        fn = self.isa._op(what, op, 2)
        if fn.name != "add":
            m.fail("isa", f"{what}: op supports only np.add, got {fn!r}")
        if isinstance(value, Tile):
            src = masked(value, mask)
        else:
            src = self.beta.new(target.shape, np.dtype(np.float32))
            self.isa.memset(src, float(value))
        old, add = m.read(target, what), m.read(src, what)
        self.isa.dma_copy(target, src, dst_rmw_op=OPS["add"])
        if old is not None and add is not None and target.coords is not None:
            m.write(target, _accumulated(target, old, add))


def _accumulated(target: Tile, old: np.ndarray, add: np.ndarray) -> np.ndarray:
    """``old + add`` at each element of an indirect view, every addition to an element
    that several positions of the view share counted once."""
    flat = target.flat().reshape(-1)
    adds = np.broadcast_to(add, target.shape).reshape(-1).astype(np.float64)
    places, slot = np.unique(flat, return_inverse=True)
    sums = np.zeros(places.size)
    np.add.at(sums, slot, adds)
    return (old.reshape(-1) + sums[slot]).reshape(target.shape)


def add_language_more(nl: types.ModuleType, beta: Beta1, isa: Isa) -> None:
    """Put the added ``nl.*`` calls and constants on the beta-1 ``nl``."""
    calls = Beta1MoreLanguage(beta, isa)
    for name in ("all", "rms_norm", "gather_flattened", "atomic_rmw"):
        setattr(nl, name, getattr(calls, name))
    nl.static_cast = static_cast
    nl.bfp16 = Bfp16Constants
