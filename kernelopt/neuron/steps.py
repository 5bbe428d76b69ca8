"""The two steps that need the Neuron SDK, each run in its own process on the host.

`compile`: the kernel file -> NEFF through the SDK's NKI standalone entry
point (neuronxcc.nki_standalone.compile_nki_ir_kernel_to_neff, which runs
neuronx-cc). `run`: the NEFF on the visible NeuronCore through nrtpy,
warmup then timed iterations. The driver runs these as subprocesses so that
a compile can be killed at its timeout and a crash in the runtime stays a
record. Nothing else in kernelopt imports the SDK.

    python -m kernelopt.neuron.steps compile --kernel K --workload W --out DIR [--func F]
        [--lnc 1] [--opt 2] [--compiler-arg ARG ...]
    python -m kernelopt.neuron.steps run --neff N --workload W [--warmup 10] [--iterations 100]
    python -m kernelopt.neuron.steps reference --workload W --out DIR [--warmup 10] [--iterations 100]

`reference` is the compiler baseline: f_numpy traced by nkipy, compiled by
neuronx-cc and timed on the device by nkipy's baremetal executor.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import PLATFORM
from kernelopt.workload import WorkloadError, load_workload, make_inputs


class StepError(RuntimeError):
    """A step failed; the message is what the record's error says."""


@dataclass(frozen=True)
class TensorStub:
    """An output's shape, dtype and name, as the NKI standalone compile expects."""

    shape: tuple[int, ...]
    dtype: np.dtype
    name: str


def jit_function_name(kernel: Path, func: str | None) -> str:
    """``func``, or the file's only function decorated with ``*.jit``."""
    if func:
        return func
    tree = ast.parse(kernel.read_text(), filename=str(kernel))
    names = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and any(_is_jit(d) for d in node.decorator_list)
    ]
    if len(names) != 1:
        found = ", ".join(names) or "none"
        raise StepError(
            f"{kernel}: expected exactly one @nki.jit function (found: {found}); "
            "name one with target.func"
        )
    return names[0]


def _is_jit(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Attribute) and target.attr == "jit") or (
        isinstance(target, ast.Name) and target.id == "jit"
    )


def _load_kernel(kernel: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"kernelopt_neuron_kernel_{name}", kernel)
    if spec is None or spec.loader is None:
        raise StepError(f"{kernel}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the kernel is user code
        raise StepError(f"{kernel}: importing it failed: {type(exc).__name__}: {exc}") from None
    if not hasattr(module, name):
        raise StepError(f"{kernel}: defines no function {name!r}")
    return getattr(module, name)


def _inputs(workload_path: Path) -> tuple[Any, dict[str, np.ndarray]]:
    try:
        workload = load_workload(workload_path, require=("f_numpy", "INPUT_SPECS"))
    except WorkloadError as exc:
        raise StepError(str(exc)) from None
    return workload, make_inputs(workload.input_specs, 0)


def output_stubs(workload: Any, inputs: dict[str, np.ndarray]) -> list[TensorStub]:
    """Output shapes from the numpy oracle; dtype that of the float inputs
    (kernels here write their result in the input precision)."""
    as_fp32 = {k: v.astype(np.float32) if v.dtype.kind in "fV" else v for k, v in inputs.items()}
    result = workload.f_numpy(**as_fp32)
    results = result if isinstance(result, tuple | list) else (result,)
    floats = [v.dtype for v in inputs.values() if v.dtype.kind in "fV"]
    dtype = floats[0] if floats else np.dtype(np.float32)
    names = ["output"] if len(results) == 1 else [f"output{i}" for i in range(len(results))]
    return [
        TensorStub(tuple(np.shape(r)), dtype, name) for r, name in zip(results, names, strict=True)
    ]


def compile_step(args: argparse.Namespace) -> None:
    kernel = Path(args.kernel).resolve()
    workload, inputs = _inputs(Path(args.workload))
    name = jit_function_name(kernel, args.func)
    function = _load_kernel(kernel, name)
    stubs = output_stubs(workload, inputs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    options = [f"-O{args.opt}", *args.compiler_arg]
    try:
        from neuronxcc.nki_standalone import NKI_IR_VERSION, compile_nki_ir_kernel_to_neff
    except ImportError as exc:
        raise StepError(
            f"the Neuron compiler is not importable here ({exc}); source the Neuron "
            "environment first (device.neuron.activate)"
        ) from None
    print(f"compiling {name} from {kernel}: target {PLATFORM}, lnc {args.lnc}, {' '.join(options)}")
    try:
        compile_nki_ir_kernel_to_neff(
            kernel_func=function,
            kernel_inputs_dict=inputs,
            kernel_outputs=stubs,
            platform_target=PLATFORM,
            logical_nc_config=args.lnc,
            output_directory=str(out),
            version=NKI_IR_VERSION.beta2,
            additional_compiler_args=" ".join(options),
        )
    except subprocess.CalledProcessError as exc:
        print(exc.stdout or "", end="")
        raise StepError((exc.stderr or exc.stdout or str(exc)).strip()) from None


def run_step(args: argparse.Namespace) -> None:
    _, inputs = _inputs(Path(args.workload))
    try:
        from nrtpy import NrtpyModel
    except ImportError as exc:
        raise StepError(
            f"the Neuron runtime (nrtpy) is not importable here ({exc}); source the "
            "Neuron environment first (device.neuron.activate)"
        ) from None
    try:
        model = NrtpyModel.load_from_neff(args.neff, core_id=0)
        for _ in range(args.warmup):
            model(inputs)
        latencies = []
        for _ in range(args.iterations):
            started = time.perf_counter()
            model(inputs)
            latencies.append(time.perf_counter() - started)
    except Exception as exc:  # the runtime's own error types vary by release
        raise StepError(f"runtime error: {type(exc).__name__}: {exc}") from None
    print(json.dumps({"latencies_s": latencies}))


def reference_step(args: argparse.Namespace) -> None:
    workload, inputs = _inputs(Path(args.workload))
    try:
        from nkipy.core.trace import NKIPyKernel
        from nkipy.runtime import BaremetalExecutor, CompiledKernel
        from nkipy.runtime.execute import _compile_kernel
    except ImportError as exc:
        raise StepError(f"nkipy is not importable here ({exc})") from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    values = list(inputs.values())
    try:
        traced = NKIPyKernel.trace(workload.f_numpy)
        neff = _compile_kernel(traced, *values, artifacts_dir=str(out))[0]
        compiled = CompiledKernel(traced, neff)
        with BaremetalExecutor() as executor:
            stats = executor.benchmark(
                compiled,
                *values,
                warmup_iterations=args.warmup,
                benchmark_iterations=args.iterations,
                mode="device",
            )
    except Exception as exc:  # the SDK's error types vary by release
        raise StepError(f"nkipy baseline failed: {type(exc).__name__}: {exc}") from None
    print(
        json.dumps({"min_s": stats.min_ms / 1e3, "mean_s": stats.mean_ms / 1e3, "neff": str(neff)})
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m kernelopt.neuron.steps")
    sub = top.add_subparsers(dest="step", required=True)
    c = sub.add_parser("compile", help="kernel -> NEFF")
    c.add_argument("--kernel", required=True)
    c.add_argument("--workload", required=True)
    c.add_argument("--func")
    c.add_argument("--out", required=True)
    c.add_argument("--lnc", type=int, default=1)
    c.add_argument("--opt", type=int, default=2)
    c.add_argument("--compiler-arg", action="append", default=[])
    r = sub.add_parser("run", help="time a NEFF on the visible NeuronCore")
    r.add_argument("--neff", required=True)
    r.add_argument("--workload", required=True)
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--iterations", type=int, default=100)
    b = sub.add_parser("reference", help="f_numpy through nkipy and neuronx-cc, timed on device")
    b.add_argument("--workload", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--warmup", type=int, default=10)
    b.add_argument("--iterations", type=int, default=100)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        steps = {"compile": compile_step, "run": run_step, "reference": reference_step}
        steps[args.step](args)
    except StepError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
