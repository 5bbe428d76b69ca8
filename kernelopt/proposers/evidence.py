"""What the run's own measurements say about a knob state before it is measured.

The NKI proposer asks two things of the states a run has measured:

- **Is this state predicted far worse than BEST?** A ridge regression of the
  log metric on the state's features (`surrogate.features`): additive in the
  features while the run has few measurements, with their pairwise products
  once it has enough. A state predicted more than ``FAR`` below BEST is not
  measured while better-predicted states remain; on hardware such a
  measurement is a compile and a device slot spent on a likely regression,
  and by the program's rule regressions in a row end the night.
- **Is this knob flat here?** Two settings of the knob being swept that
  measure exactly BEST's figure (a deterministic device, equal to the last
  digit) say the knob does not move this kernel: the rest of its settings are
  a plateau to cross, not to walk.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from kernelopt.ir.model import KernelIR
from kernelopt.proposers.surrogate import Ridge

FAR = math.log(1.25)  # predicted this far below BEST (a log ratio): not measured yet
LINEAR_MIN = 4  # measured states before the additive model predicts anything
PRODUCTS_MIN = 24  # measured states before the pairwise products join the model
SURE = 1.0  # standard deviations of optimism a prediction gets before it counts
FLAT_TIES = 2  # exact ties of one knob's sweep that make the rest of it a plateau
EXACT = 1e-9  # relative difference below which two figures are the same


class Evidence:
    """Predictions of a run's metric from the states it has measured."""

    def __init__(self, featured: Callable[[KernelIR], dict[str, float]]) -> None:
        self.featured = featured
        self.model: Ridge | None = None
        self.sign = 1.0

    def refit(self, measured: Sequence[tuple[KernelIR, float]], better: str) -> None:
        """Fit to (state, metric) pairs; no model while too few or any metric is not positive."""
        self.sign = -1.0 if better == "lower" else 1.0
        if len(measured) < LINEAR_MIN or any(m <= 0 for _, m in measured):
            self.model = None
            return
        rows = [self.featured(ir) for ir, _ in measured]
        logs = [self.sign * math.log(m) for _, m in measured]
        self.model = Ridge(rows, logs, products=len(measured) >= PRODUCTS_MIN)

    def gain(self, irs: Sequence[KernelIR], best: float | None) -> np.ndarray | None:
        """Each state's predicted log gain over ``best`` (None: no model, or no BEST)."""
        if self.model is None or best is None or best <= 0 or not irs:
            return None
        predicted = self.model.mean([self.featured(ir) for ir in irs])
        return predicted - self.sign * math.log(best)

    def best_of(self, irs: Sequence[KernelIR], best: float | None) -> KernelIR:
        """The state predicted best among ``irs`` (the first without a model)."""
        gains = self.gain(irs, best)
        return irs[int(np.argmax(gains))] if gains is not None else irs[0]

    def far_worse(self, ir: KernelIR, best: float | None) -> bool:
        """Predicted more than FAR below BEST even at one standard deviation up."""
        gains = self.gain([ir], best)
        if gains is None or self.model is None:
            return False
        sd = float(self.model.sd([self.featured(ir)])[0])
        return float(gains[0]) + SURE * sd < -FAR


def exact_tie(metric: float | None, best: float | None) -> bool:
    """Whether ``metric`` is BEST's figure to the last digit."""
    if metric is None or best is None:
        return False
    return abs(metric - best) <= EXACT * max(abs(best), 1e-30)
