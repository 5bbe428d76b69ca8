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
        [--profiler-version V] [--warmup 10] [--iterations 100] [--macs N] [--lnc 1]
        [--seed 0] [--tolerance 0.01] [--timeout 600] [--path nrtpy|capture|baremetal]
        [--kernel K [--func F] [--opt 2] [--compiler-arg=ARG ...]]

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
total_time; ``baremetal`` (SDK 2.22-2.27, beta-1 kernels) compiles and runs the
kernel with neuronxcc.nki.baremetal on the bound core (its outputs checked), adds
nki.benchmark's percentiles and times the saved NEFF as ``capture`` does. MFU at
78.64e12 FLOP/s per physical core. `measure` is measure.py (measure_baremetal.py),
the profiler's capture capture.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelopt.neuron.facts import (
    COMPILE_LOG_NAME,
    DEFAULT_COMPILE_TIMEOUT_S,
    DEFAULT_DEVICE_TOLERANCE,
    DEVICE_CHECK_SEED,
    NEFF_NAME,
    PLATFORM,
    PLATFORM_ENV,
    PROFILERS,
    VISIBLE_CORES_ENV,
)
from kernelopt.neuron.measure import measure_kernel
from kernelopt.neuron.processes import python_step, run, step_record, tail
from kernelopt.neuron.sdk import PATHS


def probe(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    done = run(python_step("probe", "--tools", args.tools), env, args.timeout)
    found = step_record(done)
    if found is None:
        return {"stage": "probe", "status": "failed", "error": tail(done.stderr or done.stdout)}
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
        return {**record, "status": "failed", "error": f"compile failed: {tail(message)}"}
    step = step_record(done) or {}
    return {
        **record,
        "status": "ok",
        "neff": str(neff),
        "compile_api": step.get("api"),
        "compile_options": step.get("options"),
    }


def compile_kernel(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    argv = python_step(
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
    """The compiler baseline's NEFF: f_numpy traced by nkipy (or neuronpy), compiled by
    neuronx-cc; "skipped" where neither exists."""
    import importlib.util

    if all(importlib.util.find_spec(name) is None for name in ("nkipy", "neuronpy")):
        return {
            "stage": "compile",
            "status": "skipped",
            "error": "neither nkipy nor its predecessor neuronpy is importable in this host's "
            "Neuron environment, so f_numpy cannot be compiled by neuronx-cc; install nkipy "
            "there to get the baseline row",
        }
    argv = python_step(
        "compile-reference",
        "--workload",
        args.workload,
        "--out",
        str(args.out),
        "--lnc",
        str(args.lnc),
    )
    return _compile(argv, args, env, "compile")


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
    m.add_argument("--profiler-version", default="")
    m.add_argument("--path", choices=PATHS, default="nrtpy")
    # The baremetal path compiles the kernel itself (neuronxcc.nki.baremetal).
    m.add_argument("--kernel")
    m.add_argument("--func")
    m.add_argument("--opt", type=int, default=2)
    m.add_argument("--compiler-arg", action="append", default=[])
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
