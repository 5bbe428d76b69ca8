"""``nki.tensor``: trace-time tensors, the constant data ``nl.shared_constant`` takes.

The nki.language.shared_constant reference page (latest) names the builders:
"A trace-time tensor containing the constant data ... created using functions
from nki.tensor such as nki.tensor.zeros(), nki.tensor.identity(), or
nki.tensor.arange()", and its examples combine them with arithmetic
(``ntensor.zeros((64, 64), dtype=nl.int8) + 1``). They are evaluated while the
kernel is traced, on the host, so here they are numpy arrays of the given dtype.
nki-library kernels call ``ntensor.identity(n, dtype)`` positionally
(``core/embeddings/rope.py`` @0759719).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from kernelopt.sim.language import resolve_dtype


def _dtype(dtype: Any, default: Any) -> np.dtype:
    if dtype is None:
        return np.dtype(default)
    resolved = resolve_dtype(dtype)
    if resolved is None:
        raise TypeError(f"nki.tensor: unknown dtype {dtype!r}")
    return resolved


def identity(n: int, dtype: Any = None) -> np.ndarray:
    """An ``n`` x ``n`` identity matrix (the shared_constant page's
    ``ntensor.identity(128, dtype=nl.int8)``)."""
    return np.eye(int(n), dtype=_dtype(dtype, np.float32))


def zeros(shape: Any, dtype: Any = None) -> np.ndarray:
    """Zeros of ``shape`` (the page's ``ntensor.zeros((64, 64), dtype=nl.int8) + 1``)."""
    shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(shape)
    return np.zeros(shape, dtype=_dtype(dtype, np.float32))


def arange(*args: Any, dtype: Any = None) -> np.ndarray:
    """Values ``start, start + step, ...`` below ``stop``, as numpy's arange (the page's
    ``ntensor.arange(0, 32, 1, dtype=nl.int32)`` gives 0 .. 31)."""
    return np.arange(*args).astype(_dtype(dtype, np.int32))


def build_tensor_module() -> types.ModuleType:
    module = types.ModuleType("nki.tensor", "nki.tensor as simulated by kernelopt")
    module.identity = identity
    module.zeros = zeros
    module.arange = arange
    module.TraceTimeTensor = np.ndarray
    return module
