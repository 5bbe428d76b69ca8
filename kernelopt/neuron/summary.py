"""Reading `neuron-profile view --output-format summary-json`, converted once.

The tool prints a dict with ONE top-level key (named after the profiled NEFF,
not documented) whose value is the flat metrics dict. Its ``*_percent`` fields
are fractions in [0, 1] and a negative number means "not available". Every
consumer downstream sees percent in 0-100 and missing fields as absent, so
the conversion happens here and nowhere else.
"""

from __future__ import annotations

import json
import math
from typing import Any


class SummaryError(ValueError):
    """The summary text cannot be read; the message says what was expected."""


def unwrap_summary(data: Any, *, source: str = "summary-json") -> dict[str, Any]:
    """The flat metrics dict, whether wrapped under one unknown key or not."""
    if not isinstance(data, dict):
        raise SummaryError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if len(data) == 1:
        (inner,) = data.values()
        if isinstance(inner, dict):
            return inner
    if any(isinstance(v, dict) for v in data.values()):
        keys = ", ".join(sorted(data))
        raise SummaryError(
            f"{source}: expected one top-level key holding the metrics dict, got keys {keys}"
        )
    return data


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def convert_fields(flat: dict[str, Any]) -> dict[str, Any]:
    """Percent fields as 0-100, "not available" (negative or NaN) dropped.

    A ``_percent`` value above 1 is taken as already in percent, so a
    profiler version that changes units cannot inflate numbers a hundredfold.
    """
    out: dict[str, Any] = {}
    for key, raw in flat.items():
        value = _number(raw)
        if value is None:
            if isinstance(raw, str | bool) or raw is None:
                if raw is not None:
                    out[key] = raw
            continue
        if math.isnan(value) or value < 0:
            continue
        if key.endswith("_percent") and value <= 1.0:
            value *= 100.0
        out[key] = int(value) if isinstance(raw, int) and not key.endswith("_percent") else value
    return out


def roofline_efficiency(profile: dict[str, Any]) -> float | None:
    """100 * mfu / mfu_max_achievable: the share of this kernel's ceiling it reaches."""
    mfu = profile.get("mfu_estimated_percent")
    ceiling = profile.get("mfu_max_achievable_estimated_percent")
    if not isinstance(mfu, int | float) or not isinstance(ceiling, int | float) or ceiling <= 0:
        return None
    return 100.0 * float(mfu) / float(ceiling)


def parse_summary(text: str, *, source: str = "summary-json") -> dict[str, Any]:
    """The profile record from the tool's stdout (percent in 0-100, missing dropped)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        first = text.strip().splitlines()[0][:80] if text.strip() else "(empty output)"
        raise SummaryError(
            f"{source}: not JSON ({error.msg} at line {error.lineno}); output starts with: {first}"
        ) from None
    profile = convert_fields(unwrap_summary(data, source=source))
    efficiency = roofline_efficiency(profile)
    if efficiency is not None:
        profile["roofline_efficiency"] = efficiency
    return profile


def mfu_percent(macs: int, seconds: float, peak_flops: float) -> float | None:
    """Model FLOPs utilisation: 2 FLOPs per MAC over the time at the peak rate."""
    if macs <= 0 or seconds <= 0 or peak_flops <= 0:
        return None
    return 100.0 * 2.0 * macs / (seconds * peak_flops)
