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


# The documented rows; a release that changes the unit is one more row. The Neuron
# Explorer schema reference that gives "percent" is schema 7.4.0 of SDK 2.31: what the
# tool printed in 2.27-2.30 is not on record. Tool versions are compared as printed by
# `--version` (the aws-neuronx-tools release, which follows the SDK's: unverified).
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
        (2, 31),
        None,
        PERCENT,
        "tools/neuron-explorer/profile-schema-reference.rst, schema 7.4.0 (Neuron 2.31)",
    ),
)
# Each tool's unit where its version is not on record: the documented one.
DEFAULT_UNITS = {"neuron-profile": FRACTION, "neuron-explorer": PERCENT}


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
        f"{unit}, the unit documented in {source}"
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
