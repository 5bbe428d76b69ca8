"""The profiler's capture of a NEFF: one traced execution read through its
summary, the seeded inputs it is fed, device time from repeated captures on SDKs
without a device-side benchmark, and the outputs a capture saves for the device-side
check there.

Which source each option follows: ``-n NEFF -s NTFF`` the Neuron Profiler user guide
and the Explorer migration guide (the public runner spells them ``--neff`` /
``--session-file``); ``--profile-nth-exec=N`` the NKI profiling guide and the public
runner (awslabs/nki-autotune ``nkigym/src/nkigym/profile/_runner.py``); inputs as
``NAME FILE`` pairs of raw bytes, ``--save-output``, ``--disable-profile`` and
``--num-exec=N`` that public runner only (the Neuron docs name none of them:
unverified there); its log line ``saved output "NAME" as "FILE"`` (FILE relative to
the capture's working folder) is read as the runner reads it (unverified).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelopt.neuron.facts import CAPTURE_RUNS, OUTPUTS_DIR, PROFILE_NTH_EXEC, SUMMARY_NAME
from kernelopt.neuron.processes import python_step, run, step_record, tail
from kernelopt.neuron.summary import SummaryError, parse_summary


def profile_execution(
    args: argparse.Namespace,
    env: Mapping[str, str],
    neff: Path,
    ntff: Path,
    inputs: Sequence[str] = (),
) -> tuple[dict[str, Any] | None, str | None]:
    """Capture a trace of one execution (fed ``inputs``, ``NAME FILE`` words of raw-bytes
    files; without them the profiler fills the inputs with zero bytes) and read its
    summary."""
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
        return None, f"{tool} capture failed: {tail(capture.stderr or capture.stdout)}"
    # With --profile-nth-exec=N the trace lands in NAME_exec_N.ntff.
    nth = ntff.with_name(f"{ntff.stem}_exec_{PROFILE_NTH_EXEC}{ntff.suffix}")
    if nth.is_file():
        nth.replace(ntff)
    if not ntff.is_file():
        return None, f"{tool} capture wrote no trace at {ntff} or {nth.name}"
    return view_summary(args, env, neff, ntff)


def view_summary(
    args: argparse.Namespace, env: Mapping[str, str], neff: Path, ntff: Path
) -> tuple[dict[str, Any] | None, str | None]:
    """``<profiler> view --output-format summary-json`` of a saved trace, read in the
    unit of this profiler at its version (summary.py; a unit assumed for an undocumented
    version goes to ``args.profile_warnings``); the raw text beside it."""
    tool = args.profiler
    view = run(
        [tool, "view", "-n", str(neff), "-s", str(ntff), "--output-format", "summary-json"],
        env,
        args.timeout,
    )
    if view.returncode != 0:
        return None, f"{tool} view failed: {tail(view.stderr or view.stdout)}"
    (ntff.parent / SUMMARY_NAME).write_text(view.stdout)
    version = getattr(args, "profiler_version", None) or None
    warnings = getattr(args, "profile_warnings", None)
    try:
        return parse_summary(
            view.stdout,
            source=f"{tool} view of {neff}",
            tool=tool,
            version=version,
            warnings=warnings,
        ), None
    except SummaryError as exc:
        return None, str(exc)


def seeded_inputs(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """``NAME FILE`` words of the seeded inputs (raw-bytes files) for a capture:
    (words, error)."""
    argv = python_step(
        "inputs", "--workload", args.workload, "--out", str(args.out), "--seed", str(args.seed)
    )
    done = run(argv, env, args.timeout)
    found = step_record(done)
    if done.returncode != 0 or found is None:
        return [], f"writing the seeded inputs failed: {tail(done.stderr or done.stdout)}"
    return [word for pair in found["inputs"] for word in pair], None


def capture_timing(
    args: argparse.Namespace, env: Mapping[str, str], neff: Path, ntff: Path, words: Sequence[str]
) -> tuple[dict[str, Any] | None, str | None]:
    """SDKs without a device-side benchmark (2.22-2.31): the profiler's capture of the
    NEFF fed the seeded inputs (``words``, from ``seeded_inputs``), several times;
    device time = its total_time."""
    runs = max(1, min(args.iterations, CAPTURE_RUNS))
    seconds, profile = [], None
    for k in range(runs):
        each = ntff.with_name(f"{ntff.stem}-{k}{ntff.suffix}")
        found, problem = profile_execution(args, env, neff, each, words)
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


# The log line a capture with --save-output prints per output (the public runner's reading).
SAVED_OUTPUT = re.compile(r'saved output "([^"]+)" as "([^"]+)"')


def device_outputs(
    args: argparse.Namespace, env: Mapping[str, str], neff: Path, words: Sequence[str]
) -> dict[str, Any]:
    """The device-side check of SDKs without nrtpy: one execution of the NEFF on the
    seeded inputs with its outputs saved (``capture --disable-profile --save-output
    --num-exec=1 --profile-nth-exec=0``, as the public runner asks for them), compared
    with f_numpy. Where the profiler saves nothing readable the check is "not available"
    and says why; the timing captures then show whether the NEFF runs at all."""
    folder = neff.parent / OUTPUTS_DIR
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    tool = args.profiler
    argv = [tool, "capture", "-n", str(neff), "--disable-profile", "--save-output"]
    argv += ["--num-exec=1", "--profile-nth-exec=0", *words]
    done = run(argv, env, args.timeout, cwd=folder)
    log = done.stdout + done.stderr
    (folder / "capture.log").write_text(log)
    saved = SAVED_OUTPUT.findall(log)
    if done.returncode != 0 or done.timed_out or not saved:
        why = (
            f"exit code {done.returncode}: {tail(log)[-600:]}"
            if done.returncode != 0 or done.timed_out
            else "it printed no 'saved output' line"
        )
        return _unavailable(args, f"{tool} capture --save-output saved no outputs ({why})")
    pairs = [
        f"{name}={path if Path(path).is_absolute() else folder / path}" for name, path in saved
    ]
    step = python_step(
        "check-outputs",
        *("--neff", str(neff), "--workload", args.workload),
        *(f"--saved={pair}" for pair in pairs),
        *("--seed", str(args.seed), "--tolerance", str(args.tolerance)),
    )
    checked = run(step, env, args.timeout)
    found = step_record(checked)
    if checked.returncode != 0 or found is None:
        problem = tail(checked.stderr or checked.stdout)
        return _unavailable(args, f"the outputs {tool} saved could not be read: {problem}")
    return {**found["check"], "status": "checked", "output_dtypes": found.get("output_dtypes")}


def _unavailable(args: argparse.Namespace, why: str) -> dict[str, Any]:
    return {
        "passed": None,
        "status": "not available",
        "seed": args.seed,
        "message": f"{why}: the CPU check is the numerics gate",
    }
