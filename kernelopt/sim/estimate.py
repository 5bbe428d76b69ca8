"""Estimating candidate kernels on the simulator before any device sees them.

Each job is one rendered kernel: it is checked against the workload's numpy
oracle on the CPU (the same gate as the sim device and the Trn2 path's CPU
check) and, when correct, its time estimated by the cost model. Jobs run in a
process pool; where one cannot start, in this process.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Profile fields kept beside an estimate: what bounds the kernel, in a few numbers.
PROFILE_KEYS = (
    "total_time",
    "mfu_estimated_percent",
    "tensor_engine_active_time_percent",
    "dma_active_time_percent",
    "mbu_estimated_percent",
)
ALIASES = {"mfu": "mfu_estimated_percent", "time": "total_time"}


@dataclass(frozen=True)
class EstimateJob:
    """One kernel to check and estimate; everything a worker process needs."""

    workload_text: str
    kernel_text: str
    metric: str
    func: str | None = None
    seeds: tuple[int, ...] = (0,)
    atol: float = 5e-3
    rtol: float = 5e-3
    rel_l2: float | None = None
    compiler_args: tuple[str, ...] = ()
    params: dict[str, float] = field(default_factory=dict)


def estimate(job: EstimateJob) -> dict[str, Any]:
    """{status: ok | incorrect | failed, estimate, error, profile} for one kernel."""
    from kernelopt.sim import check_kernel
    from kernelopt.sim.calibration import params_with
    from kernelopt.targets.nki import _mac_count
    from kernelopt.workload import WorkloadError, load_workload

    with tempfile.TemporaryDirectory(prefix="kernelopt-screen-") as tmp:
        workload_path, kernel_path = Path(tmp) / "workload.py", Path(tmp) / "kernel.py"
        workload_path.write_text(job.workload_text)
        kernel_path.write_text(job.kernel_text)
        try:
            workload = load_workload(workload_path, require=("f_numpy", "INPUT_SPECS"))
        except WorkloadError as exc:
            return {"status": "failed", "estimate": None, "error": str(exc), "profile": {}}
        report = check_kernel(
            kernel_path,
            workload,
            func=job.func,
            seeds=job.seeds,
            atol=job.atol,
            rtol=job.rtol,
            rel_l2=job.rel_l2,
            mac_count=_mac_count(workload),
            params=params_with(job.params),
            compiler_args=job.compiler_args,
        )
    profile = {k: report.profile[k] for k in PROFILE_KEYS if k in report.profile}
    if report.error is not None or not report.correct:
        status = "incorrect" if report.error_kind in (None, "numerics") else "failed"
        error = report.error or "numerics differ from f_numpy"
        return {"status": status, "estimate": None, "error": error, "profile": profile}
    value = report.profile.get(ALIASES.get(job.metric, job.metric))
    if not isinstance(value, int | float):
        error = f"the simulator gives no {job.metric!r}"
        return {"status": "failed", "estimate": None, "error": error, "profile": profile}
    return {"status": "ok", "estimate": float(value), "error": "", "profile": profile}


def estimate_all(jobs: Sequence[EstimateJob], workers: int | None = None) -> list[dict[str, Any]]:
    """Every job's estimate, in order: in worker processes, else here one by one."""
    workers = min(len(jobs), workers or os.cpu_count() or 1)
    if workers > 1:
        try:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                return list(pool.map(estimate, jobs))
        except (BrokenProcessPool, OSError):
            pass  # no worker processes here: the same estimates, one at a time
    return [estimate(job) for job in jobs]
