"""The fake "hardware": what the fake Trn2 device computes and how long it takes.

It must not be kernelopt's screening model, or no test could tell a
measurement on the device from the simulator's estimate, and it must not be
that model with other numbers, or the model's structure would be right by
construction. So the device runs the kernel to get its real outputs and its
executed instruction stream, and times that stream with a model of its own
(``timing.py`` beside this file: in-order pipelined engines, semaphore waits,
TensorE weight loads and clock ramp, PSUM bank ports, DMA rings, descriptors
and HBM pages, each a physical statement with its public source) under a
memory plan of its own (``timing_plan.py``: which allocation takes over whose
memory, decided by the device's compiler rules, not the simulator's) and its
own lowering of PSUM calls bank by bank (``timing_lower.py``). Nothing
in that timing reads kernelopt's cost model, its memory plan or its parameters. Measurements add
seeded noise of about ``noise_pp`` MFU percentage points. Outputs are stored
in the output's dtype the way the device writes HBM, and a ``device_fault``
setting can make them wrong, so a kernel the CPU check passes can still fail
the device-side check.

``params()`` is not the device: it is the simulator with three shifted
parameters, kept for tests of the fitting machinery that need a target the
fit can reach exactly.

Nothing outside the fake toolchain and the benchmarks imports this module.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# A shifted parameter set for tests of the fit (see ``params``), not the device's
# timing: fields of kernelopt.sim.trn2.Trn2Params. Overrides of fields a later
# Trn2Params no longer has are skipped; at least one must still apply.
HIDDEN_OVERRIDES: dict[str, float] = {
    "dma_fixed_ns": 1650.0,
    "dma_bytes_per_ns": 20.5,
    "sync_latency_ns": 85.0,
    "peak_bf16_flops": 78.64e12,
}

# The compiler baseline (a NEFF the fake nkipy made from f_numpy) runs at this share
# of the peak on the fake device, after moving its inputs and outputs once.
BASELINE_EFFICIENCY = 0.8
BASELINE_FIXED_S = 20e-6
HBM_BYTES_PER_S = 368e9


def params() -> Any:
    """The simulator's defaults with HIDDEN_OVERRIDES: a model the fit can match
    exactly, for tests of the fitting machinery. The fake device's own timing is
    ``device_profile``, which this parameter set does not describe."""
    from kernelopt.sim import DEFAULT_PARAMS

    known = {f.name for f in dataclasses.fields(DEFAULT_PARAMS)}
    applied = {k: v for k, v in HIDDEN_OVERRIDES.items() if k in known}
    if not applied:
        raise RuntimeError(
            "fake Trn2 hardware: none of its hidden overrides names a Trn2Params field any "
            f"more ({', '.join(HIDDEN_OVERRIDES)}); update HIDDEN_OVERRIDES"
        )
    return dataclasses.replace(DEFAULT_PARAMS, **applied)


def model_profile(
    kernel: Path,
    func: str | None,
    inputs: Mapping[str, np.ndarray],
    compiler_args: Sequence[str] = (),
) -> dict:
    """The device's own profile of an NKI kernel: its instruction stream (traced
    without array math; raises the simulator's SimError for a kernel that cannot
    run) timed by the device's model in ``timing.py``."""
    from kernelopt.sim import run_kernel
    from kernelopt.sim.compiler import compiler_options

    run = run_kernel(kernel, dict(inputs), func=func, compute=False, compiler_args=compiler_args)
    floats = [np.asarray(a).dtype for a in inputs.values() if np.asarray(a).dtype.kind in "fV"]
    return device_profile(
        run.trace,
        run.allocations,
        fp32_inputs=bool(floats) and all(d.itemsize >= 4 for d in floats),
        scheduler_on=compiler_options(compiler_args).instruction_scheduling,
    )


def device_profile(
    trace: Sequence[Any],
    allocations: Sequence[Any],
    *,
    mac_count: int | None = None,
    fp32_inputs: bool = False,
    scheduler_on: bool = True,
) -> dict:
    """The fake device's profile (neuron-profile field names) of an executed
    instruction stream: ``timing_profile.profile``."""
    from kernelopt.testing.fake_trn2 import timing_profile

    return timing_profile.profile(
        trace,
        allocations,
        mac_count=mac_count,
        fp32_inputs=fp32_inputs,
        scheduler_on=scheduler_on,
    )


def traced_mfu(traced: Any) -> float:
    """The device's MFU (noise-free) for a kernel traced by
    ``kernelopt.sim.calibrate.trace_kernel``: the same instruction stream the
    device would run, timed by the device."""
    profile = device_profile(
        traced.trace,
        traced.allocations,
        mac_count=traced.mac_count,
        fp32_inputs=traced.fp32_inputs,
        scheduler_on=not traced.in_order,
    )
    return float(profile["mfu_estimated_percent"])


def execute_kernel(
    kernel: Path, func: str | None, inputs: Mapping[str, np.ndarray], dtype: np.dtype
) -> list[np.ndarray]:
    """The kernel's outputs on ``inputs``, stored in the output dtype as HBM holds them."""
    from kernelopt.sim import run_kernel

    run = run_kernel(kernel, dict(inputs), func=func)
    outputs = run.outputs if isinstance(run.outputs, tuple | list) else (run.outputs,)
    return [np.asarray(o, dtype=np.float32).astype(dtype) for o in outputs]


def execute_numpy(
    source: str, func: str, inputs: Mapping[str, np.ndarray], output_dtypes: Sequence[np.dtype]
) -> list[np.ndarray]:
    """What the compiler baseline computes: the numpy function itself."""
    namespace: dict[str, Any] = {"__name__": "kernelopt_fake_trn2_baseline"}
    exec(compile(source, "<baseline>", "exec"), namespace)
    as_fp32 = {k: v.astype(np.float32) if v.dtype.kind in "fV" else v for k, v in inputs.items()}
    result = namespace[func](**as_fp32)
    results = result if isinstance(result, tuple | list) else (result,)
    return [np.asarray(r).astype(d) for r, d in zip(results, output_dtypes, strict=True)]


def baseline_profile(inputs: Mapping[str, Sequence], outputs: Sequence[Sequence]) -> dict:
    """A profile for the compiler baseline: its bytes moved once, its matmul (two 2-D
    inputs sharing a dimension) at BASELINE_EFFICIENCY of the peak.

    ``inputs`` maps names to (shape, dtype); ``outputs`` lists (shape, dtype, name).
    """
    outputs = [(o[0], o[1]) for o in outputs]
    shapes = [tuple(s) for s, _ in inputs.values()]
    nbytes = sum(
        int(np.prod(s)) * np.dtype(_dtype(d)).itemsize for s, d in [*inputs.values(), *outputs]
    )
    macs = 0
    if len(shapes) == 2 and all(len(s) == 2 for s in shapes) and outputs:
        shared = set(shapes[0]) & set(shapes[1])
        if shared:
            macs = max(shared) * int(np.prod(outputs[0][0]))
    from kernelopt.testing.fake_trn2.timing import PEAK_BF16_FLOPS as peak

    seconds = BASELINE_FIXED_S + nbytes / HBM_BYTES_PER_S + 2 * macs / (BASELINE_EFFICIENCY * peak)
    profile: dict[str, Any] = {"total_time": seconds, "total_active_time": seconds}
    if macs:
        profile["mfu_estimated_percent"] = 100 * 2 * macs / (seconds * peak)
        profile["matmul_instruction_count"] = max(1, macs // (128 * 128 * 512))
    profile["hbm_read_bytes"] = sum(
        int(np.prod(s)) * np.dtype(_dtype(d)).itemsize for s, d in inputs.values()
    )
    return profile


def _dtype(name: str) -> np.dtype:
    from kernelopt.workload import numpy_dtype

    return numpy_dtype(name)


def neff_outputs(
    data: Mapping[str, Any], arrays: Mapping[str, np.ndarray], fault: Mapping[str, Any] | None
) -> dict[str, np.ndarray]:
    """What a fake NEFF computes on ``arrays``, by output name, in each output's dtype and
    shape, with the ``device_fault`` setting applied: the one answer the fake runtime and
    the fake profiler's saved outputs both give."""
    import tempfile

    declared = [(tuple(s), _dtype(d), n) for s, d, n in data["outputs"]]
    dtype = declared[0][1] if declared else np.dtype(np.float32)
    if data["kind"] == "numpy":
        values = execute_numpy(data["source"], data["func"], arrays, [d for _, d, _ in declared])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            kernel = Path(scratch) / "kernel.py"
            kernel.write_text(data["source"])
            values = execute_kernel(kernel, data["func"], arrays, dtype)
    values = apply_fault(values, fault)
    return {n: v.reshape(s) for (s, _, n), v in zip(declared, values, strict=True)}


def apply_fault(outputs: list[np.ndarray], fault: Mapping[str, Any] | None) -> list[np.ndarray]:
    """The ``device_fault`` setting: one output element overwritten with ``value``, or
    moved by ``offset`` from what the kernel computed."""
    if not fault:
        return outputs
    changed = [o.copy() for o in outputs]
    which = int(fault.get("output", 0))
    index = tuple(int(i) for i in fault["index"])
    if "value" in fault:
        wrong = float(fault["value"])
    else:
        wrong = float(changed[which][index]) + float(fault["offset"])
    changed[which][index] = np.asarray(wrong).astype(changed[which].dtype)
    return changed


def noise(profile: Mapping[str, Any], noise_pp: float, seed: str, count: int) -> list[float]:
    """``count`` multiplicative time factors whose MFU spread is ``noise_pp`` points."""
    mfu = profile.get("mfu_estimated_percent")
    relative = noise_pp / float(mfu) if isinstance(mfu, int | float) and mfu > 0 else 1e-3
    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    return [max(0.5, 1.0 + rng.gauss(0.0, relative)) for _ in range(count)]
