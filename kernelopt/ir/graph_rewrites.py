"""Rewrites of the math itself: the traced op graph changed, then lowered again.

They keep what the workload computes (an identity of the algebra, exact in
real arithmetic) and change which instructions compute it. A lowering rewrite
(``rewrites.py``) cannot follow one: it drops the graph, so these come first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator

from kernelopt.ir.build import lower
from kernelopt.ir.model import KernelIR
from kernelopt.ir.ops import (
    NKIActivation,
    NKIMatmul,
    NKITensorScalar,
    NKITensorTensor,
    NKITranspose,
)
from kernelopt.ir.trace import (
    Trace,
    TracedOp,
    TracedTensor,
    fresh_name,
    narrow_matmul_operands,
    widen_scale_columns,
)


def is_row_scale(op: TracedOp) -> bool:
    """``data`` times numbers and [P, 1] columns only: a scale of each row of ``data``.

    Either spelling the ISA has: ``tensor_scalar`` whose every op multiplies, or an
    ``activation`` that copies ``data * scale`` with no bias.
    """
    if isinstance(op.op, NKIActivation):
        return (
            op.attrs.get("op") == "copy"
            and "bias" not in op.operands
            and (op.attrs.get("bias") is None)
        )
    if not isinstance(op.op, NKITensorScalar):
        return False
    ops = [i for i in ("0", "1") if op.attrs.get("op" + i) is not None]
    return bool(ops) and all(_scales(op.attrs, i) for i in ops)


def _scales(attrs: dict[str, object], i: str) -> bool:
    """Whether ``tensor_scalar`` op ``i`` scales its data: a multiply, or a division of
    the data by the operand (a division of the operand by the data is not linear)."""
    name = attrs.get("op" + i)
    return name == "multiply" or (name == "divide" and not attrs.get("reverse" + i))


def _first_rewrite(
    ir: KernelIR, name: str, candidates: Callable[[Trace], Iterable[Trace | None]]
) -> KernelIR:
    """``ir`` lowered again from the first rewritten graph ``candidates`` yields for its
    traced graph (tried lazily, in order), as variant ``name``; ``ir`` itself when none
    applies or it carries no traced graph."""
    tr = ir.graph
    if not isinstance(tr, Trace):
        return ir
    for rewritten in candidates(tr):
        if rewritten is not None:
            # A rewrite may pair a matmul with an operand of another dtype.
            rewritten = widen_scale_columns(narrow_matmul_operands(rewritten))
            return lower(rewritten, ir.func_name, ir.variant_after(name))
    return ir


def _readers(tr: Trace, tensor: TracedTensor) -> list[TracedOp]:
    return [o for o in tr.ops if any(t.name == tensor.name for t in o.operands.values())]


class ScaleAfterMatmul:
    """A per-row scale moved past a transpose and the matmul it feeds.

    Pattern: ``matmul(stationary=transpose(x * c), moving=w)``, where ``c`` is a
    [P, 1] column (one value per row of ``x``) or a number, and ``x * c`` a
    ``tensor_scalar`` multiply (or a division of ``x`` by ``c``: a softmax's
    normalisation) or an ``activation`` copy with that scale (or the
    second op of a ``tensor_scalar`` ``(x op0 a) * c``, such as a layer norm's
    centring then scaling: the centring stays, ``x`` below is then ``x op0 a``,
    and the transpose waits for the mean only). Scaling row ``m`` of
    ``x`` scales row ``m`` of ``x @ w`` by the same factor, so the result is
    ``c * matmul(stationary=transpose(x), moving=w)``: the scale runs once on the
    matmul's result (it may read the PSUM accumulator, FusedDrain) and the
    transpose reads ``x`` itself (a loaded input: LoadTranspose can make it a
    transposing DMA), so neither waits for the row's norm. Every matmul the
    transpose feeds as its stationary operand gets the scale; the product is
    kept in fp32 until the scale, so the result is rounded once, as before. An rms
    norm's weight in between does not stop it: an element-wise multiply of ``x * c``
    by a full tensor before the transpose (``_weighting``), or a [K, 1] column scaling
    the transposed rows after it (``_through_column_scale``), commutes with ``c``.
    """

    name = "ScaleAfterMatmul"

    def apply(self, ir: KernelIR) -> KernelIR:
        return _first_rewrite(ir, self.name, self._candidates)

    def _candidates(self, tr: Trace) -> Iterator[Trace | None]:
        for scale in tr.ops:
            if is_row_scale(scale) or _is_shift_then_scale(scale):
                for reader in _readers(tr, scale.output):
                    weight = _weighting(tr, reader, scale.output)
                    if weight is None:
                        yield self._rewrite(tr, scale, reader)
                    else:
                        yield self._rewrite(tr, scale, weight, between=reader)

    def _rewrite(
        self, tr: Trace, scale: TracedOp, transpose: TracedOp, between: TracedOp | None = None
    ) -> Trace | None:
        """``between``: an element-wise multiply by a full tensor (an rms norm's weight
        at x's shape) between the scale and the transpose; the row scale moves past it
        too, since ``(x * c) * g`` is ``(x * g) * c``."""
        if not isinstance(transpose.op, NKITranspose) or transpose.output.name == tr.output.name:
            return None
        fed = _through_column_scale(tr, transpose.output)
        matmuls = _readers(tr, fed)
        for m in matmuls:
            feeds = [role for role, t in m.operands.items() if t.name == fed.name]
            if not isinstance(m.op, NKIMatmul) or feeds != ["stationary"]:
                return None  # the transposed rows are read some other way: keep them scaled
        if _is_shift_then_scale(scale):
            shift, factor = _split(tr, scale)
            data = shift.output
        else:
            shift, factor = None, scale
            data = scale.operands["data"]
        columns = {role: t for role, t in factor.operands.items() if role != "data"}
        ops: list[TracedOp] = []
        for op in tr.ops:
            if op is scale:
                if shift is not None:
                    ops.append(shift)
                if len(_readers(tr, scale.output)) > 1:
                    ops.append(op)  # the scaled rows have other readers: they keep it
            elif op is between:
                swapped = {
                    r: data if t.name == scale.output.name else t for r, t in op.operands.items()
                }
                ops.append(dataclasses.replace(op, operands=swapped))
            elif op is transpose and between is None:
                ops.append(dataclasses.replace(op, operands={"data": data}))
            elif any(op is m for m in matmuls):
                out = op.output
                raw = dataclasses.replace(
                    out, name=fresh_name(tr, f"{out.name}_unscaled"), dtype="float32"
                )
                ops.append(dataclasses.replace(op, output=raw))
                labels = {"P": out.axes[0], "F": out.axes[1]}
                labels.update({f"_{role}": factor.labels[f"_{role}"] for role in columns})
                operands = {"data": raw, **columns}
                ops.append(TracedOp(factor.op, operands, dict(factor.attrs), out, labels))
            else:
                ops.append(op)
        return dataclasses.replace(tr, ops=tuple(ops))


def _weighting(tr: Trace, op: TracedOp, scaled: TracedTensor) -> TracedOp | None:
    """The transpose reading ``op``'s result, when ``op`` multiplies ``scaled`` element by
    element by another tensor of its shape and that transpose is its one reader."""
    if not isinstance(op.op, NKITensorTensor) or op.attrs.get("op") != "multiply":
        return None
    if [t.name for t in op.operands.values()].count(scaled.name) != 1:
        return None
    readers = _readers(tr, op.output)
    if len(readers) != 1 or not isinstance(readers[0].op, NKITranspose):
        return None
    return readers[0]


def _through_column_scale(tr: Trace, transposed: TracedTensor) -> TracedTensor:
    """What the matmuls read of ``transposed``: the tensor itself, or, where its one
    reader scales its rows (``x^T * g``, g a [K, 1] column such as an rms norm's weight
    applied after the transpose), that scale's result. Scaling x's rows (columns of
    x^T) and x^T's rows commute, so the row scale of x still moves past both."""
    readers = _readers(tr, transposed)
    if len(readers) != 1 or readers[0].output.name == tr.output.name:
        return transposed
    mid = readers[0]
    if not is_row_scale(mid) or mid.operands["data"].name != transposed.name:
        return transposed
    if any(t.name == transposed.name for r, t in mid.operands.items() if r != "data"):
        return transposed
    return mid.output


def _is_shift_then_scale(op: TracedOp) -> bool:
    """``(data op0 a) * c``: a ``tensor_scalar`` whose second op scales (multiplies, or
    divides the data) and whose first does anything else, e.g. a layer norm's centring."""
    return (
        isinstance(op.op, NKITensorScalar)
        and op.attrs.get("op1") is not None
        and _scales(op.attrs, "1")
        and not _scales(op.attrs, "0")
    )


def _split(tr: Trace, op: TracedOp) -> tuple[TracedOp, TracedOp]:
    """``(data op0 a) * c`` as two ops: the shift ``data op0 a`` (a new tensor) and the
    scale ``* c``, whose ``data`` is left for the caller to set."""
    attrs = op.attrs
    shift_attrs = {"op0": attrs["op0"], "reverse0": attrs.get("reverse0", False)}
    scale_attrs: dict[str, object] = {"op0": attrs["op1"], "reverse0": False}
    shift_operands = {"data": op.operands["data"]}
    shift_labels = {"P": op.labels["P"], "F": op.labels["F"]}
    scale_operands: dict[str, TracedTensor] = {}
    scale_labels: dict[str, int] = {}
    if "operand0" in op.operands:
        shift_operands["operand0"] = op.operands["operand0"]
        shift_labels["_operand0"] = op.labels["_operand0"]
    else:
        shift_attrs["operand0"] = attrs["operand0"]
    if "operand1" in op.operands:
        scale_operands["operand0"] = op.operands["operand1"]
        scale_labels["_operand0"] = op.labels["_operand1"]
    else:
        scale_attrs["operand0"] = attrs["operand1"]
    shifted = dataclasses.replace(op.output, name=fresh_name(tr, f"{op.output.name}_shifted"))
    shift = TracedOp(op.op, shift_operands, shift_attrs, shifted, shift_labels)
    return shift, TracedOp(op.op, scale_operands, scale_attrs, op.output, scale_labels)


def _producer(tr: Trace, tensor: TracedTensor) -> TracedOp | None:
    return next((o for o in tr.ops if o.output.name == tensor.name), None)


def _pure_scale(op: TracedOp) -> tuple[str, TracedTensor | float] | None:
    """``(column label, factor)`` when ``op`` only multiplies ``data`` by one column or
    number: a one-op ``tensor_scalar`` multiply, or an ``activation`` copy without bias."""
    if isinstance(op.op, NKITensorScalar):
        if op.attrs.get("op0") != "multiply" or op.attrs.get("op1") is not None:
            return None
        return "_operand0", op.operands.get("operand0", op.attrs.get("operand0"))
    if isinstance(op.op, NKIActivation) and is_row_scale(op):
        return "_scale", op.operands.get("scale", op.attrs.get("scale", 1.0))
    return None


class ScaleIntoActivation:
    """A row scale folded into the activation that reads it: one pass instead of two.

    Pattern: ``activation(f, bias=b)(data=x * c)`` with no scale of its own, where
    ``x * c`` is a one-op ``tensor_scalar`` multiply or an ``activation`` copy (``c``
    a [P, 1] column or a number). ScalarE computes ``f(data * scale + bias)`` in one
    instruction, so the result is ``activation(f, scale=c, bias=b)(data=x)``, exact
    in real arithmetic (the scaled rows are no longer rounded to their dtype before
    ``f``). The scaled rows stay where something else reads them too.
    """

    name = "ScaleIntoActivation"

    def apply(self, ir: KernelIR) -> KernelIR:
        return _first_rewrite(ir, self.name, lambda tr: (self._rewrite(tr, op) for op in tr.ops))

    def _rewrite(self, tr: Trace, outer: TracedOp) -> Trace | None:
        if not isinstance(outer.op, NKIActivation) or "scale" in outer.operands:
            return None
        if outer.attrs.get("scale", 1.0) != 1.0:
            return None
        inner = _producer(tr, outer.operands["data"])
        found = None if inner is None else _pure_scale(inner)
        if inner is None or found is None:
            return None
        label, factor = found
        operands = {**outer.operands, "data": inner.operands["data"]}
        attrs, labels = dict(outer.attrs), dict(outer.labels)
        if isinstance(factor, TracedTensor):
            operands["scale"] = factor
            attrs.pop("scale", None)
            labels["_scale"] = inner.labels[label]
        else:
            attrs["scale"] = float(factor)
        fused = TracedOp(outer.op, operands, attrs, outer.output, labels)
        keep_inner = len(_readers(tr, inner.output)) > 1
        ops = [fused if op is outer else op for op in tr.ops if op is not inner or keep_inner]
        return dataclasses.replace(tr, ops=tuple(ops))


def _one_op(op: TracedOp) -> bool:
    """A ``tensor_scalar`` that applies one op (``op0``) and no second."""
    return isinstance(op.op, NKITensorScalar) and op.attrs.get("op1") is None


class ChainedTensorScalars:
    """Two one-op ``tensor_scalar`` instructions in a row become one with two ops.

    Pattern: ``b = tensor_scalar(op0=f, operand0=a)(data=x)``, then
    ``tensor_scalar(op0=g, operand0=c)(data=b)``, with ``b`` read by nothing else (``a``
    and ``c`` numbers or [P, 1] columns). The ISA's ``tensor_scalar`` computes
    ``(data op0 operand0) op1 operand1`` in one pass, either operand a column, and
    "performing one operator has the same performance cost as performing two" (the
    ``nki.isa.tensor_scalar`` reference, SDK 2.33), so the result is
    ``tensor_scalar(op0=f, operand0=a, op1=g, operand1=c)(data=x)``: the engine
    streams the rows once instead of twice (a layer norm's centring then scaling),
    exact in real arithmetic (``b`` is no longer rounded to its dtype). The ALU
    operators here are all arithmetic, as the reference requires of the two.
    Every such pair is fused, first pairs first: a chain of three leaves the third.
    """

    name = "ChainedTensorScalars"

    def apply(self, ir: KernelIR) -> KernelIR:
        return _first_rewrite(ir, self.name, lambda tr: iter([self._rewrite(tr)]))

    def _rewrite(self, tr: Trace) -> Trace | None:
        current, fused_any = tr, False
        for outer in tr.ops:
            inner = _producer(current, outer.operands["data"]) if _one_op(outer) else None
            if inner is None or not _one_op(inner) or inner.output.name == tr.output.name:
                continue
            if len(_readers(current, inner.output)) != 1:
                continue  # the intermediate rows have other readers: they keep it
            fused = self._fused(inner, outer)
            ops = [fused if o is outer else o for o in current.ops if o is not inner]
            current, fused_any = dataclasses.replace(current, ops=tuple(ops)), True
        return current if fused_any else None

    @staticmethod
    def _fused(inner: TracedOp, outer: TracedOp) -> TracedOp:
        attrs: dict[str, object] = {
            "op0": inner.attrs["op0"],
            "reverse0": inner.attrs.get("reverse0", False),
            "op1": outer.attrs["op0"],
            "reverse1": outer.attrs.get("reverse0", False),
        }
        operands = {"data": inner.operands["data"]}
        labels = {"P": outer.labels["P"], "F": outer.labels["F"]}
        for i, op in (("0", inner), ("1", outer)):
            if "operand0" in op.operands:
                operands["operand" + i] = op.operands["operand0"]
                labels["_operand" + i] = op.labels["_operand0"]
            else:
                attrs["operand" + i] = op.attrs["operand0"]
        return TracedOp(outer.op, operands, attrs, outer.output, labels)


GRAPH_REWRITES = (ScaleAfterMatmul(), ScaleIntoActivation(), ChainedTensorScalars())
