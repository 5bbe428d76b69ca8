"""Calibration files: named Trn2Params fields fitted to device measurements.

``kernelopt sim calibrate`` writes one; ``kernelopt sim --calibration FILE`` and
screening (``search.screen.calibration``) read it. Only the parameters are
applied; the figures beside them say how well they fitted.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params

KIND = "kernelopt-sim-calibration"


class CalibrationError(ValueError):
    """A calibration file that cannot be used; the message names the file and the problem."""


def params_with(overrides: dict[str, float], base: Trn2Params = DEFAULT_PARAMS) -> Trn2Params:
    """``base`` with ``overrides`` applied; unknown field names are an error."""
    known = {f.name for f in dataclasses.fields(Trn2Params)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise CalibrationError(f"not Trn2Params fields: {', '.join(unknown)}")
    return dataclasses.replace(base, **overrides)


def read_overrides(path: str | Path) -> dict[str, float]:
    """The fitted parameters a calibration file holds."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"{path}: cannot read a calibration: {exc}") from None
    params = data.get("params") if isinstance(data, dict) else None
    if data.get("kind") != KIND or not isinstance(params, dict):
        raise CalibrationError(
            f"{path}: not a calibration file (written by kernelopt sim calibrate)"
        )
    try:
        params_with({k: float(v) for k, v in params.items()})
    except (CalibrationError, TypeError, ValueError) as exc:
        raise CalibrationError(f"{path}: {exc}") from None
    return {k: float(v) for k, v in params.items()}


def load_params(path: str | Path | None, base: Trn2Params = DEFAULT_PARAMS) -> Trn2Params:
    """The chip's parameters ``base`` with the calibration at ``path`` (``base`` without one)."""
    return base if path is None else params_with(read_overrides(path), base)


def write_calibration(path: str | Path, params: dict[str, float], figures: dict[str, Any]) -> None:
    record = {"kind": KIND, "params": params, **figures}
    Path(path).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
