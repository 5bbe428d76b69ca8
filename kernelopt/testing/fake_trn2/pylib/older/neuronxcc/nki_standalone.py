"""Fake ``neuronxcc.nki_standalone``: describes the kernel and runs the fake
``neuronx-cc`` on it, as the real entry point runs the real compiler.

Sources: the nki wheel's ``nki/compiler/driver.py`` (``_compile_neff``) calls
``compile_nki_ir_kernel_to_neff(kernel_func=, kernel_inputs_dict=, kernel_outputs=,
platform_target=, logical_nc_config=, output_directory=, version=NKI_IR_VERSION.beta2,
additional_compiler_args=, enable_device_dump=)`` and catches
``subprocess.CalledProcessError`` from it (the compiler runs as a subprocess);
awslabs/nki-autotune imports the same two names. A Python function as
``kernel_func`` (rather than the driver's BIR dict) and the NEFF's name
(file.neff in output_directory): unverified.
"""

from __future__ import annotations

import enum
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import config, trace

if config.canonical(str(config.current()["sdk"])) == "2.22":
    # The fake's oldest layout: a release before this entry point (which one added it is
    # not on record).
    raise ModuleNotFoundError("No module named 'neuronxcc.nki_standalone'")

NEFF_NAME = "file.neff"


class NKI_IR_VERSION(enum.Enum):  # noqa: N801 - the SDK's spelling
    beta2 = "beta2"


def compile_nki_ir_kernel_to_neff(
    kernel_func: Any,
    kernel_inputs_dict: dict[str, Any],
    kernel_outputs: Sequence[Any],
    platform_target: str,
    logical_nc_config: int,
    output_directory: str,
    version: NKI_IR_VERSION = NKI_IR_VERSION.beta2,
    additional_compiler_args: str = "",
    enable_device_dump: bool = False,
) -> None:
    config.record_call(
        "neuronxcc.nki_standalone",
        ["compile_nki_ir_kernel_to_neff", platform_target, str(logical_nc_config)],
    )
    if platform_target != "trn2":
        raise ValueError(f"unsupported platform_target {platform_target!r}")
    function = trace.kernel_function(kernel_func)
    outputs = [(o.shape, str(o.dtype), o.name) for o in kernel_outputs]
    ir = trace.describe_nki(function, kernel_inputs_dict, outputs, api="nki_standalone")
    out = Path(output_directory)
    done = trace.run_compiler(
        ir, out, out / NEFF_NAME, logical_nc_config, shlex.split(additional_compiler_args)
    )
    if done.returncode != 0:
        raise subprocess.CalledProcessError(
            done.returncode, done.args, output=done.stdout, stderr=done.stderr
        )
