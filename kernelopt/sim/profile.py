"""The profile record: neuron-profile field names, percent fields in 0-100."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kernelopt.sim.roofline import PeakRates, RooflineWork, roofline
from kernelopt.sim.schedule import Timeline
from kernelopt.sim.trace import Instruction
from kernelopt.sim.trn2 import Trn2Params


def _percent(part: float, whole: float) -> float:
    return min(100.0, 100.0 * part / whole) if whole > 0 else 0.0


def build_profile(
    trace: Sequence[Instruction],
    timeline: Timeline,
    params: Trn2Params,
    *,
    mac_count: int | None,
    fp32_inputs: bool,
    work: RooflineWork | None = None,
) -> dict[str, Any]:
    """Utilisation figures for one simulated run.

    MFU counts the caller's MACs (the useful work) or else the executed
    nc_matmul MACs; HFU always counts the executed ones. The roofline bound
    is min(compute peak, arithmetic intensity x HBM bandwidth) for the HBM
    traffic this kernel actually moves, and MFU never exceeds it.
    ``roofline_percent`` is the slowest of the TensorE, VectorE/ScalarE and
    HBM times for ``work`` (by default the work read off the trace) at the
    chip's peak rates, over the time (``kernelopt.sim.roofline``).
    """
    total_ns = timeline.makespan_ns
    total_s = total_ns * 1e-9
    executed_macs = sum(i.macs for i in trace)
    macs = executed_macs if mac_count is None else int(mac_count)
    peak = params.peak_bf16_flops / (params.fp32_peak_divisor if fp32_inputs else 1.0)
    hbm_read = sum(i.hbm_read for i in trace)
    hbm_write = sum(i.hbm_write for i in trace)
    hbm_bytes = hbm_read + hbm_write
    dma = [i for i in trace if i.engine == "dma"]
    flops = 2.0 * macs
    if flops <= 0:
        mfu_max = 0.0
    elif hbm_bytes == 0:
        mfu_max = 100.0
    else:
        bound_flops = min(peak, flops / hbm_bytes * params.hbm_bytes_per_ns * 1e9)
        mfu_max = 100.0 * bound_flops / peak
    mfu = min(_percent(flops, total_s * peak), mfu_max) if total_s > 0 else 0.0
    busy = timeline.engine_busy_ns
    if work is None:
        work = RooflineWork.from_trace(trace, mac_count)
    if fp32_inputs and not work.fp32_matmul:
        work = dataclasses.replace(work, fp32_matmul=True)
    bound = roofline(work, PeakRates.of(params)).fields(total_s)
    return {
        "device": "sim",
        "instance_type": f"sim-{params.name}",
        "chip": params.name,
        "total_time": total_s,
        "total_active_time": timeline.active_ns * 1e-9,
        "mfu_estimated_percent": mfu,
        "mfu_max_achievable_estimated_percent": mfu_max,
        "mbu_estimated_percent": _percent(hbm_bytes, total_ns * params.hbm_bytes_per_ns),
        "hfu_estimated_percent": _percent(2.0 * executed_macs, total_s * peak)
        if total_s > 0
        else 0.0,
        "tensor_engine_active_time": busy["tensor"] * 1e-9,
        "vector_engine_active_time": busy["vector"] * 1e-9,
        "scalar_engine_active_time": busy["scalar"] * 1e-9,
        "gpsimd_engine_active_time": busy["gpsimd"] * 1e-9,
        "dma_active_time": busy["dma"] * 1e-9,
        "tensor_engine_active_time_percent": _percent(busy["tensor"], total_ns),
        "vector_engine_active_time_percent": _percent(busy["vector"], total_ns),
        "scalar_engine_active_time_percent": _percent(busy["scalar"], total_ns),
        "gpsimd_engine_active_time_percent": _percent(busy["gpsimd"], total_ns),
        "dma_active_time_percent": _percent(busy["dma"], total_ns),
        "hbm_read_bytes": hbm_read,
        "hbm_write_bytes": hbm_write,
        "dma_transfer_count": len(dma),
        "dma_transfer_total_bytes": sum(i.nbytes for i in dma),
        "matmul_instruction_count": sum(1 for i in trace if i.op == "nc_matmul"),
        "instruction_count": len(trace),
        "neuroncore_cycle_count": round(total_s * params.core_clock_hz),
        "mac_count": macs,
        **bound,
    }
