"""The measurement driver that runs ON the Trainium2 host, inside a Neuron environment.

Each command prints ONE JSON line (the record) and exits 0, whatever
happened to the kernel: failures are records with a status and the error.

    python -m kernelopt.neuron.driver probe [--tools TOOL,...]
    python -m kernelopt.neuron.driver compile --api API --kernel K --workload W --out DIR
        [--func F] [--lnc 1] [--opt 2] [--timeout 600] [--compiler-arg=ARG ...]
        [--pipeline-option=OPT ...]
    python -m kernelopt.neuron.driver compile-reference --workload W --out DIR [--lnc 1]
        [--timeout 600]
    python -m kernelopt.neuron.driver measure --workload W --out DIR --profiler TOOL
        [--warmup 10] [--iterations 100] [--macs N] [--lnc 1] [--seed 0]
        [--tolerance 0.01] [--timeout 600] [--path nrtpy|capture]

`probe` says what this environment has (compile APIs, runtime, profilers).
The compile commands run in the NKI environment with
NEURON_PLATFORM_TARGET_OVERRIDE=trn2 and without NEURON_RT_VISIBLE_CORES (a
compile worker holds no core); `measure` runs in the nrtpy environment and
expects the caller to have bound NEURON_RT_VISIBLE_CORES from its device
lease. `measure` is the one timing path for candidates and the compiler
baseline alike, by the SDK path the probe chose (``--path``): ``nrtpy`` (SDK >=
2.32) runs the runtime's device-side benchmark, checks the device's output against
f_numpy and profiles one execution; ``capture`` (SDK 2.22-2.31, no nrtpy) times the
profiler's capture of the NEFF fed the seeded inputs, several times, from its
total_time. MFU at 78.64e12 FLOP/s per physical core.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.neuron.facts import (
    CAPTURE_RUNS,
    COMPILE_LOG_NAME,
    DEFAULT_COMPILE_TIMEOUT_S,
    DEFAULT_DEVICE_TOLERANCE,
    DEVICE_CHECK_SEED,
    LNC_ENV,
    NEFF_NAME,
    NRTPY_LIBRARY,
    NTFF_NAME,
    PLATFORM,
    PLATFORM_ENV,
    PROFILE_NTH_EXEC,
    PROFILERS,
    SUMMARY_NAME,
    VISIBLE_CORES_ENV,
    peak_flops,
)
from kernelopt.neuron.steps import MARK as STEP_MARK
from kernelopt.neuron.summary import SummaryError, mfu_percent, parse_summary

# The longest an error message in a record gets; the full text is in the log file.
_ERROR_CHARS = 4000


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


def run(
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout: float | None,
    cwd: Path | None = None,
) -> Finished:
    """Run a tool in its own process group; a timeout kills the whole group."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return Finished(127, "", f"{argv[0]}: {exc.strerror}", False, 0.0)
    try:
        out, err = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = process.communicate()
        timed_out = True
    return Finished(process.returncode, out, err, timed_out, time.monotonic() - started)


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _ERROR_CHARS else "..." + text[-_ERROR_CHARS:]


def _python_step(step: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "kernelopt.neuron.steps", step, *args]


def _step_record(done: Finished) -> dict[str, Any] | None:
    """The JSON a step printed on its KERNELOPT-STEP line, if any."""
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith(STEP_MARK):
            try:
                record = json.loads(line[len(STEP_MARK) :])
            except json.JSONDecodeError:
                return None
            return record if isinstance(record, dict) else None
    return None


def probe(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    done = run(_python_step("probe", "--tools", args.tools), env, args.timeout)
    found = _step_record(done)
    if found is None:
        return {"stage": "probe", "status": "failed", "error": _tail(done.stderr or done.stdout)}
    return {"stage": "probe", "status": "ok", **found}


def _compile_env(env: Mapping[str, str]) -> dict[str, str]:
    compile_env = {k: v for k, v in env.items() if k != VISIBLE_CORES_ENV}
    compile_env[PLATFORM_ENV] = PLATFORM
    return compile_env


def _compile(
    argv: list[str], args: argparse.Namespace, env: Mapping[str, str], stage: str
) -> dict[str, Any]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    # neuronx-cc writes its log into the working directory: the attempt's out dir.
    done = run(argv, _compile_env(env), args.timeout, cwd=out)
    log = out / COMPILE_LOG_NAME
    with log.open("a") as text:
        text.write(done.stdout + done.stderr)
    record: dict[str, Any] = {
        "stage": stage,
        "compile_s": done.seconds,
        "compile_started": started,
        "compile_finished": time.time(),
        "compile_log": str(log),
    }
    neff = out / NEFF_NAME
    if done.timed_out:
        return {
            **record,
            "status": "timeout",
            "error": f"compile did not finish within {args.timeout:g}s (compile_timeout)",
        }
    if done.returncode != 0 or not neff.is_file():
        message = done.stderr.strip() or done.stdout.strip() or f"exit code {done.returncode}"
        if done.returncode == 0:
            message = f"the compiler reported success but wrote no {neff}"
        return {**record, "status": "failed", "error": f"compile failed: {_tail(message)}"}
    step = _step_record(done) or {}
    return {
        **record,
        "status": "ok",
        "neff": str(neff),
        "compile_api": step.get("api"),
        "compile_options": step.get("options"),
    }


def compile_kernel(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    argv = _python_step(
        "compile",
        "--api",
        args.api,
        "--kernel",
        args.kernel,
        "--workload",
        args.workload,
        "--out",
        str(args.out),
        "--lnc",
        str(args.lnc),
        "--opt",
        str(args.opt),
        *(["--func", args.func] if args.func else []),
        *[f"--compiler-arg={a}" for a in args.compiler_arg],
        *[f"--pipeline-option={o}" for o in args.pipeline_option],
    )
    return _compile(argv, args, env, "compile")


def compile_reference(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    """The compiler baseline's NEFF: f_numpy traced by nkipy, compiled by neuronx-cc."""
    import importlib.util

    if importlib.util.find_spec("nkipy") is None:
        return {
            "stage": "compile",
            "status": "failed",
            "error": "nkipy is not importable in this host's Neuron environment, so f_numpy "
            "cannot be compiled by neuronx-cc; install nkipy there to get the baseline row",
        }
    argv = _python_step(
        "compile-reference",
        "--workload",
        args.workload,
        "--out",
        str(args.out),
        "--lnc",
        str(args.lnc),
    )
    return _compile(argv, args, env, "compile")


def _profile(
    args: argparse.Namespace,
    env: Mapping[str, str],
    neff: Path,
    ntff: Path,
    inputs: Sequence[str] = (),
) -> tuple[dict[str, Any] | None, str | None]:
    """Capture a trace of one execution (fed ``inputs``, ``NAME file.npy`` words; without
    them the profiler fills the inputs with zero bytes) and read its summary."""
    tool = args.profiler
    capture = run(
        [
            tool,
            "capture",
            "-n",
            str(neff),
            "-s",
            str(ntff),
            f"--profile-nth-exec={PROFILE_NTH_EXEC}",
            *inputs,
        ],
        env,
        args.timeout,
    )
    if capture.returncode != 0 or capture.timed_out:
        return None, f"{tool} capture failed: {_tail(capture.stderr or capture.stdout)}"
    # With --profile-nth-exec=N the trace lands in NAME_exec_N.ntff.
    nth = ntff.with_name(f"{ntff.stem}_exec_{PROFILE_NTH_EXEC}{ntff.suffix}")
    if nth.is_file():
        nth.replace(ntff)
    if not ntff.is_file():
        return None, f"{tool} capture wrote no trace at {ntff} or {nth.name}"
    view = run(
        [tool, "view", "-n", str(neff), "-s", str(ntff), "--output-format", "summary-json"],
        env,
        args.timeout,
    )
    if view.returncode != 0:
        return None, f"{tool} view failed: {_tail(view.stderr or view.stdout)}"
    (ntff.parent / SUMMARY_NAME).write_text(view.stdout)
    try:
        return parse_summary(view.stdout, source=f"{tool} view of {neff}", tool=tool), None
    except SummaryError as exc:
        return None, str(exc)


def _run_neff(
    args: argparse.Namespace, env: Mapping[str, str], neff: Path
) -> tuple[dict[str, Any] | None, tuple[str, str]]:
    """The `run` step on the bound core: (its record, or None and (error, status))."""
    argv = _python_step(
        "run",
        "--neff",
        str(neff),
        "--workload",
        args.workload,
        "--warmup",
        str(args.warmup),
        "--iterations",
        str(args.iterations),
        "--seed",
        str(args.seed),
        "--tolerance",
        str(args.tolerance),
    )
    done = run(argv, env, args.timeout)
    if done.timed_out:
        return None, (f"the run did not finish within {args.timeout:g}s", "timeout")
    ran = _step_record(done)
    if done.returncode != 0 or ran is None:
        error = _tail(done.stderr or done.stdout) or f"run exit code {done.returncode}"
        return None, (error, "failed")
    return ran, ("", "ok")


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


def _inputs(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """``NAME file.npy`` words of the seeded inputs for a capture: (words, error)."""
    argv = _python_step(
        "inputs", "--workload", args.workload, "--out", str(args.out), "--seed", str(args.seed)
    )
    done = run(argv, env, args.timeout)
    found = _step_record(done)
    if done.returncode != 0 or found is None:
        return [], f"writing the seeded inputs failed: {_tail(done.stderr or done.stdout)}"
    return [word for pair in found["inputs"] for word in pair], None


def _capture_timing(
    args: argparse.Namespace, env: Mapping[str, str], neff: Path, ntff: Path
) -> tuple[dict[str, Any] | None, str | None]:
    """SDKs without a device-side benchmark (2.22-2.31): the profiler's capture of the
    NEFF fed the seeded inputs, several times; device time = its total_time."""
    words, problem = _inputs(args, env)
    if problem:
        return None, problem
    runs = max(1, min(args.iterations, CAPTURE_RUNS))
    seconds, profile = [], None
    for k in range(runs):
        each = ntff.with_name(f"{ntff.stem}-{k}{ntff.suffix}")
        found, problem = _profile(args, env, neff, each, words)
        if found is None:
            return None, problem
        total = found.get("total_time")
        if not isinstance(total, int | float) or total <= 0:
            return None, f"{args.profiler} view reported no total_time for run {k + 1}"
        seconds.append(float(total))
        profile = found
        each.replace(ntff)
    return {
        "profile": profile,
        "timing_source": f"{args.profiler} capture total_time (fed the seeded inputs)",
        "iterations": runs,
        "warmup": PROFILE_NTH_EXEC - 1,
        "min_s": min(seconds),
        "median_s": statistics.median(seconds),
        "mean_s": statistics.fmean(seconds),
        "durations_ms": [1e3 * t for t in seconds],
    }, None


def measure_kernel(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    out = Path(args.out)
    neff, ntff = out / NEFF_NAME, out / NTFF_NAME
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

    def failed(error: str, status: str = "failed") -> dict[str, Any]:
        return {**record, "status": status, "error": error, "measure_finished": time.time()}

    if not env.get(VISIBLE_CORES_ENV):
        return failed(f"{VISIBLE_CORES_ENV} is not set: measure needs a leased NeuronCore")
    if not neff.is_file():
        return failed(f"no NEFF at {neff}: compile first")
    env = {**env, LNC_ENV: str(args.lnc)}
    if args.path == "capture":
        if not args.profiler:
            return failed("the capture path needs a profiler (neuron-explorer or neuron-profile)")
        captured, problem = _capture_timing(args, env, neff, ntff)
        if captured is None:
            return failed(problem or "the capture gave no device time")
        profile = captured.pop("profile")
        record.update(captured)
        record.update(
            neff=str(neff),
            ntff=str(ntff),
            summary=str(out / SUMMARY_NAME),
            device_check={
                "passed": None,
                "status": "not available",
                "seed": args.seed,
                "message": "a profiler capture returns no output tensors kernelopt can read "
                "on this SDK path (no nrtpy): the CPU check is the numerics gate",
            },
        )
        return _finished(record, args, profile)
    # The nrtpy environment needs the runtime's libraries (nrtpy-getting-started).
    library = env.get("LD_LIBRARY_PATH", "")
    if NRTPY_LIBRARY not in library.split(":"):
        env = {**env, "LD_LIBRARY_PATH": ":".join(p for p in (NRTPY_LIBRARY, library) if p)}
    ran, (error, status) = _run_neff(args, env, neff)
    if ran is None:
        return failed(error, status)
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
            f"the device's output differs from f_numpy on the inputs of seed {args.seed} "
            f"(atol = rtol = {args.tolerance:g}): {check['message']}",
            "incorrect",
        )
    profile: dict[str, Any] = {}
    if args.profiler:
        words, problem = _inputs(args, env)
        if problem:
            return failed(problem)
        found, problem = _profile(args, env, neff, ntff, words)
        if found is None:
            return failed(problem or "the profiler gave no summary")
        profile = found
        record.update(ntff=str(ntff), summary=str(out / SUMMARY_NAME))
    timing = _device_time(args, ran, profile)
    if timing is None:
        return failed(
            "no device time: the runtime has no device-side benchmark and the profiler "
            "reported no total_time"
        )
    record.update(timing)
    return _finished(record, args, profile)


def _finished(
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


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m kernelopt.neuron.driver")
    sub = top.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--tools", default=",".join((*PROFILERS, "neuronx-cc")))
    p.add_argument("--timeout", type=float, default=300.0)
    c = sub.add_parser("compile")
    c.add_argument("--api", required=True)
    c.add_argument("--kernel", required=True)
    c.add_argument("--workload", required=True)
    c.add_argument("--func")
    c.add_argument("--out", required=True)
    c.add_argument("--lnc", type=int, default=1)
    c.add_argument("--opt", type=int, default=2)
    c.add_argument("--timeout", type=float, default=DEFAULT_COMPILE_TIMEOUT_S)
    c.add_argument("--compiler-arg", action="append", default=[])
    c.add_argument("--pipeline-option", action="append", default=[])
    r = sub.add_parser("compile-reference")
    r.add_argument("--workload", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--lnc", type=int, default=1)
    r.add_argument("--timeout", type=float, default=DEFAULT_COMPILE_TIMEOUT_S)
    m = sub.add_parser("measure")
    m.add_argument("--workload", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--profiler", default="")
    m.add_argument("--path", choices=("nrtpy", "capture"), default="nrtpy")
    m.add_argument("--warmup", type=int, default=10)
    m.add_argument("--iterations", type=int, default=100)
    m.add_argument("--macs", type=int, default=0)
    m.add_argument("--lnc", type=int, default=1)
    m.add_argument("--seed", type=int, default=DEVICE_CHECK_SEED)
    m.add_argument("--tolerance", type=float, default=DEFAULT_DEVICE_TOLERANCE)
    m.add_argument("--timeout", type=float, default=DEFAULT_COMPILE_TIMEOUT_S)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    command = {
        "probe": probe,
        "compile": compile_kernel,
        "compile-reference": compile_reference,
        "measure": measure_kernel,
    }
    record = command[args.command](args, dict(os.environ))
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
