"""The steps that need the Neuron SDK, each run in its own process on the host,
in the Python environment it needs.

    python -m kernelopt.neuron.steps probe [--tools neuronx-cc,neuron-explorer,...]
    python -m kernelopt.neuron.steps compile --api API --kernel K --workload W --out DIR
        [--func F] [--lnc 1] [--opt 2] [--compiler-arg ARG ...] [--pipeline-option OPT ...]
    python -m kernelopt.neuron.steps compile-reference --workload W --out DIR [--lnc 1]
    python -m kernelopt.neuron.steps run --neff N --workload W [--warmup 10]
        [--iterations 100] [--seed 0] [--tolerance 0.01]

`probe` reports which SDK pieces this environment has. `compile` turns the
kernel into a NEFF with the NKI compiler API (``api`` "nki.compiler", the
current SDK) or the older ``neuronxcc.nki_standalone`` entry point.
`compile-reference` compiles the workload's f_numpy through nkipy (the
compiler baseline). `run` runs a NEFF with nrtpy on the bound NeuronCore:
the device-side benchmark, and the device's output of the measured run
compared with f_numpy on the seeded inputs. The driver runs these as
subprocesses so a compile can be killed at its timeout and a crash stays a
record; the compile steps run in the NKI environment, `run` in the nrtpy one
(the two wheels cannot share an environment). Nothing else in kernelopt
imports the SDK.

Each step ends by printing one line ``KERNELOPT-STEP {json}``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import NEFF_NAME, PLATFORM, PROFILERS
from kernelopt.neuron.numerics import compare
from kernelopt.workload import WorkloadError, load_workload, make_inputs

MARK = "KERNELOPT-STEP "
CURRENT_API = "nki.compiler"
OLDER_API = "nki_standalone"


class StepError(RuntimeError):
    """A step failed; the message is what the record's error says."""


def emit(record: dict[str, Any]) -> None:
    print(MARK + json.dumps(record), flush=True)


@dataclass(frozen=True)
class TensorStub:
    """An output's shape, dtype and name, as the older compile entry point expects."""

    shape: tuple[int, ...]
    dtype: np.dtype
    name: str


# -- probe ----------------------------------------------------------------------

# What a compile, a run and the baseline need, by the module that provides it.
MODULES = {
    "nki.compiler.driver": "nki",
    "neuronxcc.nki_standalone": "neuronxcc",
    "nrtpy": "nrtpy",
    "nkipy.runtime.execute": "nkipy",
}


def _version(package: str) -> str | None:
    try:
        value = getattr(importlib.import_module(package), "__version__", None)
    except Exception:  # noqa: BLE001 - any failure means "no version to report"
        return None
    return str(value) if value is not None else None


def probe_step(args: argparse.Namespace) -> None:
    modules: dict[str, dict[str, Any]] = {}
    for module, package in MODULES.items():
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - an SDK module may fail in any way
            modules[module] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        else:
            modules[module] = {"ok": True, "version": _version(package)}
    tools = {}
    for tool in args.tools.split(",") if args.tools else ():
        path = shutil.which(tool)
        version = None
        if path:
            try:
                done = subprocess.run(
                    [path, "--version"], capture_output=True, text=True, timeout=60
                )
                lines = done.stdout.strip().splitlines()
                version = lines[-1].split()[-1] if done.returncode == 0 and lines else None
            except (OSError, subprocess.TimeoutExpired):
                version = None
        tools[tool] = {"path": path, "version": version}
    emit({"python": sys.executable, "modules": modules, "tools": tools})


# -- compile --------------------------------------------------------------------


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
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the kernel is user code
        raise StepError(f"{kernel}: importing it failed: {type(exc).__name__}: {exc}") from None
    if not hasattr(module, name):
        raise StepError(f"{kernel}: defines no function {name!r}")
    return getattr(module, name)


def load(workload_path: Path) -> Any:
    try:
        return load_workload(workload_path, require=("f_numpy", "INPUT_SPECS"))
    except WorkloadError as exc:
        raise StepError(str(exc)) from None


def expected_outputs(workload: Any, inputs: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """f_numpy on the inputs in fp32, as the CPU check computes it."""
    as_fp32 = {k: v.astype(np.float32) if v.dtype.kind in "fV" else v for k, v in inputs.items()}
    result = workload.f_numpy(**as_fp32)
    return tuple(np.asarray(r) for r in (result if isinstance(result, tuple | list) else (result,)))


def output_names(count: int) -> list[str]:
    return ["output"] if count == 1 else [f"output{i}" for i in range(count)]


def output_stubs(workload: Any, inputs: dict[str, np.ndarray]) -> list[TensorStub]:
    """Output shapes from the numpy oracle; dtype that of the float inputs
    (kernels here write their result in the input precision)."""
    results = expected_outputs(workload, inputs)
    floats = [v.dtype for v in inputs.values() if v.dtype.kind in "fV"]
    dtype = floats[0] if floats else np.dtype(np.float32)
    return [
        TensorStub(tuple(np.shape(r)), dtype, name)
        for r, name in zip(results, output_names(len(results)), strict=True)
    ]


def _sdk_missing(what: str, exc: Exception) -> StepError:
    return StepError(
        f"{what} is not importable here ({exc}); source the Neuron environment first "
        "(device.neuron.activate)"
    )


def _compile_current(
    function: Any, inputs: dict[str, np.ndarray], names: list[str], out: Path, args: Any
) -> dict[str, Any]:
    if args.compiler_arg:
        raise StepError(
            f"compiler_args {args.compiler_arg} are neuronx-cc command-line options, which the "
            "NKI compiler API (nki.compiler) of this SDK does not take; put compiler pipeline "
            "options in device.neuron.pipeline_options instead"
        )
    try:
        from nki.compiler.driver import CompileOptions, compile_bir_to_neff, compile_to_bir
        from nki.compiler.frontend import TracerFrontend
        from nki.framework.kernel import Kernel
    except ImportError as exc:
        raise _sdk_missing("the NKI compiler API (nki.compiler)", exc) from None
    neff = out / NEFF_NAME
    options = CompileOptions(
        target=PLATFORM, lnc=args.lnc, output_path=str(neff), artifacts_dir=str(out)
    )
    if args.pipeline_option:
        options = options.set_pipeline_options(*args.pipeline_option)
    bir, traced = compile_to_bir(
        Kernel(function),
        frontend=TracerFrontend(),
        inputs=inputs,
        compile_opts=options,
        output_names=names,
    )
    arrays = [np.zeros(s.shape, dtype=np.dtype(s.dtype)) for s in traced.input_specs]
    compiled = compile_bir_to_neff(
        options,
        bir,
        arrays,
        traced.argument_names,
        traced.output_names,
        input_output_aliases=traced.input_output_aliases,
    )
    error = getattr(compiled, "neuronx_cc_error", None)
    if error:
        raise StepError(str(error).strip())
    return {
        "target": PLATFORM,
        "lnc": args.lnc,
        "output_path": str(neff),
        "artifacts_dir": str(out),
        "pipeline_options": list(args.pipeline_option),
    }


def _compile_older(
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
        raise _sdk_missing("the Neuron compiler (neuronxcc.nki_standalone)", exc) from None
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
    return {
        "platform_target": PLATFORM,
        "logical_nc_config": args.lnc,
        "output_directory": str(out),
        "additional_compiler_args": additional,
    }


def compile_step(args: argparse.Namespace) -> None:
    kernel = Path(args.kernel).resolve()
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, 0)
    name = jit_function_name(kernel, args.func)
    function = _load_kernel(kernel, name)
    stubs = output_stubs(workload, inputs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"compiling {name} from {kernel} with {args.api}: target {PLATFORM}, lnc {args.lnc}")
    if args.api == CURRENT_API:
        options = _compile_current(function, inputs, [s.name for s in stubs], out, args)
    elif args.api == OLDER_API:
        options = _compile_older(function, inputs, stubs, out, args)
    else:
        raise StepError(f"unknown compile API {args.api!r}")
    emit({"api": args.api, "options": options})


def compile_reference_step(args: argparse.Namespace) -> None:
    """f_numpy traced by nkipy and compiled by neuronx-cc into out/NEFF_NAME."""
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, 0)
    try:
        from nkipy.core.trace import NKIPyKernel
        from nkipy.runtime.execute import _compile_kernel
    except ImportError as exc:
        raise StepError(f"nkipy is not importable here ({exc})") from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    options = f"--lnc {args.lnc} --internal-tensorizer-opt-level=2"
    try:
        traced = NKIPyKernel.trace(workload.f_numpy)
        result = _compile_kernel(
            traced, *inputs.values(), artifacts_dir=str(out), additional_compiler_args=options
        )
    except Exception as exc:  # the SDK's error types vary by release
        raise StepError(f"nkipy could not compile f_numpy: {type(exc).__name__}: {exc}") from None
    built = Path(result[0] if isinstance(result, tuple | list) else result)
    if built.resolve() != (out / NEFF_NAME).resolve():
        shutil.copyfile(built, out / NEFF_NAME)
    emit({"api": "nkipy", "options": {"additional_compiler_args": options}})


# -- run ------------------------------------------------------------------------


def _bind_inputs(model: Any, inputs: dict[str, np.ndarray], tensor: Any) -> dict[str, Any]:
    """Device tensors under the NEFF's input names: the kernel's parameter names when
    they match, else in parameter order."""
    names = list(model.input_tensors_info)
    if set(names) == set(inputs):
        return {n: tensor.from_numpy(inputs[n], name=n) for n in names}
    if len(names) != len(inputs):
        raise StepError(f"the NEFF takes inputs {names}, the workload provides {list(inputs)}")
    return {n: tensor.from_numpy(v, name=n) for n, v in zip(names, inputs.values(), strict=True)}


def _read(outputs: dict[str, Any], stubs: list[tuple[tuple[int, ...], np.dtype]]) -> list:
    """Output tensors as arrays; raw (void) bytes are reinterpreted as the output dtype,
    as the nrtpy tutorial advises."""
    names = output_names(len(stubs))
    values = [outputs[n] for n in names] if set(names) <= set(outputs) else list(outputs.values())
    arrays = []
    for value, (shape, dtype) in zip(values, stubs, strict=False):
        array = np.ascontiguousarray(value.numpy())
        if array.dtype.kind == "V":
            array = array.view(np.uint8).view(dtype)
        arrays.append(array.astype(dtype).reshape(shape))
    return arrays


def _poison(outputs: dict[str, Any]) -> None:
    """NaN bytes in the output tensors, so what they hold afterwards was written by the
    measured executions."""
    for value in outputs.values():
        size = np.ascontiguousarray(value.numpy()).nbytes
        value.write_from_numpy(np.full(size, 0xFF, dtype=np.uint8))


def run_step(args: argparse.Namespace) -> None:
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, args.seed)
    want = expected_outputs(workload, inputs)
    floats = [v.dtype for v in inputs.values() if v.dtype.kind in "fV"]
    dtype = floats[0] if floats else np.dtype(np.float32)
    stubs = [(tuple(np.shape(w)), dtype) for w in want]
    try:
        import nrtpy
        from nrtpy import NrtpyModel, NrtpyTensor
    except ImportError as exc:
        raise StepError(
            f"the Neuron runtime (nrtpy) is not importable here ({exc}); source its "
            "environment first (device.neuron.runtime_activate, else device.neuron.activate)"
        ) from None
    record: dict[str, Any] = {"runtime": "nrtpy", "runtime_version": _version("nrtpy")}
    try:
        model = NrtpyModel.load_from_neff(args.neff, core_id=0)
        tensors = _bind_inputs(model, inputs, NrtpyTensor)
        outputs = model(inputs=tensors)
        if outputs is None:
            raise StepError("the runtime returned no output tensors")
        if hasattr(model, "benchmark"):
            _poison(outputs)
            stats = model.benchmark(
                inputs=tensors,
                outputs=outputs,
                warmup_iter=args.warmup,
                benchmark_iter=args.iterations,
                mode="device",
            )
            durations = list(getattr(stats, "durations_ms", None) or [stats.min_ms])
            record.update(
                timing_source="nrtpy.NrtpyModel.benchmark(mode=device)",
                durations_ms=durations,
                mean_ms=float(stats.mean_ms),
                iterations=int(getattr(stats, "iterations", len(durations))),
                warmup=int(getattr(stats, "warmup_iterations", args.warmup)),
            )
        got = _read(outputs, stubs)
    except StepError:
        raise
    except Exception as exc:  # the runtime's own error types vary by release
        raise StepError(f"runtime error: {type(exc).__name__}: {exc}") from None
    finally:
        reset = getattr(nrtpy, "reset", None)
        if callable(reset):
            reset()
    check = compare(got, list(want), atol=args.tolerance, rtol=args.tolerance)
    record["check"] = {
        **check.to_json(),
        "seed": args.seed,
        "atol": args.tolerance,
        "rtol": args.tolerance,
        "message": check.describe(),
    }
    emit(record)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m kernelopt.neuron.steps")
    sub = top.add_subparsers(dest="step", required=True)
    p = sub.add_parser("probe", help="which SDK pieces this environment has")
    p.add_argument("--tools", default=",".join((*PROFILERS, "neuronx-cc")))
    c = sub.add_parser("compile", help="kernel -> NEFF")
    c.add_argument("--api", choices=(CURRENT_API, OLDER_API), required=True)
    c.add_argument("--kernel", required=True)
    c.add_argument("--workload", required=True)
    c.add_argument("--func")
    c.add_argument("--out", required=True)
    c.add_argument("--lnc", type=int, default=1)
    c.add_argument("--opt", type=int, default=2)
    c.add_argument("--compiler-arg", action="append", default=[])
    c.add_argument("--pipeline-option", action="append", default=[])
    b = sub.add_parser("compile-reference", help="f_numpy -> NEFF through nkipy")
    b.add_argument("--workload", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--lnc", type=int, default=1)
    r = sub.add_parser("run", help="run, check and time a NEFF on the bound NeuronCore")
    r.add_argument("--neff", required=True)
    r.add_argument("--workload", required=True)
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--iterations", type=int, default=100)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--tolerance", type=float, default=1e-2)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    steps = {
        "probe": probe_step,
        "compile": compile_step,
        "compile-reference": compile_reference_step,
        "run": run_step,
    }
    try:
        steps[args.step](args)
    except StepError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
