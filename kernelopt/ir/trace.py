"""Tracing ``f_nkigym`` with symbolic tensors into an op graph with unified axes.

Every tensor axis starts as its own axis id; each op call unifies the axes
its spec says are the same loop (a union-find), so after tracing every axis
maps to one global dimension.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kernelopt.ir.ops import DTYPES, NKIActivation, NKIOp


class IRBuildError(ValueError):
    """f_nkigym or INPUT_SPECS cannot be turned into a KernelIR."""


@dataclass
class _Axes:
    """Union-find over axis ids; each id also remembers its size."""

    parent: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)

    def new(self, size: int) -> int:
        self.parent.append(len(self.parent))
        self.size.append(size)
        return len(self.parent) - 1

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int, what: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] != self.size[rb]:
            raise IRBuildError(f"{what}: axis sizes {self.size[ra]} and {self.size[rb]} differ")
        self.parent[max(ra, rb)] = min(ra, rb)


@dataclass(frozen=True)
class TracedTensor:
    """A symbolic tensor; ``record`` is what op calls dispatch to while tracing."""

    name: str
    axes: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str
    tracer: _Tracer = field(repr=False, compare=False)

    def record(self, op: NKIOp, operands: dict[str, Any], attrs: dict[str, Any]) -> TracedTensor:
        return self.tracer.record(op, operands, attrs)


@dataclass(frozen=True)
class TracedOp:
    op: NKIOp
    operands: dict[str, TracedTensor]
    attrs: dict[str, Any]
    output: TracedTensor
    labels: dict[str, int]  # spec label -> axis id


@dataclass
class _Tracer:
    # The variable each op call of f_nkigym is assigned to, by the call's source position.
    names: dict[tuple[int, int, int, int], str]
    code: Any = None  # f_nkigym's code object: the frame whose calls ``names`` holds
    taken: set[str] = field(default_factory=set)  # parameter names
    axes: _Axes = field(default_factory=_Axes)
    ops: list[TracedOp] = field(default_factory=list)

    def tensor(self, name: str, shape: tuple[int, ...], dtype: str) -> TracedTensor:
        axes = tuple(self.axes.new(s) for s in shape)
        return TracedTensor(name, axes, shape, dtype, self)

    def record(self, op: NKIOp, operands: dict[str, Any], attrs: dict[str, Any]) -> TracedTensor:
        where = f"{type(op).__name__} (call {len(self.ops) + 1} in f_nkigym)"
        labels: dict[str, int] = {}
        a, b = (getattr(operands.get(r), "shape", None) for r in ("data1", "data2"))
        if op.kind == "tensor_tensor" and None not in (a, b) and a != b:
            row = any(len(s) == 2 and s[0] == 1 and s[1] != 1 for s in (a, b))
            hint = (
                "; a weight per column (an rms norm's gamma) scales the transposed rows "
                "instead: give it as a [F, 1] column, NKITensorScalar(op0='multiply', "
                "operand0=gamma)(data=NKITranspose()(data=...))"
                if row
                else ""
            )
            raise IRBuildError(
                f"{where}: data1 {a} and data2 {b} differ: tensor_tensor takes two tiles of "
                "one shape and does not broadcast (a [P, 1] column goes to NKITensorScalar's "
                f"operand0 or NKIActivation's scale or bias; a [1, F] row has no operand){hint}"
            )
        seen: dict[str, str] = {}  # label -> the operand axis that first gave it
        for role, t in operands.items():
            labs = op.spec.labels(role)
            if not isinstance(t, TracedTensor):
                raise IRBuildError(f"{where}: operand {role} is not a traced tensor: {t!r}")
            if len(t.shape) != len(labs):
                raise IRBuildError(
                    f"{where}: operand {role} must be {len(labs)}-D, got shape {t.shape}"
                )
            if role not in op.spec.operands and t.shape[1] != 1:
                raise IRBuildError(
                    f"{where}: {role} must be a number or a [P, 1] column (one value per "
                    f"partition, e.g. a NKITensorReduce result), got shape {t.shape}"
                )
            for pos, (lab, axis) in enumerate(zip(labs, t.axes, strict=True)):
                if lab in labels:
                    first = seen[lab]
                    what = (
                        f"{where}, axis {lab} ({first} and {role} {t.name!r} {t.shape} axis "
                        f"{pos} are one axis of the op)"
                    )
                    try:
                        self.axes.union(labels[lab], axis, what)
                    except IRBuildError as exc:
                        raise IRBuildError(f"{exc}{_size_hint(op, operands)}") from None
                else:
                    labels[lab] = axis
                    seen[lab] = f"{role} {t.name!r} {t.shape} axis {pos}"
        for lab, size in op.spec.new_axes:
            labels[lab] = self.axes.new(size)
        # The result takes the first operand's dtype (columns only scale or shift it).
        dtype = op.out_dtype or operands[next(iter(op.spec.operands))].dtype
        out_axes = tuple(labels[lab] for lab in op.spec.output)
        shape = tuple(self.axes.size[a] for a in out_axes)
        index = len(self.ops)
        used = {o.output.name for o in self.ops} | self.taken
        name = self.names.get(_caller_position(self.code))
        if name is None or name in used:  # a helper's op, or an assignment run twice
            name = f"t{index}"
            while name in self.names.values() or name in used:
                name = f"_{name}"
        out = TracedTensor(name, out_axes, shape, dtype, self)
        self.ops.append(TracedOp(op, dict(operands), attrs, out, labels))
        return out


def _size_hint(op: NKIOp, operands: dict[str, Any]) -> str:
    """What to write instead, for the two mismatches written most: a matmul given
    ``x`` [M, K] as its stationary (it takes [K, M]), and a column holding one value
    per column of the data (a norm's gamma) instead of one per row."""
    shapes = {role: t.shape for role, t in operands.items()}
    if op.kind == "matmul":
        (m, k), (k2, _) = shapes["stationary"], shapes["moving"]
        if k == k2 and m != k2:
            return (
                "; stationary is [K, M], the left operand transposed: for x @ w with x "
                "[M, K], NKIMatmul()(stationary=NKITranspose()(data=x), moving=w)"
            )
        return ""
    data = shapes.get("data")
    for role, shape in shapes.items():
        if role not in op.spec.operands and data and shape[0] == data[1] != data[0]:
            return (
                f"; {role} holds one value per row (partition) of data, and this one has one "
                "per column: a weight per column (a norm's gamma) scales the transposed "
                f"rows, NKITensorScalar(op0='multiply', operand0=gamma)(data="
                "NKITranspose()(data=...))"
            )
    return ""


@dataclass(frozen=True)
class Trace:
    params: tuple[TracedTensor, ...]
    ops: tuple[TracedOp, ...]
    output: TracedTensor
    func_name: str
    find: Callable[[int], int]


_HERE = (__file__, sys.modules[NKIOp.__module__].__file__)


def _caller_position(code: Any) -> tuple[int, int, int, int] | None:
    """The source position of the op call being traced when ``f_nkigym`` (``code``)
    makes it itself, not through a helper: the call expression's (line, end line,
    column, end column)."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_code.co_filename in _HERE:
        frame = frame.f_back
    if frame is None or frame.f_code is not code:
        return None
    return next(itertools.islice(code.co_positions(), frame.f_lasti // 2, None), None)


def _assigned_names(func: Callable[..., Any]) -> dict[tuple[int, int, int, int], str]:
    """``name = <call>`` statements of ``func``, by the call's source position (as
    ``co_positions`` gives it): an op called there is that variable. Matching positions
    at trace time names the op the statement assigns, not one a helper it calls makes
    first (``h = add(rms(x), rms(r))``), and no op in a statement not run."""
    try:
        lines, start = inspect.getsourcelines(func)
        src = "".join(lines)
        indented = src[:1].isspace()
        tree = ast.parse("if 1:\n" + src if indented else src)
    except (OSError, TypeError, SyntaxError):
        return {}
    shift = start - 1 - indented
    names: dict[tuple[int, int, int, int], str] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            v = node.value
            pos = (v.lineno + shift, (v.end_lineno or v.lineno) + shift)
            names[(*pos, v.col_offset, v.end_col_offset or 0)] = node.targets[0].id
    return names


def trace(
    f_nkigym: Callable[..., Any], input_specs: dict[str, tuple[tuple[int, ...], str]]
) -> Trace:
    """Run ``f_nkigym`` on symbolic tensors built from ``input_specs``."""
    # A parameter with a default that INPUT_SPECS leaves out (``eps=1e-6``) keeps it.
    params = [
        name
        for name, p in inspect.signature(f_nkigym).parameters.items()
        if name in input_specs or p.default is inspect.Parameter.empty
    ]
    if sorted(params) != sorted(input_specs):
        raise IRBuildError(
            f"f_nkigym parameters {params} do not match INPUT_SPECS keys {list(input_specs)}"
            " (only a parameter with a default may be left out)"
        )
    # A parameter assigned a result (w = silu(w)) keeps its name; the result gets another.
    names = {k: n for k, n in _assigned_names(f_nkigym).items() if n not in params}
    code = getattr(inspect.unwrap(f_nkigym), "__code__", None)
    tracer = _Tracer(names, code, set(params))
    tensors: list[TracedTensor] = []
    for p in params:
        shape, dtype = input_specs[p]
        if len(shape) != 2:
            hint = f": give a vector as a ({shape[0]}, 1) column" if len(shape) == 1 else ""
            raise IRBuildError(
                f"INPUT_SPECS[{p!r}]: only 2-D tensors are supported, got {shape}{hint}"
            )
        if any(int(s) < 1 for s in shape):
            raise IRBuildError(f"INPUT_SPECS[{p!r}]: every dim must be at least 1, got {shape}")
        if str(dtype) not in DTYPES:
            raise IRBuildError(
                f"INPUT_SPECS[{p!r}]: dtype {dtype!r} has no NKI kernel rendering; "
                f"use one of {sorted(DTYPES)}"
            )
        tensors.append(tracer.tensor(p, tuple(int(s) for s in shape), str(dtype)))
    try:
        result = f_nkigym(**{t.name: t for t in tensors})
    except IRBuildError:
        raise
    except Exception as exc:  # user code: report where it failed
        raise IRBuildError(f"tracing f_nkigym failed: {type(exc).__name__}: {exc}") from exc
    result = _one_result(result)
    if not tracer.ops:
        raise IRBuildError("f_nkigym calls no op: there is nothing to compute")
    tr = Trace(tuple(tensors), tuple(tracer.ops), result, f_nkigym.__name__, tracer.axes.find)
    return widen_scale_columns(narrow_matmul_operands(tr))


def _one_result(result: Any) -> TracedTensor:
    """The tensor ``f_nkigym`` returns; ``return (out,)`` is that one tensor. Several
    are refused with the reason and what to write instead."""
    if isinstance(result, tuple | list) and len(result) == 1:
        result = result[0]
    if isinstance(result, TracedTensor):
        return result
    if isinstance(result, tuple | list):
        raise IRBuildError(
            f"f_nkigym returns {len(result)} values ({type(result).__name__}): a KernelIR "
            "has one output tensor; write one workload per output, each f_nkigym (and "
            "f_numpy) returning one of them"
        )
    if result is None:
        raise IRBuildError(
            "f_nkigym returned None: it must return its output tensor (is a return missing?)"
        )
    raise IRBuildError(
        f"f_nkigym must return the tensor an op computed, got {type(result).__name__}"
    )


_ELEMENTWISE = ("tensor_scalar", "tensor_tensor", "activation", "reciprocal")


def narrow_matmul_operands(tr: Trace) -> Trace:
    """A matmul of an fp32 operand and a 2-byte one (an fp32 ``x`` normed, times bf16
    ``w``): nc_matmul takes one dtype, so the element-wise op that computes the fp32 side
    writes the 2-byte dtype instead (an engine casts on its write), as do the transposes
    between it and the matmul (a transposed fp32 input is cast by the copy out of PSUM).
    When the fp32 side is an input read as is, a 2-byte side an instruction writes (an
    element-wise op, a transpose's copy out of PSUM) is written in fp32. Two inputs
    read as is keep their dtypes, and the rule ``isa_dtype`` reports them. Two narrow
    dtypes (fp16 beside bf16): ``_one_of_two_narrow``."""
    tr = _split_shared_operands(tr)
    ops = tr.ops
    producer = {op.output.name: op for op in ops}
    cast: dict[str, str] = {}

    def dtype(t: TracedTensor) -> str:
        return cast.get(t.name, t.dtype)

    def chain(t: TracedTensor) -> list[TracedTensor]:
        """t and the transposes it is read through, back to an instruction that writes it."""
        return [op.output for op in _written_chain(producer, t.name)]

    for op in ops:
        if op.op.kind != "matmul":
            continue
        sides = [op.operands["stationary"], op.operands["moving"]]
        kinds = {dtype(t) for t in sides}
        if len(kinds) != 2:
            continue
        if "float32" not in kinds:
            cast.update(_one_of_two_narrow(sides, dtype, chain))
            continue
        narrow = kinds & {"bfloat16", "float16"}
        if len(narrow) != 1:
            continue
        wide = next(t for t in sides if dtype(t) == "float32")
        wide_chain = chain(wide)
        other_chain = chain(next(t for t in sides if t is not wide))
        if wide_chain:  # the fp32 side is written by an instruction: it writes 2 bytes
            cast.update({c.name: next(iter(narrow)) for c in wide_chain})
        elif other_chain:
            # an fp32 input read as is: the 2-byte side an instruction writes (an
            # element-wise op, or the copy out of PSUM of a transposed input) is written
            # in fp32
            cast.update({c.name: "float32" for c in other_chain})
    if not cast:
        return tr

    def new(t: TracedTensor) -> TracedTensor:
        return dataclasses.replace(t, dtype=cast[t.name]) if t.name in cast else t

    rebuilt = tuple(
        dataclasses.replace(
            op, operands={r: new(t) for r, t in op.operands.items()}, output=new(op.output)
        )
        for op in ops
    )
    return dataclasses.replace(tr, ops=rebuilt, output=new(tr.output))


def _written_chain(producer: dict[str, TracedOp], name: str) -> list[TracedOp]:
    """The ops that write ``name`` as a matmul reads it: its transposes, back to the
    element-wise op before them (if any); first written first."""
    found: list[TracedOp] = []
    while name in producer and producer[name].op.kind == "transpose":
        found.append(producer[name])
        name = producer[name].operands["data"].name
    if name in producer and producer[name].op.kind in _ELEMENTWISE:
        found.append(producer[name])
    return found[::-1]


def _split_shared_operands(tr: Trace) -> Trace:
    """A tensor matmuls read beside partners of different dtypes (one normed x times a
    bf16 ``w`` and an fp32 router) is written once per partner dtype: the ops that write
    it are repeated for each dtype after the first, so that each copy can be cast to
    its own matmul's (``narrow_matmul_operands``)."""
    producer = {op.output.name: op for op in tr.ops}
    partners: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for i, op in enumerate(tr.ops):
        if op.op.kind == "matmul":
            for role, other in (("stationary", "moving"), ("moving", "stationary")):
                kind = op.operands[other].dtype
                partners.setdefault(op.operands[role].name, {}).setdefault(kind, []).append(
                    (i, role)
                )
    made: list[str] = []
    after: dict[str, list[TracedOp]] = {}  # an op's name -> the copies written after it
    redirect: dict[tuple[int, str], TracedTensor] = {}
    for name, by_kind in partners.items():
        chain = _written_chain(producer, name)
        for kind in list(by_kind)[1:] if chain else ():
            renamed: dict[str, TracedTensor] = {}
            for op in chain:
                out = op.output
                fresh = fresh_name(tr, f"{out.name}_{kind}", made)
                made.append(fresh)
                operands = {r: renamed.get(t.name, t) for r, t in op.operands.items()}
                renamed[out.name] = dataclasses.replace(out, name=fresh)
                clone = TracedOp(op.op, operands, op.attrs, renamed[out.name], op.labels)
                after.setdefault(name, []).append(clone)
            redirect.update({use: renamed[name] for use in by_kind[kind]})
    if not made:
        return tr
    ops: list[TracedOp] = []
    for i, op in enumerate(tr.ops):
        moved = {r: redirect[(i, r)] for r in op.operands if (i, r) in redirect}
        ops.append(dataclasses.replace(op, operands={**op.operands, **moved}) if moved else op)
        ops += after.get(op.output.name, [])
    return dataclasses.replace(tr, ops=tuple(ops))


def _one_of_two_narrow(
    sides: list[TracedTensor],
    dtype: Callable[[TracedTensor], str],
    chain: Callable[[TracedTensor], list[TracedTensor]],
) -> dict[str, str]:
    """Casts for a matmul of two narrow dtypes (an fp16 ``x`` normed or transposed, times
    a bf16 ``w``): the side an instruction writes is written in the other side's dtype;
    when both are written, in the first of bfloat16, float16 (fp8 keeps no more than it
    must). Two inputs read as is keep their dtypes, as with fp32."""
    chains = [chain(t) for t in sides]
    if not any(chains):
        return {}
    if all(chains):
        kinds = {dtype(t) for t in sides}
        target = next((k for k in ("bfloat16", "float16") if k in kinds), None)
        if target is None:
            return {}
    else:
        target = next(dtype(t) for t, c in zip(sides, chains, strict=True) if not c)
    return {
        c.name: target
        for t, found in zip(sides, chains, strict=True)
        if dtype(t) != target
        for c in found
    }


def fresh_name(tr: Trace, base: str, also: Iterable[str] = ()) -> str:
    """``base``, underscored in front until no input, op result or name in ``also``
    (names a rewrite has made but not yet added) has it."""
    taken = {p.name for p in tr.params} | {o.output.name for o in tr.ops} | set(also)
    name = base
    while name in taken:
        name = f"_{name}"
    return name


def widen_scale_columns(tr: Trace) -> Trace:
    """An activation's scale vector in float32: ScalarE takes no other (NKI API errors,
    ``err_activation_scale_invalid_type``). A column of another dtype (a bf16 [P, 1]
    input) is first copied to float32, once, by a copy activation (its own scale the
    number 1) that every such reader shares."""
    widened: dict[str, TracedTensor] = {}
    ops: list[TracedOp] = []
    for op in tr.ops:
        col = op.operands.get("scale") if op.op.kind == "activation" else None
        if col is not None and col.dtype != "float32":
            if col.name not in widened:
                made = [w.name for w in widened.values()]
                name = fresh_name(tr, f"{col.name}_f32", made)
                wide = dataclasses.replace(col, name=name, dtype="float32")
                labels = {"P": col.axes[0], "F": col.axes[1]}
                copy = NKIActivation(op="copy")
                ops.append(
                    TracedOp(copy, {"data": col}, {"op": "copy", "scale": 1.0}, wide, labels)
                )
                widened[col.name] = wide
            op = dataclasses.replace(op, operands={**op.operands, "scale": widened[col.name]})
        ops.append(op)
    return dataclasses.replace(tr, ops=tuple(ops)) if widened else tr
