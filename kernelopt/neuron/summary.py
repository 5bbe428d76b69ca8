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
* ``neuron-explorer``: fractions in [0, 1] too. Its public outputs show them: a Trn2
  run log of ``neuron-explorer view --output-format summary-json`` in a Neuron 2.30
  environment (June 2026) has ``tensor_engine_active_time_percent`` 0.1806 =
  ``tensor_engine_active_time`` 0.5657 s / ``total_time`` 3.132 s and
  ``mfu_estimated_percent`` 0.0628; public scripts reading Explorer's summary-json
  multiply its ``*_percent`` by 100, and the migration guide calls Explorer's
  capture/view interface that of neuron-profile. The "percent" of
  tools/neuron-explorer/profile-schema-reference.rst is the unit of the Parquet
  tables (Summary.parquet) Explorer writes for its UI, not of summary-json.

The unit is looked up per tool and version (``PERCENT_UNITS``); a version the record
does not cover (or an unknown one) is read in the tool's documented unit, and the
measurement records a warning saying so.

Every consumer downstream sees percent in 0-100 and missing fields as absent.
A value outside the tool's range (a fraction above 1) means the unit table is
wrong for that version: it is an error naming the field, not a silent rescale.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
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


@dataclass(frozen=True)
class UnitRecord:
    """Where the public record documents a tool's ``*_percent`` unit: from ``since``
    (a version, as the tool prints it) up to ``until`` (None: no end known)."""

    tool: str
    since: tuple[int, ...]
    until: tuple[int, ...] | None
    unit: str
    source: str


# The documented rows; a release that changes the unit is one more row. Neuron
# Explorer's summary-json is on record in fractions from Neuron 2.30 (a public run log);
# what 2.27-2.29 printed is not on record. Tool versions are compared as printed by
# `--version` (the aws-neuronx-tools release, which follows the SDK's: unverified).
# Where the record is wrong for a version, the cross-check of the profiler's MFU with
# the device-time MFU of the same NEFF says so (``unit_cross_check``).
PERCENT_UNITS: tuple[UnitRecord, ...] = (
    UnitRecord(
        "neuron-profile",
        (0,),
        None,
        FRACTION,
        "zhang677/AccelOpt profile_results.csv; awslabs/nki-autotune profiler_percent",
    ),
    UnitRecord(
        "neuron-explorer",
        (2, 30),
        None,
        FRACTION,
        "a public Trn2 run log of neuron-explorer summary-json under Neuron 2.30 "
        "(tensor_engine_active_time_percent = active time / total_time); public scripts "
        "that multiply Explorer's *_percent by 100",
    ),
)
# Each tool's unit where its version is not on record: the one its public outputs show.
DEFAULT_UNITS = {"neuron-profile": FRACTION, "neuron-explorer": FRACTION}


def _version_key(version: str | None) -> tuple[int, ...]:
    parts = []
    for part in (version or "").split("."):
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def unit_and_warning(tool: str, version: str | None = None) -> tuple[str, str | None]:
    """The unit ``tool`` at ``version`` prints ``*_percent`` fields in, and a warning when
    the public record does not document that version (or the version is unknown): then
    the tool's documented unit is assumed."""
    name = tool.rsplit("/", 1)[-1]
    if name not in DEFAULT_UNITS:
        known = ", ".join(sorted(DEFAULT_UNITS))
        raise SummaryError(
            f"no known unit for the *_percent fields of {tool!r} (known tools: {known})"
        )
    have = _version_key(version)
    for row in reversed(PERCENT_UNITS):
        inside = have and have >= row.since and (row.until is None or have <= row.until)
        if row.tool == name and inside:
            return row.unit, None
    unit = DEFAULT_UNITS[name]
    source = next(r.source for r in PERCENT_UNITS if r.tool == name and r.unit == unit)
    said = f"version {version}" if have else "an unknown version"
    return unit, (
        f"{name} {said}: no public record of its *_percent unit at this version; read as "
        f"{unit}, the unit on record for this tool ({source})"
    )


def percent_unit(tool: str, version: str | None = None) -> str:
    """The unit ``tool`` (at ``version``, when known) prints ``*_percent`` fields in."""
    return unit_and_warning(tool, version)[0]


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
    text: str,
    *,
    tool: str,
    version: str | None = None,
    source: str = "summary-json",
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """The profile record from ``tool``'s stdout (percent in 0-100, missing dropped);
    a unit assumed for an undocumented version is appended to ``warnings``."""
    unit, warning = unit_and_warning(tool, version)
    if warning and warnings is not None and warning not in warnings:
        warnings.append(warning)
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


# How far the profiler's MFU may be from the device-time MFU of the same NEFF before the
# record says so: the two differ by design (one traced execution against the minimum of
# the timed ones; the profiler's own FLOP count and peak), but not tenfold. A factor
# near 100 is the signature of a *_percent unit read wrongly.
CROSS_CHECK_FACTOR = 10.0
UNIT_FACTOR_BAND = (30.0, 300.0)


def unit_cross_check(
    profiler_mfu: float | None,
    device_mfu: float | None,
    tool: str | None,
    version: str | None = None,
) -> str | None:
    """A warning when the profiler's ``mfu_estimated_percent`` (as converted) and the
    device-time MFU of the same NEFF disagree more than tenfold, naming the factor and,
    near 100, the unit read for ``tool`` at ``version``; None when they agree or either
    is missing. The profile is never rescaled: the warning is the record."""
    if not profiler_mfu or not device_mfu or profiler_mfu <= 0 or device_mfu <= 0:
        return None
    ratio = profiler_mfu / device_mfu
    factor = max(ratio, 1.0 / ratio)
    if factor < CROSS_CHECK_FACTOR:
        return None
    name = (tool or "the profiler").rsplit("/", 1)[-1]
    said = f"{name} {version}" if version else name
    text = (
        f"{said}: the profiler's mfu_estimated_percent ({profiler_mfu:.4g}) is {ratio:.3g} "
        f"times the device-time MFU of the same NEFF ({device_mfu:.4g})"
    )
    low, high = UNIT_FACTOR_BAND
    if low <= factor <= high:
        try:
            unit = percent_unit(name, version)
        except SummaryError:
            unit = "an unknown unit"
        text += (
            f": a factor near 100 means its *_percent fields are not in {unit}, the unit "
            "kernelopt read them in; they are recorded as read, not rescaled "
            "(kernelopt.neuron.summary.PERCENT_UNITS)"
        )
    else:
        text += ": the profile is recorded as read"
    return text
