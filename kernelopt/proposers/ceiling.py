"""Which knob states cannot beat BEST, by their counted work: they wait for last.

``cost.engine_times(ir).bound`` is a time no kernel of the state beats (each engine's
own work, the DMA queues' data and issue apart). Once BEST's time is measured, a state
whose floor is above it cannot win; the proposer proposes it only after every other
source of states is spent.
"""

from __future__ import annotations

from typing import Any

from kernelopt.ir.cost import engine_times
from kernelopt.ir.model import KernelIR
from kernelopt.ir.sample import knob_signature
from kernelopt.sim.trn2 import DEFAULT_PARAMS

DEVICE_MARGIN = 1.5  # on a device: a state counted this much slower than BEST waits
# On sim: the count is a bound of the simulator's own time, but a cost-model change may
# leave it a little above for some instruction; only a state within this of BEST is at risk.
SIM_MARGIN = 1.02
SCREEN_CHIP = DEFAULT_PARAMS.name


class Ceiling:
    """BEST's measured time (with its margin) and each state's floor, computed once."""

    def __init__(self) -> None:
        self.floors: dict[str, float] = {}  # signature -> floor (ns)
        self.limit = float("inf")  # ns; no limit until BEST's time is known
        self.best_seconds: float | None = None  # BEST's time where the screen predicts it

    def floor(self, ir: KernelIR) -> float:
        sig = knob_signature(ir)
        if sig not in self.floors:
            times = engine_times(ir)
            self.floors[sig] = times.bound if times is not None else float("inf")
        return self.floors[sig]

    def admits(self, ir: KernelIR) -> bool:
        return self.floor(ir) < self.limit

    def follow(self, profile: dict[str, Any]) -> None:
        """BEST's profile: its ``total_time`` (seconds) sets the limit.

        On the simulator the floor and the time come from one cost model, so the rule
        holds up to SIM_MARGIN; on a device the model's time is only an estimate of the
        device's, so only a state counted far slower (DEVICE_MARGIN) waits.
        """
        seconds = profile.get("total_time")
        if not isinstance(seconds, int | float) or seconds <= 0:
            self.limit, self.best_seconds = float("inf"), None
            return
        sim = profile.get("device") == "sim"
        margin = SIM_MARGIN if sim else DEVICE_MARGIN
        self.limit = float(seconds) * 1e9 * margin
        # The screen times kernels with the default chip's cost model, as this device does.
        self.best_seconds = float(seconds) if sim and profile.get("chip") == SCREEN_CHIP else None

    def screened_slower(self, seconds: float) -> bool:
        """Whether a screened estimate already says a state cannot beat BEST: on the ``sim``
        device at the screen's chip the estimate is the measurement (the same cost model,
        the array math aside), so measuring it would only confirm a tie or a regression."""
        return self.best_seconds is not None and seconds >= self.best_seconds
