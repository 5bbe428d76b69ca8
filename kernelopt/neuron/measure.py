"""`measure`: the one timing path for candidates and the compiler baseline alike,
by the SDK path the probe chose: ``nrtpy`` (the runtime's device-side benchmark,
the device's output checked against f_numpy, one execution profiled) or
``capture`` (the outputs a capture saves checked against f_numpy, then the
profiler's capture of the NEFF fed the seeded inputs, timed from its total_time).
Every outcome is a record; MFU from the device time."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelopt.neuron.capture import (
    capture_timing,
    device_outputs,
    profile_execution,
    seeded_inputs,
)
from kernelopt.neuron.facts import (
    LNC_ENV,
    NEFF_NAME,
    NRTPY_LIBRARY,
    NTFF_NAME,
    PROFILE_NTH_EXEC,
    SUMMARY_NAME,
    VISIBLE_CORES_ENV,
    peak_flops,
)
from kernelopt.neuron.processes import python_step, run, step_record, tail
from kernelopt.neuron.summary import mfu_percent


def measure_kernel(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    out = Path(args.out)
    neff = out / NEFF_NAME
    record: dict[str, Any] = {
        "stage": "measure",
        "sdk_path": args.path,
        "measure_started": time.time(),
        "visible_cores": env.get(VISIBLE_CORES_ENV, ""),
        "timing": "device",
        "seed": args.seed,
        "tolerance": args.tolerance,
        "lnc": args.lnc,
        "macs": args.macs,
        "peak_flops": peak_flops(args.lnc),
        "profiler": args.profiler,
    }
    args.profile_warnings = []  # units assumed for profiler versions not on record
    if not env.get(VISIBLE_CORES_ENV):
        return failed(record, f"{VISIBLE_CORES_ENV} is not set: measure needs a leased NeuronCore")
    env = {**env, LNC_ENV: str(args.lnc)}
    if args.path == "baremetal":
        # Its own module, built on this one's helpers (imported here, not at the top).
        from kernelopt.neuron.measure_baremetal import measure_baremetal

        return _with_warnings(args, measure_baremetal(args, env, record, out))
    if not neff.is_file():
        return failed(record, f"no NEFF at {neff}: compile first")
    if args.path == "capture":
        return _with_warnings(args, measure_by_capture(args, env, record, out))
    return _with_warnings(args, _measure_with_nrtpy(args, env, record, out))


def _with_warnings(args: argparse.Namespace, record: dict[str, Any]) -> dict[str, Any]:
    if args.profile_warnings:
        record["profile_warnings"] = list(args.profile_warnings)
    return record


def failed(record: dict[str, Any], error: str, status: str = "failed") -> dict[str, Any]:
    return {**record, "status": status, "error": error, "measure_finished": time.time()}


def measure_by_capture(
    args: argparse.Namespace, env: Mapping[str, str], record: dict[str, Any], out: Path
) -> dict[str, Any]:
    """SDK 2.22-2.31: the device-side check from the outputs a capture saves (unless the
    baremetal path already made one: ``device_check`` in ``record``), then device time
    from the profiler's captures."""
    neff, ntff = out / NEFF_NAME, out / NTFF_NAME
    if not args.profiler:
        return failed(
            record, "the capture path needs a profiler (neuron-explorer or neuron-profile)"
        )
    words, problem = seeded_inputs(args, env)
    if problem:
        return failed(record, problem)
    if "device_check" not in record:
        check = device_outputs(args, env, neff, words)
        record["device_check"] = check
        if check.get("passed") is False:
            record.update(check="device", worst=check.get("worst"))
            record["max_abs_error"] = check.get("max_abs_error")
            return failed(
                record,
                f"the device's output (saved by {args.profiler} capture) differs from f_numpy "
                f"on the inputs of seed {args.seed} (atol = rtol = {args.tolerance:g}): "
                f"{check['message']}",
                "incorrect",
            )
    captured, problem = capture_timing(args, env, neff, ntff, words)
    if captured is None:
        return failed(record, problem or "the capture gave no device time")
    profile = captured.pop("profile")
    record.update(captured)
    record.update(neff=str(neff), ntff=str(ntff), summary=str(out / SUMMARY_NAME))
    return finished(record, args, record.pop("baremetal_profile", None) or profile)


def _measure_with_nrtpy(
    args: argparse.Namespace, env: Mapping[str, str], record: dict[str, Any], out: Path
) -> dict[str, Any]:
    """SDK >= 2.32: run and check on the device with nrtpy, time with its device-side
    benchmark, profile one execution."""
    neff, ntff = out / NEFF_NAME, out / NTFF_NAME
    # The nrtpy environment needs the runtime's libraries (nrtpy-getting-started).
    library = env.get("LD_LIBRARY_PATH", "")
    if NRTPY_LIBRARY not in library.split(":"):
        env = {**env, "LD_LIBRARY_PATH": ":".join(p for p in (NRTPY_LIBRARY, library) if p)}
    ran, (error, status) = _run_neff(args, env, neff)
    if ran is None:
        return failed(record, error, status)
    check = ran["check"]
    record.update(
        runtime=ran.get("runtime"),
        runtime_version=ran.get("runtime_version"),
        run_call_shape=ran.get("call_shape"),
        output_dtypes=ran.get("output_dtypes"),
        device_check=check,
        neff=str(neff),
    )
    if not check["passed"]:
        record.update(check="device", worst=check.get("worst"))
        record["max_abs_error"] = check.get("max_abs_error")
        return failed(
            record,
            f"the device's output differs from f_numpy on the inputs of seed {args.seed} "
            f"(atol = rtol = {args.tolerance:g}): {check['message']}",
            "incorrect",
        )
    profile: dict[str, Any] = {}
    if args.profiler:
        words, problem = seeded_inputs(args, env)
        if problem:
            return failed(record, problem)
        found, problem = profile_execution(args, env, neff, ntff, words)
        if found is None:
            return failed(record, problem or "the profiler gave no summary")
        profile = found
        record.update(ntff=str(ntff), summary=str(out / SUMMARY_NAME))
    timing = _device_time(args, ran, profile)
    if timing is None:
        return failed(
            record,
            "no device time: the runtime has no device-side benchmark and the profiler "
            "reported no total_time",
        )
    record.update(timing)
    return finished(record, args, profile)


def _run_neff(
    args: argparse.Namespace, env: Mapping[str, str], neff: Path
) -> tuple[dict[str, Any] | None, tuple[str, str]]:
    """The `run` step on the bound core: (its record, or None and (error, status))."""
    argv = python_step(
        "run",
        "--neff",
        str(neff),
        "--workload",
        args.workload,
        *check_words(args),
    )
    done = run(argv, env, args.timeout)
    if done.timed_out:
        return None, (f"the run did not finish within {args.timeout:g}s", "timeout")
    ran = step_record(done)
    if done.returncode != 0 or ran is None:
        error = tail(done.stderr or done.stdout) or f"run exit code {done.returncode}"
        return None, (error, "failed")
    return ran, ("", "ok")


def check_words(args: argparse.Namespace) -> list[str]:
    """The timed runs and the device check's seed and tolerance, as a step's words."""
    return [
        *("--warmup", str(args.warmup), "--iterations", str(args.iterations)),
        *("--seed", str(args.seed), "--tolerance", str(args.tolerance)),
    ]


def _device_time(
    args: argparse.Namespace, ran: Mapping[str, Any], profile: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Device time of the measured executions: the runtime's device-side benchmark
    (min, median, mean over the iterations), else the profiler's total_time of its
    one traced execution; None when neither has one."""
    durations = ran.get("durations_ms")
    if durations:
        seconds = [d / 1e3 for d in durations]
        return {
            "timing_source": ran["timing_source"],
            "iterations": ran.get("iterations", len(seconds)),
            "warmup": ran.get("warmup", args.warmup),
            "min_s": min(seconds),
            "median_s": statistics.median(seconds),
            "mean_s": ran.get("mean_ms", 1e3 * statistics.fmean(seconds)) / 1e3,
        }
    total = profile.get("total_time")
    if isinstance(total, int | float) and total > 0:
        return {
            "timing_source": f"{args.profiler} total_time",
            "iterations": 1,
            "warmup": PROFILE_NTH_EXEC - 1,
            "min_s": float(total),
            "median_s": float(total),
            "mean_s": float(total),
        }
    return None


def _mfu(macs: int, seconds: float, peak: float, profile: Mapping[str, Any]) -> dict[str, Any]:
    """MFU from the timed device executions: 2·MACs / (min time · peak), the figure
    keep/revert decides on. The profiler's estimate, from one traced execution, is
    kept beside it as a diagnostic only."""
    from_time = mfu_percent(macs, seconds, peak) if macs else None
    estimate = profile.get("mfu_estimated_percent")
    return {
        "mfu_percent": from_time,
        "mfu_source": "device time" if from_time is not None else None,
        "mfu_from_device_time": from_time,
        "profiler_mfu_estimated_percent": (
            float(estimate) if isinstance(estimate, int | float) else None
        ),
    }


def finished(
    record: dict[str, Any], args: argparse.Namespace, profile: dict[str, Any]
) -> dict[str, Any]:
    return {
        **record,
        "status": "ok",
        **_mfu(args.macs, record["min_s"], record["peak_flops"], profile),
        "profile": profile,
        "compiler_version": profile.get("compiler_version"),
        "runtime_version": profile.get("runtime_version") or record.get("runtime_version"),
        "instance_type": profile.get("instance_type"),
        "measure_finished": time.time(),
    }
