"""`run`: a NEFF run with nrtpy on the bound NeuronCore: the device-side benchmark,
and the device's output of the measured run compared with f_numpy."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import TENSORS_NAME
from kernelopt.neuron.numerics import compare
from kernelopt.neuron.steps.common import (
    StepError,
    emit,
    expected_outputs,
    load,
    output_names,
    package_version,
    parameters,
)
from kernelopt.workload import make_inputs, numpy_dtype


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
            if width not in FLOAT_OF_WIDTH:
                break
            found.append((shape, np.dtype(FLOAT_OF_WIDTH[width])))
        else:
            return found, "the runtime's output_tensors_info (byte width)"
    raise StepError(
        f"no output dtype for {neff}: no {TENSORS_NAME} from its compile and the runtime "
        "reports no usable output tensor info"
    )


# A float output's dtype by its width in bytes, where only the width is known.
FLOAT_OF_WIDTH = {2: "bfloat16", 4: "float32"}


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
    record: dict[str, Any] = {"runtime": "nrtpy", "runtime_version": package_version("nrtpy")}
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
