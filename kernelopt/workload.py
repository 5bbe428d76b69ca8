"""Loading a kernel's math (`workload.py`) and making its seeded inputs.

A workload module defines ``f_nkigym`` (the op graph), ``f_numpy`` (the
oracle) and ``INPUT_SPECS`` (``{param: (shape, dtype_str)}``). The seed's
six-name contract (``CACHE_ROOT``, ``HOSTS``, ``TARGET_MFU`` too) is accepted:
those optional names are read when present.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REQUIRED = ("f_nkigym", "f_numpy", "INPUT_SPECS")
SEED_CONTRACT = ("f_nkigym", "f_numpy", "INPUT_SPECS", "CACHE_ROOT", "HOSTS", "TARGET_MFU")


class WorkloadError(ValueError):
    """A workload file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Workload:
    path: Path
    f_numpy: Callable[..., np.ndarray]
    input_specs: dict[str, tuple[tuple[int, ...], str]]
    f_nkigym: Callable[..., Any] | None = None
    hosts: tuple[str, ...] = ()
    target_mfu: float | None = None
    cache_root: str | None = None
    module: Any = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.path.parent.name if self.path.name == "workload.py" else self.path.stem


# The short names NKI and the Neuron tools print (bf16, fp32), by the dtype they name.
DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp16": "float16",
    "fp8_e4m3": "float8_e4m3",
}


def numpy_dtype(name: str) -> np.dtype:
    """``"bfloat16"`` and friends as numpy dtypes (ml_dtypes for the narrow floats)."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        try:
            return np.dtype(getattr(ml_dtypes, name))
        except AttributeError:
            raise WorkloadError(f"unknown dtype {name!r}") from None


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    return f"kernelopt_workload_{digest}"


def load_workload(path: str | Path, require: Iterable[str] = REQUIRED) -> Workload:
    """Import ``path`` and check it defines every name in ``require``.

    A missing name is reported together with every other missing name, in one
    error, as the seed contract asks.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise WorkloadError(f"{path}: workload file does not exist")
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkloadError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered so that inspect.getmodule() works on the traced functions.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's code: report it, never crash through
        sys.modules.pop(name, None)
        raise WorkloadError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    missing = [n for n in require if not hasattr(module, n)]
    if missing:
        hint = ""
        if "f_numpy" in missing and hasattr(module, "f_nkigym"):
            hint = (
                "; f_numpy is the oracle a kernel is checked against, the same math in numpy"
                " (the op classes compute in numpy when called on arrays, so"
                " f_nkigym's math in fp32 is one way to write it)"
            )
        raise WorkloadError(
            f"{path}: workload is missing required names: {', '.join(missing)}{hint}"
        )
    specs = getattr(module, "INPUT_SPECS", None)
    if not isinstance(specs, dict) or not specs:
        raise WorkloadError(
            f"{path}: INPUT_SPECS must be a non-empty dict {{param: (shape, dtype)}}"
        )
    clean: dict[str, tuple[tuple[int, ...], str]] = {}
    for param, value in specs.items():
        try:
            shape, dtype = value
            shape = tuple(int(s) for s in shape)
            if not isinstance(dtype, str):
                dtype = np.dtype(dtype).name  # np.float32, ml_dtypes.bfloat16: by name
            dtype = DTYPE_ALIASES.get(dtype, dtype)
            numpy_dtype(dtype)
        except (TypeError, ValueError) as exc:
            raise WorkloadError(
                f"{path}: INPUT_SPECS[{param!r}] must be (shape tuple, dtype string), "
                f"got {value!r} ({exc})"
            ) from None
        clean[str(param)] = (shape, str(dtype))
    f_numpy = getattr(module, "f_numpy", None)
    if f_numpy is not None and not callable(f_numpy):
        raise WorkloadError(f"{path}: f_numpy must be callable")
    hosts = getattr(module, "HOSTS", ())
    if isinstance(hosts, str) or not all(isinstance(h, str) for h in hosts):
        raise WorkloadError(f"{path}: HOSTS must be a list of host names")
    target = getattr(module, "TARGET_MFU", None)
    cache_root = getattr(module, "CACHE_ROOT", None)
    return Workload(
        path=path,
        f_numpy=f_numpy,
        input_specs=clean,
        f_nkigym=getattr(module, "f_nkigym", None),
        hosts=tuple(hosts),
        target_mfu=float(target) if target is not None else None,
        cache_root=str(cache_root) if cache_root is not None else None,
        module=module,
    )


def make_inputs(
    input_specs: dict[str, tuple[tuple[int, ...], str]], seed: int = 0
) -> dict[str, np.ndarray]:
    """Seeded inputs in each parameter's declared dtype, values in [-1, 1).

    The same seed gives byte-identical inputs on every machine (numpy's PCG64).
    """
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for param, (shape, dtype) in input_specs.items():
        values = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
        out[param] = values.astype(numpy_dtype(dtype))
    return out
