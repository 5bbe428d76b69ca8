"""Tracing ``f_nkigym`` with symbolic tensors into an op graph with unified axes.

Every tensor axis starts as its own axis id; each op call unifies the axes
its spec says are the same loop (a union-find), so after tracing every axis
maps to one global dimension.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelopt.ir.ops import NKIOp


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
    names: list[str]
    axes: _Axes = field(default_factory=_Axes)
    ops: list[TracedOp] = field(default_factory=list)

    def tensor(self, name: str, shape: tuple[int, ...], dtype: str) -> TracedTensor:
        axes = tuple(self.axes.new(s) for s in shape)
        return TracedTensor(name, axes, shape, dtype, self)

    def record(self, op: NKIOp, operands: dict[str, Any], attrs: dict[str, Any]) -> TracedTensor:
        where = f"{type(op).__name__} (call {len(self.ops) + 1} in f_nkigym)"
        labels: dict[str, int] = {}
        for role, labs in op.spec.operands.items():
            t = operands[role]
            if not isinstance(t, TracedTensor):
                raise IRBuildError(f"{where}: operand {role} is not a traced tensor: {t!r}")
            if len(t.shape) != len(labs):
                raise IRBuildError(
                    f"{where}: operand {role} must be {len(labs)}-D, got shape {t.shape}"
                )
            for lab, axis in zip(labs, t.axes, strict=True):
                if lab in labels:
                    self.axes.union(labels[lab], axis, f"{where}, axis {lab}")
                else:
                    labels[lab] = axis
        for lab, size in op.spec.new_axes:
            labels[lab] = self.axes.new(size)
        dtypes = {t.dtype for t in operands.values()}
        dtype = operands[next(iter(op.spec.operands))].dtype if len(dtypes) > 1 else dtypes.pop()
        out_axes = tuple(labels[lab] for lab in op.spec.output)
        shape = tuple(self.axes.size[a] for a in out_axes)
        index = len(self.ops)
        name = self.names[index] if index < len(self.names) else f"t{index}"
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


def _assigned_names(func: Callable[..., Any]) -> list[str]:
    """Targets of ``x = Op(...)(...)`` statements, in order, to name buffers after."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Call)
        ):
            names.append(node.targets[0].id)
    return names


def trace(
    f_nkigym: Callable[..., Any], input_specs: dict[str, tuple[tuple[int, ...], str]]
) -> Trace:
    """Run ``f_nkigym`` on symbolic tensors built from ``input_specs``."""
    params = list(inspect.signature(f_nkigym).parameters)
    if sorted(params) != sorted(input_specs):
        raise IRBuildError(
            f"f_nkigym parameters {params} do not match INPUT_SPECS keys {list(input_specs)}"
        )
    names = _assigned_names(f_nkigym)
    if len(set(names)) != len(names):
        names = []  # reassigned names would collide as buffer names
    tracer = _Tracer(names)
    tensors: list[TracedTensor] = []
    for p in params:
        shape, dtype = input_specs[p]
        if len(shape) != 2:
            raise IRBuildError(f"INPUT_SPECS[{p!r}]: only 2-D tensors are supported, got {shape}")
        tensors.append(tracer.tensor(p, tuple(int(s) for s in shape), str(dtype)))
    try:
        result = f_nkigym(*tensors)
    except IRBuildError:
        raise
    except Exception as exc:  # user code: report where it failed
        raise IRBuildError(f"tracing f_nkigym failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(result, TracedTensor):
        raise IRBuildError(f"f_nkigym must return one traced tensor, got {type(result).__name__}")
    if not tracer.ops:
        raise IRBuildError("f_nkigym calls no op: there is nothing to compute")
    return Trace(tuple(tensors), tuple(tracer.ops), result, f_nkigym.__name__, tracer.axes.find)
