"""The steps that need the Neuron SDK, each run in its own process on the host,
in the Python environment it needs.

    python -m kernelopt.neuron.steps probe [--tools neuronx-cc,neuron-explorer,...]
    python -m kernelopt.neuron.steps compile --api API --kernel K --workload W --out DIR
        [--func F] [--lnc 1] [--opt 2] [--compiler-arg ARG ...] [--pipeline-option OPT ...]
    python -m kernelopt.neuron.steps compile-reference --workload W --out DIR [--lnc 1]
    python -m kernelopt.neuron.steps inputs --workload W --out DIR [--seed 0]
    python -m kernelopt.neuron.steps run --neff N --workload W [--warmup 10]
        [--iterations 100] [--seed 0] [--tolerance 0.01]

`probe` reports which SDK pieces this environment has and the parameters of each
entry point kernelopt may call (the call shapes). `compile` turns the kernel into a
NEFF with the NKI compiler driver (``api`` "nki.compiler", in the shape the
signatures show) or ``neuronxcc.nki_standalone``, and leaves the compiler's
description of the NEFF's tensors beside it (tensors.json). `compile-reference`
compiles the workload's f_numpy through nkipy (the compiler baseline) in a fresh
folder of its own. `inputs` writes the seeded inputs as NAME.npy files for a
profiler capture (SDKs without nrtpy). `run` runs a NEFF with nrtpy on the bound
NeuronCore: the device-side benchmark, and the device's output of the measured run
compared with f_numpy on the seeded inputs. The driver runs these as subprocesses
so a compile can be killed at its timeout and a crash stays a record; the compile
steps run in the NKI environment, `run` in the nrtpy one (the two wheels cannot
share an environment). Nothing else in kernelopt imports the SDK.

Each step ends by printing one line ``KERNELOPT-STEP {json}``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import (
    ARTIFACTS_DIR,
    INPUTS_DIR,
    NEFF_NAME,
    PLATFORM,
    PROFILERS,
    TENSORS_NAME,
)
from kernelopt.neuron.numerics import compare
from kernelopt.workload import WorkloadError, load_workload, make_inputs, numpy_dtype

MARK = "KERNELOPT-STEP "
CURRENT_API = "nki.compiler"
OLDER_API = "nki_standalone"
# The current driver names an input aliased to an output with this suffix.
MUST_ALIAS_SUFFIX = ".must_alias_input"


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
    "nki": "nki",
    "nki.compiler.driver": "nki",
    "neuronxcc.nki_standalone": "neuronxcc",
    "neuronxcc.nki": "neuronxcc",
    "nrtpy": "nrtpy",
    "nkipy.core.compile": "nkipy",
    "nkipy.runtime.execute": "nkipy",
}


# Environment variables the probe reports (the nrtpy environment needs the first).
PROBED_ENV = ("LD_LIBRARY_PATH", "NEURON_RT_VISIBLE_CORES", "NEURON_LOGICAL_NC_CONFIG")


def _version(package: str) -> str | None:
    try:
        value = getattr(importlib.import_module(package), "__version__", None)
    except Exception:  # noqa: BLE001 - any failure means "no version to report"
        return None
    return str(value) if value is not None else None


def parameters(function: Any) -> list[str] | None:
    """A callable's parameter names in order (``*args`` as ``*name``), None if it has no
    signature Python can read."""
    try:
        found = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    names = []
    for p in found:
        prefix = "*" if p.kind == p.VAR_POSITIONAL else "**" if p.kind == p.VAR_KEYWORD else ""
        names.append(prefix + p.name)
    return names


def _attribute(module: str, dotted: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


# The call shapes kernelopt adapts to: each entry point's parameters, as found.
SHAPES = {
    "nki.compiler.driver": ("compile_to_bir", "compile_bir_to_neff", "CompileOptions"),
    "neuronxcc.nki_standalone": ("compile_nki_ir_kernel_to_neff",),
    "neuronxcc.nki": ("baremetal", "benchmark"),
    "nrtpy": ("NrtpyModel.load_from_neff", "NrtpyModel.benchmark"),
    "nkipy.core.compile": ("compile_to_neff",),
    "nkipy.runtime.execute": ("_compile_kernel",),
}


def call_shapes(module: str) -> dict[str, list[str] | None]:
    """The parameters of each entry point of ``module`` kernelopt may call (absent: None)."""
    shapes: dict[str, list[str] | None] = {}
    for name in SHAPES.get(module, ()):
        try:
            shapes[name] = parameters(_attribute(module, name))
        except Exception:  # noqa: BLE001 - absent in this release
            shapes[name] = None
    return shapes


def probe_step(args: argparse.Namespace) -> None:
    modules: dict[str, dict[str, Any]] = {}
    for module, package in MODULES.items():
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - an SDK module may fail in any way
            modules[module] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        else:
            modules[module] = {
                "ok": True,
                "version": _version(package),
                "shapes": call_shapes(module),
            }
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
    env = {name: os.environ.get(name) for name in PROBED_ENV}
    emit({"python": sys.executable, "modules": modules, "tools": tools, "env": env})


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


def _spec(spec: Any) -> dict[str, Any]:
    """A compiler's tensor spec (``.name``, ``.shape``, ``.dtype``) as JSON."""
    dtype = getattr(spec, "dtype", None)
    dtype = getattr(dtype, "name", None) or (str(dtype) if dtype is not None else None)
    shape = getattr(spec, "shape", None)
    return {
        "name": str(spec.name),
        "shape": [int(n) for n in shape] if shape is not None else None,
        "dtype": dtype,
    }


def write_tensors(out: Path, inputs: list[dict], outputs: list[dict], source: str) -> None:
    """The NEFF's tensors as its compiler described them, beside it (TENSORS_NAME), so
    the run reads outputs in the dtype the NEFF writes rather than guessing one."""
    (out / TENSORS_NAME).write_text(
        json.dumps({"inputs": inputs, "outputs": outputs, "source": source})
    )


def _ncc_error(exc: BaseException) -> StepError:
    """A compiler failure in the compiler's own words (NCCError on current nki)."""
    text = str(exc).strip() or repr(exc)
    return StepError(f"compile failed ({type(exc).__name__}): {text}")


def _compile_current(
    function: Any, inputs: dict[str, np.ndarray], names: list[str], out: Path, args: Any
) -> dict[str, Any]:
    """The NKI compiler driver, in the call shape this nki has (probed by signature):

    - "specs" (the current driver): compile_to_bir returns one result whose
      ``input_specs`` / ``output_specs`` name the tensors; compile_bir_to_neff takes
      five positionals and raises on failure.
    - "tuple" (the driver before it): compile_to_bir returns (bir, trace result) with
      ``argument_names`` / ``output_names``; compile_bir_to_neff also takes
      ``input_output_aliases`` and reports failure in ``neuronx_cc_error``.
    """
    if args.compiler_arg:
        raise StepError(
            f"compiler_args {args.compiler_arg} are neuronx-cc command-line options, which the "
            "NKI compiler API (nki.compiler) of this SDK does not take; put compiler pipeline "
            "options in device.neuron.pipeline_options instead"
        )
    try:
        from nki.compiler.driver import CompileOptions, compile_bir_to_neff, compile_to_bir
    except ImportError as exc:
        raise _sdk_missing("the NKI compiler API (nki.compiler)", exc) from None
    to_bir = parameters(compile_to_bir) or []
    to_neff = parameters(compile_bir_to_neff) or []
    frontend = wrapper = None
    if "frontend" in to_bir:
        try:
            from nki.compiler.frontend import TracerFrontend

            frontend = TracerFrontend()
        except ImportError as exc:
            raise _sdk_missing("nki.compiler.frontend.TracerFrontend", exc) from None
    kernel = function
    try:
        from nki.framework.kernel import Kernel

        kernel, wrapper = Kernel(function), "nki.framework.kernel.Kernel"
    except ImportError:
        pass
    neff = out / NEFF_NAME
    # neuronx-cc wants an empty artifacts folder: one of its own, never the working directory.
    artifacts = out / ARTIFACTS_DIR
    if artifacts.exists():
        shutil.rmtree(artifacts)
    artifacts.mkdir(parents=True)
    options = CompileOptions(
        target=PLATFORM, lnc=args.lnc, output_path=str(neff), artifacts_dir=str(artifacts)
    )
    if args.pipeline_option:
        options = options.set_pipeline_options(*args.pipeline_option)
    keywords: dict[str, Any] = {"inputs": inputs, "compile_opts": options}
    if frontend is not None:
        keywords["frontend"] = frontend
    if "output_names" in to_bir:
        keywords["output_names"] = names
    try:
        result = compile_to_bir(kernel, **keywords)
    except Exception as exc:  # noqa: BLE001 - the compiler's own error types
        raise _ncc_error(exc) from None
    if hasattr(result, "input_specs") and hasattr(result, "output_specs"):
        shape, bir = "specs", result
        in_specs = [_spec(s) for s in result.input_specs]
        out_specs = [_spec(s) for s in result.output_specs]
        argument_names = [s["name"] for s in in_specs]
        output_arg_names = [s["name"] for s in out_specs]
        aliases = None
        source = "compile_to_bir result output_specs"
    elif isinstance(result, tuple) and len(result) == 2:
        shape, (bir, traced) = "tuple", result
        argument_names = list(traced.argument_names)
        output_arg_names = list(traced.output_names)
        aliases = getattr(traced, "input_output_aliases", None)
        in_specs = [
            {"name": n, "shape": list(np.shape(inputs[n])), "dtype": str(inputs[n].dtype)}
            for n in argument_names
            if n in inputs
        ]
        out_specs = []
        source = "none: this driver's trace result names no output dtype"
    else:
        raise StepError(
            f"nki.compiler.driver.compile_to_bir returned a {type(result).__name__} with neither "
            "input_specs/output_specs nor a (bir, trace result) pair: a call shape kernelopt "
            f"does not know (compile_to_bir{tuple(to_bir)})"
        )
    arrays = [inputs[n.removesuffix(MUST_ALIAS_SUFFIX)] for n in argument_names]
    positional = (options, bir, arrays, argument_names, output_arg_names)
    extra = {}
    if "input_output_aliases" in to_neff and aliases is not None:
        extra["input_output_aliases"] = aliases
    try:
        compiled = compile_bir_to_neff(*positional, **extra)
    except Exception as exc:  # noqa: BLE001 - NCCError and whatever else the compiler raises
        raise _ncc_error(exc) from None
    error = getattr(compiled, "neuronx_cc_error", None)
    if error:
        raise StepError(str(error).strip())
    if not out_specs and hasattr(compiled, "output_specs"):
        out_specs = [_spec(s) for s in compiled.output_specs]
        source = "compile_bir_to_neff result output_specs"
    if not neff.is_file():
        built = getattr(compiled, "neff_path", None)
        if built and Path(built).is_file():
            shutil.copyfile(built, neff)
    write_tensors(out, in_specs, out_specs, source)
    return {
        "target": PLATFORM,
        "lnc": args.lnc,
        "output_path": str(neff),
        "artifacts_dir": str(artifacts),
        "pipeline_options": list(args.pipeline_option),
        "call_shape": {
            "result": shape,
            "compile_to_bir": to_bir,
            "compile_bir_to_neff": to_neff,
            "kernel": wrapper or "the @nki.jit object",
            "input_output_aliases": "input_output_aliases" in extra,
        },
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
    except Exception as exc:  # noqa: BLE001 - the compiler's own error types
        raise _ncc_error(exc) from None
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
    print(f"call shape: {json.dumps(options.get('call_shape'))}")
    emit({"api": args.api, "options": options})


# nkipy's own flags for a traced numpy kernel (nkipy core/compile.py), used when the
# installed nkipy does not name them itself.
NKIPY_FLAGS = "--lnc 1 --internal-tensorizer-opt-level=2"


def _lnc_of(flags: str) -> int | None:
    words = shlex.split(flags)
    for i, word in enumerate(words):
        if word in ("--lnc", "--logical-nc-config") and i + 1 < len(words):
            return int(words[i + 1])
        if word.startswith(("--lnc=", "--logical-nc-config=")):
            return int(word.split("=", 1)[1])
    return None


def compile_reference_step(args: argparse.Namespace) -> None:
    """f_numpy traced by nkipy and compiled by neuronx-cc into out/NEFF_NAME.

    nkipy removes its build folder before compiling and returns to the working
    directory afterwards, so it builds in a fresh folder of its own (never the
    step's working directory). Its own flags (``--lnc 1
    --internal-tensorizer-opt-level=2``) come first; kernelopt adds ``--lnc N`` only
    when the program's LNC differs from theirs.
    """
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, 0)
    try:
        from nkipy.core.trace import NKIPyKernel
    except ImportError as exc:
        raise StepError(f"nkipy is not importable here ({exc})") from None
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="kernelopt-nkipy-", dir=out.parent))
    try:
        record = _compile_nkipy(NKIPyKernel, workload, inputs, build, out, args.lnc)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    print(f"call shape: {json.dumps(record['call_shape'])}")
    emit({"api": "nkipy", "options": record})


def _compile_nkipy(
    kernel_class: Any,
    workload: Any,
    inputs: dict[str, np.ndarray],
    build: Path,
    out: Path,
    lnc: int,
) -> dict[str, Any]:
    compile_module = execute = None
    try:
        import nkipy.core.compile as compile_module
    except ImportError:
        try:
            import nkipy.runtime.execute as execute
        except ImportError as exc:
            raise StepError(f"nkipy has neither core.compile nor runtime.execute ({exc})") from None
    own = str(getattr(compile_module or execute, "nkipy_compiler_args", "") or NKIPY_FLAGS)
    added = f"--lnc {lnc}" if (_lnc_of(own) or 1) != lnc else ""
    artifacts = build / "artifacts"
    try:
        traced = kernel_class.trace(workload.f_numpy)
        if compile_module is not None and hasattr(compile_module, "compile_to_neff"):
            traced.specialize(*inputs.values())
            target = getattr(compile_module, "CompilationTarget", None)
            keywords: dict[str, Any] = {
                "output_dir": str(artifacts),
                "neff_name": NEFF_NAME,
                "additional_compiler_args": " ".join(w for w in (own, added) if w),
                "save_artifacts": True,
            }
            if target is not None and hasattr(target, "TRN2"):
                keywords["target"] = target.TRN2
            built = compile_module.compile_to_neff(traced, **keywords)
            shape = {"compile_to_neff": parameters(compile_module.compile_to_neff)}
            code = getattr(traced, "_code", None)
        else:
            execute = execute or importlib.import_module("nkipy.runtime.execute")
            function = getattr(execute, "_compile_kernel", None)
            if function is None:
                raise StepError(
                    "nkipy offers neither core.compile.compile_to_neff nor "
                    "runtime.execute._compile_kernel: a layout kernelopt does not know"
                )
            # This entry point removes artifacts_dir and prepends nkipy's own flags itself.
            result = function(
                traced,
                *inputs.values(),
                artifacts_dir=str(artifacts),
                additional_compiler_args=added,
            )
            built = result[0] if isinstance(result, tuple | list) else result
            shape = {"_compile_kernel": parameters(function)}
            code = getattr(traced, "_code", None)
    except StepError:
        raise
    except Exception as exc:  # noqa: BLE001 - nkipy's and the compiler's own error types
        raise StepError(f"nkipy could not compile f_numpy: {type(exc).__name__}: {exc}") from None
    shutil.copyfile(built, out / NEFF_NAME)
    outputs = [_spec(t) for t in getattr(code, "outputs", None) or []]
    write_tensors(
        out,
        [_spec(t) for t in getattr(code, "inputs", None) or []],
        outputs,
        "nkipy traced IR outputs" if outputs else "none: nkipy's trace named no outputs",
    )
    return {
        "nkipy_compiler_args": own,
        "additional_compiler_args": added,
        "build_dir": "a fresh folder beside the step's own (removed afterwards)",
        "lnc": lnc,
        "call_shape": shape,
    }


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


def output_layout(
    neff: Path, want: tuple[np.ndarray, ...], info: Any = None
) -> tuple[list[tuple[tuple[int, ...], np.dtype]], str]:
    """Each output's shape and dtype as the NEFF writes it: from the compiler's tensor
    description beside the NEFF (TENSORS_NAME), else from the runtime's output tensor
    info (shape and byte size: a float of that width); and where that came from."""
    described = neff.parent / TENSORS_NAME
    if described.is_file():
        outputs = json.loads(described.read_text()).get("outputs") or []
        if outputs and all(o.get("dtype") for o in outputs):
            return [
                (tuple(o["shape"] or np.shape(w)), numpy_dtype(o["dtype"]))
                for o, w in zip(outputs, want, strict=False)
            ], f"{TENSORS_NAME} (the compiler's output specs)"
    if info:
        found = []
        for meta in info.values():
            shape = tuple(getattr(meta, "shape", ()) or ())
            count = int(np.prod(shape)) if shape else 1
            width = int(getattr(meta, "size", 0)) // max(count, 1)
            if width not in _FLOAT_OF_WIDTH:
                break
            found.append((shape, np.dtype(_FLOAT_OF_WIDTH[width])))
        else:
            return found, "the runtime's output_tensors_info (byte width)"
    raise StepError(
        f"no output dtype for {neff}: no {TENSORS_NAME} from its compile and the runtime "
        "reports no usable output tensor info"
    )


# A float output's dtype by its width in bytes, where only the width is known.
_FLOAT_OF_WIDTH = {2: "bfloat16", 4: "float32"}


def run_step(args: argparse.Namespace) -> None:
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, args.seed)
    want = expected_outputs(workload, inputs)
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
        stubs, source = output_layout(
            Path(args.neff), want, getattr(model, "output_tensors_info", None)
        )
        record["output_dtypes"] = {"dtypes": [d.name for _, d in stubs], "source": source}
        record["call_shape"] = {
            "load_from_neff": parameters(NrtpyModel.load_from_neff),
            "benchmark": parameters(model.benchmark) if hasattr(model, "benchmark") else None,
        }
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


def inputs_step(args: argparse.Namespace) -> None:
    """The seeded inputs as NAME.npy files for a profiler capture, named as the NEFF
    names them (its compiler's tensor description), else by the workload's parameters."""
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, args.seed)
    out = Path(args.out)
    folder = out / INPUTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    names = list(inputs)
    described = out / TENSORS_NAME
    if described.is_file():
        found = [t["name"] for t in json.loads(described.read_text()).get("inputs") or []]
        if len(found) == len(names):
            names = found
    pairs = []
    for name, value in zip(names, inputs.values(), strict=True):
        path = folder / f"{name}.npy"
        np.save(path, np.ascontiguousarray(value), allow_pickle=False)
        pairs.append([name, str(path)])
    emit({"inputs": pairs, "seed": args.seed})


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
    i = sub.add_parser("inputs", help="the seeded inputs as NAME.npy files")
    i.add_argument("--workload", required=True)
    i.add_argument("--out", required=True)
    i.add_argument("--seed", type=int, default=0)
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
        "inputs": inputs_step,
    }
    try:
        steps[args.step](args)
    except StepError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
