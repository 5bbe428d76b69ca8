"""Comparing a kernel's outputs with the oracle's, down to the worst element.

Used for the device's output of a measured run and to locate the worst
element of a failed CPU check; the record of an `incorrect` candidate names
that element, its value, the expected value and the seed of the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Worst:
    """The element furthest outside the tolerance."""

    output: int
    index: tuple[int, ...]
    got: float
    want: float
    abs_error: float

    def describe(self) -> str:
        where = ", ".join(map(str, self.index))
        return (
            f"output {self.output}[{where}] is {self.got:.6g}, f_numpy gives {self.want:.6g} "
            f"(abs error {self.abs_error:.4g})"
        )


@dataclass(frozen=True)
class Comparison:
    passed: bool
    max_abs_error: float | None
    mismatched: int
    total: int
    worst: Worst | None
    problem: str | None  # a shape or count mismatch: no element to point at

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.worst is not None:
            data["worst"]["index"] = list(self.worst.index)
        return data

    def describe(self) -> str:
        if self.problem:
            return self.problem
        text = f"{self.mismatched} of {self.total} elements differ from f_numpy"
        return f"{text}; worst: {self.worst.describe()}" if self.worst else text


def _fp64(array: np.ndarray) -> np.ndarray:
    a = np.asarray(array)
    return a.astype(np.float32).astype(np.float64) if a.dtype.kind in "fV" else a.astype(np.float64)


def compare(
    got: Sequence[np.ndarray], want: Sequence[np.ndarray], *, atol: float, rtol: float
) -> Comparison:
    """allclose(atol, rtol) over every output, with the worst element located.

    NaN where the oracle has a number counts as an infinite error.
    """
    if len(got) != len(want):
        return Comparison(
            False, None, 0, 0, None, f"the kernel returns {len(got)} outputs, f_numpy {len(want)}"
        )
    worst: Worst | None = None
    worst_excess = -np.inf
    max_err, mismatched, total = 0.0, 0, 0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if np.shape(g) != np.shape(w):
            return Comparison(
                False,
                None,
                0,
                0,
                None,
                f"output {i} has shape {np.shape(g)}, f_numpy gives {np.shape(w)}",
            )
        g64, w64 = _fp64(g), _fp64(w)
        error = np.abs(g64 - w64)
        error = np.where(np.isnan(g64) & ~np.isnan(w64), np.inf, error)
        error = np.where(np.isnan(g64) & np.isnan(w64), 0.0, error)
        allowed = atol + rtol * np.abs(w64)
        excess = error - allowed
        total += error.size
        if not error.size:
            continue
        mismatched += int((excess > 0).sum())
        max_err = max(max_err, float(error.max()))
        flat = int(np.argmax(excess))
        if excess.flat[flat] > worst_excess:
            worst_excess = float(excess.flat[flat])
            index = tuple(int(x) for x in np.unravel_index(flat, error.shape))
            worst = Worst(i, index, float(g64[index]), float(w64[index]), float(error[index]))
    # Only a failed comparison has an element to point at.
    return Comparison(
        mismatched == 0, max_err, mismatched, total, worst if mismatched else None, None
    )
