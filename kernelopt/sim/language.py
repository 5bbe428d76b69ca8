"""``nki.language`` for the simulator: dtypes, buffers, ops, loops, allocation."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from kernelopt.sim.ops import OPS
from kernelopt.sim.tensor import Buffer, Tile

if TYPE_CHECKING:
    from kernelopt.sim.isa import Isa
    from kernelopt.sim.machine import Machine

BUFFERS: Mapping[str, Buffer] = MappingProxyType(
    {
        "sbuf": Buffer("sbuf", "sbuf"),
        "psum": Buffer("psum", "psum"),
        "hbm": Buffer("hbm", "hbm"),
        "private_hbm": Buffer("private_hbm", "hbm"),
        "shared_hbm": Buffer("shared_hbm", "hbm"),
    }
)

DTYPES: Mapping[str, np.dtype] = MappingProxyType(
    {
        "bfloat16": np.dtype(ml_dtypes.bfloat16),
        "float16": np.dtype(np.float16),
        "float32": np.dtype(np.float32),
        "int32": np.dtype(np.int32),
        # The NKI language's narrower integer types (nki.language dtypes); values
        # are held as int32 in the simulator, and take their own bytes on chip.
        "int8": np.dtype(np.int8),
        "int16": np.dtype(np.int16),
        "uint8": np.dtype(np.uint8),
        "uint16": np.dtype(np.uint16),
        "uint32": np.dtype(np.uint32),
        "bool_": np.dtype(np.bool_),
        "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
        "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    }
)


@dataclass(frozen=True)
class TileSize:
    """``nl.tile_size``: the ISA tile limits, from the machine's parameters."""

    pmax: int
    gemm_stationary_fmax: int
    gemm_moving_fmax: int
    psum_bank_fmax: int  # fp32 values per partition in one PSUM bank
    # psum_fmax is one bank too: the nki.language.tile_size page (Neuron SDK
    # 2.33) reads "Maximum free dimension per PSUM bank per partition, in FP32
    # elements" ("despite the name", deprecated for psum_bank_fmax).
    psum_fmax: int
    bn_stats_fmax: int = 512  # nki.isa.bn_stats input free size limit


def _range(start: int, stop: int | None = None, step: int = 1, **_options: Any) -> range:
    # Scheduling hints (directives=nki.compiler.no_reorder(), ...) change the
    # compiled order, not the iterations.
    return range(start) if stop is None else range(start, stop, step)


def resolve_dtype(dtype: Any) -> np.dtype | None:
    """A dtype given as an ``nl`` dtype, a numpy dtype or its name; None if unknown."""
    if isinstance(dtype, str):
        return DTYPES.get(dtype)
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def _address(machine: Machine, address: Any) -> tuple[int, ...] | None:
    """``address=``: (partition offset, byte offset) on chip, (byte offset,) in HBM; an
    int is taken as the byte offset."""
    if address is None:
        return None
    values = (address,) if isinstance(address, int) else tuple(address)
    if not values or not all(isinstance(v, int) and v >= 0 for v in values):
        machine.fail("isa", f"address must be non-negative ints, got {address!r}")
    return values


class NKIObject:
    """``nki.language.NKIObject``: "Base class for NKI kernel dataclasses and configuration
    objects" (nki.language API reference); kernel classes derive from it (the attention
    tutorial's ``MemManager``, nki-library's ``TensorView``) and work as Python classes."""


def build_language(machine: Machine, isa: Isa) -> types.ModuleType:
    module = types.ModuleType("nki.language", "nki.language as simulated by kernelopt")

    def ndarray(
        shape: tuple[int, ...],
        dtype: Any,
        buffer: Buffer | None = None,
        name: str | None = "",
        address: Any = None,
    ) -> Tile:
        resolved = resolve_dtype(dtype)
        if resolved is None:
            machine.fail("isa", f"unknown dtype {dtype!r}")
        if buffer is None or buffer is Ellipsis:
            buffer = BUFFERS["sbuf"]
        if not isinstance(buffer, Buffer):
            machine.fail(
                "isa", f"buffer must be one of nl.sbuf/psum/hbm/shared_hbm, got {buffer!r}"
            )
        return machine.allocate(
            tuple(shape), resolved, buffer, name or None, address=_address(machine, address)
        )

    def zeros(
        shape: tuple[int, ...],
        dtype: Any,
        buffer: Buffer | None = None,
        name: str | None = "",
        address: Any = None,
    ) -> Tile:
        tile = ndarray(shape, dtype, buffer, name, address)
        isa.zero_fill(tile)
        return tile

    module.ndarray = ndarray
    module.zeros = zeros
    # The nki.language.NkiTensor page: the tensor type nl.ndarray returns (kernels
    # annotate with it and test isinstance).
    module.NkiTensor = Tile
    module.NKIObject = NKIObject
    # nki.language.no_reorder: "Prevent the scheduler from reordering operations in
    # this region" (a context manager); it changes the order, not the values, and
    # the simulated timeline does not follow it.
    module.no_reorder = contextlib.nullcontext
    # nl.par_dim marks the partition axis in older kernels; the first axis
    # is the partition axis either way.
    module.par_dim = lambda size: size
    module.ds = lambda start, size: slice(start, start + size)
    p = machine.params
    module.tile_size = TileSize(
        pmax=p.partitions,
        gemm_stationary_fmax=p.stationary_fmax,
        gemm_moving_fmax=p.moving_fmax,
        psum_bank_fmax=p.psum_bank_bytes // 4,
        psum_fmax=p.psum_bank_bytes // 4,
    )
    module.affine_range = _range
    module.sequential_range = _range
    module.static_range = _range
    for name, buffer in BUFFERS.items():
        setattr(module, name, buffer)
    for name, dt in DTYPES.items():
        setattr(module, name, dt)
    module.fp32 = Fp32Constants
    for name, op in OPS.items():
        setattr(module, name, op)
    return module


class Fp32Constants:
    """``nl.fp32``: fp32 constants (``nl.fp32.min``, the most negative finite fp32,
    which the NKI tutorials use for -inf since the 2.26 release notes)."""

    min = float(np.finfo(np.float32).min)


def finfo(dtype: Any) -> Any:
    """Beta-1 ``nl.finfo(dtype)``: machine limits of a float type (bfloat16 and fp8
    included); the nki-samples vision kernels fill padding with ``finfo(dt).min``."""
    dt = resolve_dtype(dtype)
    if dt is None or dt.kind not in "fV":
        raise TypeError(f"nl.finfo: {dtype!r} is not a float dtype")
    return ml_dtypes.finfo(dt)


def iinfo(dtype: Any) -> Any:
    """Beta-1 ``nl.iinfo(dtype)``: machine limits of an integer type."""
    dt = resolve_dtype(dtype)
    if dt is None or dt.kind not in "iu":
        raise TypeError(f"nl.iinfo: {dtype!r} is not an integer dtype")
    return np.iinfo(dt)
