"""``nc_matmul(..., perf_mode=double_row)``: TensorE's FP8 double-row mode.

The nki.isa.matmul_perf_mode page: "Double FP8 mode, 2x matmul throughput by packing
two FP8 weight/ifmap element pairs"; the nc_matmul page: supported from NeuronCore-v3,
not on NeuronCore-v2. The operands carry the pair as a size-2 axis after the partition
axis: stationary ``[K, 2, M]``, moving ``[K, 2, N]``, and the result ``[M, N]`` sums over
both K and the pair, ``einsum("klm,kln->mn")`` (aws-neuron-sdk
``general/nki/test/test_nki_isa_nc_matmul.py`` @2086a70, ``test_double_row_gen3``;
nki-samples ``src/nki_samples/reference/double_row_matmul.py`` @41753fb lays its K
tiles out that way). Beta-1 kernels spell the mode ``perf_mode='double_row_gen3'``.

Cost: one matmul of the moving tensor's N columns, as for 16-bit operands, doing twice
the multiply-accumulates (the page's "2x matmul throughput").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from kernelopt.sim.isa_base import IsaCore
    from kernelopt.sim.tensor import Tile

_MODES = ("double_row", "double_row_gen3")
_FP8 = ("float8_e4m3fn", "float8_e5m2")


def is_double_row(perf_mode: Any) -> bool:
    """Whether ``perf_mode`` (a string or ``nisa.matmul_perf_mode.double_row``) asks
    for the double-row mode."""
    return perf_mode is not None and str(perf_mode).rsplit(".", 1)[-1] in _MODES


def _pairs(tile: Tile) -> tuple[int, int, int]:
    """``[K, 2, F]``; a ``[K, 2]`` tile is ``[K, 2, 1]`` (a beta-1 access drops a size-1
    range: the aws-neuron-sdk test's stationary is ``[128, 2, 1]``)."""
    return (*tile.shape, 1) if tile.ndim == 2 else tile.shape


def _check(core: IsaCore, dst: Tile, stationary: Tile, moving: Tile) -> None:
    m, op = core.m, "nc_matmul(perf_mode=double_row)"
    if m.params.name == "trn1":
        m.fail("isa", f"{op}: performance modes are not supported on NeuronCore-v2 (trn1)")
    core._in(op, "dst", dst, "psum")
    core._in(op, "stationary", stationary, "sbuf")
    core._in(op, "moving", moving, "sbuf")
    for role, t in (("stationary", stationary), ("moving", moving)):
        if t.ndim not in (2, 3) or t.shape[1] != 2:
            m.fail("isa", f"{op}: {role} must be [K, 2, F] (the row pair), got {t.shape}")
        if t.dtype.name not in _FP8:
            m.fail("isa", f"{op}: {role} must be fp8 (float8_e4m3/e5m2), got {t.dtype}")
    k, _, mm = _pairs(stationary)
    k2, _, n = _pairs(moving)
    p = m.params
    if k != k2 or k > p.partitions:
        m.fail("isa", f"{op}: contraction K: stationary {k}, moving {k2} (at most {p.partitions})")
    if mm > p.stationary_fmax or n > p.moving_fmax:
        m.fail("isa", f"{op}: M={mm} (<= {p.stationary_fmax}), N={n} (<= {p.moving_fmax})")
    if dst.shape != (mm, n) or dst.dtype != np.float32:
        m.fail("isa", f"{op}: dst must be fp32 ({mm}, {n}), got {dst.dtype} {dst.shape}")


def double_row_matmul(
    core: IsaCore, dst: Tile, stationary: Tile, moving: Tile, accumulate: bool | None
) -> None:
    """``dst (+)= einsum("klm,kln->mn", stationary, moving)``; accumulation as
    ``nc_matmul`` decides it (into a PSUM tile already holding a partial sum)."""
    m = core.m
    _check(core, dst, stationary, moving)
    written = dst.alloc.written[dst.index]
    acc = bool(written.any()) if accumulate is None else bool(accumulate)
    a = m.read(stationary, "nc_matmul")
    b = m.read(moving, "nc_matmul")
    reads = [stationary, moving]
    old = None
    if acc:
        reads.append(dst)
        old = m.read(dst, "nc_matmul")
    if a is None or b is None:
        m.write(dst, None)
    else:
        a, b = a.reshape(_pairs(stationary)), b.reshape(_pairs(moving))
        prod = np.einsum("klm,kln->mn", a, b, dtype=np.float32)
        m.write(dst, prod if old is None else old + prod)
    k, _, mm = _pairs(stationary)
    n = moving.shape[2]
    core._emit(
        "nc_matmul",
        "tensor",
        reads,
        [dst],
        partitions=k,
        free=n,
        stationary_free=mm,
        macs=2 * k * mm * n,
    )
