"""Fake ``nkipy.runtime.execute``.

Source: aws-neuron/nkipy ``nkipy/src/nkipy/runtime/execute.py``@66974b2:
``baremetal_run_traced_kernel(kernel, *args, artifacts_dir=None, save_trace=False,
additional_compiler_args="", target=CompilationTarget.DEFAULT, **kwargs)`` specialises
the kernel, prepends ``compile.nkipy_compiler_args`` to the additional arguments,
removes the build folder (``shutil.rmtree``) when it exists, compiles with
``compile_to_neff(..., save_artifacts=True)`` and then runs the NEFF through its
device runtime (Spike), raising ``RuntimeError("Runtime is not available...")``
where that runtime is missing. The fake has no Spike, so it always stops there after
the compile: kernelopt compiles with ``core.compile.compile_to_neff`` and runs the
NEFF itself.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from nkipy.core import compile

_RUNTIME_AVAILABLE = False


def baremetal_run_traced_kernel(
    kernel: Any,
    *args: Any,
    artifacts_dir: str | None = None,
    save_trace: bool = False,
    additional_compiler_args: str = "",
    target: Any = compile.CompilationTarget.DEFAULT,
    **kwargs: Any,
) -> Any:
    if not _RUNTIME_AVAILABLE:
        raise RuntimeError("Runtime is not available. Please install Spike to use this function.")
    kernel.specialize(*args, **kwargs)
    build_dir = artifacts_dir or f"/tmp/build/{kernel.__name__}"
    flags = compile.nkipy_compiler_args + " " + additional_compiler_args
    if os.path.exists(build_dir):
        shutil.rmtree(build_dir)
    return compile.compile_to_neff(
        trace_kernel=kernel,
        output_dir=build_dir,
        neff_name=f"{kernel.__name__}.neff",
        save_artifacts=True,
        additional_compiler_args=flags,
        target=target,
    )
