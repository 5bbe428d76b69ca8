"""What the fake SDK entry points share: describing a traced kernel and running
the fake neuronx-cc on it, as the real entry points run the real compiler."""

from __future__ import annotations

import inspect
import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

IR_NAME = "kernel.fake-ir.json"


def kernel_function(kernel: Any) -> Any:
    """The plain function behind an ``@nki.jit`` object (or the function itself)."""
    return getattr(kernel, "func", kernel)


def output_dtype(inputs: Mapping[str, np.ndarray]) -> np.dtype:
    """Kernels here write their result in the precision of their float inputs."""
    floats = [np.asarray(v).dtype for v in inputs.values() if np.asarray(v).dtype.kind in "fV"]
    return floats[0] if floats else np.dtype(np.float32)


def trace_outputs(function: Any, inputs: Mapping[str, np.ndarray]) -> list[tuple]:
    """Output shapes by tracing the kernel (on the fake device's model); none when
    the trace fails, so that the compiler reports the problem in its own words."""
    from kernelopt.sim import SimError
    from kernelopt.testing.fake_trn2 import hardware

    source = inspect.getsourcefile(function)
    if source is None:
        raise ValueError(f"cannot find the source file of {function!r}")
    dtype = output_dtype(inputs)
    zeros = {k: np.zeros(np.shape(v), dtype=np.asarray(v).dtype) for k, v in inputs.items()}
    try:
        results = hardware.execute_kernel(Path(source), function.__name__, zeros, dtype)
    except SimError:
        return []
    return [(list(r.shape), str(dtype)) for r in results]


def describe_nki(
    function: Any,
    inputs: Mapping[str, Any],
    outputs: Sequence[tuple[Sequence[int], str, str]],
    *,
    api: str,
    pipeline_options: Sequence[str] = (),
) -> dict[str, Any]:
    source = inspect.getsourcefile(function)
    if source is None:
        raise ValueError(f"cannot find the source file of {function!r}")
    path = Path(source).resolve()
    return {
        "kind": "nki",
        "kernel": str(path),
        "source": path.read_text(),
        "func": function.__name__,
        "inputs": {
            name: [list(np.shape(value)), str(np.asarray(value).dtype)]
            for name, value in inputs.items()
        },
        "outputs": [[list(shape), str(dtype), name] for shape, dtype, name in outputs],
        "api": api,
        "pipeline_options": list(pipeline_options),
    }


def run_compiler(
    ir: dict[str, Any], out_dir: Path, neff: Path, lnc: int, options: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """``neuronx-cc compile`` on the description, in ``out_dir`` (where its log goes)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ir_path = out_dir / IR_NAME
    ir_path.write_text(json.dumps(ir))
    argv = [
        "neuronx-cc",
        "compile",
        str(ir_path),
        "--framework",
        "XLA",
        "--target",
        "trn2",
        "--lnc",
        str(lnc),
        "--output",
        str(neff),
        *options,
    ]
    return subprocess.run(argv, capture_output=True, text=True, cwd=out_dir)
