"""What every step shares: the record line it ends with, its one error type, the
workload's inputs and expected outputs, and the tensors.json beside a NEFF."""

from __future__ import annotations

import importlib
import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import TENSORS_NAME
from kernelopt.workload import WorkloadError, load_workload

MARK = "KERNELOPT-STEP "


class StepError(RuntimeError):
    """A step failed; the message is what the record's error says."""


def emit(record: dict[str, Any]) -> None:
    print(MARK + json.dumps(record), flush=True)


@dataclass(frozen=True)
class TensorStub:
    """An output's shape, dtype and name, as the older compile entry point expects."""

    shape: tuple[int, ...]
    dtype: np.dtype
    name: str


def parameters(function: Any) -> list[str] | None:
    """A callable's parameter names in order (``*args`` as ``*name``), None if it has no
    signature Python can read."""
    try:
        found = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    names = []
    for p in found:
        prefix = "*" if p.kind == p.VAR_POSITIONAL else "**" if p.kind == p.VAR_KEYWORD else ""
        names.append(prefix + p.name)
    return names


def load(workload_path: Path) -> Any:
    try:
        return load_workload(workload_path, require=("f_numpy", "INPUT_SPECS"))
    except WorkloadError as exc:
        raise StepError(str(exc)) from None


def expected_outputs(workload: Any, inputs: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """f_numpy on the inputs in fp32, as the CPU check computes it."""
    as_fp32 = {k: v.astype(np.float32) if v.dtype.kind in "fV" else v for k, v in inputs.items()}
    result = workload.f_numpy(**as_fp32)
    return tuple(np.asarray(r) for r in (result if isinstance(result, tuple | list) else (result,)))


def output_names(count: int) -> list[str]:
    return ["output"] if count == 1 else [f"output{i}" for i in range(count)]


def output_stubs(workload: Any, inputs: dict[str, np.ndarray]) -> list[TensorStub]:
    """Output shapes from the numpy oracle; dtype that of the float inputs
    (kernels here write their result in the input precision)."""
    results = expected_outputs(workload, inputs)
    floats = [v.dtype for v in inputs.values() if v.dtype.kind in "fV"]
    dtype = floats[0] if floats else np.dtype(np.float32)
    return [
        TensorStub(tuple(np.shape(r)), dtype, name)
        for r, name in zip(results, output_names(len(results)), strict=True)
    ]


def package_version(package: str) -> str | None:
    try:
        value = getattr(importlib.import_module(package), "__version__", None)
    except Exception:  # noqa: BLE001 - any failure means "no version to report"
        return None
    return str(value) if value is not None else None


def sdk_missing(what: str, exc: Exception) -> StepError:
    return StepError(
        f"{what} is not importable here ({exc}); source the Neuron environment first "
        "(device.neuron.activate)"
    )


def tensor_json(spec: Any) -> dict[str, Any]:
    """A compiler's tensor spec (``.name``, ``.shape``, ``.dtype``) as JSON."""
    dtype = getattr(spec, "dtype", None)
    dtype = getattr(dtype, "name", None) or (str(dtype) if dtype is not None else None)
    shape = getattr(spec, "shape", None)
    return {
        "name": str(spec.name),
        "shape": [int(n) for n in shape] if shape is not None else None,
        "dtype": dtype,
    }


def write_tensors(out: Path, inputs: list[dict], outputs: list[dict], source: str) -> None:
    """The NEFF's tensors as its compiler described them, beside it (TENSORS_NAME), so
    the run reads outputs in the dtype the NEFF writes rather than guessing one."""
    (out / TENSORS_NAME).write_text(
        json.dumps({"inputs": inputs, "outputs": outputs, "source": source})
    )


def compile_error(exc: BaseException) -> StepError:
    """A compiler failure in the compiler's own words (NCCError on current nki)."""
    text = str(exc).strip() or repr(exc)
    return StepError(f"compile failed ({type(exc).__name__}): {text}")
