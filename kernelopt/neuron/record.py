"""From the driver's records to the one Measurement shape every device produces."""

from __future__ import annotations

from typing import Any

from kernelopt.measurement import FAILED, OK, Measurement

# Record fields copied into Measurement.extra when present.
_EXTRA = (
    "compiler_version",
    "runtime_version",
    "instance_type",
    "visible_cores",
    "macs",
    "peak_flops",
    "iterations",
    "warmup",
    "timing",
)
_TIMES = ("compile_started", "compile_finished", "measure_started", "measure_finished")


def metrics_of(record: dict[str, Any]) -> dict[str, float]:
    """The profile's numbers plus the benchmark's: min/median time and MFU.

    ``mfu_estimated_percent`` (the program's ``mfu``) is the MFU from the
    workload's MACs and the minimum time when MACs are known; the profiler's
    own estimate stays in the profile and as ``profiler_mfu_estimated_percent``.
    """
    profile = record.get("profile") or {}
    metrics = {
        k: float(v)
        for k, v in profile.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }
    if "mfu_estimated_percent" in metrics:
        metrics["profiler_mfu_estimated_percent"] = metrics["mfu_estimated_percent"]
    if record.get("mfu_percent") is not None:
        metrics["mfu_estimated_percent"] = float(record["mfu_percent"])
    if "mfu_estimated_percent" in metrics:
        metrics["mfu"] = metrics["mfu_estimated_percent"]
    if record.get("min_s") is not None:
        metrics["min_ms"] = 1e3 * float(record["min_s"])
        metrics["time"] = float(record["min_s"])
    for name in ("median", "mean"):
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

    A compile timeout is `failed` like any compile error; extra["timed_out"]
    tells them apart.
    """
    timeline = {k: r[k] for r in (compiled, measured or {}) for k in _TIMES if k in r}
    info = {**extra, "timeline": timeline}
    for key in _EXTRA:
        if measured and measured.get(key) is not None:
            info[key] = measured[key]
    final = measured if measured is not None else compiled
    common: dict[str, Any] = {
        "device": device,
        "host": host,
        "duration_s": duration_s,
        "deterministic": False,
        "artifacts": artifacts,
    }
    if final.get("status") != OK:
        info["stage"] = final.get("stage", "driver")
        info["timed_out"] = bool(final.get("status") == "timeout" or final.get("timed_out"))
        return Measurement(
            status=FAILED,
            error=str(final.get("error") or "no error text"),
            profile=dict(final.get("profile") or {}),
            extra=info,
            **common,
        )
    return Measurement(
        status=OK,
        metrics=metrics_of(final),
        profile=dict(final.get("profile") or {}),
        extra=info,
        **common,
    )
