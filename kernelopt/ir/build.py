"""``build_ir``: trace ``f_nkigym`` and lower its op graph to buffers and operators.

Every input gets an SBUF load buffer; a matmul writes a PSUM accumulator
drained into an SBUF result; a TensorE transpose writes PSUM copied to SBUF;
the other engines write SBUF directly; the returned tensor is stored to HBM.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kernelopt.ir.model import Dim, HbmTensor, KernelIR, Operator, PhysicalBuffer
from kernelopt.ir.ops import PMAX, NKIMatmul, NKITensorReduce, NKITranspose
from kernelopt.ir.trace import IRBuildError, Trace, TracedTensor, trace

FREE_TILE = 512  # widest free extent one engine instruction takes in these kernels


def _largest_divisor(size: int, limit: int) -> int:
    return next(t for t in range(min(size, limit), 0, -1) if size % t == 0)


def _dims(tr: Trace) -> tuple[dict[int, str], tuple[Dim, ...]]:
    """Global dims in order of first appearance, with their tile sizes."""
    roots: list[int] = []
    sizes: dict[int, int] = {}
    limits: dict[int, int] = {}
    reducing: set[int] = set()
    tensors = list(tr.params) + [op.output for op in tr.ops]
    for t in tensors:
        for i, axis in enumerate(t.axes):
            root = tr.find(axis)
            if root not in sizes:
                roots.append(root)
                sizes[root] = t.shape[i]
            # The first axis of every on-chip tile is the partition axis.
            cap = PMAX if i == 0 else FREE_TILE
            limits[root] = min(limits.get(root, cap), cap)
    for op in tr.ops:
        for label, limit in op.op.spec.limits:
            root = tr.find(op.labels[label])
            limits[root] = min(limits[root], limit)
        for label in op.op.spec.reduces:
            reducing.add(tr.find(op.labels[label]))
    names = {root: f"d{i}" for i, root in enumerate(roots)}
    dims = tuple(
        Dim(names[r], sizes[r], _largest_divisor(sizes[r], limits[r]), r in reducing) for r in roots
    )
    return names, dims


def build_ir(
    f_nkigym: Callable[..., Any],
    input_specs: dict[str, tuple[tuple[int, ...], str]],
    name: str = "kernel",
) -> KernelIR:
    """Trace ``f_nkigym`` on ``input_specs`` and lower it, with default knobs."""
    from kernelopt.ir.sample import with_default_knobs

    tr = trace(f_nkigym, input_specs)
    names, dims = _dims(tr)

    def dims_of(t: TracedTensor) -> tuple[str, str]:
        a, b = (names[tr.find(x)] for x in t.axes)
        return a, b

    buffers: list[PhysicalBuffer] = []
    operators: list[Operator] = []
    sbuf_of: dict[str, str] = {}  # traced tensor name -> SBUF buffer holding it
    pinned: dict[str, tuple[str, ...]] = {}  # traced tensor -> reducing dims upstream

    def add_buffer(buf: PhysicalBuffer) -> None:
        if any(b.name == buf.name for b in buffers):
            raise IRBuildError(f"two buffers would be named {buf.name!r}: rename a variable")
        if set(buf.pinned_full) & set(buf.axes):
            raise IRBuildError(f"{buf.name}: a reduced dimension reappears as an axis")
        buffers.append(buf)

    def pin_axis(name: str, dim: str) -> None:
        """A whole-row reader needs every tile of ``dim`` in the buffer at once."""
        i = next(i for i, b in enumerate(buffers) if b.name == name)
        buf = buffers[i]
        buffers[i] = dataclasses.replace(buf, pinned_full=tuple(sorted({*buf.pinned_full, dim})))

    inputs: list[HbmTensor] = []
    for p in tr.params:
        axes = dims_of(p)
        inputs.append(HbmTensor(p.name, (p.shape[0], p.shape[1]), p.dtype, axes))
        add_buffer(PhysicalBuffer(f"sbuf_{p.name}", "sbuf", axes, p.dtype, "load"))
        roles = ((axes[0], "partition"), (axes[1], "free"))
        operators.append(Operator(f"load_{p.name}", "load", f"sbuf_{p.name}", (p.name,), roles))
        sbuf_of[p.name], pinned[p.name] = f"sbuf_{p.name}", ()

    for op in tr.ops:
        v = op.output.name
        axes = dims_of(op.output)
        srcs = {role: sbuf_of[t.name] for role, t in op.operands.items()}
        upstream = tuple(sorted({d for t in op.operands.values() for d in pinned[t.name]}))
        label = {lab: names[tr.find(axis)] for lab, axis in op.labels.items()}
        psum, sbuf = f"psum_{v}", f"sbuf_{v}"
        out_roles = ((axes[0], "partition"), (axes[1], "free"))
        if isinstance(op.op, NKIMatmul):
            k = label["K"]
            add_buffer(PhysicalBuffer(psum, "psum", axes, "float32", "accumulator", (k,), upstream))
            add_buffer(
                PhysicalBuffer(
                    sbuf, "sbuf", axes, op.output.dtype, "result", (), tuple(sorted({*upstream, k}))
                )
            )
            roles = ((k, "reduce"), (label["M"], "stationary_free"), (label["N"], "moving_free"))
            operators.append(
                Operator(
                    f"matmul_{v}",
                    "matmul",
                    psum,
                    (srcs["stationary"], srcs["moving"]),
                    roles,
                    (k, label["M"], label["N"]),
                )
            )
            operators.append(
                Operator(f"drain_{v}", "drain", sbuf, (psum,), out_roles, (), (("reduce", k),))
            )
            pinned[v] = tuple(sorted({*upstream, k}))
        elif isinstance(op.op, NKITranspose):
            add_buffer(
                PhysicalBuffer(psum, "psum", axes, op.output.dtype, "transposed", (), upstream)
            )
            add_buffer(PhysicalBuffer(sbuf, "sbuf", axes, op.output.dtype, "result", (), upstream))
            roles = ((label["P"], "partition_in"), (label["F"], "free_in"))
            operators.append(
                Operator(
                    f"transpose_{v}",
                    "transpose",
                    psum,
                    (srcs["data"],),
                    roles,
                    (label["P"], label["F"]),
                )
            )
            operators.append(Operator(f"copy_{v}", "copy", sbuf, (psum,), out_roles))
            pinned[v] = upstream
        elif isinstance(op.op, NKITensorReduce):
            f = label["F"]
            pin_axis(srcs["data"], f)
            pinned[v] = tuple(sorted({*upstream, f}))
            add_buffer(PhysicalBuffer(sbuf, "sbuf", axes, "float32", "result", (), pinned[v]))
            roles = ((label["P"], "partition"), (f, "reduce"), (label["ONE"], "free"))
            attrs = (("op", op.attrs["op"]), ("reduce", f))
            operators.append(
                Operator(
                    f"tensor_reduce_{v}", "tensor_reduce", sbuf, (srcs["data"],), roles, (), attrs
                )
            )
        else:
            add_buffer(PhysicalBuffer(sbuf, "sbuf", axes, op.output.dtype, "result", (), upstream))
            attrs = tuple(sorted((k, val) for k, val in op.attrs.items() if val is not None))
            operators.append(
                Operator(
                    f"{op.op.kind}_{v}",
                    op.op.kind,
                    sbuf,
                    tuple(srcs.values()),
                    out_roles,
                    (),
                    attrs,
                )
            )
            pinned[v] = upstream
        sbuf_of[v] = sbuf

    ret = tr.output
    if ret.name not in sbuf_of or ret.name in {p.name for p in tr.params}:
        raise IRBuildError("f_nkigym must return the result of an op, not an input")
    out_axes = dims_of(ret)
    param_names = {p.name for p in tr.params}
    out_name = "out" if "out" not in param_names else "out_hbm"
    output = HbmTensor(out_name, (ret.shape[0], ret.shape[1]), ret.dtype, out_axes)
    roles = ((out_axes[0], "partition"), (out_axes[1], "free"))
    operators.append(Operator(f"store_{ret.name}", "store", out_name, (sbuf_of[ret.name],), roles))
    ir = KernelIR(
        func_name=name,
        inputs=tuple(inputs),
        output=output,
        dims=dims,
        buffers=tuple(buffers),
        operators=tuple(operators),
        loop_order=(),
    )
    return with_default_knobs(ir)
