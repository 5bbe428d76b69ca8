"""The correctness gate: a kernel against its workload's numpy oracle, as data."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.sim.errors import SimError
from kernelopt.sim.runner import run_kernel
from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params
from kernelopt.workload import Workload, make_inputs


@dataclass(frozen=True)
class SimReport:
    """The verdict on one kernel: ``correct`` only when every seed matched.

    ``error_kind`` is "isa", "capacity", "numerics" or "exception" when
    something went wrong; ``profile`` comes from the first seed that ran.
    """

    correct: bool
    max_abs_error: float | None
    worst_seed: int | None
    profile: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_kind: str | None = None
    func: str = ""
    max_rel_l2_error: float | None = None  # ||got - want|| / ||want||, worst over seeds
    # With explain=True: what bounds the time and the top stalls (Explanation.to_json()).
    explanation: dict[str, Any] | None = None

    @property
    def problem(self) -> str | None:
        """What is wrong with the kernel, in a sentence (None when it is correct)."""
        if self.correct and self.error is None:
            return None
        return self.error or "numerics differ from f_numpy"

    @property
    def wrong_numbers(self) -> bool:
        """Wrong because its outputs differ, not because the kernel could not run."""
        return self.problem is not None and self.error_kind in (None, "numerics")


def _fp32(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float32) if array.dtype.kind in "fV" else array


def _as_tuple(value: Any) -> tuple[np.ndarray, ...]:
    if isinstance(value, tuple | list):
        return tuple(np.asarray(v) for v in value)
    return (np.asarray(value),)


@dataclass(frozen=True)
class Tolerance:
    """allclose(atol, rtol) by default; with ``rel_l2`` set, the relative L2 error bound instead."""

    atol: float = 5e-3
    rtol: float = 5e-3
    rel_l2: float | None = None


def _compare(
    got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...], tol: Tolerance
) -> tuple[float, float, str | None]:
    """Largest absolute and relative L2 errors over all outputs, and the first mismatch."""
    if len(got) != len(want):
        return (
            float("inf"),
            float("inf"),
            f"the kernel returns {len(got)} outputs, f_numpy {len(want)}",
        )
    worst, worst_l2, problem = 0.0, 0.0, None
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return (
                float("inf"),
                float("inf"),
                f"output {i} has shape {g.shape}, f_numpy gives {w.shape}",
            )
        g32, w32 = _fp32(g).astype(np.float64), _fp32(w).astype(np.float64)
        if np.isnan(g32).any() and not np.isnan(w32).any():
            return float("inf"), float("inf"), f"output {i} contains NaN"
        err = float(np.max(np.abs(g32 - w32))) if g32.size else 0.0
        norm = float(np.linalg.norm(w32))
        l2 = float(np.linalg.norm(g32 - w32)) / (norm if norm > 0 else 1.0)
        worst, worst_l2 = max(worst, err), max(worst_l2, l2)
        if problem is not None:
            continue
        if tol.rel_l2 is not None:
            if not l2 <= tol.rel_l2:
                problem = f"output {i}: relative L2 error {l2:.4g} exceeds {tol.rel_l2:g}"
        elif not np.allclose(g32, w32, atol=tol.atol, rtol=tol.rtol, equal_nan=True):
            bad = ~np.isclose(g32, w32, atol=tol.atol, rtol=tol.rtol, equal_nan=True)
            problem = (
                f"output {i} differs from f_numpy in {int(bad.sum())} of {bad.size} elements: "
                f"max abs error {err:.4g} (atol {tol.atol:g}, rtol {tol.rtol:g})"
            )
    return worst, worst_l2, problem


def _accepted(fn: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The non-tensor arguments ``fn`` takes (the oracle may or may not take them)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return kwargs
    return {k: v for k, v in kwargs.items() if k in params}


def check_kernel(
    kernel_path: str | Path,
    workload: Workload,
    *,
    func: str | None = None,
    precision: str = "fp32",
    seeds: Sequence[int] = (0,),
    atol: float = 5e-3,
    rtol: float = 5e-3,
    mac_count: int | None = None,
    params: Trn2Params = DEFAULT_PARAMS,
    rel_l2: float | None = None,
    compiler_args: tuple[str, ...] | list[str] = (),
    explain: bool = False,
    kernel_kwargs: dict[str, Any] | None = None,
) -> SimReport:
    """Run the kernel on each seed's inputs and compare with ``workload.f_numpy``.

    Never raises for a bad kernel or a failing oracle: the report carries the
    error and its kind. A kernel right on one seed and wrong on another is
    incorrect; the report names the worst seed.
    """
    tol = Tolerance(atol, rtol, rel_l2)
    max_l2: float | None = None
    profile: dict[str, Any] = {}
    name = func or ""
    max_err: float | None = None
    worst_seed: int | None = None
    first_problem: str | None = None
    explanation: dict[str, Any] | None = None

    def failed(error: str, kind: str) -> SimReport:
        return SimReport(
            False, max_err, worst_seed, profile, error, kind, name, max_l2, explanation
        )

    # Non-tensor kernel arguments: the workload's KERNEL_KWARGS, then the caller's.
    kernel_kwargs = {
        **(getattr(workload.module, "KERNEL_KWARGS", None) or {}),
        **(kernel_kwargs or {}),
    }
    for seed in seeds:
        inputs = make_inputs(workload.input_specs, seed)
        try:
            run = run_kernel(
                kernel_path,
                inputs,
                func=func,
                precision=precision,
                mac_count=mac_count,
                params=params,
                compiler_args=compiler_args,
                kernel_kwargs=kernel_kwargs,
            )
        except SimError as exc:
            return failed(str(exc), exc.kind)
        if not profile:
            profile, name = run.profile, run.func
            if explain:
                explanation = run.explain().to_json()
        try:
            expected = workload.f_numpy(
                **{k: _fp32(v) for k, v in inputs.items()},
                **_accepted(workload.f_numpy, kernel_kwargs),
            )
        except Exception as exc:  # the workload is user code too
            return failed(
                f"{workload.path}: f_numpy failed: {type(exc).__name__}: {exc}", "exception"
            )
        err, l2, problem = _compare(_as_tuple(run.outputs), _as_tuple(expected), tol)
        if max_err is None or err > max_err:
            max_err, worst_seed = err, seed
        max_l2 = l2 if max_l2 is None else max(max_l2, l2)
        if problem is not None and first_problem is None:
            first_problem = f"seed {seed}: {problem}"
    if first_problem is not None:
        return failed(first_problem, "numerics")
    return SimReport(True, max_err, worst_seed, profile, None, None, name, max_l2, explanation)
