"""``nki.language`` for the simulator: dtypes, buffers, ops, loops, allocation."""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

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
        "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
        "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    }
)


@dataclass(frozen=True)
class Op:
    """An ``nl.*`` function as passed in ``op=``: ``arity`` 1 (activation) or 2."""

    name: str
    arity: int
    fn: Callable[..., np.ndarray]
    reduce: Callable[..., np.ndarray] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"nl.{self.name} is passed as op= to an nisa call in this simulator; "
            "tile-level nl.* arithmetic is not supported"
        )

    def __repr__(self) -> str:
        return f"nl.{self.name}"


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(1.0 / np.sqrt(2.0))))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.float32(np.sqrt(2.0 / np.pi)) * (x + 0.044715 * x**3)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


OPS: Mapping[str, Op] = MappingProxyType(
    {
        op.name: op
        for op in (
            Op("add", 2, np.add, np.sum),
            Op("subtract", 2, np.subtract),
            Op("multiply", 2, np.multiply, np.prod),
            Op("divide", 2, np.divide),
            Op("maximum", 2, np.maximum, np.max),
            Op("minimum", 2, np.minimum, np.min),
            Op("power", 2, np.power),
            Op("copy", 1, lambda x: x),
            Op("exp", 1, np.exp),
            Op("log", 1, np.log),
            Op("relu", 1, lambda x: np.maximum(x, 0.0)),
            Op("rsqrt", 1, lambda x: 1.0 / np.sqrt(x)),
            Op("sqrt", 1, np.sqrt),
            Op("reciprocal", 1, lambda x: 1.0 / x),
            Op("negative", 1, np.negative),
            Op("abs", 1, np.abs),
            Op("gelu", 1, _gelu),
            Op("gelu_apprx_tanh", 1, _gelu_tanh),
            Op("silu", 1, lambda x: x * _sigmoid(x)),
            Op("square", 1, np.square),
            Op("tanh", 1, np.tanh),
            Op("sigmoid", 1, _sigmoid),
        )
    }
)


# numpy ufuncs that beta-1 kernels pass as op= (``op=np.add``), as the nl op they mean.
NUMPY_OPS: Mapping[Any, Op] = MappingProxyType(
    {
        np.add: OPS["add"],
        np.subtract: OPS["subtract"],
        np.multiply: OPS["multiply"],
        np.divide: OPS["divide"],
        np.maximum: OPS["maximum"],
        np.minimum: OPS["minimum"],
        np.power: OPS["power"],
        np.exp: OPS["exp"],
        np.log: OPS["log"],
        np.sqrt: OPS["sqrt"],
        np.tanh: OPS["tanh"],
        np.abs: OPS["abs"],
        np.negative: OPS["negative"],
        np.square: OPS["square"],
    }
)


@dataclass(frozen=True)
class TileSize:
    """``nl.tile_size``: the ISA tile limits, from the machine's parameters."""

    pmax: int
    gemm_stationary_fmax: int
    gemm_moving_fmax: int
    psum_bank_fmax: int  # fp32 values per partition in one PSUM bank
    psum_fmax: int  # fp32 values per partition in all of PSUM


def _range(start: int, stop: int | None = None, step: int = 1) -> range:
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
        psum_fmax=p.psum_partition_bytes // 4,
    )
    module.affine_range = _range
    module.sequential_range = _range
    module.static_range = _range
    for name, buffer in BUFFERS.items():
        setattr(module, name, buffer)
    for name, dt in DTYPES.items():
        setattr(module, name, dt)
    for name, op in OPS.items():
        setattr(module, name, op)
    return module
