"""Which values of the metric are measurements at all.

A benchmark that prints a time of ``-5`` or ``0`` has not measured anything,
and a gain computed from it ("+100 %") is nonsense that must never be kept.
A metric must be a finite number; where lower is better (a time, a cost) it
must also be positive. ``metric.valid: [lo, hi]`` in a program declares the
range instead (either end may be null). Anything outside it is a failed
measurement naming the row that carried it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from kernelopt.measurement import FAILED, Measurement


@dataclass(frozen=True)
class MetricRange:
    """The valid values of a metric: ``lo < v`` (or ``lo <= v``), ``v <= hi``."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False  # whether lo itself is excluded

    @classmethod
    def default(cls, better: str) -> MetricRange:
        """Finite, and positive where lower is better."""
        return cls(lo=0.0, lo_open=True) if better == "lower" else cls()

    @classmethod
    def of(cls, declared: Any, better: str) -> MetricRange:
        """From a program's ``metric.valid`` ([lo, hi], null for no bound), else the default."""
        if declared is None:
            return cls.default(better)
        lo, hi = declared
        return cls(lo=None if lo is None else float(lo), hi=None if hi is None else float(hi))

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not a measurement of the metric, or None when it is."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "not a number"
        if not math.isfinite(value):
            return "not finite"
        if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
            return f"outside the valid range {self.describe()}"
        if self.hi is not None and value > self.hi:
            return f"outside the valid range {self.describe()}"
        return None

    def describe(self) -> str:
        left = "(" if self.lo_open or self.lo is None else "["
        lo = "-inf" if self.lo is None else f"{self.lo:g}"
        hi = "inf)" if self.hi is None else f"{self.hi:g}]"
        return f"{left}{lo}, {hi}"


def checked(measurement: Measurement, metric: str, valid: MetricRange) -> Measurement:
    """``measurement``, or a failed one when a row or the aggregate holds an invalid metric."""
    if not measurement.ok:
        return measurement
    for index, row in enumerate(measurement.rows):
        if metric in row and (why := valid.problem(row[metric])) is not None:
            return _failed(measurement, f"row {index} has {metric}={row[metric]!r}: {why}")
    value = measurement.value(metric)
    if value is None:
        return _failed(measurement, f"the measurement has no {metric}")
    if (why := valid.problem(value)) is not None:
        return _failed(measurement, f"{metric}={value!r}: {why}")
    return measurement


def _failed(measurement: Measurement, error: str) -> Measurement:
    return replace(measurement, status=FAILED, error=error, metrics={})
