"""Tracing ``f_nkigym`` with symbolic tensors into an op graph with unified axes.

Every tensor axis starts as its own axis id; each op call unifies the axes
its spec says are the same loop (a union-find), so after tracing every axis
maps to one global dimension.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
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
    names: list[str | None]
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
                    self.axes.union(
                        labels[lab],
                        axis,
                        f"{where}, axis {lab} ({first} and {role} {t.name!r} {t.shape} axis "
                        f"{pos} are one axis of the op)",
                    )
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
        name = self.names[index] if index < len(self.names) else None
        if name is None:
            name = f"t{index}"
            while name in self.names or name in self.taken:
                name = f"_{name}"
        out = TracedTensor(name, out_axes, shape, dtype, self)
        self.ops.append(TracedOp(op, dict(operands), attrs, out, labels))
        return out


@dataclass(frozen=True)
class Trace:
    params: tuple[TracedTensor, ...]
    ops: tuple[TracedOp, ...]
    output: TracedTensor
    func_name: str
    find: Callable[[int], int]


def _op_calls(node: ast.AST) -> int:
    """How many ``Op(...)(...)`` calls an expression makes (nested ones included)."""
    return sum(
        1 for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Call)
    )


def _assigned_names(func: Callable[..., Any]) -> list[str | None]:
    """Per op call, in call order, the variable it is assigned to (None for a nested call).

    ``x = Op2(...)(data=Op1(...)(data=y))`` calls Op1 first: it gets None (a
    generated name), Op2 gets ``x``.
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return []
    names: list[str | None] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Call)
        ):
            names += [None] * (_op_calls(node.value) - 1) + [node.targets[0].id]
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
    names = _assigned_names(f_nkigym)
    given = [n for n in names if n is not None]
    if len(set(given)) != len(given):
        names = []  # reassigned names would collide as buffer names
    # A parameter assigned a result (w = silu(w)) keeps its name; the result gets another.
    names = [None if n in params else n for n in names]
    tracer = _Tracer(names, set(params))
    tensors: list[TracedTensor] = []
    for p in params:
        shape, dtype = input_specs[p]
        if len(shape) != 2:
            raise IRBuildError(f"INPUT_SPECS[{p!r}]: only 2-D tensors are supported, got {shape}")
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
    When the fp32 side is an input read as is, a 2-byte side an element-wise op computes
    is written in fp32. Inputs only read or transposed on the 2-byte side keep their
    dtypes, and the rule ``isa_dtype`` reports them. Two narrow dtypes (fp16 beside
    bf16): ``_one_of_two_narrow``."""
    ops = tr.ops
    producer = {op.output.name: op for op in ops}
    cast: dict[str, str] = {}

    def dtype(t: TracedTensor) -> str:
        return cast.get(t.name, t.dtype)

    def chain(t: TracedTensor) -> list[TracedTensor]:
        """t and the transposes it is read through, back to an instruction that writes it."""
        found = []
        while t.name in producer and producer[t.name].op.kind == "transpose":
            found.append(t)
            t = producer[t.name].operands["data"]
        if t.name in producer and producer[t.name].op.kind in _ELEMENTWISE:
            found.append(t)
        return found

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
        elif other_chain and producer[other_chain[-1].name].op.kind in _ELEMENTWISE:
            # an fp32 input read as is: the 2-byte side an element-wise op writes is
            # written in fp32 (an input only transposed stays as given)
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
