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
from kernelopt.ir.layout import buffer_dtype, buffer_shape
from kernelopt.ir.model import KernelIR, Scope
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


class Ridge:
    """Ridge regression on the features and, with ``products``, their pairwise
    products (knobs interact; a few measurements can only support the features alone).

    Solved in the dual (a few hundred states, a thousand product features), so
    fitting costs well under the time of one measurement. Read as Bayesian
    linear regression, it also says how sure a prediction is (``sd``): a state
    whose features the run has not measured keeps its prior uncertainty, whose
    scale is the spread of the measured metrics.
    """

    def __init__(self, seen: list[dict[str, float]], metrics: list[float], products: bool) -> None:
        self.names = sorted({k for f in seen for k in f})
        self.products = products
        self.upper = np.triu_indices(len(self.names))
        self.train = self._expand(seen)
        y = np.asarray(metrics, dtype=float)
        self.offset = float(y.mean())
        gram = self.train @ self.train.T
        self.inverse = np.linalg.inv(gram + RIDGE * np.eye(len(y)))
        self.weights = self.train.T @ (self.inverse @ (y - self.offset))
        size = float(np.mean(np.diag(gram))) if len(y) else 0.0
        self.scale = float(y.var()) / size if size > 0 else 0.0

    def _expand(self, rows: list[dict[str, float]]) -> np.ndarray:
        x = np.array([[f.get(n, 0.0) for n in self.names] for f in rows]).reshape(len(rows), -1)
        if not self.products:
            return x
        pairs = (x[:, :, None] * x[:, None, :])[:, self.upper[0], self.upper[1]]
        return np.hstack([x, pairs])

    def mean(self, rows: list[dict[str, float]]) -> np.ndarray:
        return self._expand(rows) @ self.weights + self.offset

    def sd(self, rows: list[dict[str, float]]) -> np.ndarray:
        """The predictions' standard deviation, unmeasured features counted in full."""
        cross = self._expand(rows) @ self.train.T
        explained = np.einsum("ij,jk,ik->i", cross, self.inverse, cross)
        own = []
        for row in rows:
            squares = np.array(list(row.values()), dtype=float) ** 2
            total = float(squares.sum())
            if self.products:  # the sum of (x_i x_j)^2 over i <= j
                total += (total**2 + float((squares**2).sum())) / 2
            own.append(total)
        return np.sqrt(np.maximum(self.scale * (np.asarray(own) - explained), 0.0))


def fit(
    seen: list[dict[str, float]], metrics: list[float], products: bool = True
) -> Callable[[list[dict[str, float]]], np.ndarray]:
    """The mean prediction of a `Ridge` fitted to ``seen``."""
    return Ridge(seen, metrics, products).mean
