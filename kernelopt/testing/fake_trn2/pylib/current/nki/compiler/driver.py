"""Fake ``nki.compiler.driver`` of the current nki wheel (SDK >= 2.32): the NKI
compiler driver in the shape its callers use since June 2026.

Sources, per interface:
- ``CompileOptions`` (a frozen dataclass: ``target``, ``lnc`` 1 or 2,
  ``artifacts_dir``, ``output_path`` default "file.neff", ``neuronx_cc_args``,
  ``nki_opt_pipeline_options``; ``set_pipeline_options(*options)`` returns a copy with
  the options appended), ``NirResult`` (``descriptor``; ``input_specs`` /
  ``output_specs`` properties; iterating it is the deprecated ``(bir, result)``
  unpacking and yields the result twice), ``compile_bir_to_neff(compile_opts, bir,
  input_arrays, argument_names, output_arg_names)`` (five parameters, no
  ``input_output_aliases``; a compiler failure raises ``NCCError``) and
  ``CompiledKernel`` (``neff_path``, ``input_specs``, ``output_specs``): the nki
  wheel's own ``nki/compiler/driver.py`` ("INTERNAL MODULE - may change without
  notice"), as found in the public code index; awslabs/nki-autotune commit e7676de
  ("fix profiler compile API drift") calls it this way.
- ``compile_to_bir(kernel, *, frontend, inputs, compile_opts)``: its public callers'
  keyword call (the definition was not found in the public record): unverified.
- That the artifacts folder must be empty: CompileOptions' own docstring ("neuronx-cc
  requires a clean directory; reusing the same directory will fail").
- Spec names, the output's name, and that ``input_arrays`` are used only for the
  simulator: unverified (the fake ignores the arrays).

Tracing happens here; BIR to NEFF runs the fake ``neuronx-cc``.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.testing.fake_trn2 import config, trace


class NCCError(RuntimeError):
    """neuronx-cc failed; the message carries the compiler's own text."""


@dataclass(frozen=True)
class CompileOptions:
    target: str = "trn1"
    lnc: int = 1
    artifacts_dir: str | None = None
    neuronx_cc_args: tuple[str, ...] = ()
    output_path: str = "file.neff"
    nki_opt_pipeline_options: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.target not in ("trn1", "trn2", "trn3"):
            raise ValueError(f"Invalid target: {self.target}")
        if self.lnc not in (1, 2):
            raise ValueError(f"lnc must be 1 or 2, got {self.lnc}")

    def set_pipeline_options(self, *options: str) -> CompileOptions:
        return replace(self, nki_opt_pipeline_options=self.nki_opt_pipeline_options + options)


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class KernelDescriptor:
    kernel_json_path: str
    input_specs: tuple[TensorSpec, ...]
    output_specs: tuple[TensorSpec, ...]
    func_name: str
    aliases: tuple[tuple[int, int], ...] = ()


@dataclass(eq=False)
class NirResult:
    descriptor: KernelDescriptor
    work_dir: str
    ir: dict[str, Any] = field(default_factory=dict, repr=False)
    lnc: int = 1
    target: str = ""

    @property
    def input_specs(self) -> list[TensorSpec]:
        return list(self.descriptor.input_specs)

    @property
    def output_specs(self) -> list[TensorSpec]:
        return list(self.descriptor.output_specs)

    def __iter__(self) -> Iterator[NirResult]:
        warnings.warn("Unpacking NirResult as (bir, result) is deprecated.", DeprecationWarning, 2)
        return iter((self, self))


@dataclass
class CompiledKernel:
    neff_path: str
    target: str
    bir: NirResult
    lnc: int = 1
    artifacts_dir: str | None = None

    @property
    def input_specs(self) -> list[TensorSpec]:
        return list(self.bir.descriptor.input_specs)

    @property
    def output_specs(self) -> list[TensorSpec]:
        return list(self.bir.descriptor.output_specs)


def compile_to_bir(
    kernel: Any,
    *,
    frontend: Any = None,
    inputs: Mapping[str, np.ndarray],
    compile_opts: CompileOptions,
) -> NirResult:
    config.record_call("nki.compiler.driver", ["compile_to_bir", compile_opts.target])
    work = Path(compile_opts.artifacts_dir or ".").resolve()
    if work.exists() and any(work.iterdir()):
        raise RuntimeError(f"artifacts_dir {work} is not empty: neuronx-cc needs a clean directory")
    function = trace.kernel_function(kernel)
    parameters = list(inspect.signature(function).parameters)
    missing = [p for p in parameters if p not in inputs]
    if missing:
        raise TypeError(f"{function.__name__}: no input for parameters {missing}")
    shapes = trace.trace_outputs(function, inputs)
    names = ["output"] if len(shapes) == 1 else [f"output{i}" for i in range(len(shapes))]
    outputs = [(s, d, n) for (s, d), n in zip(shapes, names, strict=True)]
    ir = trace.describe_nki(function, inputs, outputs, api="nki.compiler")
    work.mkdir(parents=True, exist_ok=True)
    return NirResult(
        descriptor=KernelDescriptor(
            kernel_json_path=str(work / trace.IR_NAME),
            input_specs=tuple(
                TensorSpec(p, tuple(np.shape(inputs[p])), str(np.asarray(inputs[p]).dtype))
                for p in parameters
            ),
            output_specs=tuple(TensorSpec(n, tuple(s), str(d)) for s, d, n in outputs),
            func_name=function.__name__,
        ),
        work_dir=str(work),
        ir=ir,
        lnc=compile_opts.lnc,
        target=compile_opts.target,
    )


def compile_bir_to_neff(
    compile_opts: CompileOptions,
    bir: NirResult,
    input_arrays: Sequence[np.ndarray],
    argument_names: Sequence[str],
    output_arg_names: Sequence[str],
) -> CompiledKernel:
    config.record_call(
        "nki.compiler.driver",
        ["compile_bir_to_neff", *compile_opts.nki_opt_pipeline_options],
    )
    if input_arrays and len(input_arrays) != len(argument_names):
        raise RuntimeError(
            f"Mismatch between input arrays ({len(input_arrays)}) and argument names "
            f"({len(argument_names)})"
        )
    output = Path(compile_opts.output_path)
    if not output.is_absolute():
        output = Path(bir.work_dir) / output
    ir = {**bir.ir, "pipeline_options": list(compile_opts.nki_opt_pipeline_options)}
    done = trace.run_compiler(
        ir, Path(bir.work_dir), output, compile_opts.lnc, list(compile_opts.neuronx_cc_args)
    )
    if done.returncode != 0:
        raise NCCError((done.stderr or done.stdout).strip())
    return CompiledKernel(
        str(output), compile_opts.target, bir, compile_opts.lnc, compile_opts.artifacts_dir
    )
