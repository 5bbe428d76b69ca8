"""The nki target on the `sim` device: numerics gate, then the cost model's estimate.

What is measured is the tree's rendered kernel (``target.kernel``) against the
tree's workload oracle. A kernel that fails the numerics gate is `incorrect`
and never reaches a device; an ISA or capacity violation is `failed` with the
simulator's message (file, line, limit), like a compiler error would be.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kernelopt.measurement import FAILED, INCORRECT, OK, SKIPPED, TIMEOUT, Measurement
from kernelopt.program import Program
from kernelopt.targets.base import Target
from kernelopt.workload import WorkloadError, load_workload

if TYPE_CHECKING:
    from kernelopt.sim.check import SimReport
    from kernelopt.sim.roofline import RooflineWork

_ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


@dataclass(frozen=True)
class NkiSimTarget(Target):
    kind: ClassVar[str] = "nki-sim"
    workload: str  # relative to the tree root
    kernel: str
    func: str | None = None
    seeds: tuple[int, ...] = (0,)
    atol: float = 5e-3
    rtol: float = 5e-3
    rel_l2: float | None = None
    timeout_s: float = 600.0
    # neuronx-cc options the kernel is compiled with (device.neuron.compiler_args):
    # the cost model follows those it models (kernelopt.sim.compiler).
    compiler_args: tuple[str, ...] = ()
    chip: str = "trn2"  # device.sim.chip: the parameter set that times the kernel
    # Simulate in a child process: a kernel that loops forever or exhausts
    # memory must cost an attempt, not the runner.
    isolate: bool = True
    device: str = "sim"
    deterministic: bool = True

    @classmethod
    def from_program(cls, program: Program, root: Path) -> NkiSimTarget:
        t = program.target
        assert t.workload and t.kernel
        d = program.decide
        return cls(
            workload=t.workload,
            kernel=t.kernel,
            func=t.func,
            seeds=tuple(range(d.correctness_seeds)),
            atol=d.atol,
            rtol=d.rtol,
            rel_l2=d.rel_l2,
            timeout_s=program.timeout_s,
            compiler_args=tuple(program.device.neuron.compiler_args),
            chip=program.device.sim.chip,
        )

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> NkiSimTarget:
        """Rebuilt in the child process (or on a host), where it measures in-process."""
        return cls(
            workload=spec["workload"],
            kernel=spec["kernel"],
            func=spec.get("func"),
            seeds=tuple(spec.get("seeds") or (0,)),
            atol=float(spec.get("atol", 5e-3)),
            rtol=float(spec.get("rtol", 5e-3)),
            rel_l2=float(spec["rel_l2"]) if spec.get("rel_l2") is not None else None,
            timeout_s=float(spec.get("timeout_s", 600.0)),
            isolate=False,  # the process that reads a spec is the isolated one
            compiler_args=tuple(spec.get("compiler_args") or ()),
            chip=str(spec.get("chip") or "trn2"),
        )

    def reference(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        """The compiler baseline cannot run on sim; the ledger row says so (skipped)."""
        return _sim_reference(tree)

    def spec(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "workload": self.workload,
            "kernel": self.kernel,
            "func": self.func,
            "seeds": list(self.seeds),
            "atol": self.atol,
            "rtol": self.rtol,
            "rel_l2": self.rel_l2,
            "timeout_s": self.timeout_s,
            "compiler_args": list(self.compiler_args),
            "chip": self.chip,
        }

    def measure(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        if self.isolate:
            return self._measure_in_child(Path(tree), env)
        return self._measure_here(Path(tree))

    def _measure_in_child(self, tree: Path, env: Mapping[str, str] | None) -> Measurement:
        from kernelopt.remote import parse_output
        from kernelopt.targets.command import run_local

        spec = json.dumps(self.spec())
        # One BLAS thread: the simulator's many small matmuls run several
        # times slower when BLAS spreads each over threads.
        child_env = {**(env or {}), **_ONE_THREAD}
        command = f"{shlex.quote(sys.executable)} -m kernelopt.remote <<'KERNELOPT_SPEC'\n{spec}\nKERNELOPT_SPEC"
        run = run_local(command, tree, child_env, self.timeout_s)
        if run.timed_out:
            return Measurement.failure(
                TIMEOUT, f"the simulation timed out after {self.timeout_s:g} s", device=self.device
            )
        measurement = parse_output(run.output)
        if measurement is None:
            tail = "\n".join(run.output.splitlines()[-20:])
            return Measurement.failure(
                FAILED,
                f"the simulator crashed (exit {run.returncode})",
                log_tail=tail,
                device=self.device,
            )
        return measurement

    def _measure_here(self, tree: Path) -> Measurement:
        from kernelopt.sim import check_kernel
        from kernelopt.sim.chips import chip_params

        started = time.monotonic()
        try:
            workload = load_workload(Path(tree) / self.workload, require=("f_numpy", "INPUT_SPECS"))
        except WorkloadError as exc:
            return Measurement.failure(FAILED, str(exc), device=self.device)
        mac_count = mac_count_of(workload)
        report = check_kernel(
            Path(tree) / self.kernel,
            workload,
            func=self.func,
            seeds=self.seeds,
            atol=self.atol,
            rtol=self.rtol,
            rel_l2=self.rel_l2,
            mac_count=mac_count,
            compiler_args=self.compiler_args,
            explain=True,
            params=chip_params(self.chip),
        )
        return self.measurement_of(
            report, mac_count, time.monotonic() - started, work=roofline_work_of(workload)
        )

    def measurement_of(
        self,
        report: SimReport,
        mac_count: int | None,
        elapsed: float,
        work: RooflineWork | None = None,
    ) -> Measurement:
        """The measurement a simulator report makes (metrics from its profile).

        With ``work`` (the workload's math, ``roofline_work_of``) the profile's
        roofline fields are the math's, so ``roofline_percent`` is proportional
        to speed for one workload whatever work a candidate repeats.
        """
        extra = {
            "max_abs_error": report.max_abs_error,
            "max_rel_l2_error": report.max_rel_l2_error,
            "worst_seed": report.worst_seed,
            "seeds": list(self.seeds),
            "func": report.func,
            "mac_count": mac_count,
            # What bounds the time and the top TensorE stalls, with source lines; not the
            # per-line spans, which would grow every candidate's record with its kernel.
            "explain": _without_spans(report.explanation),
            "timing": "model",  # the cost model's estimate, not a clock
        }
        if report.problem is not None:
            return Measurement(
                status=INCORRECT if report.wrong_numbers else FAILED,
                profile=dict(report.profile),
                error=report.problem,
                device=self.device,
                duration_s=elapsed,
                deterministic=True,
                extra=extra,
            )
        from kernelopt.sim.chips import chip_params

        profile = with_roofline(report.profile, work, chip_params(self.chip))
        metrics = {
            k: float(v)
            for k, v in profile.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        if "mfu_estimated_percent" in metrics:
            metrics["mfu"] = metrics["mfu_estimated_percent"]
        if "total_time" in metrics:
            metrics["time"] = metrics["total_time"]
        return Measurement(
            status=OK,
            metrics=metrics,
            profile=profile,
            device=self.device,
            duration_s=elapsed,
            deterministic=True,
            extra=extra,
        )


def _sim_reference(tree: Path) -> Measurement:
    # Skipped, as a Neuron host's row without nkipy is: nothing on this device can build
    # the baseline, which is a reason, not a failure of anything the run tried.
    return Measurement.failure(
        SKIPPED,
        "not measured on sim: the compiler baseline needs neuronx-cc (through nkipy) on a Neuron host",
        device="sim",
        extra={"what": "f_numpy compiled by neuronx-cc"},
    )


def _without_spans(explanation: dict[str, Any] | None) -> dict[str, Any] | None:
    if explanation is None:
        return None
    return {k: v for k, v in explanation.items() if k != "by_line"}


def with_roofline(
    profile: dict[str, Any], work: RooflineWork | None, params: Any
) -> dict[str, Any]:
    """``profile`` with its roofline fields taken from the workload's math (``work``)
    at the measuring chip's peak rates, when there is a time and a math to take."""
    profile = dict(profile)
    if work is not None and profile.get("total_time"):
        from kernelopt.sim.roofline import roofline_fields

        profile.update(roofline_fields(profile, work, params))
    return profile


def roofline_work_of(workload: object) -> RooflineWork | None:
    """The math's roofline work from the op graph, when the workload has one."""
    f_nkigym = getattr(workload, "f_nkigym", None)
    if f_nkigym is None:
        return None
    from kernelopt.ir import roofline_work

    return roofline_work(f_nkigym, workload.input_specs)  # type: ignore[attr-defined]


def mac_count_of(workload: object) -> int | None:
    """MACs from the op graph when the IR can count them; else the simulator counts."""
    f_nkigym = getattr(workload, "f_nkigym", None)
    if f_nkigym is None:
        return None
    try:
        from kernelopt.ir import compute_mac_count  # type: ignore[attr-defined]
    except ImportError:
        return None
    return int(compute_mac_count(f_nkigym, workload.input_specs))  # type: ignore[attr-defined]
