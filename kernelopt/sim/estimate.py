"""Estimating candidate kernels on the simulator before any device sees them.

Each job is one rendered kernel: it is checked against the workload's numpy
oracle on the CPU (the same gate as the sim device and the Trn2 path's CPU
check) and, when correct, its time estimated by the cost model. Jobs run in a
process pool; where one cannot start, in this process.

`EstimatePool` keeps its worker processes for a whole run and knows each
job's estimate by the job's content (kernel text, parameters, workload), so a
job started ahead of time (while the device measures) is not estimated again
when it is asked for.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelopt.measurement import FAILED, INCORRECT

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
    from kernelopt.targets.nki import mac_count_of
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
            mac_count=mac_count_of(workload),
            params=params_with(job.params),
            compiler_args=job.compiler_args,
        )
    profile = {k: report.profile[k] for k in PROFILE_KEYS if k in report.profile}
    if report.problem is not None:
        status = INCORRECT if report.wrong_numbers else FAILED
        return {"status": status, "estimate": None, "error": report.problem, "profile": profile}
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


def job_key(job: EstimateJob) -> Hashable:
    """What an estimate depends on: every field of the job, parameters included."""
    return (
        job.kernel_text,
        tuple(sorted(job.params.items())),
        job.workload_text,
        job.metric,
        job.func,
        job.seeds,
        job.atol,
        job.rtol,
        job.rel_l2,
        job.compiler_args,
    )


class EstimatePool:
    """Worker processes kept for a run; each distinct job estimated once.

    ``start(jobs)`` hands jobs to the workers and returns at once; ``__call__``
    returns every job's estimate in order, waiting for those already started
    and starting the rest. Started jobs not asked for by the next call are
    cancelled then (they were a guess at the next pool), so what is kept stays
    one round's worth. Where workers cannot start or die, jobs run here.
    ``computed`` counts the jobs estimated, ``hits`` those asked for that had
    been started ahead.
    """

    def __init__(
        self, workers: int | None = None, run: Callable[[EstimateJob], dict[str, Any]] = estimate
    ) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.run = run
        self.computed = 0
        self.hits = 0
        self._executor: ProcessPoolExecutor | None = None
        self._local = self.workers <= 1
        self._started: dict[Hashable, Future[dict[str, Any]]] = {}

    def start(self, jobs: Sequence[EstimateJob]) -> None:
        """Estimate ``jobs`` in the background (nothing without worker processes)."""
        if not self._local:
            self._start(jobs)

    def __call__(self, jobs: Sequence[EstimateJob]) -> list[dict[str, Any]]:
        wanted = {job_key(job): job for job in jobs}
        self._cancel(set(self._started) - set(wanted))  # guesses that did not come true
        self.hits += len(set(self._started) & set(wanted))
        self._start(list(wanted.values()))
        done = {key: self._result(key, job) for key, job in wanted.items()}
        self._started.clear()
        return [done[job_key(job)] for job in jobs]

    def close(self, wait: bool = True) -> None:
        """Cancel what has not started and stop the workers: after what has started
        finishes (``wait``), or at once (an interrupt: estimates are worth nothing then)."""
        self._cancel(set(self._started))
        executor, self._executor = self._executor, None
        if executor is None:
            return
        # The worker processes, before shutdown forgets them (no public handle exists).
        workers = list((getattr(executor, "_processes", None) or {}).values())
        if not wait:
            for process in workers:
                process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)
        for process in workers:
            process.join(timeout=5)

    def _start(self, jobs: Sequence[EstimateJob]) -> None:
        for job in jobs:
            key = job_key(job)
            if key not in self._started:
                self._started[key] = self._submit(job)

    def _cancel(self, keys: set[Hashable]) -> None:
        for key in keys:
            if self._started.pop(key).cancel():
                self.computed -= 1  # never ran

    def _submit(self, job: EstimateJob) -> Future[dict[str, Any]]:
        self.computed += 1
        if not self._local:
            try:
                if self._executor is None:
                    self._executor = ProcessPoolExecutor(max_workers=self.workers)
                return self._executor.submit(self.run, job)
            except (BrokenProcessPool, OSError, RuntimeError):
                self._give_up_workers()
        future: Future[dict[str, Any]] = Future()
        future.set_result(self.run(job))
        return future

    def _result(self, key: Hashable, job: EstimateJob) -> dict[str, Any]:
        try:
            return self._started[key].result()
        except BrokenProcessPool:  # a worker died: the same estimate, here
            self._give_up_workers()
            return self.run(job)

    def _give_up_workers(self) -> None:
        self._local = True
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
