"""`baremetal`: an NKI beta-1 kernel compiled and run on the bound NeuronCore with
``neuronxcc.nki.baremetal`` (SDK 2.22-2.27), its outputs compared with f_numpy, then
``neuronxcc.nki.benchmark``'s latency percentiles.

Sources: the beta-1 API reference (aws-neuron/aws-neuron-sdk
``general/nki/api/nki/__init__.py``): ``baremetal(kernel, save_neff_name=,
save_trace_name=, additional_compile_opt=, artifacts_dir=)`` compiles the kernel into
a NEFF and runs it on the local device, taking and returning numpy arrays; with
``save_trace_name`` set, ``save_neff_name`` must be "file.neff" (a known issue the
page names). ``benchmark(kernel, warmup=, iters=, ...)`` does the same and runs
neuron-bench, whose latency includes the host-device data transfers besides the
device's time (by the reference); afterwards
``benchmark_result.nc_latency.get_latency_percentile(p)`` gives percentile ``p``
(0, 1, 10, 25, 50, 90, 99, 100) in microseconds, and the output it returns is not to
be used for checks. zhang677/AccelOpt ``accelopt/kernel_wrapper.py`` calls baremetal
this way. Both compile inside the call, on the device host.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import NEFF_NAME, NTFF_NAME
from kernelopt.neuron.numerics import compare
from kernelopt.neuron.steps.common import (
    StepError,
    emit,
    expected_outputs,
    load,
    output_names,
    parameters,
    write_tensors,
)
from kernelopt.neuron.steps.compile_kernel import _load_kernel, jit_function_name
from kernelopt.workload import make_inputs

# The percentiles nki.benchmark's result offers (its API reference).
PERCENTILES = (0, 1, 10, 25, 50, 90, 99, 100)


def compile_options(args: argparse.Namespace) -> str:
    """neuronx-cc options for baremetal/benchmark: the level, the LNC, the program's."""
    return " ".join([f"-O{args.opt}", f"--logical-nc-config={args.lnc}", *args.compiler_arg])


def _parameters(kernel: Path, name: str) -> list[str]:
    """The kernel function's parameter names, read from its source (the decorator's
    object may not expose them)."""
    tree = ast.parse(kernel.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return [a.arg for a in node.args.args]
    raise StepError(f"{kernel}: defines no function {name!r}")


def _arrays(names: list[str], inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The seeded inputs in the kernel's parameter order: by name, else by position."""
    if set(inputs) <= set(names):
        return [inputs[n] for n in names if n in inputs]
    if len(names) != len(inputs):
        raise StepError(f"the kernel takes {names}, the workload provides {list(inputs)}")
    return list(inputs.values())


def _failure(what: str, exc: BaseException) -> StepError:
    text = str(exc).strip()
    if isinstance(exc, subprocess.CalledProcessError):
        text = str(exc.stderr or exc.stdout or exc).strip()
    return StepError(f"{what} failed ({type(exc).__name__}): {text or repr(exc)}")


def _latencies(bench: Any) -> dict[str, Any]:
    """neuron-bench's percentiles from a benchmarked kernel, or what was found instead."""
    result = getattr(bench, "benchmark_result", None)
    latency = getattr(result, "nc_latency", None)
    get = getattr(latency, "get_latency_percentile", None)
    if not callable(get):
        found = sorted(a for a in dir(result) if not a.startswith("_")) if result else []
        return {"error": f"no benchmark_result.nc_latency.get_latency_percentile ({found})"}
    return {
        "percentiles_us": {str(p): float(get(p)) for p in PERCENTILES},
        "result": "benchmark_result.nc_latency.get_latency_percentile",
    }


def baremetal_step(args: argparse.Namespace) -> None:
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, args.seed)
    want = expected_outputs(workload, inputs)
    kernel_path = Path(args.kernel).resolve()
    name = jit_function_name(kernel_path, args.func)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(out)  # the NEFF and the trace are written under these names, here
    try:
        from neuronxcc.nki import baremetal, benchmark
    except ImportError as exc:
        raise StepError(
            f"NKI beta 1 (neuronxcc.nki baremetal/benchmark) is not importable here ({exc}); "
            "source the Neuron environment first (device.neuron.activate)"
        ) from None
    kernel = _load_kernel(kernel_path, name)
    arrays = _arrays(_parameters(kernel_path, name), inputs)
    options = compile_options(args)
    started = time.time()
    try:
        ran = baremetal(
            kernel,
            save_neff_name=NEFF_NAME,
            save_trace_name=NTFF_NAME,
            additional_compile_opt=options,
        )(*arrays)
    except Exception as exc:  # noqa: BLE001 - the compiler's and runtime's own errors
        raise _failure("neuronxcc.nki.baremetal (compile and run)", exc) from None
    finished = time.time()
    got = [np.asarray(r) for r in (ran if isinstance(ran, tuple | list) else (ran,))]
    write_tensors(
        out,
        [{"name": n, "shape": list(v.shape), "dtype": str(v.dtype)} for n, v in inputs.items()],
        [
            {"name": n, "shape": list(g.shape), "dtype": str(g.dtype)}
            for n, g in zip(output_names(len(got)), got, strict=True)
        ],
        "the outputs neuronxcc.nki.baremetal returned",
    )
    check = compare(got, list(want), atol=args.tolerance, rtol=args.tolerance)
    record: dict[str, Any] = {
        "compile_api": "neuronxcc.nki.baremetal",
        "additional_compile_opt": options,
        "baremetal_s": finished - started,
        "neff_saved": (out / NEFF_NAME).is_file(),
        "trace_saved": (out / NTFF_NAME).is_file(),
        "check": {
            **check.to_json(),
            "seed": args.seed,
            "atol": args.tolerance,
            "rtol": args.tolerance,
            "message": check.describe(),
        },
        "call_shape": {
            "baremetal": parameters(baremetal),
            "benchmark": parameters(benchmark),
        },
    }
    if check.passed:
        record["neuron_bench"] = _benchmark(benchmark, kernel, arrays, options, args)
    emit(record)


def _benchmark(
    benchmark: Any, kernel: Any, arrays: list[np.ndarray], options: str, args: argparse.Namespace
) -> dict[str, Any]:
    """nki.benchmark's neuron-bench statistics, a diagnostic beside the device time:
    its latency includes host-device transfers (its API reference)."""
    started = time.time()
    try:
        bench = benchmark(
            kernel, warmup=args.warmup, iters=args.iterations, additional_compile_opt=options
        )
        bench(*arrays)
    except Exception as exc:  # noqa: BLE001 - a diagnostic: its failure is recorded
        return {"error": str(_failure("neuronxcc.nki.benchmark", exc))}
    return {
        **_latencies(bench),
        "warmup": args.warmup,
        "iterations": args.iterations,
        "benchmark_s": time.time() - started,
        "includes": "host-device transfers (nki.benchmark API reference: neuron-bench)",
    }
