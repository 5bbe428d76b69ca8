"""Fake ``nkipy.core.compile``: ``compile_to_neff`` runs the fake ``neuronx-cc`` on a
specialised kernel.

Source: aws-neuron/nkipy ``nkipy/src/nkipy/core/compile.py``@1d93cbb:
``compile_to_neff(trace_kernel, output_dir, neff_name="file.neff",
target=CompilationTarget.DEFAULT, additional_compiler_args="", save_artifacts=False,
use_neuronx_cc_python_interface=False)`` returns the NEFF's path; with
``save_artifacts`` it works directly in ``output_dir`` (created), else in a temporary
folder and copies the NEFF into ``output_dir``; the compile saves ``os.getcwd()``,
changes into the work folder, runs ``neuronx-cc compile --framework XLA ... --target
T --output=NAME`` plus the additional arguments, and changes back;
``nkipy_compiler_args`` is ``"--lnc 1 --internal-tensorizer-opt-level=2"``
(prepended by ``runtime.execute``, not here); ``CompilationTarget`` has TRN1, TRN2,
TRN3, DEFAULT. The traced program's file format (the fake writes its own JSON
instead of hlo_module.pb): the fake's own.
"""

from __future__ import annotations

import enum
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import config

DEFAULT_ADDITIONAL_COMPILER_ARGS = "--lnc 1"
NKIPY_KERNEL_ADDITIONAL_COMPILER_ARGS = "--internal-tensorizer-opt-level=2"
nkipy_compiler_args = DEFAULT_ADDITIONAL_COMPILER_ARGS + " " + NKIPY_KERNEL_ADDITIONAL_COMPILER_ARGS


class CompilationTarget(enum.Enum):
    TRN1 = "trn1"
    TRN2 = "trn2"
    TRN3 = "trn3"
    DEFAULT = "default"


def _ir(trace_kernel: Any) -> dict[str, Any]:
    import inspect

    code = trace_kernel._code
    assert code is not None, "Kernel must be traced before compilation"
    source = inspect.getsourcefile(trace_kernel.func)
    if source is None:
        raise ValueError(f"cannot find the source of {trace_kernel.func!r}")
    return {
        "kind": "numpy",
        "kernel": str(Path(source).resolve()),
        "source": Path(source).read_text(),
        "func": trace_kernel.func.__name__,
        "inputs": {t.name: [list(t.shape), str(t.dtype)] for t in code.inputs},
        "outputs": [[list(t.shape), str(t.dtype), t.name] for t in code.outputs],
        "api": "nkipy",
    }


def _compile(ir: dict[str, Any], work_dir: Path, neff_name: str, target: str, args: str) -> Path:
    (work_dir / "program.fake-ir.json").write_text(json.dumps(ir))
    cmd = [
        "neuronx-cc",
        "compile",
        "--framework",
        "XLA",
        str(work_dir / "program.fake-ir.json"),
        "--target",
        target,
        f"--output={neff_name}",
        *shlex.split(args),
    ]
    current_dir = os.getcwd()
    try:
        os.chdir(work_dir)
        result = subprocess.run(cmd, capture_output=True)
        if result.returncode != 0:
            raise RuntimeError(
                f"Compilation failed (exit code {result.returncode}).\nCommand: {' '.join(cmd)}"
                f"\nstderr:\n{result.stderr.decode(errors='replace')}"
                f"\nstdout:\n{result.stdout.decode(errors='replace')}"
            )
    finally:
        os.chdir(current_dir)
    output = work_dir / neff_name
    if not output.exists():
        raise RuntimeError(f"Compilation failed: {neff_name} expected but not generated.")
    return output


def compile_to_neff(
    trace_kernel: Any,
    output_dir: str,
    neff_name: str = "file.neff",
    target: CompilationTarget = CompilationTarget.DEFAULT,
    additional_compiler_args: str = "",
    save_artifacts: bool = False,
    use_neuronx_cc_python_interface: bool = False,
) -> str:
    config.record_call("nkipy", ["compile_to_neff", additional_compiler_args])
    # DEFAULT reads the instance type; off a Trn host the real one falls back to trn2.
    name = "trn2" if target == CompilationTarget.DEFAULT else target.value
    ir = _ir(trace_kernel)
    if save_artifacts:
        work = Path(output_dir)
        work.mkdir(parents=True, exist_ok=True)
        return str(_compile(ir, work, neff_name, name, additional_compiler_args))
    with tempfile.TemporaryDirectory() as scratch:
        built = _compile(ir, Path(scratch), neff_name, name, additional_compiler_args)
        if output_dir:
            dest = Path(output_dir) / neff_name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, dest)
            return str(dest)
        return str(built)
