"""`compile`: the kernel's @nki.jit function turned into a NEFF by the compile API
the probe chose (the NKI compiler driver, or neuronxcc.nki_standalone on SDKs
without it), with the compiler's description of its tensors beside it."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from kernelopt.neuron.facts import PLATFORM
from kernelopt.neuron.steps.common import StepError, emit, load, output_stubs
from kernelopt.neuron.steps.nki_compiler import compile_current
from kernelopt.neuron.steps.nki_standalone import compile_older
from kernelopt.workload import make_inputs

CURRENT_API = "nki.compiler"
OLDER_API = "nki_standalone"


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
        options = compile_current(function, inputs, [s.name for s in stubs], out, args)
    elif args.api == OLDER_API:
        options = compile_older(function, inputs, stubs, out, args)
    else:
        raise StepError(f"unknown compile API {args.api!r}")
    print(f"call shape: {json.dumps(options.get('call_shape'))}")
    emit({"api": args.api, "options": options})
