"""Fake ``neuronxcc.nki`` (NKI Beta 1 namespace, SDK 2.22-2.27): ``jit``, ``language``,
``isa``, ``baremetal`` and ``benchmark``; absent from 2.28 on (NKI release notes 2.27.0).

Interfaces and sources (the beta-1 API reference, aws-neuron/aws-neuron-sdk
``general/nki/api/nki/__init__.py``; zhang677/AccelOpt ``accelopt/kernel_wrapper.py``
calls baremetal the same way):

- ``baremetal(kernel=None, **kwargs)``: a decorator, or ``baremetal(kernel, ...)``; the
  wrapped kernel takes numpy arrays, is compiled into a NEFF (``save_neff_name``, else
  deleted), run once on the local NeuronCore, its trace written to
  ``save_trace_name`` (else deleted), and its outputs returned as numpy arrays.
  ``additional_compile_opt`` are extra compiler flags; ``artifacts_dir`` must be
  empty. The known issue (``save_trace_name`` needs ``save_neff_name`` "file.neff")
  is not enforced: a fake is no stricter than the tool.
- ``benchmark(kernel=None, warmup=10, iters=100, save_neff_name=, save_trace_name=,
  additional_compile_opt=)``: the same, then neuron-bench runs the NEFF ``warmup``
  + ``iters`` times; afterwards the wrapped function has
  ``benchmark_result.nc_latency.get_latency_percentile(p)`` for p in 0, 1, 10, 25, 50,
  90, 99, 100, in microseconds. neuron-bench's latency includes host-device
  transfers (the reference says so); how large they are is the fake's own figure
  (unverified: ``HOST_LINK_BYTES_PER_S``, ``LAUNCH_S``). The outputs benchmark
  returns are "undefined": the fake returns NaN arrays.
- Both run on the core ``NEURON_RT_VISIBLE_CORES`` names (else core 0), as the
  runtime does (``cores.py``). Compiler errors come from the fake ``neuronx-cc`` as a
  ``subprocess.CalledProcessError`` (unverified: the real exception type).

The fake device executes the kernel with kernelopt's NKI interpreter, which reads
beta-1 kernels; the time of an execution is the fake device's own (``timing.py``,
stored in the NEFF by the fake compiler), with seeded noise.
"""

from __future__ import annotations

import hashlib
import inspect
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

# neuron-bench's overhead around one execution on the fake host: the inputs and outputs
# cross the host link, plus a fixed launch cost (the fake's own figures: unverified).
HOST_LINK_BYTES_PER_S = 16e9
LAUNCH_S = 15e-6
PERCENTILES = (0, 1, 10, 25, 50, 90, 99, 100)


class LatencyResult:
    """``nc_latency``: latency percentiles of the benchmarked executions."""

    def __init__(self, seconds: list[float]) -> None:
        self._sorted = sorted(seconds)

    def get_latency_percentile(self, percentile: int) -> float:
        if percentile not in PERCENTILES:
            raise ValueError(f"percentile {percentile} not available: {list(PERCENTILES)}")
        index = round(percentile / 100 * (len(self._sorted) - 1))
        return self._sorted[index] * 1e6  # microseconds


class BenchmarkResult:
    def __init__(self, seconds: list[float]) -> None:
        self.nc_latency = LatencyResult(seconds)


class _Device:
    """One kernel compiled for, and run on, the fake device."""

    def __init__(self, kernel: Any, options: dict[str, Any], api: str) -> None:
        self.function = trace.kernel_function(kernel)
        self.options = options
        self.api = api

    def compile(self, arrays: tuple[Any, ...], scratch: Path) -> tuple[dict, Path, dict]:
        import numpy as np

        names = list(inspect.signature(self.function).parameters)
        inputs = {n: np.asarray(a) for n, a in zip(names, arrays, strict=True)}
        shapes = trace.trace_outputs(self.function, inputs)
        outputs = [
            (s, d, "output" if len(shapes) == 1 else f"output{i}")
            for i, (s, d) in enumerate(shapes)
        ]
        ir = trace.describe_nki(self.function, inputs, outputs, api=self.api)
        saved = self.options.get("save_neff_name")
        target = Path(saved).resolve() if saved else scratch / "file.neff"
        flags = shlex.split(self.options.get("additional_compile_opt") or "")
        lnc = next((f.split("=", 1)[1] for f in flags if f.startswith("--logical-nc-config=")), 1)
        done = trace.run_compiler(ir, scratch, target, int(lnc), flags)
        if done.returncode != 0:
            raise subprocess.CalledProcessError(
                done.returncode, done.args, output=done.stdout, stderr=done.stderr
            )
        return inputs, target, neff.read(target, neff.NEFF_FORMAT)

    def run(self, arrays: tuple[Any, ...], runs: int) -> tuple[list, list[float], dict]:
        """Compile, then run ``runs`` times on the bound core: (outputs, device times,
        the NEFF's data)."""
        from kernelopt.testing.fake_trn2 import hardware
        from kernelopt.testing.fake_trn2.cores import place

        settings = config.load()
        with tempfile.TemporaryDirectory() as scratch:
            inputs, target, data = self.compile(arrays, Path(scratch))
            where = place(settings)
            digest = hashlib.sha256(target.read_bytes()).hexdigest()
            if settings["run_error"]:
                raise RuntimeError(f"NRT_EXEC_ERROR: {settings['run_error']}")
            outputs = hardware.execute_kernel(
                Path(inspect.getsourcefile(self.function) or ""),
                self.function.__name__,
                inputs,
                trace.output_dtype(inputs),
            )
            outputs = hardware.apply_fault(outputs, settings["device_fault"])
            log = config.home() / config.CALLS_NAME
            history = len(log.read_text().splitlines()) if log.exists() else 0
            factors = hardware.noise(
                data["profile"], float(settings["noise_pp"]), f"{digest}:{self.api}:{history}", runs
            )
            device = float(data["profile"].get("total_time", 0.0))
            config.record_call(
                "neuronxcc.nki",
                [self.api, str(runs), ",".join(sorted(self.options))],
                ran_on=where.as_dict(),
            )
            trace_name = self.options.get("save_trace_name")
            if trace_name:
                body = {"neff": str(target), "total_time": device * factors[0], "exec": 1}
                per_chip = int(settings["cores_per_device"]) // where.lnc
                body.update(nc_idx=where.core % per_chip, nd_idx=where.chip)
                neff.write(Path(trace_name), neff.NTFF_FORMAT, body)
        return outputs, [device * f for f in factors], data


def _transfer_s(arrays: tuple[Any, ...], outputs: list[Any]) -> float:
    import numpy as np

    moved = sum(np.asarray(a).nbytes for a in arrays) + sum(o.nbytes for o in outputs)
    return LAUNCH_S + moved / HOST_LINK_BYTES_PER_S


def _baremetal(kernel: Any, options: dict[str, Any]) -> Any:
    def call(*arrays: Any) -> Any:
        outputs, _, _ = _Device(kernel, options, "baremetal").run(arrays, 1)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return call


class _Benchmarked:
    def __init__(self, kernel: Any, options: dict[str, Any]) -> None:
        self.device = _Device(kernel, options, "benchmark")
        self.warmup = int(options.get("warmup", 10))
        self.iters = int(options.get("iters", 100))
        self.benchmark_result: BenchmarkResult | None = None

    def __call__(self, *arrays: Any) -> Any:
        import numpy as np

        outputs, times, _ = self.device.run(arrays, self.warmup + self.iters)
        extra = _transfer_s(arrays, outputs)
        self.benchmark_result = BenchmarkResult([t + extra for t in times[self.warmup :]])
        undefined = [np.full(o.shape, np.nan).astype(o.dtype) for o in outputs]
        return undefined[0] if len(undefined) == 1 else tuple(undefined)


def baremetal(kernel: Any = None, **options: Any) -> Any:
    if kernel is None:
        return lambda k: _baremetal(k, options)
    return _baremetal(kernel, options)


def benchmark(kernel: Any = None, **options: Any) -> Any:
    if kernel is None:
        return lambda k: _Benchmarked(k, options)
    return _Benchmarked(kernel, options)
