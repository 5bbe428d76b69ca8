"""Fake ``neuronpy.core.compile``: ``trace``, ``CompilationTarget`` and
``compile_to_neff``.

Source: awslabs/nki-autotune ``autotune/core/compile.py``@1433f19 calls
``trace(kernel)`` on a numpy function, then ``traced.specialize(*inputs)`` and
``compile_to_neff(trace_kernel=, output_dir=, target=CompilationTarget.TRN2,
additional_compiler_args=, save_artifacts=True)``, which returns the NEFF's path.
Everything else (defaults, the NEFF's name, the traced object's attributes, the
exception a failed compile raises) is unverified; the fake shapes it like its
successor nkipy (``kernelopt.testing.fake_trn2`` pylib/baseline) and reuses that
fake's traced kernel and compiler call.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import config
from kernelopt.testing.fake_trn2.pylib.baseline.nkipy.core import compile as successor
from kernelopt.testing.fake_trn2.pylib.baseline.nkipy.core.trace import NKIPyKernel

NEFF_NAME = "file.neff"


class CompilationTarget(enum.Enum):
    TRN1 = "trn1"
    TRN2 = "trn2"


def trace(fn: Any) -> NKIPyKernel:
    return NKIPyKernel.trace(fn)


def compile_to_neff(
    trace_kernel: Any,
    output_dir: str,
    target: CompilationTarget = CompilationTarget.TRN1,
    additional_compiler_args: str = "",
    save_artifacts: bool = False,
) -> str:
    config.record_call("neuronpy", ["compile_to_neff", additional_compiler_args])
    ir = {**successor._ir(trace_kernel), "api": "neuronpy"}
    work = Path(output_dir)
    work.mkdir(parents=True, exist_ok=True)
    return str(successor._compile(ir, work, NEFF_NAME, target.value, additional_compiler_args))
