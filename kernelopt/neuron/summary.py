"""Reading `<profiler> view --output-format summary-json`, converted once.

The tool prints a dict with ONE top-level key (named after the profiled NEFF,
not documented) whose value is the flat metrics dict; a negative number means
"not available". The unit of the ``*_percent`` fields is the tool's, decided
here per tool (and version), never guessed from a value:

* ``neuron-profile``: fractions in [0, 1] (zhang677/AccelOpt
  experiments/full_complete_local/profile_results.csv@2dbeab40: e.g. an adamw
  kernel's ``vector_engine_active_time_percent`` 0.90, a matmul's
  ``hfu_estimated_percent`` 0.36; awslabs/nki-autotune scales its
  ``*_percent`` fields by 100 itself).
* ``neuron-explorer``: percent, the unit its schema gives every ``*_percent``
  field of the Summary table (aws-neuron/aws-neuron-sdk
  tools/neuron-explorer/profile-schema-reference.rst, schema 7.4.0, SDK 2.31).
  The same page warns the summary-json output "may change between versions".

Every consumer downstream sees percent in 0-100 and missing fields as absent.
A value outside the tool's range (a fraction above 1) means the unit table is
wrong for that version: it is an error naming the field, not a silent rescale.
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


FRACTION = "fraction"
PERCENT = "percent"
# (tool, first version it applies from, unit of its *_percent fields); the last
# matching row wins, so a release that changes the unit is one more row.
PERCENT_UNITS: tuple[tuple[str, tuple[int, ...], str], ...] = (
    ("neuron-profile", (0,), FRACTION),
    ("neuron-explorer", (0,), PERCENT),
)


def _version_key(version: str | None) -> tuple[int, ...]:
    parts = []
    for part in (version or "").split("."):
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def percent_unit(tool: str, version: str | None = None) -> str:
    """The unit ``tool`` (at ``version``, when known) prints ``*_percent`` fields in."""
    name = tool.rsplit("/", 1)[-1]
    have = _version_key(version)
    # An unknown version takes the newest row of the tool.
    found = [
        unit
        for known, since, unit in PERCENT_UNITS
        if known == name and (not have or have >= since)
    ]
    if not found:
        known = ", ".join(sorted({t for t, _, _ in PERCENT_UNITS}))
        raise SummaryError(
            f"no known unit for the *_percent fields of {tool!r} (known tools: {known})"
        )
    return found[-1]


def convert_fields(flat: dict[str, Any], unit: str, *, source: str = "summary") -> dict[str, Any]:
    """Percent fields as 0-100 from ``unit`` ("fraction" or "percent"), "not
    available" (negative or NaN) dropped. A value outside the unit's range is an
    error: the tool's unit is not the one this parser was told."""
    if unit not in (FRACTION, PERCENT):
        raise ValueError(f"unit must be {FRACTION!r} or {PERCENT!r}, not {unit!r}")
    scale, ceiling = (100.0, 1.0) if unit == FRACTION else (1.0, 100.0)
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
        if key.endswith("_percent"):
            if value > ceiling * (1 + 1e-9):
                raise SummaryError(
                    f"{source}: {key} is {raw}, outside [0, {ceiling:g}] for *_percent fields "
                    f"in {unit}; this tool version prints another unit (kernelopt.neuron."
                    "summary.PERCENT_UNITS)"
                )
            value *= scale
        out[key] = int(value) if isinstance(raw, int) and not key.endswith("_percent") else value
    return out


def roofline_efficiency(profile: dict[str, Any]) -> float | None:
    """100 * mfu / mfu_max_achievable: the share of this kernel's ceiling it reaches."""
    mfu = profile.get("mfu_estimated_percent")
    ceiling = profile.get("mfu_max_achievable_estimated_percent")
    if not isinstance(mfu, int | float) or not isinstance(ceiling, int | float) or ceiling <= 0:
        return None
    return 100.0 * float(mfu) / float(ceiling)


def parse_summary(
    text: str, *, tool: str, version: str | None = None, source: str = "summary-json"
) -> dict[str, Any]:
    """The profile record from ``tool``'s stdout (percent in 0-100, missing dropped)."""
    unit = percent_unit(tool, version)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        first = text.strip().splitlines()[0][:80] if text.strip() else "(empty output)"
        raise SummaryError(
            f"{source}: not JSON ({error.msg} at line {error.lineno}); output starts with: {first}"
        ) from None
    profile = convert_fields(unwrap_summary(data, source=source), unit, source=source)
    efficiency = roofline_efficiency(profile)
    if efficiency is not None:
        profile["roofline_efficiency"] = efficiency
    return profile


def mfu_percent(macs: int, seconds: float, peak_flops: float) -> float | None:
    """Model FLOPs utilisation: 2 FLOPs per MAC over the time at the peak rate."""
    if macs <= 0 or seconds <= 0 or peak_flops <= 0:
        return None
    return 100.0 * 2.0 * macs / (seconds * peak_flops)
