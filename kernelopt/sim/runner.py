"""Run one NKI kernel file on numpy and time it with the cost model."""

from __future__ import annotations

import inspect
import itertools
import os
import shlex
import sys
import traceback
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.sim.compiler import CompilerOptions, compiler_options, precomputed_descriptors
from kernelopt.sim.errors import SimError
from kernelopt.sim.explain import Explanation, explain
from kernelopt.sim.indexing import IndexError_
from kernelopt.sim.language import BUFFERS
from kernelopt.sim.machine import Machine
from kernelopt.sim.memory import plan_memory
from kernelopt.sim.namespace import JitKernel, build_modules, kernel_builtins
from kernelopt.sim.profile import build_profile
from kernelopt.sim.schedule import Timeline, schedule
from kernelopt.sim.tensor import Tile
from kernelopt.sim.trace import AllocationInfo, Instruction
from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params

# One private module name per kernel run (kernelopt.sim.runner.run_kernel).
_KERNEL_MODULES = itertools.count()

Outputs = np.ndarray | tuple[np.ndarray, ...] | None


@dataclass(frozen=True)
class SimRun:
    """One simulated execution.

    ``outputs`` is None in trace-only mode (``compute=False``); ``trace`` lists
    every executed instruction in program order, ``timeline`` when each ran.
    """

    func: str
    outputs: Outputs
    profile: dict[str, Any]
    trace: tuple[Instruction, ...]
    allocations: tuple[AllocationInfo, ...]
    timeline: Timeline

    def explain(self, top: int = 3) -> Explanation:
        """What bounds the time, and TensorE's ``top`` stalls with their source lines."""
        return explain(self.trace, self.allocations, self.timeline, top)


def _exception_line(exc: BaseException, file: str) -> int:
    if isinstance(exc, SyntaxError) and exc.filename == file:
        return exc.lineno or 0
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == file]
    return (frames[-1].lineno or 0) if frames else 0


def _as_sim_error(exc: BaseException, file: str) -> SimError:
    if isinstance(exc, SimError):
        return exc
    if isinstance(exc, IndexError_):
        # A beta-1 index expression the simulator cannot represent.
        return SimError(str(exc), file=file, line=_exception_line(exc, file), kind="isa")
    return SimError(
        f"{type(exc).__name__}: {exc}", file=file, line=_exception_line(exc, file), kind="exception"
    )


def _pick(namespace: dict[str, Any], func: str | None, file: str) -> tuple[str, Any]:
    kernels = {n: v.func for n, v in namespace.items() if isinstance(v, JitKernel)}
    if func is not None:
        target = namespace.get(func)
        if isinstance(target, JitKernel):
            return func, target.func
        if inspect.isfunction(target):
            return func, target
        raise SimError(
            f"no function {func!r} in the kernel (@nki.jit functions: "
            f"{', '.join(sorted(kernels)) or 'none'})",
            file=file,
            line=0,
            kind="exception",
        )
    if len(kernels) != 1:
        found = ", ".join(sorted(kernels)) or "none"
        raise SimError(
            f"expected exactly one @nki.jit function, found {found}; choose one with func=",
            file=file,
            line=0,
            kind="exception",
        )
    return next(iter(kernels.items()))


def _bind_inputs(
    machine: Machine,
    fn: Any,
    name: str,
    inputs: dict[str, np.ndarray],
    file: str,
    kernel_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The kernel's arguments: each input as an HBM tensor, plus the workload's
    non-tensor keyword arguments (``KERNEL_KWARGS``) as they are."""
    kernel_kwargs = dict(kernel_kwargs or {})
    params = inspect.signature(fn).parameters
    variadic = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    required = [
        p
        for p, v in params.items()
        if v.default is inspect.Parameter.empty and v.kind not in variadic
    ]
    takes_any = any(v.kind == inspect.Parameter.VAR_KEYWORD for v in params.values())
    missing = [p for p in required if p not in inputs and p not in kernel_kwargs]
    extra = [k for k in (*inputs, *kernel_kwargs) if k not in params and not takes_any]
    if missing or extra:
        raise SimError(
            f"inputs do not match {name}({', '.join(params)}): "
            f"missing {missing or 'none'}, unexpected {extra or 'none'}",
            file=file,
            line=fn.__code__.co_firstlineno,
            kind="exception",
        )
    tiles = {}
    for param, array in inputs.items():
        array = np.asarray(array)
        store = np.int32 if array.dtype.kind in "iu" else np.float32
        data = np.ascontiguousarray(array, dtype=store) if machine.compute else None
        tiles[param] = machine.allocate(
            array.shape, array.dtype, BUFFERS["hbm"], param, data=data, filled=True
        )
    return {**kernel_kwargs, **tiles}


def _collect(machine: Machine, result: Any, fn: Any, native: bool, file: str) -> Outputs:
    items = result if isinstance(result, tuple | list) else (result,)
    line = fn.__code__.co_firstlineno
    arrays = []
    for i, tile in enumerate(items):
        if isinstance(tile, np.ndarray) and id(tile) in machine.bound_arrays:
            tile = machine.bound_arrays[id(tile)][1]  # a numpy output a launch filled
        if not isinstance(tile, Tile) or tile.buffer.kind != "hbm":
            raise SimError(
                f"the kernel must return HBM tensors; return value {i} is {tile!r}",
                file=file,
                line=line,
                kind="exception",
            )
        written = tile.alloc.written[tile.index]
        if not written.all():
            raise SimError(
                f"output {tile.alloc.name!r} {tile.shape}: {int((~written).sum())} of "
                f"{written.size} elements were never written",
                file=file,
                line=line,
                kind="numerics",
            )
        if tile.alloc.data is not None:
            values = np.array(tile.alloc.data[tile.index])
            arrays.append(values.astype(tile.dtype) if native else values)
    if not machine.compute:
        return None
    return tuple(arrays) if isinstance(result, tuple | list) else arrays[0]


@contextmanager
def _own_environment(kernel_flags: list[str]) -> Iterator[None]:
    """The kernel runs in the process environment, which is restored afterwards: what
    it set at import stays with it, but its ``NEURON_CC_FLAGS`` go into
    ``kernel_flags`` (the driver reads them when the kernel compiles)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        kernel_flags.append(os.environ.get("NEURON_CC_FLAGS", ""))
        # Key by key, never emptied: another thread may be starting a process.
        for key in os.environ.keys() - saved.keys():
            os.environ.pop(key, None)
        for key, value in saved.items():
            if os.environ.get(key) != value:
                os.environ[key] = value


def _options(compiler_args: Sequence[str], kernel_flags: str, file: str) -> CompilerOptions:
    """The options the kernel compiles with: the command line's, then the
    ``NEURON_CC_FLAGS`` the kernel set at import (the driver appends them)."""
    try:
        flags = shlex.split(kernel_flags)
    except ValueError:
        flags = kernel_flags.split()
    try:
        return compiler_options([*compiler_args, *flags])
    except ValueError as exc:
        raise SimError(f"NEURON_CC_FLAGS: {exc}", file=file, line=0, kind="exception") from None


def run_kernel(
    kernel_path: str | Path,
    inputs: dict[str, np.ndarray],
    *,
    func: str | None = None,
    precision: str = "fp32",
    compute: bool = True,
    mac_count: int | None = None,
    params: Trn2Params = DEFAULT_PARAMS,
    compiler_args: tuple[str, ...] | list[str] = (),
    kernel_kwargs: dict[str, Any] | None = None,
) -> SimRun:
    """Execute ``func`` (or the file's only ``@nki.jit`` function) on ``inputs``.

    ``precision="fp32"`` computes and stores every float in fp32; ``"native"`` rounds
    each store to the declared dtype. ``compute=False`` skips the array math but checks
    the same rules and yields the same trace and profile. ``compiler_args`` are the
    neuronx-cc options the kernel is compiled with, before its own ``NEURON_CC_FLAGS``
    (``kernelopt.sim.compiler``); ``kernel_kwargs`` the non-tensor keyword arguments it
    takes (a workload's ``KERNEL_KWARGS``). Raises ``SimError`` for any kernel problem.
    """
    try:
        compiler_options(compiler_args)
    except ValueError as exc:
        raise SimError(str(exc), file=str(kernel_path), line=0, kind="exception") from None
    path = Path(kernel_path).resolve()
    file = str(path)
    try:
        source = path.read_text()
    except OSError as exc:
        raise SimError(f"cannot read kernel: {exc}", file=file, line=0, kind="exception") from None
    machine = Machine(file, params, precision, compute)
    modules = build_modules(machine)
    # The kernel file runs as a module of its own, registered under a private name
    # while it runs: dataclasses and pickling look a class's module up by name (the
    # public flash-attention kernel declares its config as a dataclass).
    module = types.ModuleType(f"kernelopt_sim_kernel_{next(_KERNEL_MODULES)}")
    namespace: dict[str, Any] = vars(module)
    helpers: list[str] = []  # the modules beside the kernel it imports, registered too
    builtins_ = kernel_builtins(modules, path.parent, helpers)
    namespace.update({"__file__": file, "__builtins__": builtins_})
    sys.modules[module.__name__] = module
    kernel_flags: list[str] = []
    try:
        # The kernel's arithmetic may overflow or take a root of a negative number as
        # the hardware would; the values (inf, NaN) are the result, not a warning.
        with np.errstate(all="ignore"), _own_environment(kernel_flags):
            exec(compile(source, file, "exec"), namespace)
            name, fn = _pick(namespace, func, file)
            tiles = _bind_inputs(machine, fn, name, inputs, file, kernel_kwargs)
            result = fn(**tiles)
            outputs = _collect(machine, result, fn, precision == "native", file)
    except (Exception, SystemExit) as exc:  # user code: every failure becomes a SimError
        raise _as_sim_error(exc, file) from None
    finally:
        for registered in (module.__name__, *helpers):
            sys.modules.pop(registered, None)
        namespace.clear()
    options = _options(compiler_args, "".join(kernel_flags), file)
    # A beta-1 kernel is compiled with the compiler's allocator, which spills SBUF
    # to HBM rather than fail (kernelopt.sim.spill).
    trace, allocations = plan_memory(
        tuple(machine.trace), machine.allocations, params, file, spill=machine.beta1 is not None
    )
    if not options.descriptor_generation:
        trace = precomputed_descriptors(trace)
    timeline = schedule(trace, allocations, params, in_order=not options.instruction_scheduling)
    # ml_dtypes floats (bfloat16, fp8) report kind "V".
    float_inputs = [a.dtype for a in map(np.asarray, inputs.values()) if a.dtype.kind in "fV"]
    fp32_inputs = bool(float_inputs) and all(d.itemsize >= 4 for d in float_inputs)
    profile = build_profile(trace, timeline, params, mac_count=mac_count, fp32_inputs=fp32_inputs)
    profile["precision"] = precision
    return SimRun(
        func=name,
        outputs=outputs,
        profile=profile,
        trace=trace,
        allocations=allocations,
        timeline=timeline,
    )
