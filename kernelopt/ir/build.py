"""``build_ir``: trace ``f_nkigym`` and lower its op graph to buffers and operators.

Every input gets an SBUF load buffer; a matmul writes a PSUM accumulator
drained into an SBUF result; a TensorE transpose writes PSUM copied to SBUF;
the other engines write SBUF directly; the returned tensor is stored to HBM.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
from collections.abc import Callable
from typing import Any

from kernelopt.ir.model import Dim, HbmTensor, KernelIR, Operator, PhysicalBuffer
from kernelopt.ir.ops import PMAX, NKIMatmul, NKITensorReduce, NKITranspose
from kernelopt.ir.trace import IRBuildError, Trace, TracedOp, TracedTensor, trace

FREE_TILE = 512  # widest free extent one engine instruction takes in these kernels
# The modules a rendered kernel names inside its body (`import nki.isa as nisa`,
# `import nki.language as nl`): a parameter of either name would hide it there.
MODULE_ALIASES = {"nisa": "nki.isa", "nl": "nki.language"}
Pins = tuple[str, ...]
Labels = dict[str, str]


def _largest_divisor(size: int, limit: int) -> int:
    return next(t for t in range(min(size, limit), 0, -1) if size % t == 0)


def _overlapping(size: int, limit: int) -> tuple[int, int] | None:
    """(tile, stride) of the fewest tiles of at most ``limit`` that cover ``size``
    at a whole-number stride no longer than the tile (the last tile ends at
    ``size``), with the smallest such tile: 257 -> three tiles of 87 at 85."""
    fewest = -(-size // limit)
    for n in range(max(fewest, 2), fewest + 8):
        for tile in range(-(-size // n), limit + 1):
            stride, rest = divmod(size - tile, n - 1)
            if not rest and 0 < stride < tile:
                return tile, stride
    return None


def _dim(name: str, size: int, limit: int, reducing: bool) -> Dim:
    """Tiles of the largest divisor of ``size`` within ``limit``; a parallel dim whose
    divisor is under half the limit (257 rows: tiles of 1) takes overlapping tiles
    when they are fewer. A reducing dim cannot: its overlap would be summed twice."""
    tile = _largest_divisor(size, limit)
    if reducing or 2 * tile >= limit:
        return Dim(name, size, tile, reducing)
    overlap = _overlapping(size, limit)
    whole = Dim(name, size, tile, reducing)
    if overlap is None:
        return whole
    overlapping = Dim(name, size, overlap[0], reducing, stride=overlap[1])
    return overlapping if overlapping.num_tiles < whole.num_tiles else whole


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
    dims = tuple(_dim(names[r], sizes[r], limits[r], r in reducing) for r in roots)
    return names, dims


def _roles(axes: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return ((axes[0], "partition"), (axes[1], "free"))


class _Lowering:
    """Accumulates buffers and operators while walking the traced ops in order."""

    def __init__(self, tr: Trace, names: dict[int, str]) -> None:
        self.tr, self.names = tr, names
        self.buffers: list[PhysicalBuffer] = []
        self.operators: list[Operator] = []
        self.sbuf_of: dict[str, str] = {}  # traced tensor -> SBUF buffer holding it
        self.inputs = {p.name for p in tr.params}
        self.pinned: dict[str, tuple[str, ...]] = {}  # traced tensor -> reduced dims upstream

    def axes(self, t: TracedTensor) -> tuple[str, str]:
        a, b = (self.names[self.tr.find(x)] for x in t.axes)
        return a, b

    def fresh(self, prefix: str, tensor: str) -> str:
        """``{prefix}_{tensor}``, the buffer's name, unless an input has that name (inputs
        ``w`` and ``sbuf_w``): the kernel's parameters keep the workload's names, so the
        buffer takes trailing underscores instead."""
        name = f"{prefix}_{tensor}"
        while name in self.inputs:
            name += "_"
        return name

    def add(self, buf: PhysicalBuffer) -> None:
        if any(b.name == buf.name for b in self.buffers):
            raise IRBuildError(f"two buffers would be named {buf.name!r}: rename a variable")
        if set(buf.pinned_full) & set(buf.axes):
            raise IRBuildError(f"{buf.name}: a reduced dimension reappears as an axis")
        self.buffers.append(buf)

    def pin_axis(self, name: str, dim: str) -> None:
        """A whole-row reader needs every tile of ``dim`` in the buffer at once."""
        i = next(i for i, b in enumerate(self.buffers) if b.name == name)
        buf = self.buffers[i]
        pinned = tuple(sorted({*buf.pinned_full, dim}))
        self.buffers[i] = dataclasses.replace(buf, pinned_full=pinned)

    def load(self, p: TracedTensor) -> HbmTensor:
        axes = self.axes(p)
        buf = self.fresh("sbuf", p.name)
        self.add(PhysicalBuffer(buf, "sbuf", axes, p.dtype, "load"))
        self.operators.append(Operator(f"load_{p.name}", "load", buf, (p.name,), _roles(axes)))
        self.sbuf_of[p.name], self.pinned[p.name] = buf, ()
        return HbmTensor(p.name, (p.shape[0], p.shape[1]), p.dtype, axes)

    def op(self, op: TracedOp) -> None:
        v = op.output.name
        srcs = {role: self.sbuf_of[t.name] for role, t in op.operands.items()}
        upstream = tuple(sorted({d for t in op.operands.values() for d in self.pinned[t.name]}))
        # A dim reduced upstream that comes back as an axis of this result (x * rsqrt(sum(x^2))
        # along x's row) is not pinned: the derivation decides whether the row's
        # reduction completes before this op walks that dim again.
        upstream = tuple(d for d in upstream if d not in self.axes(op.output))
        label = {lab: self.names[self.tr.find(axis)] for lab, axis in op.labels.items()}
        if isinstance(op.op, NKIMatmul):
            self.pinned[v] = self.matmul(op, srcs, upstream, label)
        elif isinstance(op.op, NKITranspose):
            self.pinned[v] = self.transpose(op, srcs, upstream, label)
        elif isinstance(op.op, NKITensorReduce):
            self.pinned[v] = self.reduce(op, srcs, upstream, label)
        else:
            self.pinned[v] = self.elementwise(op, srcs, upstream)
        self.sbuf_of[v] = self.fresh("sbuf", v)

    def matmul(self, op: TracedOp, srcs: dict[str, str], upstream: Pins, label: Labels) -> Pins:
        """PSUM accumulates over K; a drain moves the finished sum to SBUF."""
        v, axes, k = op.output.name, self.axes(op.output), label["K"]
        psum, sbuf = self.fresh("psum", v), self.fresh("sbuf", v)
        pins = tuple(sorted({*upstream, k}))
        self.add(PhysicalBuffer(psum, "psum", axes, "float32", "accumulator", (k,), upstream))
        self.add(PhysicalBuffer(sbuf, "sbuf", axes, op.output.dtype, "result", (), pins))
        roles = ((k, "reduce"), (label["M"], "stationary_free"), (label["N"], "moving_free"))
        operands = (srcs["stationary"], srcs["moving"])
        required = (k, label["M"], label["N"])
        self.operators.append(Operator(f"matmul_{v}", "matmul", psum, operands, roles, required))
        drain = Operator(f"drain_{v}", "drain", sbuf, (psum,), _roles(axes), (), (("reduce", k),))
        self.operators.append(drain)
        return pins

    def transpose(self, op: TracedOp, srcs: dict[str, str], upstream: Pins, label: Labels) -> Pins:
        """TensorE writes the transpose to PSUM; a copy brings it back to SBUF."""
        v, axes, dtype = op.output.name, self.axes(op.output), op.output.dtype
        psum, sbuf = self.fresh("psum", v), self.fresh("sbuf", v)
        self.add(PhysicalBuffer(psum, "psum", axes, dtype, "transposed", (), upstream))
        self.add(PhysicalBuffer(sbuf, "sbuf", axes, dtype, "result", (), upstream))
        roles = ((label["P"], "partition_in"), (label["F"], "free_in"))
        required = (label["P"], label["F"])
        data = (srcs["data"],)
        self.operators.append(Operator(f"transpose_{v}", "transpose", psum, data, roles, required))
        self.operators.append(Operator(f"copy_{v}", "copy", sbuf, (psum,), _roles(axes)))
        return upstream

    def reduce(self, op: TracedOp, srcs: dict[str, str], upstream: Pins, label: Labels) -> Pins:
        """One instruction per row block, reading every tile of the reduced dim."""
        v, axes, f = op.output.name, self.axes(op.output), label["F"]
        self.pin_axis(srcs["data"], f)
        pins = tuple(sorted({*upstream, f}))
        sbuf = self.fresh("sbuf", v)
        self.add(PhysicalBuffer(sbuf, "sbuf", axes, "float32", "result", (), pins))
        roles = ((label["P"], "partition"), (f, "reduce"), (label["ONE"], "free"))
        attrs = (("op", op.attrs["op"]), ("reduce", f))
        if op.attrs.get("negate"):
            attrs += (("negate", True),)
        data = (srcs["data"],)
        self.operators.append(
            Operator(f"tensor_reduce_{v}", "tensor_reduce", sbuf, data, roles, (), attrs)
        )
        return pins

    def elementwise(self, op: TracedOp, srcs: dict[str, str], upstream: Pins) -> Pins:
        v, axes = op.output.name, self.axes(op.output)
        sbuf = self.fresh("sbuf", v)
        self.add(PhysicalBuffer(sbuf, "sbuf", axes, op.output.dtype, "result", (), upstream))
        attrs = tuple(sorted((k, val) for k, val in op.attrs.items() if val is not None))
        # Data operands in the op's order, then [P, 1] columns, named in attrs["columns"].
        columns = tuple(r for r in op.op.column_attrs if r in srcs)
        if columns:
            attrs = tuple(sorted((*attrs, ("columns", columns))))
        roles = (*op.op.spec.operands, *columns)
        kind, operands = op.op.kind, tuple(srcs[r] for r in roles)
        self.operators.append(
            Operator(f"{kind}_{v}", kind, sbuf, operands, _roles(axes), (), attrs)
        )
        return upstream

    def store(self, ret: TracedTensor, out_name: str) -> HbmTensor:
        if ret.name not in self.sbuf_of or ret.name in {p.name for p in self.tr.params}:
            raise IRBuildError("f_nkigym must return the result of an op, not an input")
        axes = self.axes(ret)
        src = (self.sbuf_of[ret.name],)
        self.operators.append(Operator(f"store_{ret.name}", "store", out_name, src, _roles(axes)))
        return HbmTensor(out_name, (ret.shape[0], ret.shape[1]), ret.dtype, axes)


def build_ir(
    f_nkigym: Callable[..., Any],
    input_specs: dict[str, tuple[tuple[int, ...], str]],
    name: str = "kernel",
) -> KernelIR:
    """Trace ``f_nkigym`` on ``input_specs`` and lower it, with default knobs."""
    return lower(trace(f_nkigym, input_specs), name)


def _dim_origin(tr: Trace, dim: int) -> str:
    """The inputs' axes that are ``dim`` ("x's rows, w's columns"): where a dim read
    twice comes from, as the user wrote it."""
    sides = ("rows", "columns")
    found = [
        f"{p.name}'s {sides[i]}"
        for p in tr.params
        for i, a in enumerate(p.axes[:2])
        if tr.find(a) == dim
    ]
    return ", ".join(found) if found else "a dim no input has"


def _refuse_one_dim_twice(tr: Trace) -> None:
    """A matmul whose contraction is one of its output's dims (x + x @ w, w square), or a
    tensor whose rows and columns are one dim (x.T @ x, x + x.T), has no loop nest: a
    KernelIR loops over each dim once, and a buffer's two axes are two dims. The first
    such tensor in program order is named, with the inputs' axes that dim is."""
    params = {p.name for p in tr.params}
    for i, op in enumerate(tr.ops):
        k = tr.find(op.labels["K"]) if isinstance(op.op, NKIMatmul) else None
        if k is not None and k in {tr.find(op.labels["M"]), tr.find(op.labels["N"])}:
            kept = "M (its rows)" if k == tr.find(op.labels["M"]) else "N (its columns)"
            raise IRBuildError(
                f"NKIMatmul producing {op.output.name!r}: its contraction axis K is the same "
                f"dim as its output's axis {kept} ({_dim_origin(tr, k)}): an element-wise op "
                "or operands derived from one input tie the result to the operand it "
                "contracts over (as in x + x @ w with w square). A KernelIR loops over each "
                "dim once, so one matmul cannot both sum over a dim and keep it; for a "
                "residual around a projection of x, give x twice, as two inputs (the same "
                "array under two names: def f_nkigym(x, x_res, w), x_res + f(x) @ w)"
            )
        for t in op.operands.values():
            if t.name in params and tr.find(t.axes[0]) == tr.find(t.axes[-1]):
                raise IRBuildError(_read_twice(tr, f"input {t.name!r}", t, ""))
        t = op.output
        if len(t.axes) == 2 and tr.find(t.axes[0]) == tr.find(t.axes[1]):
            what = f"{type(op.op).__name__} (call {i + 1} in f_nkigym) result {t.name!r}"
            hint = (
                "; operands projected from one input share its rows (attention with q and k "
                "both computed from one x): give q and k, or their transposes, as inputs"
                if isinstance(op.op, NKIMatmul)
                else ""
            )
            raise IRBuildError(_read_twice(tr, what, t, hint))


def _read_twice(tr: Trace, what: str, t: TracedTensor, hint: str) -> str:
    return (
        f"{what} {t.shape}: its rows and columns are the same dim "
        f"({_dim_origin(tr, tr.find(t.axes[0]))}; one tensor's axis read as both, as in "
        "x.T @ x or x + x.T); a KernelIR loops over each dim once, so it cannot index one "
        f"tensor by one dim twice{hint}"
    )


def kernel_name(name: str) -> str:
    """``name`` (a workload's file or folder name) as a Python function name: the folder
    may be ``rms-norm``, ``2048`` or ``tmp.x1``, which no ``def`` takes. ASCII only: the
    name reaches the device compiler's artifacts too."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", name) or "kernel"
    if not ident.isidentifier():
        ident = f"k_{ident}"  # a leading digit
    while keyword.iskeyword(ident) or ident in ("nki", *MODULE_ALIASES):
        ident += "_"
    return ident


def lower(tr: Trace, name: str, variant: str = "base") -> KernelIR:
    """A traced op graph as buffers and operators, with default knobs.

    The graph is kept on the IR (``graph``) so that a rewrite of the math itself
    (``graph_rewrites.py``) can change it and lower it again.
    """
    from kernelopt.ir.sample import with_default_knobs

    _refuse_one_dim_twice(tr)
    for p in tr.params:
        if p.name in MODULE_ALIASES:
            raise IRBuildError(
                f"input {p.name!r}: the rendered kernel imports {MODULE_ALIASES[p.name]} as "
                f"{p.name!r}, and a parameter of that name would hide it inside the kernel; "
                "rename the parameter (and its INPUT_SPECS key)"
            )
    names, dims = _dims(tr)
    lowering = _Lowering(tr, names)
    inputs = tuple(lowering.load(p) for p in tr.params)
    for op in tr.ops:
        lowering.op(op)
    out_name = "out"
    while out_name in lowering.inputs:
        out_name += "_hbm" if out_name == "out" else "_"
    output = lowering.store(tr.output, out_name)
    ir = KernelIR(
        func_name=kernel_name(name),
        inputs=inputs,
        output=output,
        dims=dims,
        buffers=tuple(lowering.buffers),
        operators=tuple(lowering.operators),
        loop_order=(),
        variant=variant,
        graph=tr,
    )
    return with_default_knobs(ir)
