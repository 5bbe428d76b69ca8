"""What a workload asks of the hardware, counted from its op graph: the MACs behind
MFU, and the roofline the measured device time is compared with (the simulator's
roofline code and per-core peak rates, scaled to the LNC's physical cores)."""

from __future__ import annotations

import dataclasses
from typing import Any


def mac_count(workload: Any) -> int:
    """MACs from the op graph (f_nkigym) when the IR can count them, else 0 (the
    record then carries the profiler's MFU)."""
    if workload.f_nkigym is None:
        return 0
    try:
        from kernelopt.ir import compute_mac_count
    except ImportError:
        return 0
    try:
        return int(compute_mac_count(workload.f_nkigym, workload.input_specs))
    except Exception:  # the op graph is user code; MFU then comes from the profiler
        return 0


def roofline_work(workload: Any) -> Any:
    """The math's roofline work (``kernelopt.sim.roofline.RooflineWork``) from the op
    graph, or None without one (or when user code in it fails)."""
    from kernelopt.targets.nki import roofline_work_of

    try:
        return roofline_work_of(workload)
    except Exception:  # noqa: BLE001 - the op graph is user code: no roofline then
        return None


def device_roofline(work: Any, seconds: float, lnc: int) -> dict[str, Any]:
    """The roofline fields (``roofline_percent`` ...) of a measured device time, computed
    by the simulator's own roofline code from the Trainium2 peak rates of one physical
    NeuronCore times ``lnc`` (a logical core of two physical cores has twice the rates)."""
    from kernelopt.sim.roofline import PeakRates, roofline
    from kernelopt.sim.trn2 import DEFAULT_PARAMS

    one = PeakRates.of(DEFAULT_PARAMS)
    rates = dataclasses.replace(
        one,
        tensor_macs_per_s=one.tensor_macs_per_s * lnc,
        vector_elements_per_s=one.vector_elements_per_s * lnc,
        scalar_elements_per_s=one.scalar_elements_per_s * lnc,
        hbm_bytes_per_s=one.hbm_bytes_per_s * lnc,
    )
    return roofline(work, rates).fields(seconds)
