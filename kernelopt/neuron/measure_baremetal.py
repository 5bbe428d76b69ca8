"""The ``baremetal`` measuring path (SDK 2.22-2.27, kernels in NKI beta 1).

On the leased core: ``neuronxcc.nki.baremetal`` compiles the kernel and runs it on
the seeded inputs (the `baremetal` step); the outputs it returns are checked against
f_numpy (a wrong kernel is ``incorrect``, not profiled); ``neuronxcc.nki.benchmark``
adds neuron-bench's latency percentiles over ``warmup`` + ``iterations`` executions.
The NEFF baremetal saved is then timed by the profiler's captures fed the same
seeded inputs, exactly as on the ``capture`` path, and the trace baremetal saved is
the record's profile (``<profiler> view --output-format summary-json``).

Which figure the MFU uses, and why: the minimum ``total_time`` over the captures,
device time of the NEFF's execution. neuron-bench's latency (nki.benchmark) includes
host-device transfers by its own documentation, so it is kept beside it as
``neuron_bench`` (percentiles in microseconds), a diagnostic; and the compiler
baseline, a NEFF rather than a kernel, can only be timed by captures, so both rows
share one timing path. Both compiles (baremetal's and benchmark's) happen on the
device host inside the call, so inside the device lease: the record says so.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelopt.neuron.capture import view_summary
from kernelopt.neuron.facts import NEFF_NAME, NTFF_NAME, SUMMARY_NAME
from kernelopt.neuron.measure import check_words, failed, measure_by_capture
from kernelopt.neuron.processes import python_step, run, step_record, tail

FIGURE = (
    "minimum total_time of the profiler's captures of the NEFF baremetal compiled (device "
    "time); nki.benchmark's neuron-bench latency includes host-device transfers, so it is "
    "kept as neuron_bench, a diagnostic"
)


def measure_baremetal(
    args: argparse.Namespace, env: Mapping[str, str], record: dict[str, Any], out: Path
) -> dict[str, Any]:
    if not args.profiler:
        return failed(record, "the baremetal path needs a profiler to time the NEFF it saves")
    started = time.time()
    argv = python_step(
        "baremetal",
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
        *check_words(args),
        *(["--func", args.func] if args.func else []),
        *[f"--compiler-arg={a}" for a in args.compiler_arg],
    )
    # Two compiles (baremetal's, benchmark's) and the runs, all on the leased core.
    done = run(argv, env, 3 * args.timeout, cwd=out)
    record.update(
        compile_api="neuronxcc.nki.baremetal",
        compile_started=started,
        compile_finished=time.time(),
        compile_in_lease="neuronxcc.nki.baremetal and .benchmark compile on the device "
        "host inside the call: inside the device lease",
    )
    (out / "log-baremetal.txt").write_text(done.stdout + done.stderr)
    if done.timed_out:
        return failed(record, f"baremetal did not finish within {3 * args.timeout:g}s", "timeout")
    ran = step_record(done)
    if done.returncode != 0 or ran is None:
        return failed(record, tail(done.stderr or done.stdout) or f"exit code {done.returncode}")
    check = ran["check"]
    record.update(
        device_check=check,
        run_call_shape=ran.get("call_shape"),
        neuron_bench=ran.get("neuron_bench"),
        additional_compile_opt=ran.get("additional_compile_opt"),
        device_time_figure=FIGURE,
    )
    if not check["passed"]:
        record.update(check="device", worst=check.get("worst"))
        record["max_abs_error"] = check.get("max_abs_error")
        return failed(
            record,
            f"the device's output (neuronxcc.nki.baremetal) differs from f_numpy on the inputs "
            f"of seed {args.seed} (atol = rtol = {args.tolerance:g}): {check['message']}",
            "incorrect",
        )
    neff, ntff = out / NEFF_NAME, out / NTFF_NAME
    if not neff.is_file():
        return failed(record, f"neuronxcc.nki.baremetal saved no NEFF at {neff}")
    traced, summary = ntff.with_name(f"baremetal-{ntff.name}"), out / SUMMARY_NAME
    text = None
    if ntff.is_file():
        # The trace of the checked execution is the record's profile.
        ntff.replace(traced)
        found, problem = view_summary(args, env, neff, traced)
        if found is None:
            return failed(record, problem or "the profiler gave no summary of baremetal's trace")
        record["baremetal_profile"] = found
        text = summary.read_text()
    measured = measure_by_capture(args, env, record, out)
    if text is not None and measured.get("status") == "ok":
        # The artifacts are the profile's: baremetal's trace and its summary.
        traced.replace(ntff)
        summary.write_text(text)
    return measured
