"""The fake device's profile: neuron-profile style summary fields of one
execution, from the timeline ``timing.time_trace`` gives.

Field names follow the Neuron Profiler User Guide's summary (see
``timing.py`` for the sources of the numbers); like ``timing.py``, this file
reads nothing of kernelopt's cost model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelopt.testing.fake_trn2.timing import (
    FP32_RATE_DIVISOR,
    HBM_BYTES_PER_NS,
    LAUNCH_NS,
    PEAK_BF16_FLOPS,
    TENSOR_HZ,
    time_trace,
)


def profile(
    trace: Sequence[Any],
    allocations: Sequence[Any],
    *,
    mac_count: int | None = None,
    fp32_inputs: bool = False,
    scheduler_on: bool = True,
) -> dict[str, Any]:
    """neuron-profile style summary fields of one execution on the fake device."""
    run = time_trace(trace, allocations, scheduler_on)
    total_ns = run.total_ns
    total_s = total_ns * 1e-9
    executed = sum(int(i.macs) for i in trace)
    macs = executed if mac_count is None else int(mac_count)
    peak = PEAK_BF16_FLOPS / (FP32_RATE_DIVISOR if fp32_inputs else 1.0)
    hbm_read = sum(int(i.hbm_read) for i in trace)
    hbm_write = sum(int(i.hbm_write) for i in trace)
    dma = [i for i in trace if i.engine == "dma"]

    def pct(part: float) -> float:
        return min(100.0, 100.0 * part / total_ns) if total_ns > 0 else 0.0

    # The MFU ceiling of this kernel's own work: its matmuls at the peak rate against
    # its HBM traffic at the link's rate, whichever is slower. The field is in the
    # profiler's summary (Neuron Profiler User Guide); how the real tool derives it is
    # unverified, and this is the plainest roofline reading of its name.
    tensor_ns = 2 * macs / peak * 1e9
    bound_ns = max(tensor_ns, (hbm_read + hbm_write) / HBM_BYTES_PER_NS)
    ceiling = 100.0 * tensor_ns / bound_ns if bound_ns > 0 else 0.0

    out: dict[str, Any] = {
        "device": "fake-trn2",
        "instance_type": "trn2.48xlarge",
        "total_time": total_s,
        "total_active_time": max(0.0, total_ns - LAUNCH_NS) * 1e-9,
        "mfu_estimated_percent": 100.0 * 2 * macs / (total_s * peak) if total_s > 0 else 0.0,
        "mfu_max_achievable_estimated_percent": ceiling,
        "hfu_estimated_percent": 100.0 * 2 * executed / (total_s * peak) if total_s > 0 else 0.0,
        "mbu_estimated_percent": pct((hbm_read + hbm_write) / HBM_BYTES_PER_NS),
        "hbm_read_bytes": hbm_read,
        "hbm_write_bytes": hbm_write,
        "dma_transfer_count": len(dma),
        "dma_transfer_total_bytes": sum(int(i.nbytes) for i in dma),
        "matmul_instruction_count": sum(1 for i in trace if i.op == "nc_matmul"),
        "instruction_count": len(trace),
        "neuroncore_cycle_count": round(total_s * TENSOR_HZ),
        "mac_count": macs,
    }
    names = {
        "tensor": "tensor_engine",
        "vector": "vector_engine",
        "scalar": "scalar_engine",
        "gpsimd": "gpsimd_engine",
        "dma": "dma",
    }
    for engine, name in names.items():
        out[f"{name}_active_time"] = run.busy_ns[engine] * 1e-9
        out[f"{name}_active_time_percent"] = pct(run.busy_ns[engine])
    return out
