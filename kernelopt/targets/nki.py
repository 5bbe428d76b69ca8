"""The nki target on the `sim` device: numerics gate, then the cost model's estimate.

What is measured is the tree's rendered kernel (``target.kernel``) against the
tree's workload oracle. A kernel that fails the numerics gate is `incorrect`
and never reaches a device; an ISA or capacity violation is `failed` with the
simulator's message (file, line, limit), like a compiler error would be.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.measurement import FAILED, INCORRECT, OK, Measurement
from kernelopt.program import Program
from kernelopt.workload import WorkloadError, load_workload


@dataclass(frozen=True)
class NkiSimTarget:
    workload: str  # relative to the tree root
    kernel: str
    func: str | None = None
    seeds: tuple[int, ...] = (0,)
    atol: float = 5e-3
    rtol: float = 5e-3
    device: str = "sim"
    deterministic: bool = True

    @classmethod
    def from_program(cls, program: Program, root: Path) -> NkiSimTarget:
        t = program.target
        assert t.workload and t.kernel
        return cls(workload=t.workload, kernel=t.kernel, func=t.func)

    def reference(self, tree: Path) -> Measurement:
        """The compiler baseline cannot run on sim; the ledger row says so."""
        return _sim_reference(tree)

    def spec(self) -> dict[str, Any]:
        return {
            "kind": "nki-sim",
            "workload": self.workload,
            "kernel": self.kernel,
            "func": self.func,
            "seeds": list(self.seeds),
            "atol": self.atol,
            "rtol": self.rtol,
        }

    def measure(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        from kernelopt.sim import check_kernel

        started = time.monotonic()
        try:
            workload = load_workload(Path(tree) / self.workload, require=("f_numpy", "INPUT_SPECS"))
        except WorkloadError as exc:
            return Measurement.failure(FAILED, str(exc), device=self.device)
        mac_count = _mac_count(workload)
        report = check_kernel(
            Path(tree) / self.kernel,
            workload,
            func=self.func,
            seeds=self.seeds,
            atol=self.atol,
            rtol=self.rtol,
            mac_count=mac_count,
        )
        elapsed = time.monotonic() - started
        extra = {
            "max_abs_error": report.max_abs_error,
            "worst_seed": report.worst_seed,
            "func": report.func,
            "mac_count": mac_count,
        }
        if report.error is not None or not report.correct:
            status = INCORRECT if report.error_kind in (None, "numerics") else FAILED
            return Measurement(
                status=status,
                profile=dict(report.profile),
                error=report.error or "numerics differ from f_numpy",
                device=self.device,
                duration_s=elapsed,
                deterministic=True,
                extra=extra,
            )
        profile = dict(report.profile)
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
    return Measurement.failure(
        FAILED,
        "not measured on sim: the compiler baseline needs neuronx-cc (through nkipy) on a Neuron host",
        device="sim",
        extra={"what": "f_numpy compiled by neuronx-cc"},
    )


def _mac_count(workload: object) -> int | None:
    """MACs from the op graph when the IR can count them; else the simulator counts."""
    f_nkigym = getattr(workload, "f_nkigym", None)
    if f_nkigym is None:
        return None
    try:
        from kernelopt.ir import compute_mac_count  # type: ignore[attr-defined]
    except ImportError:
        return None
    return int(compute_mac_count(f_nkigym, workload.input_specs))  # type: ignore[attr-defined]
