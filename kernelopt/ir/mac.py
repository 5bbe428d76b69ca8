"""MAC counts for MFU: the TensorE multiply-accumulates of the math itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelopt.ir.ops import NKIMatmul
from kernelopt.ir.trace import trace


def compute_mac_count(
    f_nkigym: Callable[..., Any], input_specs: dict[str, tuple[tuple[int, ...], str]]
) -> int:
    """K * M * N summed over every matmul; transposes and other engines add none."""
    total = 0
    for op in trace(f_nkigym, input_specs).ops:
        if isinstance(op.op, NKIMatmul):
            k, m = op.operands["stationary"].shape
            total += k * m * op.operands["moving"].shape[1]
    return total
