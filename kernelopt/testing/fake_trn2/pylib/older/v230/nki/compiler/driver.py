"""Fake ``nki.compiler.driver`` in the shape before June 2026 (offered as SDK 2.30-2.31):

    opts = CompileOptions(target="trn2", lnc=1, output_path=NEFF, artifacts_dir=DIR)
    opts = opts.set_pipeline_options("enable-linear-scan-allocation=false", ...)
    bir, result = compile_to_bir(Kernel(fn), frontend=TracerFrontend(), inputs={...},
                                 compile_opts=opts, output_names=[...])
    compiled = compile_bir_to_neff(opts, bir, input_arrays, result.argument_names,
                                   result.output_names,
                                   input_output_aliases=result.input_output_aliases)
    compiled.neuronx_cc_error   # the compiler's error text; the call itself does not raise

Source: the public runner awslabs/nki-autotune as it called the driver before its
commit e7676de ("fix profiler compile API drift", 5 June 2026), which moved to the
current shape (pylib/current). Which SDK release shipped this shape, and
``neuronx_cc_error`` as the failure report: unverified (the runner's code only).
Tracing to BIR happens here; BIR to NEFF runs the fake ``neuronx-cc``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.testing.fake_trn2 import config, trace


class CompileOptions:
    def __init__(self, target: str, lnc: int, output_path: str, artifacts_dir: str) -> None:
        self.target = target
        self.lnc = lnc
        self.output_path = output_path
        self.artifacts_dir = artifacts_dir
        self.pipeline_options: tuple[str, ...] = ()

    def set_pipeline_options(self, *options: str) -> CompileOptions:
        """Compiler pipeline options (e.g. ``enable-instruction-scheduling=false``),
        appended as given; returns the options to use."""
        changed = copy.copy(self)
        changed.pipeline_options = tuple(options)
        return changed


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class TraceResult:
    input_specs: tuple[TensorSpec, ...]
    argument_names: tuple[str, ...]
    output_names: tuple[str, ...]
    input_output_aliases: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CompiledKernel:
    neff_path: str
    neuronx_cc_error: str | None = None


def compile_to_bir(
    kernel: Any,
    *,
    frontend: Any,
    inputs: Mapping[str, np.ndarray],
    compile_opts: CompileOptions,
    output_names: Sequence[str],
) -> tuple[dict[str, Any], TraceResult]:
    config.record_call("nki.compiler.driver", ["compile_to_bir", compile_opts.target])
    if compile_opts.target != "trn2":
        raise ValueError(f"unsupported target {compile_opts.target!r}")
    function = getattr(kernel, "func", trace.kernel_function(kernel))
    parameters = list(inspect.signature(function).parameters)
    missing = [p for p in parameters if p not in inputs]
    if missing:
        raise TypeError(f"{function.__name__}: no input for parameters {missing}")
    shapes = trace.trace_outputs(function, inputs)
    if shapes and len(shapes) != len(output_names):
        raise ValueError(
            f"{function.__name__} returns {len(shapes)} outputs, {len(output_names)} names given"
        )
    outputs = [(s, d, n) for (s, d), n in zip(shapes, output_names, strict=False)]
    bir = trace.describe_nki(function, inputs, outputs, api="nki.compiler")
    result = TraceResult(
        input_specs=tuple(
            TensorSpec(tuple(np.shape(inputs[p])), str(np.asarray(inputs[p]).dtype))
            for p in parameters
        ),
        argument_names=tuple(parameters),
        output_names=tuple(output_names),
    )
    return bir, result


def compile_bir_to_neff(
    opts: CompileOptions,
    bir: dict[str, Any],
    input_arrays: Sequence[np.ndarray],
    argument_names: Sequence[str],
    output_names: Sequence[str],
    *,
    input_output_aliases: Mapping[int, int] | None = None,
) -> CompiledKernel:
    config.record_call(
        "nki.compiler.driver",
        ["compile_bir_to_neff", *opts.pipeline_options],
    )
    if len(input_arrays) != len(argument_names):
        raise ValueError(f"{len(input_arrays)} input arrays for {len(argument_names)} arguments")
    ir = {**bir, "pipeline_options": list(opts.pipeline_options)}
    done = trace.run_compiler(ir, Path(opts.artifacts_dir), Path(opts.output_path), opts.lnc)
    if done.returncode != 0:
        return CompiledKernel(opts.output_path, (done.stderr or done.stdout).strip())
    return CompiledKernel(opts.output_path)
