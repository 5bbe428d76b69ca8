"""Percent of roofline: the time a kernel's work needs at the chip's peak rates over its time.

Three resources bound a NeuronCore kernel: TensorE (multiply-accumulates),
VectorE/ScalarE (elements streamed through the element-wise engines) and HBM
(bytes moved). The roofline time is the slowest of the three, each at its peak
rate; ``roofline_percent`` is that time over the kernel's (simulated or
measured) time. MFU is zero for a kernel with no matmul; this figure is not.

The work is the math's when the caller knows it (``kernelopt.ir.roofline_work``
counts it from the workload's op graph: MACs, the elements each non-matmul op
must touch, the bytes of the inputs and the output), so that for one workload
the figure is proportional to speed. Without it, the work is read off the
executed trace: the caller's useful MACs or the executed ones, the elements
the element-wise engines streamed, and the distinct HBM bytes the kernel touched.

The rates are read from the chip's parameter object by name (``PeakRates.of``),
so any chip parameter set with the same field names gets its own roofline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernelopt.sim.cost import PERFORMANCE_MODE_SPEEDUP
from kernelopt.sim.trace import Instruction

# Element-wise engines: which instructions run only where, and which may run on either.
SCALAR_ONLY = frozenset({"activation", "activation_reduce"})
EITHER = frozenset({"tensor_scalar", "tensor_copy"})


@dataclass(frozen=True)
class PeakRates:
    """The three peak rates of one chip, per NeuronCore, per second."""

    tensor_macs_per_s: float  # bf16 multiply-accumulates
    vector_elements_per_s: float  # one element per partition lane per VectorE cycle
    scalar_elements_per_s: float  # one element per partition lane per ScalarE cycle
    hbm_bytes_per_s: float
    fp32_matmul_divisor: float = 4.0  # fp32 matmuls run at a fraction of the bf16 rate
    # VectorE's performance mode: how many times its rate a 16-bit tensor_scalar or
    # tensor_copy in SBUF streams (``sim.cost.vector_speedup``); 1 on a chip without it.
    vector_fast_factor: float = 1.0

    @classmethod
    def of(cls, params: Any) -> PeakRates:
        """The rates a chip parameter object (``Trn2Params`` or one of its shape) names."""
        fast = PERFORMANCE_MODE_SPEEDUP if getattr(params, "vector_performance_mode", False) else 1
        return cls(
            tensor_macs_per_s=params.peak_bf16_flops / 2.0,
            vector_elements_per_s=params.partitions * params.vector_clock_hz,
            scalar_elements_per_s=params.partitions * params.scalar_clock_hz,
            hbm_bytes_per_s=params.hbm_bytes_per_ns * 1e9,
            fp32_matmul_divisor=params.fp32_peak_divisor,
            vector_fast_factor=float(fast),
        )


@dataclass(frozen=True)
class RooflineWork:
    """What a kernel has to do, whoever does it.

    ``vector_elements`` must run on VectorE, ``scalar_elements`` on ScalarE,
    ``either_elements`` on whichever is free (``tensor_scalar``), and
    ``fast_either_elements`` too, but on VectorE in its performance mode (16-bit data).
    ``fused_elementwise`` holds other ``(vector, scalar, either, fast_either)`` counts
    of the same math, as instructions that do two of its ops in one pass compute it (a
    row sum carried by the activation that produces the row): the element-wise bound is
    the least of them all, so that no kernel of the math beats its roofline.
    """

    tensor_macs: int = 0
    vector_elements: int = 0
    scalar_elements: int = 0
    either_elements: int = 0
    hbm_bytes: int = 0
    fp32_matmul: bool = False
    fused_elementwise: tuple[tuple[int, int, int, int], ...] = ()
    fast_either_elements: int = 0
    # Of ``tensor_macs``, those of fp32 matmuls, when known per matmul (a graph of an
    # fp32 and a bf16 matmul); 0 with ``fp32_matmul`` counts every MAC at the fp32 rate.
    fp32_macs: int = 0

    @classmethod
    def from_trace(cls, trace: Sequence[Instruction], mac_count: int | None = None) -> RooflineWork:
        """The executed work (useful MACs when ``mac_count`` is given); HBM bytes counted once."""
        macs = sum(i.macs for i in trace) if mac_count is None else int(mac_count)
        vector = scalar = either = fast = 0
        for ins in trace:
            if ins.engine not in ("vector", "scalar", "gpsimd") or ins.op == "memset":
                continue
            elements = ins.partitions * ins.free
            if ins.op in SCALAR_ONLY:
                scalar += elements
            elif ins.op in EITHER and ins.vector_speedup > 1:
                fast += elements
            elif ins.op in EITHER:
                either += elements
            else:
                vector += elements
        hbm = _distinct_hbm_bytes(trace)
        return cls(macs, vector, scalar, either, hbm, fast_either_elements=fast)


def _distinct_hbm_bytes(trace: Sequence[Instruction]) -> int:
    """HBM bytes read or written, each region once (a re-read moves no new data)."""
    seen: dict[tuple[str, Any], int] = {}
    for ins in trace:
        if ins.engine != "dma":
            continue
        if ins.hbm_read:
            for region in ins.reads:
                seen.setdefault(("r", region), ins.hbm_read // max(len(ins.reads), 1))
        if ins.hbm_write:
            for region in ins.writes:
                seen.setdefault(("w", region), ins.hbm_write // max(len(ins.writes), 1))
    return sum(seen.values())


@dataclass(frozen=True)
class Roofline:
    """The three lower bounds, in seconds, and which one binds."""

    tensor_s: float
    vector_scalar_s: float
    hbm_s: float

    @property
    def time_s(self) -> float:
        return max(self.tensor_s, self.vector_scalar_s, self.hbm_s)

    @property
    def bound(self) -> str:
        times = {"tensor": self.tensor_s, "vector_scalar": self.vector_scalar_s, "hbm": self.hbm_s}
        return max(times, key=lambda k: times[k])

    def percent(self, total_s: float) -> float:
        """100 x roofline time / time (0 for a kernel that took no time)."""
        return min(100.0, 100.0 * self.time_s / total_s) if total_s > 0 else 0.0

    def fields(self, total_s: float) -> dict[str, Any]:
        """The profile fields: the percent, the roofline time, its three parts and the bound."""
        return {
            "roofline_percent": self.percent(total_s),
            "roofline_time": self.time_s,
            "roofline_bound": self.bound,
            "roofline_tensor_time": self.tensor_s,
            "roofline_vector_scalar_time": self.vector_scalar_s,
            "roofline_hbm_time": self.hbm_s,
        }


def roofline(work: RooflineWork, rates: PeakRates) -> Roofline:
    """Each resource's time at its peak rate.

    VectorE and ScalarE share the element-wise work: neither can finish
    before its own work, and together before all of it at their summed rate.
    Of several ways to count that work (``RooflineWork.fused_elementwise``), the
    fastest binds.
    """
    slow = work.fp32_macs or (work.tensor_macs if work.fp32_matmul else 0)
    tensor_s = (work.tensor_macs + slow * (rates.fp32_matmul_divisor - 1)) / rates.tensor_macs_per_s
    counts = (
        (
            work.vector_elements,
            work.scalar_elements,
            work.either_elements,
            work.fast_either_elements,
        ),
    )
    elementwise = min(_elementwise_s(*c, rates) for c in counts + work.fused_elementwise)
    return Roofline(
        tensor_s=tensor_s,
        vector_scalar_s=elementwise,
        hbm_s=work.hbm_bytes / rates.hbm_bytes_per_s,
    )


def _elementwise_s(vector: int, scalar: int, either: int, fast: int, rates: PeakRates) -> float:
    """The least time VectorE and ScalarE need together: the work only one can run stays
    there, and the work either can run is split so both finish at once.

    Each movable element costs VectorE ``1 / rv`` (``1 / (k rv)`` in its performance
    mode) and ScalarE ``1 / rs``; filling VectorE first with the elements it is
    relatively fastest at (the performance-mode ones) is optimal, so a time is feasible
    when what VectorE cannot take in it fits on ScalarE. Bisected to 1e-12 relative.
    """
    rv, rs = rates.vector_elements_per_s, rates.scalar_elements_per_s
    rf = rv * rates.vector_fast_factor

    def fits(t: float) -> bool:
        room_v, room_s = t - vector / rv, t - scalar / rs
        if room_v < 0 or room_s < 0:
            return False
        on_v_fast = min(fast, room_v * rf)
        on_v = min(either, (room_v - on_v_fast / rf) * rv)
        return (either - on_v + fast - on_v_fast) / rs <= room_s * (1 + 1e-12)

    lo = max(vector / rv, scalar / rs)
    hi = lo + (either + fast) / rs
    if fits(lo):
        return lo
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def roofline_fields(profile: dict[str, Any], work: RooflineWork, params: Any) -> dict[str, Any]:
    """The roofline fields for a profile's ``total_time`` (device or simulated)."""
    total = float(profile.get("total_time") or 0.0)
    return roofline(work, PeakRates.of(params)).fields(total)
