"""The KernelIR records: dimensions, physical buffers, operators and the three knobs.

Everything but the knobs is fixed by ``build_ir`` (and rewrites). The knobs are
``loop_order``, ``ltiles_per_block`` and ``buffer_scopes``; ``with_knobs``
returns a new IR, so an IR never changes under a caller's feet.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any


class Scope(StrEnum):
    """How much of one dimension a buffer holds (and so where it may be allocated)."""

    PER_TILE = "PER_TILE"
    PER_BLOCK = "PER_BLOCK"
    FULL = "FULL"


SCOPES = (Scope.PER_TILE, Scope.PER_BLOCK, Scope.FULL)


@dataclass(frozen=True)
class Dim:
    """One global loop dimension: ``size`` split into ``num_tiles`` tiles of ``tile``.

    A parallel dim whose size has no good divisor (a prime such as 257) takes
    overlapping tiles instead: tile ``j`` covers ``[j * stride, j * stride + tile)``
    of the HBM tensors, the last one ending at ``size``. Rows of the overlap are
    computed twice and stored twice with the same values; on chip every tile is
    held whole, so only the kernel's HBM offsets see the ``stride``.
    """

    name: str
    size: int
    tile: int
    reducing: bool = False
    stride: int = 0  # HBM distance between tiles; 0: ``tile`` (no overlap)

    @property
    def step(self) -> int:
        """Where tile ``j`` starts in HBM, per ``j``."""
        return self.stride or self.tile

    @property
    def num_tiles(self) -> int:
        if self.stride:
            return (self.size - self.tile) // self.stride + 1
        return self.size // self.tile

    def divisors(self) -> tuple[int, ...]:
        return self._divisors

    @cached_property
    def _divisors(self) -> tuple[int, ...]:
        n = self.num_tiles
        return tuple(d for d in range(1, n + 1) if n % d == 0)


@dataclass(frozen=True)
class PhysicalBuffer:
    """One on-chip tensor of the kernel.

    ``axes`` are (partition dim, free dim). ``lifetime_dims`` are reducing dims
    the buffer accumulates over without holding them (PSUM's K): they take a
    scope knob but no shape. ``pinned_full`` dims are reducing dims upstream of
    the buffer, or an axis a whole-row reduction reads at once: fixed to FULL
    and left off the knob surface.
    """

    name: str
    memory: str  # "sbuf" | "psum"
    axes: tuple[str, str]
    dtype: str
    role: str  # "load" | "accumulator" | "transposed" | "result"
    lifetime_dims: tuple[str, ...] = ()
    pinned_full: tuple[str, ...] = ()

    # Cached (derive asks for them millions of times while a pool is drawn); not fields,
    # so equality and hashing are the fields' alone.
    @cached_property
    def knob_dims(self) -> tuple[str, ...]:
        return tuple(d for d in self.axes + self.lifetime_dims if d not in self.pinned_full)

    @cached_property
    def scoped_dims(self) -> tuple[str, ...]:
        """Every dim with a scope: the pinned ones (always FULL), then the knob dims."""
        return self.pinned_full + self.knob_dims

    def scopes_for(self, d: str) -> list[Scope]:
        """The scopes dim ``d`` may take: an accumulator cannot be re-allocated every
        tile of a dim it reduces over (PER_TILE would drop the partial sums)."""
        return [s for s in SCOPES if not (s == Scope.PER_TILE and d in self.lifetime_dims)]


@dataclass(frozen=True)
class Operator:
    """One instruction site of the kernel (loads and the store included).

    ``srcs`` and ``dst`` name buffers, except that a load's src and the store's
    dst name HBM tensors. ``required_tiles`` are dims whose ``.tile`` loop the
    instruction fires inside, unless an operand completes only outside that loop:
    then it covers that dim's tiles with loops of its own (``derive._entered``).
    """

    name: str
    kind: str
    dst: str
    srcs: tuple[str, ...]
    roles: tuple[tuple[str, str], ...]  # (dim, role) pairs, e.g. ("d0", "reduce")
    required_tiles: tuple[str, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.roles)

    def attr(self, name: str, default: Any = None) -> Any:
        return dict(self.attrs).get(name, default)


@dataclass(frozen=True)
class HbmTensor:
    name: str
    shape: tuple[int, int]
    dtype: str
    dims: tuple[str, str]


@dataclass(frozen=True)
class KernelIR:
    """The op graph lowered to buffers and operators, plus the knob state."""

    func_name: str
    inputs: tuple[HbmTensor, ...]
    output: HbmTensor
    dims: tuple[Dim, ...]
    buffers: tuple[PhysicalBuffer, ...]
    operators: tuple[Operator, ...]
    loop_order: tuple[str, ...]
    ltiles_per_block: dict[str, int] = field(default_factory=dict)
    buffer_scopes: dict[str, dict[str, Scope]] = field(default_factory=dict)
    variant: str = "base"
    # The traced op graph this IR was lowered from (a ``trace.Trace``), for rewrites of
    # the math; None once a rewrite has changed the lowering itself.
    graph: Any = field(default=None, compare=False, repr=False)

    @cached_property
    def dim(self) -> dict[str, Dim]:
        return {d.name: d for d in self.dims}

    @cached_property
    def buffer(self) -> dict[str, PhysicalBuffer]:
        return {b.name: b for b in self.buffers}

    @cached_property
    def producers(self) -> dict[str, Operator]:
        return {op.dst: op for op in self.operators}

    def trip(self, entry: str) -> int:
        """Trips of one ``loop_order`` entry (``d0.block`` or ``d0.tile``) under the block sizes."""
        d, kind = entry.split(".")
        per = self.ltiles_per_block[d]
        return per if kind == "tile" else self.dim[d].num_tiles // per

    def variant_after(self, rewrite: str) -> str:
        """The variant name once ``rewrite`` has applied to this IR (``A+B`` for B after A)."""
        return rewrite if self.variant == "base" else f"{self.variant}+{rewrite}"

    def with_knobs(
        self,
        loop_order: Any = None,
        ltiles_per_block: dict[str, int] | None = None,
        buffer_scopes: dict[str, dict[str, Scope | str]] | None = None,
    ) -> KernelIR:
        """A copy with the given knobs replaced (``None`` keeps the current value)."""
        changes: dict[str, Any] = {}
        if loop_order is not None:
            changes["loop_order"] = tuple(loop_order)
        if ltiles_per_block is not None:
            changes["ltiles_per_block"] = dict(ltiles_per_block)
        if buffer_scopes is not None:
            changes["buffer_scopes"] = {
                b: {d: s if isinstance(s, Scope) else Scope(s) for d, s in scopes.items()}
                for b, scopes in buffer_scopes.items()
            }
        return dataclasses.replace(self, **changes)

    def structure_key(self) -> tuple[Any, ...]:
        """What a rewrite can change: the buffers and operators, not the knobs."""
        return (self.buffers, self.operators)

    def __repr__(self) -> str:
        from kernelopt.ir.describe import describe

        return describe(self)
