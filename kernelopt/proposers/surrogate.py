"""The model behind the NKI proposer's joint phase: features of a knob state and a ridge fit.

Kept apart from the search itself: what a kernel's speed plausibly depends on
(loop positions, block sizes, where buffers live and ops fire, the HBM bytes
its loads bring in) and a regression over those features and their pairwise
products that ranks unmeasured states.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from kernelopt.ir.derive import derive
from kernelopt.ir.footprint import footprint
from kernelopt.ir.model import KernelIR, Scope
from kernelopt.ir.render import buffer_dtype, buffer_shape
from kernelopt.workload import numpy_dtype

RIDGE = 1.0  # regularisation: a few hundred states against a thousand features


def load_traffic(ir: KernelIR) -> int:
    """HBM bytes the load buffers bring in: each allocation is filled once per trip around it.

    A DMA-bound kernel is ranked by this: it is what widening scopes and
    blocks buys, and what reordering loops around a load costs.
    """
    placement = derive(ir)[0]
    if placement is None:
        return 0
    trips: dict[str, int] = {}
    for d in ir.dims:
        per_block = ir.ltiles_per_block.get(d.name) or 1
        trips[f"{d.name}.block"] = d.num_tiles // per_block
        trips[f"{d.name}.tile"] = per_block
    total = 0
    for buf in ir.buffers:
        if buf.role != "load":
            continue
        count = 1
        for entry in ir.loop_order[: placement.emission[buf.name]]:
            count *= trips[entry]
        partition, held, free = buffer_shape(ir, buf)
        total += count * partition * held * free * numpy_dtype(buffer_dtype(ir, buf)).itemsize
    return total


def features(ir: KernelIR) -> dict[str, float]:
    """What a kernel's speed plausibly depends on, as named numbers (missing means 0)."""
    placement = derive(ir)[0]
    assert placement is not None, "only valid states are ranked"
    depth = max(1, len(ir.loop_order))
    named: dict[str, float] = {f"variant={ir.variant}": 1.0}
    for i, entry in enumerate(ir.loop_order):
        named[f"at:{entry}"] = i / depth
    for d in ir.dims:
        named[f"block:{d.name}"] = math.log2(ir.ltiles_per_block[d.name]) / max(
            1.0, math.log2(d.num_tiles)
        )
    for buf, at in placement.emission.items():
        named[f"emit:{buf}"] = at / depth
    for op, at in placement.fire.items():
        named[f"fire:{op}"] = at / depth
    for buf, scopes in ir.buffer_scopes.items():
        for d, scope in scopes.items():
            named[f"scope:{buf}.{d}={Scope(scope).value}"] = 1.0
    used = footprint(ir)
    named["traffic"] = math.log2(1 + load_traffic(ir)) / 40
    named["sbuf"] = used["sbuf"] / 2**17
    named["psum"] = used["psum"] / 2**14
    return named


def fit(
    seen: list[dict[str, float]], metrics: list[float]
) -> Callable[[list[dict[str, float]]], np.ndarray]:
    """Ridge regression on the features and their pairwise products (knobs interact).

    Solved in the dual (a few hundred states, a thousand product features), so
    fitting costs well under the time of one measurement.
    """
    names = sorted({k for f in seen for k in f})
    upper = np.triu_indices(len(names))

    def expand(rows: list[dict[str, float]]) -> np.ndarray:
        x = np.array([[f.get(n, 0.0) for n in names] for f in rows])
        return np.hstack([x, (x[:, :, None] * x[:, None, :])[:, upper[0], upper[1]]])

    train = expand(seen)
    y = np.asarray(metrics, dtype=float)
    mean = float(y.mean())
    alpha = np.linalg.solve(train @ train.T + RIDGE * np.eye(len(y)), y - mean)

    def predict(rows: list[dict[str, float]]) -> np.ndarray:
        return expand(rows) @ (train.T @ alpha) + mean

    return predict
