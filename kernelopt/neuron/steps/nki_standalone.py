"""The older compile entry point, neuronxcc.nki_standalone (SDKs without the NKI
compiler driver)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import PLATFORM
from kernelopt.neuron.steps.common import (
    StepError,
    TensorStub,
    compile_error,
    parameters,
    sdk_missing,
    write_tensors,
)


def compile_older(
    function: Any, inputs: dict[str, np.ndarray], stubs: list[TensorStub], out: Path, args: Any
) -> dict[str, Any]:
    if args.pipeline_option:
        raise StepError(
            f"pipeline_options {args.pipeline_option} need the NKI compiler API (nki.compiler), "
            "which this SDK does not have; on neuronxcc.nki_standalone write the compiler's own "
            "spelling of the option in device.neuron.compiler_args"
        )
    try:
        from neuronxcc.nki_standalone import NKI_IR_VERSION, compile_nki_ir_kernel_to_neff
    except ImportError as exc:
        raise sdk_missing("the Neuron compiler (neuronxcc.nki_standalone)", exc) from None
    additional = " ".join([f"-O{args.opt}", *args.compiler_arg])
    try:
        compile_nki_ir_kernel_to_neff(
            kernel_func=function,
            kernel_inputs_dict=inputs,
            kernel_outputs=stubs,
            platform_target=PLATFORM,
            logical_nc_config=args.lnc,
            output_directory=str(out),
            version=NKI_IR_VERSION.beta2,
            additional_compiler_args=additional,
        )
    except subprocess.CalledProcessError as exc:
        print(exc.stdout or "", end="")
        raise StepError((exc.stderr or exc.stdout or str(exc)).strip()) from None
    except Exception as exc:  # noqa: BLE001 - the compiler's own error types
        raise compile_error(exc) from None
    write_tensors(
        out,
        [{"name": n, "shape": list(v.shape), "dtype": str(v.dtype)} for n, v in inputs.items()],
        [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype.name} for s in stubs],
        "kernel_outputs given to compile_nki_ir_kernel_to_neff",
    )
    return {
        "platform_target": PLATFORM,
        "logical_nc_config": args.lnc,
        "output_directory": str(out),
        "additional_compiler_args": additional,
        "call_shape": {
            "compile_nki_ir_kernel_to_neff": parameters(compile_nki_ir_kernel_to_neff),
        },
    }
