"""MAC counts for MFU: the TensorE multiply-accumulates of the math itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernelopt.ir.graph_rewrites import is_row_scale
from kernelopt.ir.ops import NKIMatmul
from kernelopt.ir.trace import trace
from kernelopt.sim.cost import vector_speedup
from kernelopt.sim.roofline import RooflineWork
from kernelopt.workload import numpy_dtype


def compute_mac_count(
    f_nkigym: Callable[..., Any], input_specs: dict[str, tuple[tuple[int, ...], str]]
) -> int:
    """K * M * N summed over every matmul; transposes and other engines add none."""
    total = 0
    for op in trace(f_nkigym, input_specs).ops:
        if isinstance(op.op, NKIMatmul):
            k, m = op.operands["stationary"].shape
            total += k * m * op.operands["moving"].shape[1]
    return total


# Element-wise ops of the graph and the engine that must run them (None: either one).
_ELEMENTWISE_ENGINE = {
    "activation": "scalar",
    "tensor_tensor": "vector",
    "tensor_reduce": "vector",
    "reciprocal": "vector",
    "tensor_scalar": None,
}


def roofline_work(
    f_nkigym: Callable[..., Any], input_specs: dict[str, tuple[tuple[int, ...], str]]
) -> RooflineWork:
    """The math's work, whatever the knobs: MACs, element-wise elements, HBM bytes.

    Each element-wise op touches every element of its data once; a transpose
    and a PSUM drain are data movement the math does not need, so they count
    nothing. HBM traffic is every input read once and the result written once.
    The element-wise work is also counted as each of the IR's variants computes
    the same math (``fused_elementwise``): a row sum carried by the activation
    that writes the row, a row scale folded into an activation or a drain, cost no
    pass of their own, so a kernel built that way is still no faster than its
    roofline.
    """
    tr = trace(f_nkigym, input_specs)
    macs = vector = scalar = either = fast = fp32_macs = 0
    for op in tr.ops:
        if isinstance(op.op, NKIMatmul):
            k, m = op.operands["stationary"].shape
            macs += k * m * op.operands["moving"].shape[1]
            if numpy_dtype(op.operands["stationary"].dtype).itemsize >= 4:
                fp32_macs += k * m * op.operands["moving"].shape[1]
            continue
        engine = _ELEMENTWISE_ENGINE.get(op.op.kind, "")
        if is_row_scale(op):
            engine = None  # data * scale: tensor_scalar's multiply, on either engine
        if engine == "":
            continue
        data = next(iter(op.operands.values()))
        elements = int(np.prod(data.shape))
        if engine == "scalar":
            scalar += elements
        elif engine == "vector":
            vector += elements
        elif _vector_fast(data.dtype, op.output.dtype):
            fast += elements  # VectorE's performance mode may stream it
        else:
            either += elements
    hbm = sum(_nbytes(t.shape, t.dtype) for t in (*tr.params, tr.output))
    fused = _variant_elementwise(f_nkigym, input_specs)
    return RooflineWork(
        macs, vector, scalar, either, hbm, fp32_macs > 0, fused, fast, fp32_macs=fp32_macs
    )


def _vector_fast(data: str, dst: str) -> bool:
    """Whether VectorE's performance mode streams a ``tensor_scalar`` from ``data`` to
    ``dst`` faster in SBUF (``sim.cost.vector_speedup``, the rule the simulator times)."""
    dtypes = (str(numpy_dtype(data)), str(numpy_dtype(dst)))
    return vector_speedup("tensor_scalar", dtypes, psum=False) > 1


def _variant_elementwise(
    f_nkigym: Callable[..., Any], input_specs: dict[str, tuple[tuple[int, ...], str]]
) -> tuple[tuple[int, int, int, int], ...]:
    """``(vector, scalar, either, fast_either)`` elements of each distinct variant of the
    KernelIR (``kernelopt ir show``); none when the graph does not lower to one."""
    from kernelopt.ir.build import build_ir
    from kernelopt.ir.engines import scaled_copy, vector_speedup_of
    from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations
    from kernelopt.ir.trace import IRBuildError

    try:
        base = build_ir(f_nkigym, input_specs)
    except IRBuildError:
        return ()
    counts: set[tuple[int, int, int, int]] = set()
    for _, ir in enumerate_rewrite_combinations(base, list(REWRITES.values())):
        size = {d.name: d.size for d in ir.dims}
        count = {"vector": 0, "scalar": 0, None: 0, "fast": 0}
        for op in ir.operators:
            engine = _ELEMENTWISE_ENGINE.get(op.kind, "")
            if scaled_copy(op):
                engine = None
            if engine is None and vector_speedup_of(ir, op) > 1:
                engine = "fast"
            if engine != "":
                count[engine] += int(np.prod([size[a] for a in ir.buffer[op.srcs[0]].axes]))
        counts.add((count["vector"], count["scalar"], count[None], count["fast"]))
    return tuple(sorted(counts))


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return int(np.prod(shape)) * numpy_dtype(dtype).itemsize
