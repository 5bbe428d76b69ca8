"""ActivationReduce: a row sum of an activation's result computed by the activation itself.

ScalarE can sum what an ``activation`` writes along the free axis in the same
instruction (``nki.isa.activation_reduce`` with ``reduce_op=nl.add`` and
``reduce_res``, in the beta-1 and the current API; the current one also spells it
``activation(..., reduce_cmd=reset_reduce)``), at about 64 cycles more than the
activation alone (NKI ISA reference). So
``tensor_reduce(add)(activation(x))`` needs no VectorE pass over the row: the square
of a layer norm's variance and the exp of a softmax carry their sums with them. A
square written as ``tensor_tensor(multiply)(x, x)`` (VectorE) becomes
``activation(square)(x)`` for the purpose: the same values, on ScalarE, with the sum.

The reduction keeps an operator of its own (kind ``fused_reduce``, no instruction),
so the column it produces still has a producer whose completion the derivation
places; the activation names the column in ``attrs["reduce_res"]``. The fused
instruction must cover the whole row at once (one instruction, one sum): the
derivation refuses a state where the activation fires inside a loop over the
reduced dim (check ``fused_reduce``), and the activation must read SBUF only (a PSUM
operand is one bank, one tile, per instruction).
"""

from __future__ import annotations

import dataclasses

from kernelopt.ir.derive import derive
from kernelopt.ir.model import KernelIR, Operator
from kernelopt.ir.sample import with_default_knobs

FUSED = "fused_reduce"


def fusable(ir: KernelIR, act: Operator, red: Operator) -> bool:
    """Whether ``red`` (a tensor_reduce) sums ``act``'s whole result along its free dim."""
    if act.kind != "activation" or act.attr("reduce_res") is not None:
        return False
    if red.kind != "tensor_reduce" or red.srcs != (act.dst,):
        return False
    if red.attr("op") != "add" or red.attr("negate"):
        return False  # ScalarE's reduction registers only sum (nki.isa.activation)
    if red.attr("reduce") != ir.buffer[act.dst].axes[1]:
        return False
    return all(ir.buffer[b].memory == "sbuf" for b in (act.dst, *act.srcs))


def as_square(op: Operator) -> Operator:
    """``tensor_tensor(multiply)(a, a)`` as the ``activation(square)(a)`` it equals (other
    ops unchanged), so the square can carry its row sum."""
    if op.kind != "tensor_tensor" or op.attr("op") != "multiply" or len(set(op.srcs)) != 1:
        return op
    return dataclasses.replace(
        op,
        name=op.name.replace("tensor_tensor", "activation", 1),
        kind="activation",
        srcs=op.srcs[:1],
        attrs=(("op", "square"),),
    )


class ActivationReduce:
    """Every ``tensor_reduce(add)`` of an activation's result fused into the activation.

    Pattern: ``activation(x, ...) -> sbuf_t -> tensor_reduce(add over t's free dim)
    -> sbuf_s``, every operand in SBUF. Result: the activation also writes
    ``sbuf_s`` (``reduce_res``); the reduction becomes a ``fused_reduce`` marker that
    issues nothing. ``sbuf_t`` stays (other ops may read it; the instruction writes
    it in any case).
    """

    name = "ActivationReduce"

    def apply(self, ir: KernelIR) -> KernelIR:
        operators = list(ir.operators)
        changed = False
        for i, red in enumerate(operators):
            producer = ir.producers.get(red.srcs[0]) if red.srcs else None
            act = None if producer is None else as_square(producer)
            if act is None or not fusable(ir, act, red):
                continue
            j = next(k for k, o in enumerate(operators) if o.name == producer.name)
            if operators[j] is not producer:
                continue  # a second sum of one activation: one reduce_res per instruction
            extra = (("reduce_dim", red.attr("reduce")), ("reduce_res", red.dst))
            operators[j] = dataclasses.replace(act, attrs=tuple(sorted((*act.attrs, *extra))))
            operators[i] = dataclasses.replace(
                red, name=red.name.replace("tensor_reduce", FUSED, 1), kind=FUSED
            )
            changed = True
        if not changed:
            return ir
        fused = dataclasses.replace(
            ir, operators=tuple(operators), variant=ir.variant_after(self.name), graph=None
        )
        return fused if not derive(fused)[1] else with_default_knobs(fused)
