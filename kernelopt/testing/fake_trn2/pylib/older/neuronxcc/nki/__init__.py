"""Fake ``neuronxcc.nki`` (NKI Beta 1 namespace, SDK 2.22-2.27): ``jit``, ``language``,
``isa``, ``baremetal`` and ``benchmark``; absent from 2.28 on (NKI release notes 2.27.0).

Interfaces and sources:
- ``baremetal(kernel, save_neff_name=..., save_trace_name=..., additional_compile_opt=...)
  (*inputs)`` compiles the kernel, runs it once on the device and returns its output;
  ``save_trace_name`` writes the trace of that run: zhang677/AccelOpt
  ``accelopt/kernel_wrapper.py``@d16221a calls it so (and reads ``total_time`` from
  ``neuron-profile view --output-format summary-json`` of the saved NEFF and NTFF).
- ``benchmark(kernel, warmup=..., iters=..., save_neff_name=..., save_trace_name=...)``:
  the same call shape, running warmup + iters times; its result object's fields are
  unverified (the fake returns the outputs only).
- Keyword names beyond those the public runner passes, defaults, and error types:
  unverified.
kernelopt does not call these (it compiles once with nki_standalone and times with the
profiler's capture); they exist so the layout is as it shipped. The fake device runs
only kernels its model can read (written against ``nki.*``, as on 2.27); a kernel
importing ``neuronxcc.nki`` fails in the fake's compile with the model's error.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import config, neff, trace
from kernelopt.testing.fake_trn2.nki_stub import jit

from . import isa, language

if config.layout(config.current()["sdk"]) >= (2, 28):
    raise ImportError("neuronxcc.nki: this namespace is not shipped from Neuron 2.28 (use nki.*)")

__all__ = ["baremetal", "benchmark", "isa", "jit", "language"]


def _runner(kernel: Any, options: dict[str, Any], runs: int) -> Any:
    def call(*arrays: Any) -> Any:
        import numpy as np

        from kernelopt.testing.fake_trn2 import hardware

        function = trace.kernel_function(kernel)
        import inspect

        names = list(inspect.signature(function).parameters)
        inputs = {n: np.asarray(a) for n, a in zip(names, arrays, strict=True)}
        shapes = trace.trace_outputs(function, inputs)
        outputs = [
            (s, d, "output" if len(shapes) == 1 else f"output{i}")
            for i, (s, d) in enumerate(shapes)
        ]
        ir = trace.describe_nki(function, inputs, outputs, api="neuronxcc.nki.baremetal")
        with tempfile.TemporaryDirectory() as scratch:
            target = Path(options.get("save_neff_name") or Path(scratch) / "file.neff")
            done = trace.run_compiler(
                ir,
                Path(scratch),
                target.resolve(),
                1,
                shlex.split(options.get("additional_compile_opt") or ""),
            )
            if done.returncode != 0:
                raise subprocess.CalledProcessError(
                    done.returncode, done.args, output=done.stdout, stderr=done.stderr
                )
            data = neff.read(target, neff.NEFF_FORMAT)
        results = hardware.execute_kernel(
            Path(ir["kernel"]), ir["func"], inputs, trace.output_dtype(inputs)
        )
        if options.get("save_trace_name"):
            neff.write(
                Path(options["save_trace_name"]),
                neff.NTFF_FORMAT,
                {"neff": str(target), "total_time": float(data["profile"].get("total_time", 0.0))},
            )
        config.record_call("neuronxcc.nki", ["run", str(runs), json.dumps(sorted(options))])
        return results[0] if len(results) == 1 else tuple(results)

    return call


def baremetal(kernel: Any = None, **options: Any) -> Any:
    if kernel is None:
        return lambda k: _runner(k, options, 1)
    return _runner(kernel, options, 1)


def benchmark(kernel: Any = None, **options: Any) -> Any:
    runs = int(options.get("warmup", 2)) + int(options.get("iters", 10))
    if kernel is None:
        return lambda k: _runner(k, options, runs)
    return _runner(kernel, options, runs)
