"""The measurement driver that runs ON the Trainium2 host, inside its Neuron environment.

Each command prints ONE JSON line (the record) and exits 0, whatever
happened to the kernel: failures are records with a status and the error.

    python -m kernelopt.neuron.driver compile --kernel K --workload W --out DIR
        [--func F] [--lnc 1] [--opt 2] [--timeout 600] [--compiler-arg=ARG ...]
    python -m kernelopt.neuron.driver measure --workload W --out DIR
        [--warmup 10] [--iterations 100] [--macs N] [--lnc 1] [--timeout 600]
    python -m kernelopt.neuron.driver reference --workload W --out DIR
        [--warmup 10] [--iterations 100] [--macs N] [--lnc 1] [--timeout 600]

`compile` runs with NEURON_PLATFORM_TARGET_OVERRIDE=trn2 and without
NEURON_RT_VISIBLE_CORES (a compile worker holds no core); `measure` expects
the caller to have bound NEURON_RT_VISIBLE_CORES from its device lease.
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
    COMPILE_LOG_NAME,
    DEFAULT_COMPILE_TIMEOUT_S,
    LNC_ENV,
    NEFF_NAME,
    NTFF_NAME,
    PLATFORM,
    PLATFORM_ENV,
    SUMMARY_NAME,
    VISIBLE_CORES_ENV,
    peak_flops,
)
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


def compile_kernel(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    compile_env = {k: v for k, v in env.items() if k != VISIBLE_CORES_ENV}
    compile_env[PLATFORM_ENV] = PLATFORM
    argv = _python_step(
        "compile",
        "--kernel",
        args.kernel,
        "--workload",
        args.workload,
        "--out",
        str(out),
        "--lnc",
        str(args.lnc),
        "--opt",
        str(args.opt),
        *(["--func", args.func] if args.func else []),
        *[f"--compiler-arg={a}" for a in args.compiler_arg],
    )
    started = time.time()
    # neuronx-cc writes its log into the working directory: the attempt's out dir.
    done = run(argv, compile_env, args.timeout, cwd=out)
    log = out / COMPILE_LOG_NAME
    with log.open("a") as text:
        text.write(done.stdout + done.stderr)
    record: dict[str, Any] = {
        "stage": "compile",
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
    return {**record, "status": "ok", "neff": str(neff)}


def _version(env: Mapping[str, str]) -> str | None:
    done = run(["neuronx-cc", "--version"], env, 60)
    text = done.stdout.strip().splitlines()
    return text[-1].split()[-1] if done.returncode == 0 and text else None


def measure_kernel(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    out = Path(args.out)
    neff, ntff = out / NEFF_NAME, out / NTFF_NAME
    record: dict[str, Any] = {
        "stage": "measure",
        "measure_started": time.time(),
        "visible_cores": env.get(VISIBLE_CORES_ENV, ""),
    }

    def failed(error: str) -> dict[str, Any]:
        return {**record, "status": "failed", "error": error, "measure_finished": time.time()}

    if not env.get(VISIBLE_CORES_ENV):
        return failed(f"{VISIBLE_CORES_ENV} is not set: measure needs a leased NeuronCore")
    if not neff.is_file():
        return failed(f"no NEFF at {neff}: compile first")
    env = {**env, LNC_ENV: str(args.lnc)}
    done = run(
        _python_step(
            "run",
            "--neff",
            str(neff),
            "--workload",
            args.workload,
            "--warmup",
            str(args.warmup),
            "--iterations",
            str(args.iterations),
        ),
        env,
        args.timeout,
    )
    if done.timed_out:
        return {**failed(f"the run did not finish within {args.timeout:g}s"), "status": "timeout"}
    if done.returncode != 0:
        return failed(_tail(done.stderr or done.stdout) or f"run exit code {done.returncode}")
    try:
        latencies = json.loads(done.stdout.strip().splitlines()[-1])["latencies_s"]
    except (IndexError, KeyError, json.JSONDecodeError):
        return failed(f"the run step printed no latencies: {_tail(done.stdout)}")
    capture = run(
        ["neuron-profile", "capture", "-n", str(neff), "-s", str(ntff)], env, args.timeout
    )
    if capture.returncode != 0 or capture.timed_out:
        return failed(f"neuron-profile capture failed: {_tail(capture.stderr or capture.stdout)}")
    view = run(
        [
            "neuron-profile",
            "view",
            "-n",
            str(neff),
            "-s",
            str(ntff),
            "--output-format",
            "summary-json",
        ],
        env,
        args.timeout,
    )
    if view.returncode != 0:
        return failed(f"neuron-profile view failed: {_tail(view.stderr or view.stdout)}")
    (out / SUMMARY_NAME).write_text(view.stdout)
    try:
        profile = parse_summary(view.stdout, source=f"neuron-profile view of {neff}")
    except SummaryError as exc:
        return failed(str(exc))
    best, median = min(latencies), statistics.median(latencies)
    peak = peak_flops(args.lnc)
    mfu = mfu_percent(args.macs, best, peak) if args.macs else None
    return {
        **record,
        "status": "ok",
        # Per-call wall time around the runtime's execute: includes launch overhead.
        "timing": "host",
        "min_s": best,
        "median_s": median,
        "iterations": len(latencies),
        "warmup": args.warmup,
        "macs": args.macs,
        "peak_flops": peak,
        "mfu_percent": mfu,
        "profile": profile,
        "compiler_version": profile.get("compiler_version") or _version(env),
        "runtime_version": profile.get("runtime_version"),
        "instance_type": profile.get("instance_type"),
        "neff": str(neff),
        "ntff": str(ntff),
        "summary": str(out / SUMMARY_NAME),
        "measure_finished": time.time(),
    }


def reference(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    """The compiler baseline: f_numpy through nkipy and neuronx-cc, on the leased core."""
    import importlib.util

    record: dict[str, Any] = {"stage": "reference", "timing": "device"}
    if importlib.util.find_spec("nkipy") is None:
        return {
            **record,
            "status": "failed",
            "error": "nkipy is not importable in this host's Neuron environment, so f_numpy "
            "cannot be compiled by neuronx-cc; install nkipy there to get the baseline row",
        }
    if not env.get(VISIBLE_CORES_ENV):
        return {**record, "status": "failed", "error": f"{VISIBLE_CORES_ENV} is not set"}
    done = run(
        _python_step(
            "reference",
            "--workload",
            args.workload,
            "--out",
            args.out,
            "--warmup",
            str(args.warmup),
            "--iterations",
            str(args.iterations),
        ),
        {**env, PLATFORM_ENV: PLATFORM},
        args.timeout,
    )
    if done.timed_out:
        return {
            **record,
            "status": "failed",
            "timed_out": True,
            "error": f"the nkipy baseline did not finish within {args.timeout:g}s",
        }
    if done.returncode != 0:
        return {**record, "status": "failed", "error": _tail(done.stderr or done.stdout)}
    try:
        stats = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {**record, "status": "failed", "error": f"no timings: {_tail(done.stdout)}"}
    peak = peak_flops(args.lnc)
    return {
        **record,
        "status": "ok",
        "min_s": stats["min_s"],
        "mean_s": stats["mean_s"],
        "macs": args.macs,
        "peak_flops": peak,
        "mfu_percent": mfu_percent(args.macs, stats["min_s"], peak) if args.macs else None,
        "neff": stats.get("neff"),
        "compiler_version": _version(env),
    }


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m kernelopt.neuron.driver")
    sub = top.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile")
    c.add_argument("--kernel", required=True)
    c.add_argument("--workload", required=True)
    c.add_argument("--func")
    c.add_argument("--out", required=True)
    c.add_argument("--lnc", type=int, default=1)
    c.add_argument("--opt", type=int, default=2)
    c.add_argument("--timeout", type=float, default=DEFAULT_COMPILE_TIMEOUT_S)
    c.add_argument("--compiler-arg", action="append", default=[])
    m = sub.add_parser("measure")
    m.add_argument("--workload", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--warmup", type=int, default=10)
    m.add_argument("--iterations", type=int, default=100)
    m.add_argument("--macs", type=int, default=0)
    m.add_argument("--lnc", type=int, default=1)
    m.add_argument("--timeout", type=float, default=DEFAULT_COMPILE_TIMEOUT_S)
    r = sub.add_parser("reference")
    r.add_argument("--workload", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--iterations", type=int, default=100)
    r.add_argument("--macs", type=int, default=0)
    r.add_argument("--lnc", type=int, default=1)
    r.add_argument("--timeout", type=float, default=DEFAULT_COMPILE_TIMEOUT_S)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    command = {"compile": compile_kernel, "measure": measure_kernel, "reference": reference}
    record = command[args.command](args, dict(os.environ))
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
