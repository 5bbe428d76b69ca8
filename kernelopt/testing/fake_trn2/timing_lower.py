"""The fake device compiler's lowering of the traced stream: an instruction whose
PSUM operand spans several banks becomes one instruction per bank.

Source: ``nki.language.tile_size`` (NKI API reference, Neuron SDK 2.30):
``psum_fmax`` / ``psum_fmax_bytes`` bound the free size of a tile on PSUM, and
a PSUM bank holds 2 KiB per partition (NKI Trainium2 architecture guide). A
kernel may still name a larger PSUM tensor in one call (a memset of a whole
multi-bank accumulator, a drain of it); hypothesis (unverified): the
compiler issues that call as one instruction per bank, each with its share of
the work, so each bank's piece waits only for what touches that bank. The
simulator times such a call as one instruction. Like ``timing.py``, this file
reads nothing of kernelopt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kernelopt.testing.fake_trn2.timing_plan import (
    PSUM_ACCUMULATE_BYTES,
    PSUM_BANK_BYTES,
    MemoryPlan,
)

_SCALED = ("free", "macs", "nbytes", "hbm_read", "hbm_write")


def _pieces(box: Any) -> tuple[int, list[tuple[int, int]]]:
    """The free axis to cut a PSUM box along and the ranges of each bank-sized piece."""
    free = list(box[1:])
    inner = PSUM_ACCUMULATE_BYTES
    for axis in range(len(free) - 1, -1, -1):
        lo, hi = free[axis]
        if inner * (hi - lo) > PSUM_BANK_BYTES:
            step = max(1, PSUM_BANK_BYTES // inner)
            return axis + 1, [(s, min(hi, s + step)) for s in range(lo, hi, step)]
        inner *= max(1, hi - lo)
    return 0, []


def _cut(box: Any, axis: int, start: int, piece: tuple[int, int], like: Any) -> Any:
    """``box`` restricted to ``piece`` of ``like``'s range along ``axis`` when it has
    the same extents (the other operand of a drain); unchanged otherwise."""
    if len(box) != len(like) or any(
        (b1 - b0) != (l1 - l0) for (b0, b1), (l0, l1) in zip(box, like, strict=True)
    ):
        return box
    lo = box[axis][0] + piece[0] - start
    return (*box[:axis], (lo, lo + piece[1] - piece[0]), *box[axis + 1 :])


def split_psum(trace: Sequence[Any], plan: MemoryPlan) -> list[tuple[int, Any]]:
    """``trace`` with every non-TensorE instruction over several PSUM banks issued
    as one instruction per bank: (index in ``trace``, instruction) pairs."""
    out: list[tuple[int, Any]] = []
    for index, ins in enumerate(trace):
        target = None
        if ins.engine != "tensor":
            target = next((r for r in (*ins.writes, *ins.reads) if r[0] in plan.banks), None)
        axis, pieces = _pieces(target[1]) if target else (0, [])
        if len(pieces) < 2:
            out.append((index, ins))
            continue
        like, start = target[1], target[1][axis][0]
        for piece in pieces:
            share = (piece[1] - piece[0]) / (like[axis][1] - start)
            out.append(
                (
                    index,
                    dataclasses.replace(
                        ins,
                        reads=tuple((a, _cut(b, axis, start, piece, like)) for a, b in ins.reads),
                        writes=tuple((a, _cut(b, axis, start, piece, like)) for a, b in ins.writes),
                        **{
                            f: max(1, round(getattr(ins, f) * share)) if getattr(ins, f) else 0
                            for f in _SCALED
                        },
                    ),
                )
            )
    return out
