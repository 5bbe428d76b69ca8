"""The CPU check every nki candidate passes before it is compiled for Trainium2.

The same numerics gate as on the sim device (kernelopt's simulator in fp32
against f_numpy on the program's correctness seeds, decide.atol/rtol/rel_l2),
run in a child process so that a kernel that hangs or exhausts memory costs
one attempt. A numerics failure makes the candidate `incorrect` before any
host work, with the seed and the worst element in the record. A kernel the
simulator cannot run (an ISA or capacity rule, an exception) goes on to the
compiler, which has the last word on what compiles; its numbers are then
checked on the device only. The simulator's own estimate of the kernel is
kept beside the measurement as the screening model's figure.

    python -m kernelopt.neuron.cpu_check < spec.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MARK = "KERNELOPT-CPU-CHECK "
_ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


@dataclass(frozen=True)
class CheckSpec:
    kernel: str  # paths, absolute or relative to the working directory
    workload: str
    func: str | None
    seeds: tuple[int, ...]
    atol: float
    rtol: float
    rel_l2: float | None
    mac_count: int | None


def check(spec: CheckSpec) -> dict[str, Any]:
    """The check's record: status ok / incorrect / skipped, and what it found."""
    from kernelopt.sim import check_kernel
    from kernelopt.workload import WorkloadError, load_workload

    try:
        workload = load_workload(spec.workload, require=("f_numpy", "INPUT_SPECS"))
    except WorkloadError as exc:
        return {"status": "failed", "error": str(exc)}
    report = check_kernel(
        spec.kernel,
        workload,
        func=spec.func,
        seeds=spec.seeds,
        atol=spec.atol,
        rtol=spec.rtol,
        rel_l2=spec.rel_l2,
        mac_count=spec.mac_count,
    )
    record: dict[str, Any] = {
        "seeds": list(spec.seeds),
        "atol": spec.atol,
        "rtol": spec.rtol,
        "max_abs_error": report.max_abs_error,
        "max_rel_l2_error": report.max_rel_l2_error,
        "worst_seed": report.worst_seed,
    }
    sim = {
        k: report.profile[k]
        for k in ("total_time", "mfu_estimated_percent", "mfu_max_achievable_estimated_percent")
        if isinstance(report.profile.get(k), int | float)
    }
    if report.correct:
        return {**record, "status": "ok", "sim": sim}
    if not report.wrong_numbers:
        return {
            **record,
            "status": "skipped",
            "error": f"the simulator could not run the kernel ({report.error_kind}): "
            f"{report.error}",
        }
    seed = report.worst_seed if report.worst_seed is not None else spec.seeds[0]
    worst = _worst_element(spec, workload, seed)
    message = report.problem
    if worst is not None:
        message = f"{message}; worst: {worst['describe']}"
    return {
        **record,
        "status": "incorrect",
        "seed": seed,
        "worst": worst["element"] if worst else None,
        "error": f"the CPU check (kernelopt's simulator, fp32) fails: {message}",
        "sim": sim,
    }


def _worst_element(spec: CheckSpec, workload: Any, seed: int) -> dict[str, Any] | None:
    """Where the kernel is furthest off on ``seed``'s inputs (None when it has no output)."""
    import numpy as np

    from kernelopt.neuron.numerics import compare
    from kernelopt.sim import SimError, run_kernel
    from kernelopt.workload import make_inputs

    inputs = make_inputs(workload.input_specs, seed)
    try:
        run = run_kernel(spec.kernel, inputs, func=spec.func)
    except SimError:
        return None
    got = run.outputs if isinstance(run.outputs, tuple | list) else (run.outputs,)
    as_fp32 = {k: v.astype(np.float32) if v.dtype.kind in "fV" else v for k, v in inputs.items()}
    want = workload.f_numpy(**as_fp32)
    want = want if isinstance(want, tuple | list) else (want,)
    found = compare(list(got), list(want), atol=spec.atol, rtol=spec.rtol)
    if found.worst is None:
        return None
    element = asdict(found.worst)
    element["index"] = list(found.worst.index)
    return {"element": element, "describe": found.worst.describe()}


def run_cpu_check(
    spec: CheckSpec, *, cwd: Path, timeout: float, python: str = sys.executable
) -> dict[str, Any]:
    """``check(spec)`` in a child process; a timeout or crash is a record saying so."""
    env = {**os.environ, **_ONE_THREAD}
    try:
        done = subprocess.run(
            [python, "-m", "kernelopt.neuron.cpu_check"],
            input=json.dumps(asdict(spec)),
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"status": "skipped", "error": f"the CPU check did not finish within {timeout:g}s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
    return {"status": "skipped", "error": f"the CPU check crashed (exit {done.returncode}): {tail}"}


def in_record(checked: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """What a check adds to the candidate's record (``cpu_check``, and ``sim``, the
    screening model's estimate), and, when its numbers are wrong, the ``incorrect``
    record that stops the candidate before it is compiled."""
    found: dict[str, Any] = {"cpu_check": {k: v for k, v in checked.items() if k != "sim"}}
    if checked.get("sim"):
        found["sim"] = checked["sim"]
    if checked.get("status") != "incorrect":
        return found, None
    return found, {
        **found,
        "stage": "cpu-check",
        "status": "incorrect",
        "check": "cpu",
        "error": checked["error"],
        "seed": checked.get("seed"),
        "worst": checked.get("worst"),
        "max_abs_error": checked.get("max_abs_error"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    data = json.loads(sys.stdin.read())
    data["seeds"] = tuple(data["seeds"])
    try:
        record = check(CheckSpec(**data))
    except Exception as exc:  # noqa: BLE001 - every failure becomes a record
        record = {
            "status": "skipped",
            "error": f"the CPU check failed: {type(exc).__name__}: {exc}",
        }
    sys.stdout.write("\n" + MARK + json.dumps(record, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
