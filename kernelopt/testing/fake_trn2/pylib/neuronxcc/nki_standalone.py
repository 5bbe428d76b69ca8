"""Fake `neuronxcc.nki_standalone`: writes the kernel's description and runs the
(fake) `neuronx-cc` executable on it, as the real entry point runs the real
compiler: a failure surfaces as subprocess.CalledProcessError with the
compiler's output."""

from __future__ import annotations

import enum
import inspect
import json
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    function = getattr(kernel_func, "func", kernel_func)
    source = inspect.getsourcefile(function)
    if source is None:
        raise ValueError(f"cannot find the source file of {function!r}")
    out = Path(output_directory)
    out.mkdir(parents=True, exist_ok=True)
    description = {
        "kernel": str(Path(source).resolve()),
        "func": function.__name__,
        "inputs": {
            name: [list(value.shape), str(value.dtype)]
            for name, value in kernel_inputs_dict.items()
        },
        "outputs": [[list(o.shape), str(o.dtype), o.name] for o in kernel_outputs],
        "version": version.value,
    }
    ir_path = out / "kernel.fake-ir.json"
    ir_path.write_text(json.dumps(description))
    argv = [
        "neuronx-cc",
        "compile",
        str(ir_path),
        "--target",
        platform_target,
        "--lnc",
        str(logical_nc_config),
        "--output",
        str(out / NEFF_NAME),
        *shlex.split(additional_compiler_args),
    ]
    subprocess.run(argv, capture_output=True, text=True, check=True)
