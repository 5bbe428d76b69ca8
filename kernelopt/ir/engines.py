"""Which engine runs each element-wise instruction: VectorE or ScalarE, derived, not a knob.

Some instructions must run on one engine (``activation`` on ScalarE; reductions,
``tensor_tensor`` and reciprocals on VectorE); ``tensor_scalar`` and ``tensor_copy``
(a PSUM drain by copy, a transpose brought back to SBUF) run on either on
NeuronCore-v3 (nki.isa.tensor_copy and nki.isa.tensor_scalar docs, Neuron SDK 2.28+:
"Supported engines ... NeuronCore v3+: Vector, Scalar, GpSimd"). The plan balances the
two so that neither finishes long after the other.
"""

from __future__ import annotations

from kernelopt.ir.derive import drain_adds
from kernelopt.ir.layout import buffer_dtype
from kernelopt.ir.model import KernelIR, Operator
from kernelopt.sim.cost import vector_speedup
from kernelopt.sim.trn2 import DEFAULT_PARAMS

# Element-wise instructions by the engine that must run them; the rest may run on either.
VECTOR_ONLY = ("tensor_tensor", "tensor_reduce", "reciprocal")
SCALAR_ONLY = ("activation",)
EITHER = ("tensor_scalar", "copy", "drain")  # a drain by add is a tensor_tensor: VectorE


def scaled_copy(op: Operator) -> bool:
    """An ``activation`` that only multiplies its data by its scale (``copy``, no bias,
    no row sum): ``tensor_scalar``'s multiply computes the same, on either engine."""
    return (
        op.kind == "activation"
        and op.attr("op") == "copy"
        and op.attr("bias") is None
        and "bias" not in op.attr("columns", ())
        and op.attr("reduce_res") is None
    )


def vector_speedup_of(ir: KernelIR, op: Operator) -> int:
    """VectorE's performance mode (``sim.cost.vector_speedup``) for ``op`` run on VectorE:
    a copy, a drain by copy, a ``tensor_scalar`` or a scaled copy (rendered as one)."""
    if op.kind in ("copy", "drain") and not drain_adds(ir, op):
        name = "tensor_copy"
    elif op.kind == "tensor_scalar" or scaled_copy(op):
        name = "tensor_scalar"
    else:
        return 1
    data, dst = ir.buffer[op.srcs[0]], ir.buffer[op.dst]
    dtypes = (buffer_dtype(ir, data), buffer_dtype(ir, dst))
    return vector_speedup(name, dtypes, psum="psum" in (data.memory, dst.memory))


def _seconds(elements: float, psum: bool, speedup: int = 1) -> dict[str, float]:
    """Streaming ``elements`` on each engine, at the simulator's rates: a PSUM operand
    costs VectorE two cycles an element and ScalarE one (``sim.trn2.Trn2Params``);
    VectorE's performance mode streams ``speedup`` elements a cycle."""
    p = DEFAULT_PARAMS
    vector = p.psum_read_cycles_per_element if psum else 1.0
    if p.vector_performance_mode:
        vector /= speedup
    scalar = p.scalar_psum_read_cycles_per_element if psum else 1.0
    return {
        "vector": elements * vector / p.vector_clock_hz,
        "scalar": elements * scalar / p.scalar_clock_hz,
    }


def engine_plan(ir: KernelIR) -> dict[str, str]:
    """The engine of every instruction that may run on VectorE or ScalarE.

    The fixed work of each engine (elements streamed at its own rate, a PSUM operand
    at its PSUM rate) is summed first, then each movable instruction, largest first,
    goes where the busier engine finishes sooner, so VectorE and ScalarE share the
    element-wise work. A tie stays on VectorE, the instructions' default engine.
    """
    load = {"vector": 0.0, "scalar": 0.0}
    movable: list[tuple[float, int, Operator, dict[str, float]]] = []
    for i, op in enumerate(ir.operators):
        buf = ir.buffer.get(op.srcs[0]) if op.srcs else None
        if buf is None:
            continue
        dp, df = buf.axes
        cost = _seconds(
            ir.dim[dp].size * ir.dim[df].size, buf.memory == "psum", vector_speedup_of(ir, op)
        )
        if (op.kind == "drain" and drain_adds(ir, op)) or op.kind in VECTOR_ONLY:
            load["vector"] += cost["vector"]
        elif op.kind in SCALAR_ONLY and not scaled_copy(op):
            load["scalar"] += cost["scalar"]
        elif op.kind in EITHER or scaled_copy(op):
            movable.append((-max(cost.values()), i, op, cost))
    plan: dict[str, str] = {}
    for _, _, op, cost in sorted(movable, key=lambda m: (m[0], m[1])):
        finish = {
            e: max(load[e] + cost[e], load[o])
            for e, o in (("vector", "scalar"), ("scalar", "vector"))
        }
        engine = "scalar" if finish["scalar"] < finish["vector"] else "vector"
        load[engine] += cost[engine]
        plan[op.name] = engine
    return plan
