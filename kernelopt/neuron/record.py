"""From the driver's records to the one Measurement shape every device produces."""

from __future__ import annotations

from typing import Any

from kernelopt.measurement import FAILED, INCORRECT, OK, SKIPPED, Measurement
from kernelopt.neuron.facts import peak_flops
from kernelopt.neuron.summary import mfu_percent, unit_cross_check

# Record fields copied into Measurement.extra when present (compile record first,
# the measure record overriding).
EXTRA_FIELDS = (
    "compile_api",
    "compile_options",
    "compiler_version",
    "runtime",
    "runtime_version",
    "instance_type",
    "visible_cores",
    "profiler",
    "timing",
    "timing_source",
    "iterations",
    "warmup",
    "macs",
    "peak_flops",
    "lnc",
    "mfu_source",
    "profiler_mfu_estimated_percent",
    "seed",
    "tolerance",
    "device_check",
    "cpu_check",
    "sim",
    "check",
    "worst",
    "max_abs_error",
    "neff_reused_from",
    "sdk_path",
    "run_call_shape",
    "output_dtypes",
    "kernel_api",
    "neuron_bench",
    "profile_warnings",
    "device_time_figure",
    "compile_in_lease",
)
_TIMES = ("compile_started", "compile_finished", "measure_started", "measure_finished")


def device_time_mfu(record: dict[str, Any]) -> float | None:
    """2·MACs / (min device time · 78.64e12 · LNC), in percent: the figure keep/revert
    decides on, from the timed device executions; None without MACs or a time."""
    macs, seconds = record.get("macs"), record.get("min_s")
    if not isinstance(macs, int | float) or not isinstance(seconds, int | float):
        return None
    return mfu_percent(int(macs), float(seconds), peak_flops(int(record.get("lnc") or 1)))


def metrics_of(record: dict[str, Any]) -> dict[str, float]:
    """The device timing's numbers (min/median/mean time, MFU) and the profile's.

    ``mfu`` and its long name ``mfu_estimated_percent`` are the device-time MFU
    (``device_time_mfu``), so a program deciding on either name decides on the
    timed runs. The profiler's own estimate, from one traced execution, is only a
    diagnostic: ``profiler_mfu_estimated_percent``.
    """
    profile = record.get("profile") or {}
    metrics = {
        (f"profiler_{k}" if k == "mfu_estimated_percent" else k): float(v)
        for k, v in profile.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }
    mfu = device_time_mfu(record)
    if mfu is not None:
        metrics["mfu"] = metrics["mfu_estimated_percent"] = mfu
        metrics["mfu_from_device_time"] = mfu
    if record.get("min_s") is not None:
        metrics["time"] = float(record["min_s"])
    for name in ("min", "median", "mean"):
        if record.get(f"{name}_s") is not None:
            metrics[f"{name}_ms"] = 1e3 * float(record[f"{name}_s"])
    return metrics


def to_measurement(
    compiled: dict[str, Any],
    measured: dict[str, Any] | None,
    *,
    host: str,
    device: str,
    duration_s: float,
    artifacts: dict[str, str],
    extra: dict[str, Any],
) -> Measurement:
    """One Measurement from the compile record and (when it ran) the measure record.

    A compile timeout is `failed` like any compile error (extra["timed_out"]
    tells them apart); a wrong answer from the CPU check or from the device is
    `incorrect`, with the check, the seed and the worst element in extra.
    """
    timeline = {k: r[k] for r in (compiled, measured or {}) for k in _TIMES if k in r}
    info = {**extra, "timeline": timeline}
    for record in (compiled, measured or {}):
        for key in EXTRA_FIELDS:
            if record.get(key) is not None:
                info[key] = record[key]
    final = measured if measured is not None else compiled
    common: dict[str, Any] = {
        "device": device,
        "host": host,
        "duration_s": duration_s,
        "deterministic": False,
        "artifacts": artifacts,
    }
    status = final.get("status")
    if status == "incorrect":
        info["stage"] = final.get("stage", "driver")
        return Measurement(
            status=INCORRECT,
            error=str(final.get("error") or "the numbers differ from f_numpy"),
            profile=dict(final.get("profile") or {}),
            extra=info,
            **common,
        )
    if status == SKIPPED:
        info["stage"] = final.get("stage", "driver")
        return Measurement(status=SKIPPED, error=str(final.get("error")), extra=info, **common)
    if status != OK:
        info["stage"] = final.get("stage", "driver")
        info["timed_out"] = bool(status == "timeout" or final.get("timed_out"))
        return Measurement(
            status=FAILED,
            error=str(final.get("error") or "no error text"),
            profile=dict(final.get("profile") or {}),
            extra=info,
            **common,
        )
    metrics = metrics_of(final)
    if "mfu" not in metrics:
        info["mfu_source"] = "none: the workload's MAC count is unknown (no f_nkigym)"
    sdk = extra.get("sdk") or {}
    disagreement = unit_cross_check(
        metrics.get("profiler_mfu_estimated_percent"),
        metrics.get("mfu"),
        sdk.get("profiler") or final.get("profiler"),
        sdk.get("profiler_version"),
    )
    if disagreement:
        info["profile_warnings"] = [*(info.get("profile_warnings") or []), disagreement]
    profile = dict(final.get("profile") or {})
    # The roofline of the device time, as the sim device reports it for its estimate.
    roofline = final.get("roofline") or {}
    profile.update(roofline)
    metrics.update({k: float(v) for k, v in roofline.items() if isinstance(v, int | float)})
    return Measurement(
        status=OK,
        metrics=metrics,
        profile=profile,
        extra=info,
        **common,
    )
