"""Scoring simulated calibration cases against the way each source measured them.

The simulator estimates device time. A source that timed its kernels from
the host (``Timing.host`` in ``benchmarks/calibration/cases.py``) adds the
host's per-execution cost to every figure; that cost belongs to the
measurement, so it is added to the simulated time before comparing, never
to the model. Its size is not published: it is estimated per runner as the
median of measured minus simulated time over the runner's host-dominated
cases *outside* the family being scored, so no family is scored with a
number taken from its own measurements (``host_costs``).

Leave-one-family-out (``lofo``): for each family, the chip's free parameters
are fitted on every other family (mean |log time ratio|, host costs
estimated on the training families) and the family left out is scored with
them. A change that helps the suite but hurts these held-out figures fits
the suite, not the chip.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernelopt.sim.profile import build_profile
from kernelopt.sim.schedule import schedule
from kernelopt.sim.trn2 import Trn2Params

BOUND = math.log(4.0)  # a fitted parameter stays within 4x of the chip's value
# Folds fit on traces up to this many instructions (rescheduling is ~17k
# instructions/s, and a fold tries a few dozen parameter sets); longer ones
# are still scored when their family is left out.
LOFO_FIT_MAX_INSTRUCTIONS = 25_000


@dataclass
class Traced:
    """One case traced once; rescheduled for every parameter set a fit tries."""

    case: Any
    trace: Any
    allocations: Any
    fp32_inputs: bool
    in_order: bool
    wall_s: float
    kernel_kwargs: dict[str, Any] = field(default_factory=dict)  # as traced
    _profiles: dict[Trn2Params, dict[str, Any]] = field(default_factory=dict)

    def profile(self, params: Trn2Params) -> dict[str, Any]:
        if params not in self._profiles:
            timeline = schedule(self.trace, self.allocations, params, in_order=self.in_order)
            self._profiles[params] = build_profile(
                self.trace, timeline, params, mac_count=None, fp32_inputs=self.fp32_inputs
            )
        return self._profiles[params]

    def device_ms(self, params: Trn2Params) -> float:
        return self.profile(params)["total_time"] * 1e3

    def measured_ms(self, params: Trn2Params, host_us: float) -> float:
        """The simulated time as the source's timer would have read it."""
        return self.device_ms(params) + (host_us * 1e-3 if self.case.timing.host else 0.0)

    def mfu(self, params: Trn2Params, host_us: float) -> float:
        """The simulated MFU as the source would have computed it from its timer.

        With a measured time too, the case's own FLOP count (measured MFU x measured
        time) over the simulated time: the profile's count includes the MACs of
        transposes done as matmuls against an identity, which the measured MFU does
        not count."""
        case = self.case
        if case.measured_ms is not None and case.measured_mfu is not None:
            return case.measured_mfu * case.measured_ms / self.measured_ms(params, host_us)
        p = self.profile(params)
        return (
            p["mfu_estimated_percent"] * self.device_ms(params) / self.measured_ms(params, host_us)
        )

    def log_ratio(self, params: Trn2Params, host_us: float) -> float:
        """log(simulated / measured time); MFU cases without a time use MFU."""
        if self.case.measured_ms is not None:
            return math.log(self.measured_ms(params, host_us) / self.case.measured_ms)
        return math.log(self.case.measured_mfu / max(self.mfu(params, host_us), 1e-9))

    def error(self, params: Trn2Params, host_us: float) -> tuple[str, float]:
        """("pp", MFU error) for cases with an MFU figure, else ("%", latency error)."""
        if self.case.measured_mfu is not None:
            return "pp", self.mfu(params, host_us) - self.case.measured_mfu
        return "%", 100 * (self.measured_ms(params, host_us) / self.case.measured_ms - 1)


# A case estimates its runner's host cost when the simulated device time is at most
# this share of its measured time: the host cost dominates it there.
HOST_DOMINATED_SHARE = 0.5


def host_costs(
    traced: Sequence[Traced], params: Trn2Params, without: str | None = None
) -> dict[str, float]:
    """Per host-timed runner: the median of measured minus simulated device time (us)
    over its cases outside family ``without``, never below zero (a timer cannot
    read less than the device ran). Runners with no such case are absent.

    The gap also holds the model's device-time error, which grows with the kernel
    (a 2 % error on a 3.5 ms GEMM is 70 us, more than the host cost itself), so the
    median is taken over the host-dominated cases, whose device time is at most
    ``HOST_DOMINATED_SHARE`` of the measured time, where the runner has any; over all
    its cases otherwise."""
    gaps: dict[str, list[tuple[float, bool]]] = {}
    for t in traced:
        timing, measured = t.case.timing, t.case.measured_ms
        if timing.host and t.case.family != without and measured is not None:
            device = t.device_ms(params)
            gaps.setdefault(timing.runner, []).append(
                (1e3 * (measured - device), device <= HOST_DOMINATED_SHARE * measured)
            )
    costs = {}
    for runner, found in gaps.items():
        dominated = [gap for gap, host_bound in found if host_bound]
        costs[runner] = max(0.0, float(np.median(dominated or [gap for gap, _ in found])))
    return costs


def host_us_for(t: Traced, costs: dict[str, float]) -> float:
    """The host cost scored with ``t``: its runner's estimate (0 when device-timed,
    or when no other family of its runner gives one)."""
    return costs.get(t.case.timing.runner, 0.0) if t.case.timing.host else 0.0


def scored_host_us(traced: Sequence[Traced], params: Trn2Params) -> dict[str, float]:
    """Per case label: the host cost to score it with, estimated without its own family."""
    by_family = {f: host_costs(traced, params, f) for f in {t.case.family for t in traced}}
    return {t.case.label: host_us_for(t, by_family[t.case.family]) for t in traced}


def _fit(
    traced: Sequence[Traced], base: Trn2Params, names: Sequence[str]
) -> tuple[Trn2Params, int]:
    """Coarse coordinate search in log space; host costs re-estimated per parameter set."""

    def params_at(x: np.ndarray) -> Trn2Params:
        return dataclasses.replace(
            base, **{n: getattr(base, n) * math.exp(v) for n, v in zip(names, x, strict=True)}
        )

    def objective(x: np.ndarray) -> float:
        params = params_at(x)
        costs = host_costs(traced, params)
        return float(np.mean([abs(t.log_ratio(params, host_us_for(t, costs))) for t in traced]))

    best, step, evaluations = np.zeros(len(names)), BOUND / 2, 0
    value = objective(best)
    while step > 0.2:
        moved = False
        for i, sign in itertools.product(range(len(names)), (1.0, -1.0)):
            trial = best.copy()
            trial[i] = max(-BOUND, min(BOUND, trial[i] + sign * step))
            evaluations += 1
            if (v := objective(trial)) < value:
                best, value, moved = trial, v, True
        if not moved:
            step /= 2
    return params_at(best), evaluations


@dataclass(frozen=True)
class Fold:
    """One family left out: its mean |time error| (%) and, where it has MFU
    figures, mean |MFU error| (pp), with the chip's parameters and with those
    fitted on the other families."""

    family: str
    time_default: float
    time_held_out: float
    mfu_default: float | None
    mfu_held_out: float | None


def _family_errors(
    test: Sequence[Traced], params: Trn2Params, costs: dict[str, float]
) -> tuple[float, float | None]:
    times = [100 * abs(math.exp(t.log_ratio(params, host_us_for(t, costs))) - 1) for t in test]
    mfus = [
        abs(t.mfu(params, host_us_for(t, costs)) - t.case.measured_mfu)
        for t in test
        if t.case.measured_mfu is not None
    ]
    return float(np.mean(times)), (float(np.mean(mfus)) if mfus else None)


def lofo(traced: Sequence[Traced], params: Trn2Params, names: Sequence[str]) -> list[Fold]:
    """Leave each family out in turn: fit ``names`` on the others, score it."""
    folds = []
    for family in sorted({t.case.family for t in traced}):
        train = [
            t
            for t in traced
            if t.case.family != family and len(t.trace) <= LOFO_FIT_MAX_INSTRUCTIONS
        ]
        test = [t for t in traced if t.case.family == family]
        fitted, _ = _fit(train, params, names)
        default = _family_errors(test, params, host_costs(traced, params, family))
        held_out = _family_errors(test, fitted, host_costs(train, fitted))
        folds.append(Fold(family, default[0], held_out[0], default[1], held_out[1]))
    return folds
